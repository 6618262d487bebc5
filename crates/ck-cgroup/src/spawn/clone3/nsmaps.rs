//! The child-side steps of the namespaces a spawn makes: the identity maps of a new user
//! namespace (built before the clone), their writes, and the entry into a cgroup namespace.
//! Raw system calls on prepared data only: they run in a freshly forked child (and in the
//! PID namespace's init, [`super::pidns_init`]). The parent-side API is [`crate::spawn::cgroupns`]
//! and [`crate::spawn::pidns`]; the marks below tag, in the child's report, an errno of these
//! steps (errnos are below 4096).

use std::ffi::{CStr, CString};
use std::io;

use libc::{CLONE_NEWCGROUP, CLONE_NEWUSER, c_int};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::{cstring, unshare_namespaces};

/// Marks an errno of the cgroup namespace step.
pub(in crate::spawn) const CGROUPNS_REFUSED_MARK: c_int = 0x4000_0000;

/// Marks an errno of the PID namespace's init writing its user namespace's maps.
pub(in crate::spawn) const USERNS_REFUSED_MARK: c_int = 0x2000_0000;

/// How the module's cgroup namespace was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CgroupNamespace {
    /// `unshare(CLONE_NEWCGROUP)`, with `CAP_SYS_ADMIN`.
    Own,
    /// `unshare(CLONE_NEWUSER | CLONE_NEWCGROUP)` without `CAP_SYS_ADMIN`: the own uid and gid
    /// mapped to themselves in a new user namespace, `setgroups` denied.
    WithUserNamespace,
}

/// The identity maps a child writes when it has to make a user namespace, built before the
/// clone (the child must not allocate).
#[derive(Debug, Clone)]
pub(crate) struct Maps {
    uid_map: CString,
    gid_map: CString,
}

impl Maps {
    /// The caller's effective uid and gid, each mapped to itself (the only map an unprivileged
    /// process may write).
    pub(in crate::spawn) fn new() -> io::Result<Self> {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        Ok(Maps {
            uid_map: cstring(format!("{uid} {uid} 1\n").as_bytes())?,
            gid_map: cstring(format!("{gid} {gid} 1\n").as_bytes())?,
        })
    }
}

/// Write `data` to the file at `path` in one `write(2)` (raw system calls, no allocation); the
/// errno on failure.
fn write_file(path: &CStr, data: &[u8]) -> Result<(), c_int> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(Errno::raw_os_error)?;
    match rustix::io::write(&fd, data) {
        Ok(n) if n == data.len() => Ok(()),
        Ok(_) => Err(libc::EIO),
        Err(e) => Err(e.raw_os_error()),
    }
}

/// Put the calling process in a new cgroup namespace rooted at its current cgroup: with
/// `CAP_SYS_ADMIN` `unshare(CLONE_NEWCGROUP)`, else (`EPERM`) together with a user namespace in
/// which its uid and gid are mapped to themselves. The errno of the step that failed otherwise.
///
/// Only raw system calls on `maps` (prepared before): safe in a freshly forked child. The user
/// namespace needs a single-threaded caller (`EINVAL` otherwise). A failure to write the maps
/// leaves the caller in a user namespace without them: a child must then not execute the
/// program (it reports the errno and exits).
pub(in crate::spawn) fn enter(maps: &Maps) -> Result<CgroupNamespace, c_int> {
    enter_steps(maps).map_err(|(e, _)| e)
}

/// [`enter`], telling on failure whether the caller was left changed (in a user namespace whose
/// maps could not be written).
pub(in crate::spawn) fn enter_steps(maps: &Maps) -> Result<CgroupNamespace, (c_int, bool)> {
    match unshare_namespaces(CLONE_NEWCGROUP) {
        Ok(()) => return Ok(CgroupNamespace::Own),
        Err(libc::EPERM) => {}
        Err(e) => return Err((e, false)),
    }
    unshare_namespaces(CLONE_NEWUSER | CLONE_NEWCGROUP).map_err(|e| (e, false))?;
    write_own_maps(maps).map_err(|e| (e, true))?;
    Ok(CgroupNamespace::WithUserNamespace)
}

/// In a user namespace the calling process has just made (or was cloned into), deny
/// `setgroups(2)` and write `maps`, its own uid and gid mapped to themselves; the errno of the
/// write that failed. Only raw system calls on `maps` (prepared before): safe in a freshly
/// cloned child.
pub(in crate::spawn) fn write_own_maps(maps: &Maps) -> Result<(), c_int> {
    // gid_map may be written by an unprivileged process only after setgroups is denied.
    write_file(c"/proc/self/setgroups", b"deny")?;
    write_file(c"/proc/self/uid_map", maps.uid_map.as_bytes())?;
    write_file(c"/proc/self/gid_map", maps.gid_map.as_bytes())
}
