//! `remove`: an empty module's directory and every sub-cgroup below it, deepest first.

use std::os::unix::io::OwnedFd;
use std::path::PathBuf;

use rustix::io::Errno;

use super::{RemoveReport, Root};
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::tree::{Removal, members};
use crate::error::{Error, Result};
use crate::layout::{Layout, ModuleName, ModuleRef, ToModuleName};
use crate::mutation::{self, Control};

/// The entry `name` in the directory `parent` is the directory `dir` (same device and inode).
pub(super) fn same_dir(parent: &OwnedFd, name: &str, dir: &CgroupDir) -> bool {
    let Ok(there) = rustix::fs::statat(
        parent,
        &*crate::id::name_bytes::bytes_of(name),
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    ) else {
        return false;
    };
    rustix::fs::fstat(dir.fd())
        .is_ok_and(|st| st.st_ino == there.st_ino && st.st_dev == there.st_dev)
}

impl Root {
    /// Remove an empty module. A populated one is refused with the number of its processes.
    /// The modes of its directories and control files are restored first where this process's
    /// uid owns them; sub-cgroups it made are removed at any depth, threaded ones too.
    pub fn remove(&self, name: impl ToModuleName) -> Result<RemoveReport> {
        let name = name.to_module_name()?;
        match self.remove_module(&name)? {
            None | Some((_, Removal::Gone)) => Ok(RemoveReport {
                module: name.clone(),
                path: None,
                removed: false,
                already_gone: true,
            }),
            Some((path, Removal::Removed)) => Ok(RemoveReport {
                module: name.clone(),
                path: Some(path),
                removed: true,
                already_gone: false,
            }),
            Some((path, Removal::Populated(n))) => Err(Error::failed(format!(
                "module {name} is not empty: {n} process{} in {}",
                if n == 1 { "" } else { "es" },
                path.display()
            ))
            .with_hint(format!(
                "stop them with `ck-cgroup kill {name}`, which also removes the module"
            ))
            .with_kind(crate::error::ErrorKind::Busy)),
        }
    }

    /// [`Root::remove`]'s work: `None` where `name` names no module; else the module's path and
    /// what its removal did (removed, gone meanwhile, or populated with how many processes).
    pub(super) fn remove_module(&self, name: &ModuleName) -> Result<Option<(PathBuf, Removal)>> {
        self.restore_layout_modes();
        let Some(m) = self.find(name)? else {
            return Ok(None);
        };
        let rel = m.rel();
        let path = self.dir.display_path(&rel);
        crate::cgroup::tree::restore_modes(&self.dir, &rel);
        let mdir = match self.dir.open_dir(&rel) {
            Ok(d) => d,
            Err(e) if crate::cgroup::gone::is_gone(e) => return Ok(Some((path, Removal::Gone))),
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        let procs = members(&mdir, "")?;
        if !procs.is_empty() {
            return Ok(Some((path, Removal::Populated(procs.len()))));
        }
        let removal = match self.remove_dir(&m, &mdir) {
            Err(e) if e.errno() == Some(Errno::BUSY) => {
                // Filled since it was read: not empty (any more).
                let n = crate::cgroup::tree::members(&mdir, "").map_or(0, |p| p.len());
                if n > 0 {
                    Removal::Populated(n)
                } else {
                    return Err(e);
                }
            }
            other => other?,
        };
        Ok(Some((path, removal)))
    }

    /// Remove module `m`, open as `mdir`: its sub-cgroups (relative to `mdir`), then its
    /// directory by name in its layout's directory, only while that name still is `mdir` (a
    /// module of the same name made after ours was removed is not ours to remove): removed, or
    /// gone.
    pub(super) fn remove_dir(&self, m: &ModuleRef, mdir: &CgroupDir) -> Result<Removal> {
        if mutation::active(Control::NoRmdir) {
            return Ok(Removal::Removed);
        }
        let parent_rel = m.layout.dir();
        let parent = self
            .dir
            .open_beneath(
                parent_rel,
                rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
            )
            .map_err(|e| Error::io("open", self.dir.display_path(parent_rel), e))?;
        let name = m.name.text();
        crate::cgroup::tree::remove_subtree_then(mdir, "", |deadline| {
            if !same_dir(&parent, name, mdir) {
                return Ok(Removal::Gone);
            }
            crate::cgroup::tree::rmdir_at(std::os::unix::io::AsFd::as_fd(&parent), name, deadline)
                .map(|()| Removal::Removed)
        })
    }

    /// Restore the modes of the directories that hold modules (a module sharing this process's
    /// uid may have taken them away); what was restored.
    pub(super) fn restore_layout_modes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for layout in [Layout::Ck, Layout::Daemon] {
            crate::cgroup::tree::restore_path_modes(&self.dir, layout.dir(), &mut out);
        }
        out
    }
}
