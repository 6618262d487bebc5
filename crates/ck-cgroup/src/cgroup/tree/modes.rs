//! Thawing a subtree, and restoring the modes this uid owns where a module took them away.

use std::os::unix::io::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::{Cursor, Visitor, read_at, walk, write_at};
use crate::cgroup::dir::{CgroupDir, open_beneath_at};
use crate::cgroup::gone::is_gone;
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

/// Thaws every cgroup of a subtree whose own `cgroup.freeze` is `1` (the module's, or one it
/// froze itself), and says which (relative to the walk's top; `.` for the top).
#[derive(Default)]
pub(crate) struct Thawer {
    pub(crate) thawed: Vec<String>,
}

impl Visitor for Thawer {
    fn enter(&mut self, at: &Cursor<'_>) -> Result<()> {
        if mutation::active(Control::NoThaw) {
            return Ok(());
        }
        if read_at(at.fd(), "cgroup.freeze").map(|t| t.trim() == "1") == Ok(true) {
            match write_at(at.fd(), "cgroup.freeze", "0") {
                Ok(()) => {
                    let r = at.rel_path();
                    self.thawed.push(if r.is_empty() { ".".into() } else { r });
                }
                Err(e) if is_gone(e) => {}
                Err(e) => return Err(Error::io("write \"0\" to", at.path_of("cgroup.freeze"), e)),
            }
        }
        Ok(())
    }
}

/// The kernel's modes of the control files a stop uses (`cgroup_file_mode()`: `0444` for a
/// file that is only read, `0644` read and written, `0200` only written; as `ls -l` shows them
/// in a new cgroup).
pub(crate) const CONTROL_MODES: [(&str, u32); 7] = [
    ("cgroup.procs", 0o644),
    ("cgroup.threads", 0o644),
    ("cgroup.kill", 0o200),
    ("cgroup.freeze", 0o644),
    ("cgroup.events", 0o444),
    ("cgroup.stat", 0o444),
    ("cgroup.type", 0o644),
];

/// Restore the mode of `name` in the directory `at` when this process's uid owns it: a
/// directory gets owner `rwx` added, a control file of [`CONTROL_MODES`] its kernel mode.
/// Returns what was changed (`<what> <old>-><new>`, octal); nothing when it is not ours, is as
/// it should be, or is gone. Never fails: what could not be restored shows in what fails next.
pub(crate) fn restore_mode_at(at: BorrowedFd<'_>, name: &str, shown: &str) -> Option<String> {
    if mutation::active(Control::NoModeRestore) {
        return None;
    }
    let st = rustix::fs::statat(
        at,
        &*crate::id::name_bytes::bytes_of(name),
        AtFlags::SYMLINK_NOFOLLOW,
    )
    .ok()?;
    if st.st_uid != rustix::process::geteuid().as_raw() {
        return None;
    }
    let old = st.st_mode & 0o7777;
    let new = if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
        old | 0o700
    } else {
        CONTROL_MODES.iter().find(|(n, _)| *n == name)?.1
    };
    if old == new {
        return None;
    }
    rustix::fs::chmodat(at, name, Mode::from_raw_mode(new), AtFlags::empty()).ok()?;
    Some(format!("{shown} {old:03o}->{new:03o}"))
}

/// Restores the modes of a subtree (see [`restore_mode_at`]): each cgroup's control files, and
/// each child directory before the walk opens it. The top directory itself is the caller's
/// ([`restore_path_modes`]).
pub(crate) struct ModeRestorer {
    /// The top's path as reports show it (relative to the root).
    pub(crate) shown: String,
    /// What was restored.
    pub(crate) restored: Vec<String>,
}

impl ModeRestorer {
    fn shown(&self, at: &Cursor<'_>, name: &str) -> String {
        let r = at.rel_path();
        [self.shown.as_str(), r.as_str(), name]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("/")
    }
}

impl Visitor for ModeRestorer {
    fn enter(&mut self, at: &Cursor<'_>) -> Result<()> {
        for (file, _) in CONTROL_MODES {
            if let Some(r) = restore_mode_at(at.fd(), file, &self.shown(at, file)) {
                self.restored.push(r);
            }
        }
        Ok(())
    }

    fn before_child(&mut self, parent: &Cursor<'_>, name: &str) -> Result<()> {
        if let Some(r) = restore_mode_at(parent.fd(), name, &self.shown(parent, name)) {
            self.restored.push(r);
        }
        Ok(())
    }
}

/// Restore the modes of every directory on the way from `base` to `rel` (`rel` included) that
/// this process's uid owns and cannot search or read, one component at a time through `O_PATH`
/// fds beneath `base`. Appends what was changed to `out`.
pub(crate) fn restore_path_modes(base: &CgroupDir, rel: &str, out: &mut Vec<String>) {
    let mut at: Option<OwnedFd> = None;
    let mut shown = String::new();
    for comp in rel.split('/').filter(|c| !c.is_empty()) {
        if !shown.is_empty() {
            shown.push('/');
        }
        shown.push_str(comp);
        let dir = at.as_ref().map_or(base.fd(), |f| f.as_fd());
        if let Some(r) = restore_mode_at(dir, comp, &shown) {
            out.push(r);
        }
        match open_beneath_at(dir, comp, OFlags::PATH | OFlags::DIRECTORY) {
            Ok(fd) => at = Some(fd),
            Err(_) => return,
        }
    }
}

/// Restore the modes of a module and everything below it before acting on it (a module that
/// shares this process's uid may have made them unusable): the directories on the way to it,
/// then each cgroup's control files and directories ([`ModeRestorer`]). Returns what was
/// changed; never fails.
pub(crate) fn restore_modes(base: &CgroupDir, rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    restore_path_modes(base, rel, &mut out);
    let mut r = ModeRestorer {
        shown: rel.to_string(),
        restored: out,
    };
    let _ = walk(base, rel, &mut r);
    r.restored
}
