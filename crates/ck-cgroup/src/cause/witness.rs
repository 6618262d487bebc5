//! The processes a stop saw in the tree, held by pidfd, so that the stop's success is checked
//! against them after the tree reads `populated 0`: each must have exited.
//!
//! `populated 0` says that no task is linked to the subtree's cgroups any more. A task counts
//! as gone from its cgroup from `cgroup_exit()` on, a little before it has exited
//! (`exit_notify()`, where its pidfd turns readable), and one that moved itself out (a module
//! that can write another cgroup's `cgroup.procs`) counts as gone at once. So `populated 0`
//! alone is not "every process of the module is dead". The stop holds a pidfd on each member
//! it listed (at most [`HOLD`] of them, and a quarter of the descriptor limit: a listing of a
//! fork storm holds thousands) and, once
//! the tree is empty, waits until the deadline for every one of them to have exited; one that
//! still runs then is reported by pid, and the stop did not succeed.

use std::os::unix::io::OwnedFd;
use std::time::Instant;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, pidfd_open};

use crate::mutation::{self, Control};

/// At most this many pidfds are held, and never more than a quarter of the soft
/// `RLIMIT_NOFILE` (the stop's own walks and pidfd batches need the rest: `prlimit --nofile=64`).
const HOLD: usize = 256;

fn cap() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    HOLD.min(usize::try_from(soft / 4).unwrap_or(HOLD))
}

/// The members a stop saw, by pidfd.
#[derive(Default)]
pub(crate) struct Witness {
    held: Vec<(u32, OwnedFd)>,
    /// No more descriptors (EMFILE, ENFILE): nothing more is held.
    full: bool,
}

impl Witness {
    /// Hold a pidfd on each of `pids` not held yet (a pid that has exited is skipped).
    pub(crate) fn saw(&mut self, pids: &[u32]) {
        let cap = cap();
        for &pid in pids {
            if self.full || self.held.len() >= cap {
                return;
            }
            if self.held.iter().any(|(p, _)| *p == pid) {
                continue;
            }
            let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
                continue;
            };
            match pidfd_open(p, PidfdFlags::empty()) {
                Ok(fd) => self.held.push((pid, fd)),
                Err(Errno::MFILE) | Err(Errno::NFILE) => {
                    // Leave room for the stop itself: half of those held are let go.
                    self.held.truncate(self.held.len() / 2);
                    self.full = true;
                }
                Err(_) => {}
            }
        }
    }

    /// Wait until every process held has exited, or `deadline`; the pids of those that still
    /// run then (sorted). A pidfd polls readable once its process has exited (a zombie too).
    pub(crate) fn still_running(&self, deadline: Instant) -> Vec<u32> {
        if mutation::active(Control::StopTrustsPopulated) {
            return Vec::new();
        }
        let mut left: Vec<&(u32, OwnedFd)> = self.held.iter().collect();
        loop {
            left.retain(|(_, fd)| !exited(fd));
            let now = Instant::now();
            if left.is_empty() || now >= deadline {
                break;
            }
            // Wait on all of them at once; any one exiting wakes the poll.
            let wait = deadline - now;
            let ts = Timespec {
                tv_sec: wait.as_secs() as _,
                tv_nsec: wait.subsec_nanos() as _,
            };
            let mut fds: Vec<PollFd<'_>> = left
                .iter()
                .map(|(_, fd)| PollFd::new(fd, PollFlags::IN))
                .collect();
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(_) => break,
            }
        }
        let mut pids: Vec<u32> = left.iter().map(|(p, _)| *p).collect();
        pids.sort_unstable();
        pids
    }
}

impl Witness {
    /// How many processes are held.
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    /// The pids of those held that still run now (sorted), without waiting: `watch`'s check
    /// that a kill systemd-oomd's mark claims took place.
    pub(crate) fn running_now(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self
            .held
            .iter()
            .filter(|(_, fd)| !exited(fd))
            .map(|(p, _)| *p)
            .collect();
        pids.sort_unstable();
        pids
    }
}

/// The pidfd's process has exited (without waiting).
fn exited(fd: &OwnedFd) -> bool {
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}
