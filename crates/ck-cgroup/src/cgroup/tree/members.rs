//! The members of a subtree: `cgroup.procs` of each cgroup, `cgroup.threads` of a threaded one.

use std::collections::HashSet;
use std::os::unix::io::{AsFd, BorrowedFd};

use rustix::io::Errno;

use super::{Cursor, Visitor, open_child, read_at, walk};
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::gone::is_gone;
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

/// The processes of a subtree: each cgroup's `cgroup.procs`; where that is `EOPNOTSUPP` (a
/// threaded cgroup, whose processes its threaded domain lists), the processes of the thread ids
/// in its `cgroup.threads`. Each pid once, in the order found.
#[derive(Default)]
pub(crate) struct Members {
    pub(crate) pids: Vec<u32>,
    seen: HashSet<u32>,
}

impl Members {
    fn add(&mut self, pid: u32) {
        if self.seen.insert(pid) {
            self.pids.push(pid);
        }
    }
}

impl Visitor for Members {
    fn enter(&mut self, at: &Cursor<'_>) -> Result<()> {
        members_of(at, |pid| self.add(pid))
    }
}

/// Each process of the one cgroup `at` (not below it): `cgroup.procs`; where that is
/// `EOPNOTSUPP` (a threaded cgroup, whose processes its threaded domain lists), the processes of
/// the thread ids in its `cgroup.threads`. A cgroup removed meanwhile has none.
pub(crate) fn members_of(at: &Cursor<'_>, mut f: impl FnMut(u32)) -> Result<()> {
    match read_at(at.fd(), "cgroup.procs") {
        Ok(t) => crate::cgroup::parse::pids(&t).into_iter().for_each(f),
        // Removed while we walk: empty.
        Err(e) if is_gone(e) => {}
        Err(Errno::OPNOTSUPP) if !mutation::active(Control::NoThreadsFallback) => {
            match read_at(at.fd(), "cgroup.threads") {
                Ok(t) => {
                    for tid in crate::cgroup::parse::pids(&t) {
                        // A thread that exited meanwhile is gone with its process or alone.
                        if let Some(tgid) = tgid_of(tid) {
                            f(tgid);
                        }
                    }
                }
                Err(e) if is_gone(e) => {}
                Err(e) => return Err(Error::io("read", at.path_of("cgroup.threads"), e)),
            }
        }
        Err(e) => return Err(Error::io("read", at.path_of("cgroup.procs"), e)),
    }
    Ok(())
}

/// The process (thread group) of thread `tid`, from `/proc/<tid>/status`.
fn tgid_of(tid: u32) -> Option<u32> {
    crate::cgroup::parse::proc_status_tgid(&crate::cgroup::procfs::read_text(tid, "status").ok()?)
}

/// The pids in `rel` beneath `base` and every cgroup below it (see [`Members`]).
pub(crate) fn members(base: &CgroupDir, rel: &str) -> Result<Vec<u32>> {
    let mut m = Members::default();
    walk(base, rel, &mut m)?;
    Ok(m.pids)
}

/// Whether the cgroup `name` in the directory `at` is populated (`None`: could not be read).
pub(super) fn populated_at(at: BorrowedFd<'_>, name: &str) -> Option<bool> {
    let fd = open_child(at, name).ok()?;
    crate::cgroup::parse::events(&read_at(fd.as_fd(), "cgroup.events").ok()?).populated
}
