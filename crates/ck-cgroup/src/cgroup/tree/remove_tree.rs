//! Removing a subtree deepest first.

use std::os::unix::io::BorrowedFd;
use std::time::{Duration, Instant};

use rustix::fs::AtFlags;
use rustix::io::Errno;

use super::{Cursor, Visitor, members, populated_at, walk};
use crate::cgroup::dir::CgroupDir;
use crate::error::{Error, Result};

/// `rmdir` of the cgroup `name` in the directory `at`. `EBUSY` of a cgroup that holds no
/// process (its last one still exiting, or a child cgroup made meanwhile) is retried until
/// `deadline`; of a populated one it is returned at once (the caller decides: kill again, or
/// report). A cgroup already gone is fine.
pub(crate) fn rmdir_at(
    at: BorrowedFd<'_>,
    name: &str,
    deadline: Instant,
) -> std::result::Result<(), Errno> {
    loop {
        match rustix::fs::unlinkat(
            at,
            &*crate::id::name_bytes::bytes_of(name),
            AtFlags::REMOVEDIR,
        ) {
            Ok(()) | Err(Errno::NOENT) => return Ok(()),
            Err(Errno::BUSY)
                if Instant::now() < deadline && populated_at(at, name) != Some(true) =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Removes every cgroup of a walk's subtree below its top, deepest first, each relative to its
/// parent's fd.
pub(crate) struct Remover {
    pub(crate) deadline: Instant,
}

impl Visitor for Remover {
    fn child_done(&mut self, parent: &Cursor<'_>, name: &str) -> Result<()> {
        rmdir_at(parent.fd(), name, self.deadline)
            .map_err(|e| Error::io("rmdir", parent.path_of(name), e))
    }
}

/// What the removal of a directory found or did: one outcome for the `rmdir` of a subtree's top,
/// `remove`, `prune`, a stop's removal and the systemd backend's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Removed.
    Removed,
    /// Not there: never, or no longer the directory the walk removed below (someone removed
    /// it, or made another of its name).
    Gone,
    /// Not removed: it holds processes (how many).
    Populated(usize),
}

/// Remove every cgroup below `rel` under `dir`, deepest first, each relative to its parent's fd,
/// then the top with `rmdir_top`; while that says `EBUSY` and the top holds no process (a child
/// cgroup made meanwhile, its last process still exiting), walk and try again, until a bounded
/// deadline. Any other errno is the failure, named with `rel`'s path.
pub(crate) fn remove_subtree_then(
    dir: &CgroupDir,
    rel: &str,
    mut rmdir_top: impl FnMut(Instant) -> std::result::Result<Removal, Errno>,
) -> Result<Removal> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        walk(dir, rel, &mut Remover { deadline })?;
        match rmdir_top(deadline) {
            Ok(done) => return Ok(done),
            Err(Errno::BUSY)
                if Instant::now() < deadline && members(dir, rel).is_ok_and(|p| p.is_empty()) =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(Error::io("rmdir", dir.display_path(rel), e)),
        }
    }
}

/// Remove `rel` under `dir` and every cgroup below it, deepest first, at any depth
/// ([`remove_subtree_then`]). A cgroup that is already gone is fine.
pub(crate) fn remove_tree(dir: &CgroupDir, rel: &str) -> Result<()> {
    remove_subtree_then(dir, rel, |_| match dir.rmdir_raw(rel) {
        Ok(()) | Err(Errno::NOENT) => Ok(Removal::Removed),
        Err(e) => Err(e),
    })
    .map(|_| ())
}
