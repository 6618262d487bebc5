//! Waiting on `cgroup.events` until a subtree is empty, with a deadline.
//!
//! The kernel generates a file-modified event on `cgroup.events` whenever `populated` changes
//! (cgroup-v2 document, "Core Interface Files"); on kernfs that wakes `poll(2)` with `POLLPRI`.
//! So the wait is on the whole subtree, never on one process, and never a sleep loop.

use std::os::unix::io::OwnedFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::cgroup::parse;
use crate::cgroup::root::{CgroupDir, read_fd};
use crate::error::{Error, Result};

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// `populated 0`: nothing is left in the subtree (or the cgroup is gone).
    Empty,
    /// The deadline passed with processes still in the subtree.
    TimedOut,
}

/// Wait until `<rel>/cgroup.events` says `populated 0`, or `timeout` passes.
///
/// A cgroup that disappears while waiting counts as empty.
pub fn wait_empty(dir: &CgroupDir, rel: &str, timeout: Duration) -> Result<Waited> {
    wait_events(dir, rel, timeout, |e| e.populated == Some(false))
}

/// Wait until `done` holds for `<rel>/cgroup.events`, or `timeout` passes ([`Waited::Empty`]
/// stands for "done"). A cgroup that disappears counts as done.
pub fn wait_events(
    dir: &CgroupDir,
    rel: &str,
    timeout: Duration,
    done: impl Fn(&parse::Events) -> bool,
) -> Result<Waited> {
    let events_rel = join(rel, "cgroup.events");
    let fd = match dir.open_beneath(&events_rel, OFlags::RDONLY) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(Waited::Empty),
        Err(e) => return Err(Error::io("open", dir.display_path(&events_rel), e)),
    };
    wait_fd(&fd, timeout, done).map_err(|e| Error::io("wait on", dir.display_path(&events_rel), e))
}

/// Wait on an open `cgroup.events` fd until `done` holds or the timeout.
pub fn wait_fd(
    fd: &OwnedFd,
    timeout: Duration,
    done: impl Fn(&parse::Events) -> bool,
) -> std::result::Result<Waited, Errno> {
    let deadline = Instant::now() + timeout;
    loop {
        // Reading re-arms the notification: read first, then poll.
        let text = match read_fd(fd) {
            Ok(t) => t,
            // The cgroup was removed under us.
            Err(Errno::NODEV) | Err(Errno::NOENT) => return Ok(Waited::Empty),
            Err(e) => return Err(e),
        };
        if done(&parse::events(&text)) {
            return Ok(Waited::Empty);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(Waited::TimedOut);
        }
        let left = deadline - now;
        let ts = Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        };
        let mut fds = [PollFd::new(fd, PollFlags::PRI)];
        match poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

pub(crate) fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}
