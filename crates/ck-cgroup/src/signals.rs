//! Signals of a helper that stays resident as a module's parent (`ck-cgroup run`, `sandbox`):
//! [`SignalRelay`] passes the signals it receives on to the child (or, for a helper with a loop
//! of its own such as `ck-cgroup top`, hands them to it: [`SignalRelay::wait`]), [`reraise`]
//! dies of the child's death signal, and [`crate::spawn::unblock_signals_before_exec`] gives a
//! child started with [`std::process::Command`] the empty signal mask that [`crate::spawn`]'s
//! children get.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::process::ExitStatus;
use std::time::Duration;

use rustix::io::Errno;
use rustix::process::{Signal, pidfd_send_signal};

use crate::mutation::{self, Control};
use crate::spawn::ModuleChild;
use crate::spawn::clone3::{self, SavedMask};

/// Relays signals that the calling thread receives to a child, for a helper that stays resident
/// as the module's parent (`ck-cgroup run`).
///
/// [`SignalRelay::new`] blocks the signals in the calling thread (so none is lost or acts on the
/// helper between now and the child's exit) and reads them from a `signalfd(2)`; children spawned
/// by [`crate::spawn`] start with an empty signal mask. The previous mask is restored on drop.
pub struct SignalRelay {
    fd: OwnedFd,
    /// The mask before [`SignalRelay::new`], restored when this drops.
    _old: SavedMask,
}

impl SignalRelay {
    /// Block `signals` and open a `signalfd(2)` for them. Create it before spawning the child.
    pub fn new(signals: &[Signal]) -> io::Result<SignalRelay> {
        let (fd, old) = SavedMask::block_into_signalfd(signals)?;
        Ok(SignalRelay { fd, _old: old })
    }

    /// Until `child`'s program exits, send it ([`ModuleChild::signal`]) every blocked signal that
    /// arrives; then reap it and return its status. Signals are relayed one for one, in order.
    pub fn relay_until_exit(&self, child: &mut ModuleChild) -> io::Result<ExitStatus> {
        self.relay_until_exit_or(child, &[])?;
        child.wait()
    }

    /// Until `child`'s program exits, send it every blocked signal that arrives except those in
    /// `stop`. Returns `Some(sig)` for the first signal in `stop` that arrives (not passed on),
    /// or `None` once the program has exited (unreaped: [`ModuleChild::wait`] gives its status).
    pub fn relay_until_exit_or(
        &self,
        child: &ModuleChild,
        stop: &[Signal],
    ) -> io::Result<Option<Signal>> {
        self.relay(child.exit_fd(), |sig| {
            if stop.contains(&sig) {
                return Some(sig);
            }
            // The program may have exited in between: ESRCH is not an error.
            let _ = child.signal(sig);
            None
        })
    }

    /// Until the process of `pidfd` exits, send it every blocked signal that arrives; return
    /// when it has exited, without reaping it (for a child started with `std::process::Command`:
    /// open its pidfd with `pidfd_open(2)` while it is unreaped, then `wait` it after this).
    pub fn relay_until_readable(&self, pidfd: BorrowedFd<'_>) -> io::Result<()> {
        self.relay::<()>(pidfd, |sig| {
            // The child may have exited in between: ESRCH is not an error.
            let _ = pidfd_send_signal(pidfd, sig);
            None
        })
        .map(|_| ())
    }

    /// For a helper with a loop of its own (`ck-cgroup top`): wait at most `timeout` for one of
    /// the blocked signals (taken, passed on to no one) or for `fd` (when given) to be readable.
    /// A signal comes first when both are there. [`Woke::Timeout`] means that nothing came: the
    /// time passed, or the wait was cut short; the caller that keeps a deadline checks it.
    pub fn wait(&self, fd: Option<BorrowedFd<'_>>, timeout: Duration) -> io::Result<Woke> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let ts = Timespec::try_from(timeout).unwrap_or(Timespec {
            tv_sec: i64::MAX,
            tv_nsec: 0,
        });
        let (sig_ready, fd_ready) = {
            let mut fds = vec![PollFd::new(&self.fd, PollFlags::IN)];
            if let Some(fd) = &fd {
                fds.push(PollFd::new(fd, PollFlags::IN));
            }
            match poll(&mut fds, Some(&ts)) {
                Ok(_) => {}
                Err(Errno::INTR) => return Ok(Woke::Timeout),
                Err(e) => return Err(e.into()),
            }
            let ready = |i: usize| fds.get(i).is_some_and(|f| !f.revents().is_empty());
            (ready(0), ready(1))
        };
        if sig_ready && let Some(sig) = self.take()? {
            return Ok(Woke::Signal(sig));
        }
        Ok(if fd_ready {
            Woke::Readable
        } else {
            Woke::Timeout
        })
    }

    /// The signal the signalfd holds (call it when `poll(2)` says it is readable); `None` for a
    /// short or interrupted read.
    fn take(&self) -> io::Result<Option<Signal>> {
        // signalfd_siginfo is 128 bytes; ssi_signo is its first u32.
        let mut buf = [0u8; 128];
        match rustix::io::read(&self.fd, &mut buf) {
            Ok(128) => {
                let signo = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
                Ok(Signal::from_named_raw(signo as i32))
            }
            Ok(_) | Err(Errno::AGAIN) | Err(Errno::INTR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Poll the signalfd and `done`; hand each signal to `on_signal` (unless the
    /// `CK_MUTATION=no-relay` control is on), which may end the loop with a value. `None` once
    /// `done` is readable.
    fn relay<T>(
        &self,
        done: BorrowedFd<'_>,
        mut on_signal: impl FnMut(Signal) -> Option<T>,
    ) -> io::Result<Option<T>> {
        use rustix::event::{PollFd, PollFlags, poll};
        loop {
            let (sig_ready, child_ready) = {
                let mut fds = [
                    PollFd::new(&self.fd, PollFlags::IN),
                    PollFd::new(&done, PollFlags::IN),
                ];
                match poll(&mut fds, None) {
                    Ok(_) => {}
                    Err(Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                }
                (!fds[0].revents().is_empty(), !fds[1].revents().is_empty())
            };
            if sig_ready
                && let Some(sig) = self.take()?
                && !mutation::active(Control::NoRelay)
                && let Some(v) = on_signal(sig)
            {
                return Ok(Some(v));
            }
            if child_ready {
                return Ok(None);
            }
        }
    }
}

/// What [`SignalRelay::wait`] woke for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Woke {
    /// One of the blocked signals arrived (taken; passed on to no one).
    Signal(Signal),
    /// The descriptor is readable (a read says what: data, its end, or an error).
    Readable,
    /// Nothing came: the time passed, or the wait was cut short.
    Timeout,
}

/// Block `SIGXFSZ` in the calling thread for the rest of its life (`pthread_sigmask(2)`), so
/// that a write past `RLIMIT_FSIZE` (`ulimit -f`) fails with `EFBIG`, which the caller reports
/// and cleans up after, instead of killing the process with a file half written. The signal
/// the kernel sends stays pending and is never delivered. Not for a process that executes a
/// program afterwards: the mask is inherited across `execve(2)`.
pub fn block_file_size_signal() -> io::Result<()> {
    std::mem::forget(clone3::SavedMask::block_one(Signal::XFSZ)?);
    Ok(())
}

/// Die of `sig` as the child did, so the caller sees the same death: the signal's default action
/// is restored (`sigaction(2)`; Rust's runtime ignores SIGPIPE), it is unblocked, and raised.
/// Returns only for a signal whose default action is not to terminate.
pub fn reraise(sig: i32) {
    clone3::default_and_unblock(sig);
    if let Some(s) = Signal::from_named_raw(sig) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), s);
    }
}
