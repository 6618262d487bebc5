//! Operations on a service root: `init`, module `create` / `place` / `list` / `remove` / `kill`.
//!
//! Layout inside a root (see `docs/design.md`):
//!
//! ```text
//! <root>/                     the cgroup systemd made for the service (Delegate=)
//! ├── daemon/                 the daemon's leaf
//! │   └── subc-modules/m-…    the daemon's own built-in placement (subc-daemon 0.39), read too
//! └── subc-modules/           controllers enabled in its cgroup.subtree_control
//!     └── <id>/               one leaf per module
//! ```
//!
//! Of the root itself only `cgroup.subtree_control` and `cgroup.procs` are ever written.
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html>.

use std::os::unix::io::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::Signal;
use serde::Serialize;

mod freezer;
mod init;
mod limit_writes;
mod lock;
mod place;
mod reap;
mod remove;
mod report;
mod signal_member;
mod stop_once;
mod stop_prune;

pub use freezer::FreezeReport;
pub use reap::{Death, Reaped};
pub use report::*;
#[cfg(feature = "systemd")]
pub(crate) use stop_prune::{Removed, prune_entries};
pub use stop_prune::{signal_from_name, signal_name};

use crate::cgroup::death_cause::DeathCounters;
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::oomd::{self, OomdMark, OomdPreference};
use crate::cgroup::parse;
use crate::cgroup::tree::members;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::id::{DirName, ModuleId};
use crate::layout::{
    DAEMON_LEAF, Layout, MODULES_DIR, ModuleName, ModuleRef, ToModuleName, WANTED_CONTROLLERS,
};
use crate::mutation::{self, Control};
use crate::stop::{StopOptions, TreeStop, stop_tree};

/// No module named: every module, for the calls that take a list of names
/// (`root.status(ALL)`, `root.processes(ALL)`). An empty slice, which those calls read as every
/// module: say it with [`Modules::All`](crate::layout::Modules::All) instead
/// (`root.status(&Modules::All)`), where an empty list of names is no module.
#[deprecated(note = "an empty slice read as every module: use `&ck_cgroup::Modules::All`")]
pub const ALL: &[&str] = &[];

/// A service root: a cgroup2 directory below the hierarchy's root.
#[derive(Debug)]
pub struct Root {
    dir: CgroupDir,
}

/// The canonical path of the directory `dir` opened as `path`: the kernel's own, the
/// `readlink(2)` of `/proc/self/fd/N` (one system call, of what was opened, where
/// `canonicalize(3)` takes one `readlink` per component of `path`, again); without `/proc`, or
/// for a directory removed since, `path` made canonical.
fn canonical(dir: &CgroupDir, path: &Path) -> Option<std::path::PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;
    if mutation::active(Control::NestedByGivenPath) {
        return Some(path.to_path_buf());
    }
    let link = format!("/proc/self/fd/{}", dir.fd().as_raw_fd());
    rustix::fs::readlink(link.as_str(), Vec::new())
        .ok()
        .map(|t| std::path::PathBuf::from(std::ffi::OsString::from_vec(t.into_bytes())))
        .filter(|t| t.is_absolute() && !t.as_os_str().as_encoded_bytes().ends_with(b" (deleted)"))
        .or_else(|| std::fs::canonicalize(path).ok())
}

/// Refuse `path` when it lies inside another root's `subc-modules/` or `daemon/`: one of its
/// components below the cgroup2 mount (not the first, a child of the hierarchy's root) is named
/// `subc-modules` or `daemon`. The path is made canonical first, from the directory opened
/// (a symlink cannot hide the names: [`canonical`]); the mount is read from
/// `/proc/self/mountinfo` only when a name matches.
fn refuse_nested(dir: &CgroupDir, path: &Path) -> Result<()> {
    if mutation::active(Control::RootInRoot) {
        return Ok(());
    }
    let Some(abs) = canonical(dir, path) else {
        return Ok(());
    };
    let named = |c: &std::ffi::OsStr| c == MODULES_DIR || c == DAEMON_LEAF;
    if !abs.iter().any(named) {
        return Ok(());
    }
    let Ok(mount) = crate::cgroup::mount::cgroup2_mount() else {
        return Ok(());
    };
    let Ok(below) = abs.strip_prefix(&mount) else {
        return Ok(());
    };
    let mut at = mount.clone();
    for (i, c) in below.iter().enumerate() {
        if i > 0 && named(c) {
            return Err(Error::bad_input(format!(
                "{} is inside the service root {}'s {}/ (a module's cgroup or the daemon's leaf), not a service root: pass --root {} itself",
                path.display(),
                at.display(),
                c.to_string_lossy(),
                at.display()
            ))
            .with_kind(crate::error::ErrorKind::NotAServiceRoot));
        }
        at.push(c);
    }
    Ok(())
}

impl Root {
    /// Open `path` as a service root: a cgroup2 directory (statfs-checked) below the hierarchy's
    /// root. The hierarchy's root itself is refused: it would hold every process of the machine.
    /// A path not on cgroup2 is an error of kind [`ErrorKind::NoCgroup2`](crate::error::ErrorKind::NoCgroup2).
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let _init = root.init()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A path inside another root's `subc-modules/` or `daemon/` (a module's cgroup, the modules'
    /// directory, the daemon's leaf) is refused as bad input of kind
    /// [`ErrorKind::NotAServiceRoot`](crate::error::ErrorKind::NotAServiceRoot): laid out, it
    /// would be a root inside a root.
    pub fn open(path: &Path) -> Result<Root> {
        let dir = CgroupDir::open(path)?;
        refuse_nested(&dir, path)?;
        Root::from_dir(dir)
    }

    /// Open `path` as a service root and check that it is one: [`Root::open`], then
    /// [`Root::check_service_root`] (it has `daemon/` or `subc-modules/`). What a program that
    /// acts on modules opens: a root that is not laid out (the caller's own cgroup in a login
    /// shell) is refused with [`ErrorKind::NotAServiceRoot`](crate::error::ErrorKind::NotAServiceRoot)
    /// (exit 2) instead of showing no modules. `init` lays a root out; it takes [`Root::open`].
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open_service("/sys/fs/cgroup/system.slice/ck-subc.service".as_ref())?;
    /// for m in root.list()? {
    ///     println!("{}", m.name);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn open_service(path: &Path) -> Result<Root> {
        let root = Root::open(path)?;
        root.check_service_root("")?;
        Ok(root)
    }

    /// Whether this root is laid out as a service root: it has `daemon/` (the daemon's leaf,
    /// and under it the daemon's own `daemon/subc-modules/`) or `subc-modules/`.
    pub fn is_service_root(&self) -> Result<bool> {
        // Mutation control (`CK_MUTATION=no-service-root-check`): every root is a service root.
        if mutation::active(Control::NoServiceRootCheck) {
            return Ok(true);
        }
        Ok(self.dir.is_dir(DAEMON_LEAF)? || self.dir.is_dir(MODULES_DIR)?)
    }

    /// Refuse a root that [`Root::is_service_root`] says is not laid out: bad input (exit 2) of
    /// kind [`ErrorKind::NotAServiceRoot`](crate::error::ErrorKind::NotAServiceRoot), one line that
    /// names the root, `found` (how it was found, e.g. `" (discovered from this process's
    /// cgroup)"`; may be empty) and how to name the right one.
    pub fn check_service_root(&self, found: &str) -> Result<()> {
        if self.is_service_root()? {
            return Ok(());
        }
        Err(Error::bad_input(format!(
            "{}{found} is not a service root: it has neither {DAEMON_LEAF}/ nor {MODULES_DIR}/; name the service's cgroup with --root PATH, CK_CGROUP_ROOT=PATH or --unit NAME (e.g. --unit ck-subc.service), or lay this one out with `ck-cgroup init`",
            self.path().display()
        ))
        .with_kind(crate::error::ErrorKind::NotAServiceRoot))
    }

    /// Wrap an already opened cgroup2 directory.
    pub fn from_dir(dir: CgroupDir) -> Result<Root> {
        // cgroup.events exists on every cgroup but the hierarchy's root. Only ENOENT says so: a
        // failure to look (EMFILE under `ulimit -n`, ENOMEM) is that failure (exit 1).
        let events = dir.open_beneath("cgroup.events", rustix::fs::OFlags::PATH);
        if let Err(e) = events
            && e != rustix::io::Errno::NOENT
        {
            return Err(Error::io("open", dir.display_path("cgroup.events"), e));
        }
        if events.is_err() {
            return Err(Error::bad_input(format!(
                "{} is the root of the cgroup2 hierarchy, not a service's cgroup",
                dir.path().display()
            ))
            .with_hint(
                "pass the service's delegated cgroup with --root, or use `ck-cgroup sandbox`",
            ));
        }
        Ok(Root { dir })
    }

    /// The root's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The underlying directory handle.
    pub fn dir(&self) -> &CgroupDir {
        &self.dir
    }

    /// The cgroup2 mount's root directory, for what is read above this root (the ancestors' OOM
    /// and systemd-oomd counters); `None` where it cannot be found or opened.
    pub(crate) fn mount(&self) -> Option<CgroupDir> {
        let path = crate::cgroup::mount::cgroup2_mount().ok()?;
        CgroupDir::open(&path).ok()
    }
}
