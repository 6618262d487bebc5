//! One wait for many modules: [`wait_any`] sleeps in one `poll(2)` on the exit descriptors of
//! several [`ModuleChild`]ren and says which one ended; a [`Waiter`] holds the children by a key
//! of the caller's and hands back the one that ended, so that one thread supervises every
//! module. No async runtime: an async daemon registers each child's
//! [`exit_fd`](ModuleChild::exit_fd) with its reactor instead ([`Waiter::exit_fds`]; tokio's
//! `AsyncFd`, see `examples/tokio_supervisor.rs`), and calls
//! [`try_wait`](ModuleChild::try_wait) when one polls readable.

use std::io;
use std::os::fd::BorrowedFd;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;

use super::ModuleChild;
use crate::mutation::{self, Control};

/// A child of a [`wait_any`] set whose program has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// Its index in the set.
    pub index: usize,
    /// The program's status, as [`ModuleChild::wait`] gives it (kept by the child: a later
    /// `wait`, `try_wait` or `Root::death` gives the same).
    pub status: ExitStatus,
}

/// Wait, in one `poll(2)` on every child's [`exit_fd`](ModuleChild::exit_fd), at most
/// `timeout` (`None`: for ever) for the program of any of `children` to end: the first ended
/// one in the set's order, with its status (`EINTR` retried with the time left), or `Ok(None)`
/// when none ended within `timeout`, or the set is empty and `timeout` is not `None`.
///
/// A child that has ended stays ended: it is given again by the next call until the caller
/// takes it out of the set (a [`Waiter`] does that itself). Without a PID namespace the status
/// is the child's reaped status ([`ModuleChild::try_wait`]); with one, the init's report.
/// An empty set with no timeout is bad input (`InvalidInput`): nothing could end the wait.
pub fn wait_any(
    children: &mut [&mut ModuleChild],
    timeout: Option<Duration>,
) -> io::Result<Option<Ended>> {
    if children.is_empty() && timeout.is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "wait_any of no children without a timeout would wait for ever: give it a child or a timeout",
        ));
    }
    // Mutation control (`CK_MUTATION=wait-any-first-only`): the first child alone is looked
    // at and polled, so another child's end does not end the wait.
    let children = if mutation::active(Control::WaitAnyFirstOnly) {
        let first = children.len().min(1);
        &mut children[..first]
    } else {
        children
    };
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        for (index, child) in children.iter_mut().enumerate() {
            if let Some(status) = child.try_wait()? {
                return Ok(Some(Ended { index, status }));
            }
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return Ok(None);
        }
        let fds: Vec<BorrowedFd<'_>> = children.iter().map(|c| c.exit_fd()).collect();
        poll_any(&fds, left)?;
    }
}

/// Sleep in one `poll(2)` until any of `fds` polls readable (or hung up), at most `left`.
fn poll_any(fds: &[BorrowedFd<'_>], left: Option<Duration>) -> io::Result<()> {
    let mut polled: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::new(fd, PollFlags::IN))
        .collect();
    let ts = left.map(|l| Timespec {
        tv_sec: i64::try_from(l.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(l.subsec_nanos()),
    });
    match poll(&mut polled, ts.as_ref()) {
        Ok(_) | Err(Errno::INTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Children held by a key of the caller's (a module id, say), waited on together: the
/// synchronous daemon's one loop. [`wait`](Self::wait) hands back a child whose program has
/// ended, out of the set, with its key; the daemon reaps it (`Root::reap`), and
/// [`insert`](Self::insert)s the next spawn of the module. A child inserted again goes last,
/// so one that ends again at once does not starve the others.
///
/// ```no_run
/// use ck_cgroup::spawn::{ModuleCommand, Waiter};
/// use ck_cgroup::stop::StopOptions;
/// use ck_cgroup::{ModuleId, Root};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let root = Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
/// let mut waiter = Waiter::new();
/// for name in ["a", "b", "c"] {
///     let id = ModuleId::new(name)?;
///     let child = root.spawn(&id, &ModuleCommand::new("/usr/bin/worker"))?;
///     waiter.insert(id, child);
/// }
/// while let Some((id, mut child)) = waiter.wait(None)? {
///     let r = root.reap(&mut child, &StopOptions::default())?;
///     println!("{id}: {:?}, charged {:?}", r.death.cause, r.death.charged);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Waiter<K> {
    children: Vec<(K, ModuleChild)>,
}

impl<K> Default for Waiter<K> {
    fn default() -> Self {
        Waiter {
            children: Vec::new(),
        }
    }
}

impl<K> Waiter<K> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `child` under `key`, last in the order [`wait`](Self::wait) looks in.
    pub fn insert(&mut self, key: K, child: ModuleChild) {
        self.children.push((key, child));
    }

    /// Take the child held under `key` out of the set (to stop it, say).
    pub fn remove(&mut self, key: &K) -> Option<ModuleChild>
    where
        K: PartialEq,
    {
        let at = self.children.iter().position(|(k, _)| k == key)?;
        Some(self.children.remove(at).1)
    }

    /// How many children it holds.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// The keys, in the order [`wait`](Self::wait) looks in.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.children.iter().map(|(k, _)| k)
    }

    /// Each child's key and [`exit_fd`](ModuleChild::exit_fd), for an async reactor: when one
    /// polls readable, [`try_wait`](ModuleChild::try_wait) of that child (through
    /// [`get_mut`](Self::get_mut)) gives its status.
    pub fn exit_fds(&self) -> impl Iterator<Item = (&K, BorrowedFd<'_>)> {
        self.children.iter().map(|(k, c)| (k, c.exit_fd()))
    }

    /// The child held under `key`.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut ModuleChild>
    where
        K: PartialEq,
    {
        self.children
            .iter_mut()
            .find_map(|(k, c)| (k == key).then_some(c))
    }

    /// Wait at most `timeout` (`None`: for ever) for any child's program to end ([`wait_any`]):
    /// that child, taken out of the set, with its key (its status is kept:
    /// [`ModuleChild::wait`] or `Root::reap` gives it). `Ok(None)` when none ended within
    /// `timeout`, and at once when the set is empty: a loop `while let Some(..) =
    /// waiter.wait(None)?` ends when no child is left.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<Option<(K, ModuleChild)>> {
        if self.children.is_empty() {
            return Ok(None);
        }
        let ended = {
            let mut set: Vec<&mut ModuleChild> = self.children.iter_mut().map(|(_, c)| c).collect();
            wait_any(&mut set, timeout)?
        };
        Ok(ended.map(|e| self.children.remove(e.index)))
    }
}
