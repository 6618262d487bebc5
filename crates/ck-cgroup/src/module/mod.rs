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

use std::path::Path;

mod freezer;
mod init;
mod limit_writes;
mod lock;
mod place;
mod prune;
mod reap;
mod remove;
mod report;
mod signal_member;
mod stop;
mod stop_once;

pub use freezer::FreezeReport;
#[cfg(feature = "systemd")]
pub(crate) use prune::prune_entries;
pub use reap::{Death, Reaped};
pub use report::{
    CreateReport, InitReport, ModuleEntry, PlaceReport, PruneAction, PruneEntry, RemoveReport,
    StopReport,
};
pub use stop::{signal_from_name, signal_name};

use crate::cgroup::dir::CgroupDir;
use crate::error::{Error, Result};
use crate::id::{DirName, ModuleId};
use crate::layout::{DAEMON_LEAF, Layout, MODULES_DIR, ModuleRef, ToModuleName};
use crate::mutation::{self, Control};

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

    /// Find the one existing module `name` names ([`find_all`]), for a command that acts on
    /// one: where the name finds more than one directory (ours and the daemon's of that name,
    /// the daemon's launches and swap slot of an id), none is picked: that is bad input naming
    /// each by its path, which names it alone, so that a stop never takes a decoy for the
    /// module nor reports a module gone while another of its directories holds a process.
    ///
    /// [`find_all`]: Root::find_all
    pub fn find(&self, name: impl ToModuleName) -> Result<Option<ModuleRef>> {
        let name = name.to_module_name()?;
        let mut all = self.find_all(&name)?;
        // Mutation: the first found is taken (ours before the daemon's).
        if mutation::active(Control::FindPicksFirst) {
            all.truncate(1);
        }
        match all.len() {
            0 | 1 => Ok(all.pop()),
            _ => Err(Error::bad_input(format!(
                "{name} names {} module directories: {}",
                all.len(),
                all.iter()
                    .map(ModuleRef::shown_path)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .with_hint(format!(
                "name one by its path as `ck-cgroup list` shows it (PATH, e.g. `{}`)",
                all[all.len() - 1].shown_path()
            ))),
        }
    }

    /// Whether our module `subc-modules/<id>` exists: the one `create`, `exec`, `run` and
    /// `set` make or change (the daemon's own directories of that id are not it).
    pub fn has_module(&self, id: &ModuleId) -> Result<bool> {
        self.dir.is_dir(&ModuleRef::ck(id).rel())
    }

    /// Every existing module `name` names: for a path (`daemon/subc-modules/<name>`), that
    /// directory; for a name, the directory of that name, ours (`subc-modules/<name>`) then the
    /// daemon's (`daemon/subc-modules/<name>`), then each of the daemon's directories whose name
    /// decodes to it (`m-<escaped id>_<launch>`, `m-<escaped id>_swap_<launch>`), in name
    /// order. Any name the kernel takes is looked for (`memory.evil` too): only a directory is a
    /// module, so the kernel's own files (`cgroup.procs`) are found by none.
    pub fn find_all(&self, name: impl ToModuleName) -> Result<Vec<ModuleRef>> {
        let name = name.to_module_name()?;
        let layouts = match name.layout {
            Some(l) => vec![l],
            None => vec![Layout::Ck, Layout::Daemon],
        };
        let mut found = Vec::new();
        for layout in layouts {
            let m = ModuleRef {
                layout,
                name: name.name.clone(),
            };
            if self.dir.is_dir(&m.rel())? {
                found.push(m);
            }
        }
        // Mutation: an id finds no directory of the daemon's but one of its own name.
        if name.layout.is_some()
            || mutation::active(Control::IdBlindToDaemonLayout)
            || !self.dir.is_dir(Layout::Daemon.dir())?
        {
            return Ok(found);
        }
        let mut decoded: Vec<ModuleRef> = self
            .dir
            .subdirs(Layout::Daemon.dir())?
            .into_iter()
            .filter_map(|n| DirName::from_text(&n).ok())
            .map(|name| ModuleRef {
                layout: Layout::Daemon,
                name,
            })
            .filter(|m| m.module_name().as_ref() == Some(&name.name) && !found.contains(m))
            .collect();
        decoded.sort_by(|a, b| a.name.cmp(&b.name));
        found.extend(decoded);
        Ok(found)
    }

    /// The cgroup2 mount's root directory, for what is read above this root (the ancestors' OOM
    /// and systemd-oomd counters); `None` where it cannot be found or opened.
    pub(crate) fn mount(&self) -> Option<CgroupDir> {
        let path = crate::cgroup::mount::cgroup2_mount().ok()?;
        CgroupDir::open(&path).ok()
    }
}
