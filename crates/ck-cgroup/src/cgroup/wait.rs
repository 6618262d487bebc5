//! Waiting on `cgroup.events` until a subtree is empty, with a deadline.
//!
//! The kernel generates a file-modified event on `cgroup.events` whenever `populated` changes
//! (cgroup-v2 document, "Core Interface Files"); on kernfs that wakes `poll(2)` with `POLLPRI`.
//! So the wait is on the whole subtree, never on one process, and never a sleep loop.
//!
//! The kernel sends that event at most once per 10 ms and defers one that comes sooner to a
//! timer; a cgroup removed meanwhile (another stop's `rmdir`) loses the deferred event, and kernfs
//! wakes no poller at a removal. So [`wait_events`] watches the directory that holds the cgroup
//! with inotify as well (`IN_DELETE`, which the `rmdir` raises there; a cgroup's own directory
//! gets no `IN_DELETE_SELF`, kernfs keeps its link count), and at each such event reads
//! `cgroup.events` again, which answers `ENODEV` once the cgroup is removed: a wait on a cgroup
//! that another process empties and removes ends at once, not at its timeout (two stops of one
//! module, a stop beside a supervisor's reap).

use std::os::unix::io::OwnedFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::cgroup::dir::{CgroupDir, read_cgroup_file};
use crate::cgroup::gone::is_gone;
use crate::cgroup::parse;
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

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
/// stands for "done"). A cgroup that disappears counts as done, also while its file is opened
/// (`ENODEV`, `ENOENT`: `crate::cgroup::gone`).
pub fn wait_events(
    dir: &CgroupDir,
    rel: &str,
    timeout: Duration,
    done: impl Fn(&parse::Events) -> bool,
) -> Result<Waited> {
    let events_rel = join(rel, "cgroup.events");
    let fd = match dir.open_beneath(&events_rel, OFlags::RDONLY) {
        Ok(fd) => fd,
        // Removed, or being removed by another process (a stop that lost the race to another
        // stop read this as a failure: `ENODEV`, exit 1).
        Err(e) if is_gone(e) => return Ok(Waited::Empty),
        Err(e) => return Err(Error::io("open", dir.display_path(&events_rel), e)),
    };
    let removal = removal_watch(dir, rel);
    wait_fd_with(&fd, removal.as_ref(), timeout, done)
        .map_err(|e| Error::io("wait on", dir.display_path(&events_rel), e))
}

/// An inotify fd watching the directory that holds the cgroup `rel` for removals in it
/// (`IN_DELETE`, `IN_MOVED_FROM`, `IN_DELETE_SELF`), through `/proc/self/fd/N/..` of the
/// cgroup's open directory; `None` where it cannot be set up (the wait then relies on
/// `cgroup.events` alone, as before), or under the mutation `wait-blind-to-removal`.
fn removal_watch(dir: &CgroupDir, rel: &str) -> Option<OwnedFd> {
    use rustix::fs::inotify;
    use std::os::unix::io::AsRawFd;
    if mutation::active(Control::WaitBlindToRemoval) {
        return None;
    }
    let d = if rel.is_empty() {
        None
    } else {
        Some(
            dir.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY)
                .ok()?,
        )
    };
    let raw = d.as_ref().map_or(dir.fd().as_raw_fd(), |d| d.as_raw_fd());
    let ino = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).ok()?;
    inotify::add_watch(
        &ino,
        format!("/proc/self/fd/{raw}/.."),
        inotify::WatchFlags::DELETE
            | inotify::WatchFlags::MOVED_FROM
            | inotify::WatchFlags::DELETE_SELF,
    )
    .ok()?;
    Some(ino)
}

/// Read an inotify fd (non-blocking) until it is empty: its events only wake the wait.
fn drain(ino: &OwnedFd) {
    let mut buf = [0u8; 4096];
    while matches!(rustix::io::read(ino, &mut buf), Ok(n) if n > 0) {}
}

/// Wait on an open `cgroup.events` fd until `done` holds or the timeout.
pub fn wait_fd(
    fd: &OwnedFd,
    timeout: Duration,
    done: impl Fn(&parse::Events) -> bool,
) -> std::result::Result<Waited, Errno> {
    wait_fd_with(fd, None, timeout, done)
}

/// [`wait_fd`], woken too by `removal` (an inotify fd of [`removal_watch`]): a removal of the
/// cgroup counts as done.
fn wait_fd_with(
    fd: &OwnedFd,
    removal: Option<&OwnedFd>,
    timeout: Duration,
    done: impl Fn(&parse::Events) -> bool,
) -> std::result::Result<Waited, Errno> {
    let deadline = Instant::now() + timeout;
    loop {
        // Reading re-arms the notification: read first, then poll.
        let text = match read_cgroup_file(fd, "cgroup.events") {
            Ok(t) => t,
            // The cgroup was removed under us.
            Err(e) if is_gone(e) => return Ok(Waited::Empty),
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
        let polled = match removal {
            Some(ino) => {
                let mut fds = [
                    PollFd::new(fd, PollFlags::PRI),
                    PollFd::new(ino, PollFlags::IN),
                ];
                let r = poll(&mut fds, Some(&ts));
                if fds[1].revents().contains(PollFlags::IN) {
                    // A removal beside it or of it: the read above the poll tells which.
                    drain(ino);
                }
                r
            }
            None => poll(&mut [PollFd::new(fd, PollFlags::PRI)], Some(&ts)),
        };
        match polled {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// How [`wait_events_or_gone`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Until {
    /// `done` held.
    Done,
    /// The cgroup was removed meanwhile.
    Gone,
    /// The timeout passed.
    TimedOut,
}

/// [`wait_events`] for a cgroup that another process may remove meanwhile (a `freeze` racing a
/// `kill`): a poll on `cgroup.events` is not woken when its cgroup is removed (kernfs wakes it
/// for changes only), so the directory that holds the cgroup (`parent_rel`, whose entry is
/// `name`) is watched with inotify as well (`IN_DELETE`, `IN_MOVED_FROM`: the `rmdir`), and
/// the wait ends at once with [`Until::Gone`] when `name` no longer is the directory `cgroup`
/// (an open handle of it).
pub(crate) fn wait_events_or_gone(
    dir: &CgroupDir,
    parent_rel: &str,
    name: &str,
    cgroup: &CgroupDir,
    timeout: Duration,
    done: impl Fn(&parse::Events) -> bool,
) -> Result<Until> {
    use rustix::fs::inotify;
    use std::os::unix::io::AsRawFd;
    let parent = dir
        .open_beneath(parent_rel, OFlags::RDONLY | OFlags::DIRECTORY)
        .map_err(|e| Error::io("open", dir.display_path(parent_rel), e))?;
    let gone = || {
        let Ok(there) = rustix::fs::statat(
            &parent,
            &*crate::id::name_bytes::bytes_of(name),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        ) else {
            return true;
        };
        rustix::fs::fstat(cgroup.fd()).map_or(true, |st| {
            st.st_ino != there.st_ino || st.st_dev != there.st_dev
        })
    };
    let events_rel = join(parent_rel, &join(name, "cgroup.events"));
    let ino = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
        .map_err(|e| Error::io("set up inotify for", dir.display_path(parent_rel), e))?;
    if !mutation::active(Control::FreezeBlindToRemoval) {
        inotify::add_watch(
            &ino,
            format!("/proc/self/fd/{}", parent.as_raw_fd()),
            inotify::WatchFlags::DELETE
                | inotify::WatchFlags::MOVED_FROM
                | inotify::WatchFlags::DELETE_SELF,
        )
        .map_err(|e| Error::io("watch", dir.display_path(parent_rel), e))?;
    }
    let fd = match cgroup.open_beneath("cgroup.events", OFlags::RDONLY) {
        Ok(fd) => fd,
        Err(e) if is_gone(e) => return Ok(Until::Gone),
        Err(e) => return Err(Error::io("open", dir.display_path(&events_rel), e)),
    };
    let deadline = Instant::now() + timeout;
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    loop {
        let text = match read_cgroup_file(&fd, "cgroup.events") {
            Ok(t) => t,
            Err(e) if is_gone(e) => return Ok(Until::Gone),
            Err(e) => return Err(Error::io("read", dir.display_path(&events_rel), e)),
        };
        if done(&parse::events(&text)) {
            return Ok(Until::Done);
        }
        // Checked after the watch was set and the events read: a removal before either is
        // seen here, one after wakes the poll.
        if gone() {
            return Ok(Until::Gone);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(Until::TimedOut);
        }
        let left = deadline - now;
        let ts = Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        };
        let mut fds = [
            PollFd::new(&fd, PollFlags::PRI),
            PollFd::new(&ino, PollFlags::IN),
        ];
        match poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(Error::io("wait on", dir.display_path(&events_rel), e)),
        }
        // Drain what inotify said (the checks above say what it means).
        while let Ok(n) = rustix::io::read(&ino, &mut buf[..]) {
            if n.0.is_empty() {
                break;
            }
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
