//! The placement lock: `flock(2)` on the root's directory, shared by every command that puts a
//! process into a module, exclusive for `init` while it moves the root's own processes into
//! `daemon/`.
//!
//! `init` reads the root's `cgroup.procs` and writes each pid into `daemon/cgroup.procs`. A
//! helper that sits in the root (a service's process before `init`, running `exec`) and moves
//! itself into its module between that read and that write was moved on into `daemon/`: its
//! command ran in the daemon's leaf, and a later `kill` of the module exited 0 while it lived on.
//! Under the lock a placement happens wholly before `init`'s read (it is no longer in the root
//! when `init` reads) or wholly after its writes (it leaves `daemon/` for its module).
//!
//! Each lock is taken on a descriptor of its own (a lock belongs to an open file description:
//! two threads of one daemon sharing the root's would share and release one lock), and
//! blocks: `init`'s critical section is bounded (64 rounds of moves), and a placement's is one
//! `mkdir` and one write. The cost on the spawn path is one `openat2`, one `flock` and one
//! `close`. A daemon that places its own children with [`Root::procs_fd`] takes no lock: it
//! runs after `init`, outside the root.

use std::os::unix::io::OwnedFd;

use rustix::fs::{FlockOperation, OFlags, flock};
use rustix::io::Errno;

use super::Root;
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

/// A held placement lock; released when dropped (its descriptor closed).
pub(crate) struct PlacementLock {
    _fd: Option<OwnedFd>,
}

impl Root {
    /// Take the placement lock: shared for a placement, `exclusive` for `init`'s evacuation.
    pub(crate) fn placement_lock(&self, exclusive: bool) -> Result<PlacementLock> {
        if mutation::active(Control::PlacementNoLock) {
            return Ok(PlacementLock { _fd: None });
        }
        let fd = self
            .dir
            .open_beneath("", OFlags::RDONLY | OFlags::DIRECTORY)
            .map_err(|e| Error::io("open", self.path(), e))?;
        let op = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        loop {
            match flock(&fd, op) {
                Ok(()) => return Ok(PlacementLock { _fd: Some(fd) }),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(Error::io("flock", self.path(), e)),
            }
        }
    }
}
