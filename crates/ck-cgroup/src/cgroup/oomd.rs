//! The marks on a cgroup directory, systemd-oomd's extended attributes and ck-cgroup's own: the
//! one mechanism that sets and reads them (the daemon's leaf's mark, a module's preference, a
//! stop's mark) and reads each counter mark as it is kept. What the counters say about a death is
//! judged above, in the `cause` layer (`cause::counters`).
//!
//! systemd-oomd (src/oom/oomd-util.c) ranks its candidates by `user.oomd_omit` (never picked)
//! and `user.oomd_avoid` (picked last), each a boolean ("1"); when it kills a cgroup it increments
//! `user.oomd_ooms` on it, then SIGKILLs every process in it and below, then adds the number it
//! killed to `user.oomd_kill` (both decimal text). The kernel's OOM killer counts in
//! `memory.events` instead (`oom_kill`, `oom_group_kill`).
//!
//! Every access goes through an fd of the directory opened beneath the root handle
//! ([`CgroupDir::open_beneath`]), never by path. An absent attribute (`ENODATA`) is a fact (no
//! mark; oomd never killed there: 0); any other error (`EOPNOTSUPP`, `EACCES`, …) leaves the
//! figure unknown (`None`), never 0.

use std::os::unix::io::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{self as rfs, OFlags, XattrFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::dir::CgroupDir;
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

/// systemd-oomd never picks a cgroup that has it ("1").
pub const OMIT: &str = "user.oomd_omit";
/// systemd-oomd picks a cgroup that has it ("1") last.
pub const AVOID: &str = "user.oomd_avoid";
/// How many times systemd-oomd killed the cgroup.
pub const OOMS: &str = "user.oomd_ooms";
/// How many processes systemd-oomd killed in the cgroup.
pub const KILL: &str = "user.oomd_kill";
/// How many times ck-cgroup (the helper or the library) stopped the cgroup: incremented by a
/// stop before it signals or kills, as systemd-oomd increments `user.oomd_ooms` before its kill
/// ([`mark_stop`]), so that whoever watches the module can tell our stop from another death.
pub const STOPS: &str = "user.ck_cgroup_stops";
/// The preference ck-cgroup set on a directory (`avoid`, `omit`, `none`): a mark without it, or
/// other than it, was set by someone else.
pub const SET_BY_CK: &str = "user.ck_cgroup_oomd";

/// The source of a preference figure.
pub const PREFERENCE_SOURCE: &str = "user.oomd_avoid, user.oomd_omit xattrs";

/// A cgroup's preference for systemd-oomd (`ManagedOOMPreference=` of systemd, which writes the
/// same attributes on a unit's own cgroup).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OomdPreference {
    /// `user.oomd_avoid`: picked last.
    Avoid,
    /// `user.oomd_omit`: never picked.
    Omit,
    /// Neither attribute: ranked as any other candidate.
    None,
}

impl OomdPreference {
    /// The accepted values, for messages and help.
    pub const ACCEPTED: &'static str = "avoid, omit, none";

    /// Parse `avoid`, `omit` or `none`; anything else is bad input (exit 2) naming the value and
    /// the accepted set.
    pub fn parse(s: &str) -> Result<OomdPreference> {
        match s {
            "avoid" => Ok(OomdPreference::Avoid),
            "omit" => Ok(OomdPreference::Omit),
            "none" => Ok(OomdPreference::None),
            _ => Err(Error::bad_input(format!(
                "{s:?} is no systemd-oomd preference: the accepted values are {}",
                Self::ACCEPTED
            ))),
        }
    }

    /// `avoid`, `omit` or `none` (systemd's `ManagedOOMPreference=` values).
    pub fn name(self) -> &'static str {
        match self {
            OomdPreference::Avoid => "avoid",
            OomdPreference::Omit => "omit",
            OomdPreference::None => "none",
        }
    }

    /// The attribute set for it (`None`: neither).
    pub fn xattr(self) -> Option<&'static str> {
        match self {
            OomdPreference::Avoid => Some(AVOID),
            OomdPreference::Omit => Some(OMIT),
            OomdPreference::None => None,
        }
    }
}

impl std::fmt::Display for OomdPreference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What marking a directory did: the preference read back after the writes (`None` when it
/// could not be set or read), and the failure in one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OomdMark {
    /// The preference read back from the directory; `None` when it could not be set or read.
    pub value: Option<OomdPreference>,
    /// Where it was read from ([`PREFERENCE_SOURCE`]).
    pub source: String,
    /// Why it could not be set or read: the attribute and the errno; `None` when it was.
    pub error: Option<String>,
}

/// One failed attribute call: which attribute, which call, the errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XattrError {
    /// The attribute.
    pub name: &'static str,
    /// `setxattr`, `removexattr` or `getxattr`.
    pub call: &'static str,
    /// The errno.
    pub errno: Errno,
}

impl std::fmt::Display for XattrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} failed: {} ({})",
            self.call,
            self.name,
            errno_name(self.errno),
            self.errno
        )
    }
}

/// The errno's symbolic name for the ones an xattr call gives, else its number.
fn errno_name(e: Errno) -> String {
    let known = [
        (Errno::OPNOTSUPP, "EOPNOTSUPP"),
        (Errno::PERM, "EPERM"),
        (Errno::ACCESS, "EACCES"),
        (Errno::NODATA, "ENODATA"),
        (Errno::NOENT, "ENOENT"),
        (Errno::NOSPC, "ENOSPC"),
        (Errno::ROFS, "EROFS"),
        (Errno::RANGE, "ERANGE"),
        (Errno::NOSYS, "ENOSYS"),
    ];
    known.iter().find(|(k, _)| *k == e).map_or_else(
        || format!("errno {}", e.raw_os_error()),
        |(_, n)| n.to_string(),
    )
}

/// The directory whose attributes are read or written: `dir` itself when `rel` is empty (a
/// module's directory `status` opened once), else `rel` opened beneath it.
enum At<'a> {
    Dir(BorrowedFd<'a>),
    Opened(OwnedFd),
}

impl AsFd for At<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            At::Dir(fd) => *fd,
            At::Opened(fd) => fd.as_fd(),
        }
    }
}

fn open<'a>(dir: &'a CgroupDir, rel: &str) -> std::result::Result<At<'a>, Errno> {
    if rel.is_empty() {
        return Ok(At::Dir(dir.fd()));
    }
    dir.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY)
        .map(At::Opened)
}

/// One attribute of an open directory: `Ok(None)` when it is absent (`ENODATA`).
fn get(fd: &At<'_>, name: &str) -> std::result::Result<Option<Vec<u8>>, Errno> {
    let mut buf = vec![0u8; 64];
    match rfs::fgetxattr(fd, name, &mut buf[..]) {
        Ok(n) => {
            buf.truncate(n);
            Ok(Some(buf))
        }
        Err(Errno::NODATA) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The value of an attribute as systemd reads it: a C string, so up to its first NUL
/// (`getxattr_malloc` NUL-terminates what it read).
fn c_string(v: &[u8]) -> &[u8] {
    v.iter().position(|&b| b == 0).map_or(v, |n| &v[..n])
}

/// Whether a boolean attribute says true, exactly as systemd-oomd's `cg_get_xattr_bool` does:
/// `parse_boolean` of the C string, case-insensitive, nothing trimmed (`1`, `yes`, `y`, `true`,
/// `t`, `on`). So `"1\n"` or `" 1"` is no mark: systemd-oomd does not honour it, and neither
/// does doctor.
fn truthy(v: &[u8]) -> bool {
    let t = c_string(v);
    ["1", "yes", "y", "true", "t", "on"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w.as_bytes()))
}

/// Set `pref` on the directory `rel` beneath `dir`: its attribute to "1" and the other one
/// removed (`none`: both removed), then [`SET_BY_CK`] to its name, so that a mark ck-cgroup did
/// not set (a module's process of the daemon's uid can set one) is told apart
/// ([`set_by_ck`]). An attribute already absent is no error.
pub fn set_preference(
    dir: &CgroupDir,
    rel: &str,
    pref: OomdPreference,
) -> std::result::Result<(), XattrError> {
    let fd = open(dir, rel).map_err(|errno| XattrError {
        name: pref.xattr().unwrap_or(OMIT),
        call: "open",
        errno,
    })?;
    for name in [OMIT, AVOID] {
        if pref.xattr() == Some(name) {
            rfs::fsetxattr(&fd, name, b"1", XattrFlags::empty()).map_err(|errno| XattrError {
                name,
                call: "setxattr",
                errno,
            })?;
        } else {
            match rfs::fremovexattr(&fd, name) {
                Ok(()) | Err(Errno::NODATA) => {}
                Err(errno) => {
                    return Err(XattrError {
                        name,
                        call: "removexattr",
                        errno,
                    });
                }
            }
        }
    }
    // What ck-cgroup set: the mark's provenance (best effort: where it cannot be written, the
    // mark reads as set by another, which doctor only warns about).
    let _ = rfs::fsetxattr(&fd, SET_BY_CK, pref.name().as_bytes(), XattrFlags::empty());
    Ok(())
}

/// The preference ck-cgroup last set on the directory `rel` ([`SET_BY_CK`]); `None` where it
/// never set one (or the attribute cannot be read).
pub fn set_by_ck(dir: &CgroupDir, rel: &str) -> Option<OomdPreference> {
    let fd = open(dir, rel).ok()?;
    let mut buf = [0u8; 16];
    let n = rfs::fgetxattr(&fd, SET_BY_CK, &mut buf).ok()?;
    OomdPreference::parse(std::str::from_utf8(buf.get(..n)?).ok()?).ok()
}

/// The preference on the directory `rel`, as systemd-oomd reads it: omit first, then avoid,
/// else none.
pub fn read_preference(
    dir: &CgroupDir,
    rel: &str,
) -> std::result::Result<OomdPreference, XattrError> {
    let fd = open(dir, rel).map_err(|errno| XattrError {
        name: OMIT,
        call: "open",
        errno,
    })?;
    for (name, pref) in [(OMIT, OomdPreference::Omit), (AVOID, OomdPreference::Avoid)] {
        match get(&fd, name) {
            Ok(Some(v)) if truthy(&v) => return Ok(pref),
            Ok(_) => {}
            Err(errno) => {
                return Err(XattrError {
                    name,
                    call: "getxattr",
                    errno,
                });
            }
        }
    }
    Ok(OomdPreference::None)
}

/// Set `pref` on `rel` and read it back: the one way a directory is marked for systemd-oomd
/// (the daemon's leaf by `init`, a module by `--oomd` and the policy's `oomd`). Never fails:
/// what could not be done is in [`OomdMark::error`], and the value is then what could be read
/// back (`None` when nothing could).
pub fn mark(dir: &CgroupDir, rel: &str, pref: OomdPreference) -> OomdMark {
    let set = set_preference(dir, rel, pref);
    read_back(dir, rel, set.err())
}

/// The mark of `rel` as it is, with `error` (a failed write) if any.
pub fn read_back(dir: &CgroupDir, rel: &str, error: Option<XattrError>) -> OomdMark {
    let read = read_preference(dir, rel);
    let error = error.or(read.err());
    OomdMark {
        value: if error.is_some() { None } else { read.ok() },
        source: PREFERENCE_SOURCE.into(),
        error: error.map(|e| e.to_string()),
    }
}

/// A counter attribute of an open directory: absent (`ENODATA`) is 0, decimal text is its value,
/// anything else (another errno, text that is no number) is `None`.
fn counter(fd: Option<&At<'_>>, name: &str) -> Option<u64> {
    let fd = fd?;
    if mutation::active(Control::AbsentIsZero) {
        return Some(
            get(fd, name)
                .ok()
                .flatten()
                .map_or(0, |v| number(&v).unwrap_or(0)),
        );
    }
    match get(fd, name) {
        Ok(None) => Some(0),
        Ok(Some(v)) => number(&v),
        Err(_) => None,
    }
}

/// A counter attribute's number, as systemd's core reads `user.oomd_ooms` (`safe_atou64` of the
/// C string): leading whitespace and a `+` allowed, then decimal digits to the end; anything
/// else is no number (`None`, never a guess).
fn number(v: &[u8]) -> Option<u64> {
    let t = std::str::from_utf8(c_string(v)).ok()?;
    let t = t.trim_start_matches([' ', '\t', '\n', '\r']);
    let digits = t.strip_prefix('+').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// systemd-oomd's counters of the directory `rel` (`oomd_ooms`, `oomd_kill`).
pub fn oomd_counters(dir: &CgroupDir, rel: &str) -> (Option<u64>, Option<u64>) {
    let fd = open(dir, rel);
    (
        counter(fd.as_ref().ok(), OOMS),
        counter(fd.as_ref().ok(), KILL),
    )
}

/// ck-cgroup's stops of the directory `rel` ([`STOPS`]).
pub fn ck_stops(dir: &CgroupDir, rel: &str) -> Option<u64> {
    counter(open(dir, rel).as_ref().ok(), STOPS)
}

/// Mark the directory `rel` as stopped by ck-cgroup: [`STOPS`] incremented (`setxattr(2)`),
/// before the stop signals or kills. Where the filesystem refuses it (a kernel before 5.7, no
/// permission), the stop goes on unmarked, and a watcher names no one for it.
pub fn mark_stop(dir: &CgroupDir, rel: &str) {
    // Mutation: a stop leaves no mark.
    if mutation::active(Control::StopUnmarked) {
        return;
    }
    let Ok(fd) = open(dir, rel) else {
        return;
    };
    let n = counter(Some(&fd), STOPS).unwrap_or(0).saturating_add(1);
    let _ = rfs::fsetxattr(&fd, STOPS, n.to_string().as_bytes(), XattrFlags::empty());
}

/// The preference of `rel` as a status figure: `None` where it cannot be read.
pub fn preference_of(dir: &CgroupDir, rel: &str) -> Option<OomdPreference> {
    read_preference(dir, rel).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preference_out_of_the_set_is_bad_input_naming_the_value_and_the_set() {
        let e = OomdPreference::parse("bogus").unwrap_err();
        assert_eq!(e.class(), crate::error::Class::BadInput);
        assert!(e.message().contains("\"bogus\""), "{}", e.message());
        assert!(e.message().contains("avoid, omit, none"), "{}", e.message());
        for v in ["avoid", "omit", "none"] {
            assert_eq!(OomdPreference::parse(v).unwrap().name(), v);
        }
    }

    #[test]
    fn booleans_and_counters_are_read_as_systemd_writes_them() {
        assert!(truthy(b"1") && truthy(b"true\0") && !truthy(b"0") && !truthy(b""));
        assert!(truthy(b"YES") && truthy(b"On") && truthy(b"1\0junk"));
        // What systemd-oomd's parse_boolean refuses is no mark here either.
        for v in [&b"1\n"[..], b" 1", b"1 ", b"\x001", b"2", b"yes please"] {
            assert!(!truthy(v), "{v:?}");
        }
        assert_eq!(number(b"3"), Some(3));
        assert_eq!(number(b"12\0"), Some(12));
        assert_eq!(number(b" +5"), Some(5));
        assert_eq!(number(b"x"), None);
        for v in [&b"\0\x005"[..], b"5 ", b"-5", b"5x", b"", b"0x5"] {
            assert_eq!(number(v), None, "{v:?}");
        }
    }
}
