//! Containment: the module's processes in a cgroup namespace rooted at the module.
//!
//! [`ModuleCommand::cgroup_namespace`](super::ModuleCommand::cgroup_namespace) (on by default) makes the child, once it is in the
//! module, call `unshare(CLONE_NEWCGROUP)` before it executes the program (with a PID
//! namespace, the init does it before it starts the program). The new namespace is rooted at the
//! cgroup the caller is in at that moment: the module, since the child was born there
//! (`CLONE_INTO_CGROUP`) or moved itself there (the pre-exec write, `exec`). The program reads
//! `0::/` in `/proc/self/cgroup`. On a cgroup2 mounted with `nsdelegate` the kernel then
//! refuses, for every process inside the namespace whatever its capabilities, a migration whose
//! source or destination is outside the namespace's root (`ENOENT`), and a write to a file of the
//! namespace's root other than `cgroup.procs`, `cgroup.threads` and `cgroup.subtree_control`
//! (`EPERM`): the module can neither leave its module nor change its own limits. Without
//! `nsdelegate` the namespace changes only what the module sees.
//!
//! `unshare(CLONE_NEWCGROUP)` needs `CAP_SYS_ADMIN`. A caller without it (a helper run by a
//! user's manager) gets `EPERM`; the child then makes the cgroup namespace together with a new
//! user namespace (`CLONE_NEWUSER | CLONE_NEWCGROUP`, which an unprivileged process may do) in
//! which its own uid and gid are mapped to themselves (`setgroups` denied). The module keeps its
//! uid and gid; what it sees differently there: other uids and gids (root's files, say) show as
//! the overflow ids (65534, "nobody"), setuid and setgid programs of unmapped owners do not
//! change ids, `setgroups(2)` is refused, and the capabilities the new user namespace gave it end
//! at `execve` (its uid there is not 0); it never had any over the host (it cannot `setns` back
//! into the host's cgroup namespace).
//!
//! A module that keeps `CAP_SYS_ADMIN` in the host's user namespace (a root module) can
//! `setns(2)` into another cgroup namespace, the host's (`/proc/1/ns/cgroup`) included, and is
//! then no longer contained; see docs/operations.md for what closes that.

use std::io;
use std::process::Command;

use libc::c_int;
use rustix::io::Errno;

use super::Fallback;
pub use super::clone3::nsmaps::CgroupNamespace;
pub(crate) use super::clone3::nsmaps::Maps;
use super::clone3::nsmaps::{CGROUPNS_REFUSED_MARK as REFUSED_MARK, enter_steps};
use super::clone3::{self, PreExecStep};

use crate::mutation::{self, Control};

/// Whether the namespace is made at all; `false` only for the `CK_MUTATION=no-cgroup-namespace`
/// test feature.
pub(super) const ENABLED: bool = !mutation::active(Control::NoCgroupNamespace);

/// No cgroup namespace could be made for the module; the payload of the [`io::Error`] that
/// [`spawn_into`](super::spawn_into) returns then (see [`cgroup_namespace_refused`]).
#[derive(Debug)]
pub struct CgroupNamespaceRefused {
    /// The errno of the last step tried (`unshare(CLONE_NEWUSER | CLONE_NEWCGROUP)` or a write
    /// of the user namespace's maps; `unshare(CLONE_NEWCGROUP)` when it failed with another errno
    /// than `EPERM`).
    pub errno: Errno,
}

impl std::fmt::Display for CgroupNamespaceRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no cgroup namespace for the module (unshare CLONE_NEWCGROUP, then with a user namespace): {}",
            crate::error::errno_text(self.errno)
        )
    }
}

impl std::error::Error for CgroupNamespaceRefused {}

/// The errno when `e` says that no cgroup namespace could be made for the module (the spawn
/// started nothing); `None` for every other error.
pub fn cgroup_namespace_refused(e: &io::Error) -> Option<Errno> {
    e.get_ref()?
        .downcast_ref::<CgroupNamespaceRefused>()
        .map(|r| r.errno)
}

/// The error for a report code that carries [`REFUSED_MARK`].
pub(super) fn refused(code: c_int) -> io::Error {
    let raw = code & !REFUSED_MARK;
    io::Error::new(
        io::Error::from_raw_os_error(raw).kind(),
        CgroupNamespaceRefused {
            errno: Errno::from_raw_os_error(raw),
        },
    )
}

/// An error as it came back from a child: one whose raw errno carries [`REFUSED_MARK`] becomes
/// the namespace's error.
pub(super) fn unmark(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) if code & REFUSED_MARK != 0 => refused(code),
        _ => e,
    }
}

/// For `ck-cgroup exec` and daemons that move a process themselves: put the calling process in
/// a new cgroup namespace rooted at the cgroup it is in now (call it after the move into the
/// module, before `execve(2)`), as [`ModuleCommand::cgroup_namespace`](super::ModuleCommand::cgroup_namespace) does for a spawned child:
/// with `CAP_SYS_ADMIN` a cgroup namespace alone, else one together with a user namespace in
/// which the caller's uid and gid are mapped to themselves (the caller must then be
/// single-threaded, else `EINVAL`). `Ok(None)` only under the `CK_MUTATION=no-cgroup-namespace`
/// test feature.
///
/// On failure the error is a [`CgroupNamespaceRefused`] and the `bool` says whether the caller
/// was left changed: in a user namespace whose maps could not be written, where it must not go
/// on to execute the module's program. Unchanged, the caller may go on without a namespace.
pub fn enter_cgroup_namespace() -> Result<Option<CgroupNamespace>, (io::Error, bool)> {
    if !ENABLED {
        return Ok(None);
    }
    let maps = Maps::new().map_err(|e| (e, false))?;
    enter_steps(&maps)
        .map(Some)
        .map_err(|(e, changed)| (refused(e | REFUSED_MARK), changed))
}

/// [`enter_cgroup_namespace`], going on without one where the host cannot make it, as
/// `ck-cgroup exec` does (and `Root::spawn_with_fallback`
/// for a spawn): `Ok(None)` in a new namespace; `Ok(Some(fallback))` where none could be made and
/// the caller is unchanged: it may execute the module's program without one, and says so
/// ([`Fallback::line`]: print it); an error where the caller was left changed (in a user
/// namespace whose maps could not be written), where it must not execute the program.
#[must_use = "a fallback is said, never silent: print its Fallback::line"]
pub fn enter_cgroup_namespace_or_fall_back() -> io::Result<Option<Fallback>> {
    match enter_cgroup_namespace() {
        Ok(_) => Ok(None),
        // Mutation: the caller goes on without a namespace and nothing says so.
        Err((_, false)) if mutation::active(Control::CgroupnsFallbackSilent) => Ok(None),
        Err((e, false)) => Ok(Some(Fallback::NoCgroupNamespace {
            reason: cgroup_namespace_refused(&e)
                .map_or_else(|| e.to_string(), crate::error::errno_text),
        })),
        Err((e, true)) => Err(e),
    }
}

/// Install a `pre_exec` hook that makes the namespace (after the placement hook, which was
/// installed first); its failure comes back marked (see [`unmark`]).
pub(super) fn before_exec(cmd: &mut Command, maps: Maps) {
    clone3::pre_exec(cmd, PreExecStep::CgroupNamespace(maps));
}
