//! [`ModuleChild`]: a child started inside a cgroup, held by its pidfd.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::process::{Signal, WaitId, WaitIdOptions, WaitIdStatus, pidfd_send_signal, waitid};

#[cfg(doc)]
use super::ModuleCommand;
use super::{Fallback, HeldInit, Placement, pidns};

/// A child started inside a cgroup. Holds a pidfd, so signals never reach a
/// reused pid.
///
/// Dropping it neither kills nor reaps the child (like
/// [`std::process::Child`]).
#[derive(Debug)]
pub struct ModuleChild {
    pub(super) pid: u32,
    pub(super) pidfd: OwnedFd,
    pub(super) placement: Placement,
    pub(super) status: Option<ExitStatus>,
    /// With a PID namespace: the pipe on which the init reports the program's wait status.
    pub(super) ns: Option<pidns::Reports>,
    /// The PID namespace came with a user namespace of its own (see [`pidns`]).
    pub(super) user_ns: bool,
    /// The namespaces the spawn went on without ([`Fallback`]).
    pub(crate) fallbacks: Vec<Fallback>,
    /// Set by `Root::spawn`: the module's directory, held, and its counters at the spawn, from
    /// which `Root::death` tells this death's cause.
    pub(crate) baseline: Option<Box<Baseline>>,
}

/// A module's directory as it was when the child was spawned into it.
#[derive(Debug)]
pub(crate) struct Baseline {
    /// The module's path relative to the root.
    pub(crate) rel: String,
    /// The module's directory, held open: its marks stay readable after it is removed.
    pub(crate) dir: crate::cgroup::CgroupDir,
    /// The counters at the spawn.
    pub(crate) counters: crate::cause::death_cause::DeathCounters,
    /// The module's cgroup id and the number of stops this process had recorded at the spawn
    /// (`cause::stops_here`): a stop of its own is known without any mark.
    pub(crate) stops_here: Option<(u64, u64)>,
    /// The spawn's moment, in the clock ticks of `/proc/<pid>/stat`'s start time: a process
    /// that started before it and still runs under an ancestor outlived that ancestor.
    pub(crate) spawned_ticks: u64,
}

impl ModuleChild {
    /// The child's process id (in the parent's pid namespace). With a PID
    /// namespace, the init's: the program's is [`program_pid`](Self::program_pid).
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The program's own process id, in the parent's PID namespace: [`id`](Self::id) without a
    /// PID namespace; with one, the init's first child (pid 2 there), found right after its
    /// exec from the init's children and held by a pidfd of its own, so the pid is that
    /// process's for as long as this child lives. `None` with a PID namespace where it could
    /// not be found: the program had exited already when the spawn returned, or `/proc` could
    /// not tell (its status then comes from the init's report alone).
    pub fn program_pid(&self) -> Option<u32> {
        match &self.ns {
            Some(ns) => ns.program_pid(),
            None => Some(self.pid),
        }
    }

    /// The child's pidfd (see `pidfd_open(2)`); close-on-exec. With a PID
    /// namespace, the init's.
    pub fn pidfd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }

    /// Whether the program runs under an init of ours in its own PID
    /// namespace ([`ModuleCommand::pid_namespace`]).
    pub fn in_pid_namespace(&self) -> bool {
        self.ns.is_some()
    }

    /// Whether the PID namespace came with a user namespace of its own: `CLONE_NEWPID` was
    /// refused (no `CAP_SYS_ADMIN`), and the init was cloned with `CLONE_NEWUSER` too, the
    /// caller's uid and gid mapped to themselves (see [`pidns`] for what the program sees
    /// differently). `false` without a PID namespace.
    pub fn user_namespace(&self) -> bool {
        self.user_ns
    }

    /// A descriptor that polls readable once the program has exited: the
    /// pidfd; with a PID namespace the program's own pidfd, opened right
    /// after its exec (or, when it could not be, the init's report pipe:
    /// readable when the init reports the program's status, or hung up when
    /// the init is gone). [`try_wait`](Self::try_wait) then gives the status
    /// without waiting on anything but the init's report (see
    /// [`held_init`](Self::held_init)).
    pub fn exit_fd(&self) -> BorrowedFd<'_> {
        match &self.ns {
            Some(ns) => ns.fd(),
            None => self.pidfd.as_fd(),
        }
    }

    /// With a PID namespace: how its init was held (traced or stopped by a process of the
    /// module) when the program exited, so that the init could not reap or report it and the
    /// status came from the program's zombie instead (`exit_code` of `/proc/<pid>/stat`).
    /// `None` when the init reported the status, or the program has not exited. The module
    /// then still holds the init and whatever held it: stop it.
    pub fn held_init(&self) -> Option<HeldInit> {
        self.ns.as_ref().and_then(|ns| ns.held())
    }

    /// The namespaces the spawn went on without, in the order it dropped them: only
    /// `Root::spawn_with_fallback` drops any (each with the one line that says so:
    /// [`Fallback::line`]); empty otherwise.
    pub fn fallbacks(&self) -> &[Fallback] {
        &self.fallbacks
    }

    /// Which mechanism put the child into the cgroup.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Send a signal to the program through the pidfd
    /// (`pidfd_send_signal(2)`). With a PID namespace it goes to the init
    /// tagged for passing on, and the init passes it to the program (other
    /// signals reaching the init are ignored, as by any namespace's init).
    /// Fails with `ESRCH` once the child has been reaped.
    pub fn signal(&self, sig: Signal) -> io::Result<()> {
        if self.ns.is_some() {
            return pidns::send_tagged(self.pidfd.as_fd(), sig);
        }
        Ok(pidfd_send_signal(&self.pidfd, sig)?)
    }

    /// Block until the program exits, `EINTR` retried, and return its
    /// status; the same status again afterwards.
    ///
    /// Without a PID namespace this reaps the child
    /// (`waitid(P_PIDFD, WEXITED)`). With one it reads the status the init
    /// reports when it reaps the program (or, when the init is held in a
    /// stop as the program exits, the program's zombie's: see
    /// [`held_init`](Self::held_init)); the init itself lives on while
    /// anything else of the namespace does (stop the module, then
    /// [`wait_init`](Self::wait_init)). An init that died without reporting
    /// (killed, which killed the program too) gives the init's own status.
    ///
    /// Fails with `ECHILD` if someone else reaped the child (e.g. `SIGCHLD`
    /// set to `SIG_IGN`, or a `waitpid(-1)` loop elsewhere in the process).
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.program_status(true)?
            .ok_or_else(|| io::Error::other("no status for a blocking wait"))
    }

    /// Reap the child process itself: with a PID namespace the init, which
    /// exits once nothing else is left in its namespace (or is killed with
    /// the module). Without one, the same as [`wait`](Self::wait).
    pub fn wait_init(&mut self) -> io::Result<ExitStatus> {
        self.reap(WaitIdOptions::EXITED)?
            .ok_or_else(|| io::Error::other("waitid(P_PIDFD) returned no status"))
    }

    /// Wait at most `timeout` for the program to exit: its status (as [`wait`](Self::wait)
    /// gives it), or `Ok(None)` when it still runs after `timeout`. Sleeps in `poll(2)` on
    /// [`exit_fd`](Self::exit_fd), woken by the exit; `EINTR` is retried with what is left.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.try_wait()? {
                return Ok(Some(st));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let ts = Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let fd = self.exit_fd();
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The program's status if it has exited (without a PID namespace this
    /// reaps the child: `waitid(P_PIDFD, WEXITED|WNOHANG)`), else `Ok(None)`
    /// without blocking.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.program_status(false)
    }

    /// The program's status, waiting for it when `block`; `Ok(None)` only
    /// when not blocking and it still runs.
    fn program_status(&mut self, block: bool) -> io::Result<Option<ExitStatus>> {
        let Some(ns) = &mut self.ns else {
            let opts = if block {
                WaitIdOptions::EXITED
            } else {
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG
            };
            return self.reap(opts);
        };
        match ns.read(block)? {
            pidns::Report::Status(st) => Ok(Some(st)),
            pidns::Report::Pending => Ok(None),
            pidns::Report::Gone => {
                // The init died without reporting: it was killed, and the kernel killed the
                // program with it. Its own status is the best account of the program's end.
                let st = self.wait_init()?;
                if let Some(ns) = &mut self.ns {
                    ns.set(st);
                }
                Ok(Some(st))
            }
        }
    }

    /// `waitid(P_PIDFD)` of the child process itself, once; the status is kept.
    fn reap(&mut self, opts: WaitIdOptions) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let status = wait_pidfd(self.pidfd.as_fd(), opts)?;
        if status.is_some() {
            self.status = status;
        }
        Ok(status)
    }
}

/// `waitid(P_PIDFD, fd, options)` with `EINTR` retried, converted to an
/// [`ExitStatus`].
fn wait_pidfd(fd: BorrowedFd<'_>, options: WaitIdOptions) -> io::Result<Option<ExitStatus>> {
    loop {
        match waitid(WaitId::PidFd(fd), options) {
            Ok(Some(st)) => return exit_status_from(&st).map(Some),
            Ok(None) => return Ok(None),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Build the classic wait status: exit code `<< 8`, or the signal number
/// with `0x80` when a core was dumped.
fn exit_status_from(st: &WaitIdStatus) -> io::Result<ExitStatus> {
    if let Some(code) = st.exit_status() {
        Ok(ExitStatus::from_raw((code & 0xff) << 8))
    } else if let Some(sig) = st.terminating_signal() {
        let core = if st.dumped() { 0x80 } else { 0 };
        Ok(ExitStatus::from_raw((sig & 0x7f) | core))
    } else {
        Err(io::Error::other(format!(
            "waitid returned an unexpected child state (si_code {})",
            st.raw_code()
        )))
    }
}
