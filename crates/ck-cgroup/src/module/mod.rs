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

mod limits;

use crate::cgroup::parse;
use crate::cgroup::root::CgroupDir;
use crate::cgroup::tree::members;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::id::{DirName, ModuleId};
use crate::layout::{DAEMON_LEAF, Layout, MODULES_DIR, ModuleRef, WANTED_CONTROLLERS};
use crate::stop::{StopOptions, TreeStop, stop_tree};

/// A service root: a cgroup2 directory below the hierarchy's root.
#[derive(Debug)]
pub struct Root {
    dir: CgroupDir,
}

/// What `init` did.
#[derive(Debug, Clone, Serialize)]
pub struct InitReport {
    /// The root.
    pub root: PathBuf,
    /// Directories made now (`daemon`, `subc-modules`); empty when they existed.
    pub created: Vec<String>,
    /// Pids moved from the root into `daemon/`.
    pub moved: Vec<u32>,
    /// The root's `cgroup.controllers`.
    pub available: Vec<String>,
    /// `subc-modules/cgroup.subtree_control` after init: what each module gets.
    pub enabled: Vec<String>,
    /// Controllers the helper uses that the root does not have.
    pub missing: Vec<String>,
}

/// What `create` did.
#[derive(Debug, Clone, Serialize)]
pub struct CreateReport {
    /// The module.
    pub module: ModuleId,
    /// Its cgroup directory.
    pub path: PathBuf,
    /// Made now (false: it existed).
    pub created: bool,
}

/// What `place` did.
#[derive(Debug, Clone, Serialize)]
pub struct PlaceReport {
    /// The module.
    pub module: ModuleId,
    /// Its cgroup directory.
    pub path: PathBuf,
    /// The pids moved in.
    pub placed: Vec<u32>,
}

/// One module in `list`.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleEntry {
    /// Directory name as found (what `kill` and `remove` take).
    pub name: DirName,
    /// The module id; for the daemon's layout decoded from the name, `null` where it does not decode.
    pub module: Option<String>,
    /// Which placement made it.
    pub layout: Layout,
    /// Path relative to the root.
    pub path: String,
    /// `cgroup.events` `populated`; `null` when it could not be read.
    pub populated: Option<bool>,
    /// `cgroup.events` `frozen`: the module is frozen (by itself, or by a freeze-kill that did
    /// not finish), its own or an ancestor's `cgroup.freeze`; `null` when it could not be read.
    pub frozen: Option<bool>,
    /// Processes in the module and its sub-cgroups; `null` when it could not be read.
    pub procs: Option<usize>,
}

/// What `remove` did.
#[derive(Debug, Clone, Serialize)]
pub struct RemoveReport {
    /// The name asked for.
    pub module: String,
    /// Its path, when found.
    pub path: Option<PathBuf>,
    /// Removed now.
    pub removed: bool,
    /// It did not exist.
    pub already_gone: bool,
}

/// What `kill` (a stop of one module) did.
#[derive(Debug, Clone, Serialize)]
pub struct StopReport {
    /// The name asked for.
    pub module: String,
    /// Which placement made it; `null` when it was already gone.
    pub layout: Option<Layout>,
    /// Its path, when found.
    pub path: Option<PathBuf>,
    /// It did not exist: nothing to do.
    pub already_gone: bool,
    /// The graceful signal (`SIGTERM`); `null` without a grace period.
    pub signal: Option<String>,
    /// The grace period in milliseconds.
    pub grace_ms: f64,
    /// The stop of the tree.
    #[serde(flatten)]
    pub tree: TreeStop,
    /// The directory was removed.
    pub removed: bool,
    /// Modes restored before acting (`<path> <old>-><new>`, octal, relative to the root): a
    /// module that shares this process's uid had taken away what the stop needs.
    pub restored: Vec<String>,
    /// Why the tree is not empty or the directory not removed; `null` on success.
    pub error: Option<String>,
}

impl StopReport {
    /// The report of a stop of `name` that found nothing: already gone.
    pub(crate) fn gone(name: &str, opts: &StopOptions) -> StopReport {
        StopReport {
            module: name.to_string(),
            layout: None,
            path: None,
            already_gone: true,
            signal: (!opts.grace.is_zero()).then(|| signal_name(opts.signal)),
            grace_ms: opts.grace.as_secs_f64() * 1e3,
            tree: TreeStop {
                empty: true,
                ..TreeStop::default()
            },
            removed: false,
            restored: Vec::new(),
            error: None,
        }
    }

    /// Done: the tree is empty and its directory removed, or it was already gone.
    pub fn ok(&self) -> bool {
        self.already_gone || (self.tree.empty && self.removed)
    }
}

/// One module in `prune`.
#[derive(Debug, Clone, Serialize)]
pub struct PruneEntry {
    /// Directory name as found.
    pub name: DirName,
    /// Which placement made it.
    pub layout: Layout,
    /// Processes in it when pruning began; `null` when they could not be read.
    pub procs: Option<usize>,
    /// What was done (or, with `--dry-run`, would be done).
    pub action: PruneAction,
    /// The stop, for a module that was killed.
    pub stop: Option<StopReport>,
    /// Why the action failed; `null` on success.
    pub error: Option<String>,
}

/// What `prune` did with one module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PruneAction {
    /// Named with `--keep`: left alone.
    Kept,
    /// Empty, removed.
    Removed,
    /// Populated, killed and removed (`--kill`).
    Killed,
    /// Populated and `--kill` not given: left alone.
    SkippedPopulated,
    /// `--dry-run`: would be removed.
    WouldRemove,
    /// `--dry-run --kill`: would be killed and removed.
    WouldKill,
    /// The action failed (see `error`).
    Failed,
}

impl Root {
    /// Open `path` as a service root: a cgroup2 directory (statfs-checked) below the hierarchy's
    /// root. The hierarchy's root itself is refused: it would hold every process of the machine.
    pub fn open(path: &Path) -> Result<Root> {
        let dir = CgroupDir::open(path)?;
        Root::from_dir(dir)
    }

    /// Wrap an already opened cgroup2 directory.
    pub fn from_dir(dir: CgroupDir) -> Result<Root> {
        // cgroup.events exists on every cgroup but the hierarchy's root.
        if !dir.exists("cgroup.events") {
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

    /// Make `daemon/` and `subc-modules/`, move every process of the root into `daemon/`, and
    /// enable every available controller in the root's and `subc-modules/`'s
    /// `cgroup.subtree_control`. Idempotent.
    pub fn init(&self) -> Result<InitReport> {
        let mut created = Vec::new();
        for d in [DAEMON_LEAF, MODULES_DIR] {
            if self.dir.mkdir(d)? {
                created.push(d.to_string());
            }
        }
        let moved = self.evacuate_root()?;
        let available = parse::controllers(&self.dir.read("cgroup.controllers")?);
        let enabled = self.enable_controllers(&available)?;
        let missing = WANTED_CONTROLLERS
            .iter()
            .filter(|c| !available.iter().any(|a| a == *c))
            .map(|c| c.to_string())
            .collect();
        Ok(InitReport {
            root: self.path().to_path_buf(),
            created,
            moved,
            available,
            enabled,
            missing,
        })
    }

    /// Move the calling process into `daemon/` (`"0"` written to `daemon/cgroup.procs`), for a
    /// daemon started by `init -- CMD` from outside the root.
    pub fn enter_daemon_leaf(&self) -> Result<()> {
        let file = format!("{DAEMON_LEAF}/cgroup.procs");
        self.dir.write(&file, "0")
    }

    /// Move every process in the root's own `cgroup.procs` into `daemon/` (no internal processes).
    fn evacuate_root(&self) -> Result<Vec<u32>> {
        let mut moved = Vec::new();
        // Processes may fork while we move them; each round moves what is there now.
        for _ in 0..64 {
            let pids = parse::pids(&self.dir.read("cgroup.procs")?);
            if pids.is_empty() {
                return Ok(moved);
            }
            for pid in pids {
                match self.dir.write_raw("daemon/cgroup.procs", &pid.to_string()) {
                    Ok(()) => moved.push(pid),
                    Err(Errno::SRCH) => {}
                    Err(e) => {
                        return Err(Error::io(
                            format_args!("write \"{pid}\" to"),
                            self.dir.display_path("daemon/cgroup.procs"),
                            e,
                        ));
                    }
                }
            }
        }
        Err(Error::failed(format!(
            "processes keep appearing in {}/cgroup.procs faster than they can be moved into daemon/",
            self.path().display()
        )))
    }

    /// Enable `controllers` in the root's and `subc-modules/`'s `cgroup.subtree_control`;
    /// return what `subc-modules/` has enabled afterwards.
    fn enable_controllers(&self, controllers: &[String]) -> Result<Vec<String>> {
        if !controllers.is_empty() {
            let line = controllers
                .iter()
                .map(|c| format!("+{c}"))
                .collect::<Vec<_>>()
                .join(" ");
            for rel in [
                "cgroup.subtree_control",
                "subc-modules/cgroup.subtree_control",
            ] {
                self.dir.write(rel, &line).map_err(|e| {
                    e.with_hint(
                        "a cgroup with processes in it cannot enable controllers for its children: run `ck-cgroup init` to move them into daemon/",
                    )
                })?;
            }
        }
        Ok(parse::controllers(
            &self.dir.read("subc-modules/cgroup.subtree_control")?,
        ))
    }

    /// Make the module's cgroup `subc-modules/<id>` (idempotent), without limits: a module made
    /// now gets `memory.oom.group` 1 where the memory controller is enabled for the modules, an
    /// existing one is left as it is ([`Root::create_module`], the one way a module is made).
    /// Makes `subc-modules/` and enables controllers first when the root has not been
    /// initialised (as with `DelegateSubgroup=daemon`, where the daemon already sits in
    /// `daemon/`).
    pub fn create(&self, id: &ModuleId) -> Result<CreateReport> {
        self.create_module(id, &crate::limits::Limits::default(), false)
            .map(|(made, _)| made)
    }

    /// The directory part of [`Root::create_module`]: `mkdir` of `subc-modules/<id>`
    /// (`created` says whether it was made now), `subc-modules/` first when it is missing.
    pub(crate) fn make_module_dir(&self, id: &ModuleId) -> Result<CreateReport> {
        let m = ModuleRef::ck(id);
        let rel = m.rel();
        let created = match self.dir.mkdir(&rel) {
            Ok(c) => c,
            Err(e) if e.errno() == Some(Errno::NOENT) => {
                self.ensure_modules_dir()?;
                self.dir.mkdir(&rel)?
            }
            Err(e) => return Err(e),
        };
        Ok(CreateReport {
            module: id.clone(),
            path: self.dir.display_path(&rel),
            created,
        })
    }

    fn ensure_modules_dir(&self) -> Result<()> {
        let made = self.dir.mkdir(MODULES_DIR)?;
        let available = parse::controllers(&self.dir.read("cgroup.controllers")?);
        if let Err(e) = self.enable_controllers(&available) {
            if made {
                // Leave nothing half-made.
                let _ = self.dir.rmdir_raw(MODULES_DIR);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Find an existing module by id or by directory name as `list` shows it: ours
    /// (`subc-modules/<name>`) first, then the daemon's (`daemon/subc-modules/<name>`).
    pub fn find(&self, name: &str) -> Result<Option<ModuleRef>> {
        let name = DirName::new(name)?;
        for layout in [Layout::Ck, Layout::Daemon] {
            let m = ModuleRef {
                layout,
                name: name.clone(),
            };
            if self.dir.is_dir(&m.rel())? {
                return Ok(Some(m));
            }
        }
        Ok(None)
    }

    /// Move existing processes into the module (made if needed). Every pid is checked before
    /// anything is made or moved (`placeable`): it must name a running process that is not
    /// PID 1, not this process, not a kernel thread, not a zombie, and not a thread that is not
    /// its process's leader; any other is refused as bad input (exit 2), nothing made, nothing
    /// moved. A pidfd is held for each from its check on, and the pid is moved only while the
    /// pidfd's process still runs; after the move it is checked again, so a pid that exited and
    /// was reused in between is reported, not counted as placed. The moves are then all or
    /// nothing as far as the kernel allows: a move that fails (exit 1) names the pids moved
    /// before it, and a module made now that received none is removed again.
    pub fn place(&self, id: &ModuleId, pids: &[u32]) -> Result<PlaceReport> {
        let mut checked: Vec<(u32, OwnedFd)> = Vec::with_capacity(pids.len());
        for &pid in pids {
            if !checked.iter().any(|(p, _)| *p == pid) {
                checked.push((pid, placeable(pid)?));
            }
        }
        let created = self.create(id)?;
        let module = ModuleRef::ck(id).rel();
        let rel = join(&module, "cgroup.procs");
        let mut placed = Vec::with_capacity(checked.len());
        for (pid, pidfd) in &checked {
            let moved = if running(pidfd) {
                self.move_pid(&rel, *pid).and_then(|()| {
                    if running(pidfd) {
                        Ok(())
                    } else {
                        Err(exited_meanwhile(*pid))
                    }
                })
            } else {
                Err(exited_meanwhile(*pid))
            };
            if let Err(e) = moved {
                if placed.is_empty() {
                    if created.created {
                        // Nothing moved: leave nothing made.
                        let _ = self.dir.rmdir_raw(&module);
                    }
                    return Err(e);
                }
                let done: Vec<String> = placed.iter().map(u32::to_string).collect();
                return Err(Error::failed(format!(
                    "{e}; already placed in {}: {}",
                    created.path.display(),
                    done.join(" ")
                )));
            }
            placed.push(*pid);
        }
        Ok(PlaceReport {
            module: id.clone(),
            path: created.path,
            placed,
        })
    }

    fn move_pid(&self, procs_rel: &str, pid: u32) -> Result<()> {
        if cfg!(ck_mutation = "no-placement") {
            return Ok(());
        }
        self.dir.write(procs_rel, &pid.to_string())
    }

    /// Move the calling process into the module (made if needed): what `exec` does before
    /// `execve(2)`, so the module's process is the pid the daemon spawned.
    pub fn enter(&self, id: &ModuleId) -> Result<PathBuf> {
        let rel = ModuleRef::ck(id).rel();
        self.refuse_frozen(id, &rel)?;
        let procs = join(&rel, "cgroup.procs");
        match self.move_pid(&procs, 0) {
            Err(e) if e.errno() == Some(Errno::NOENT) => {
                self.create(id)?;
                self.move_pid(&procs, 0)?;
            }
            other => other?,
        }
        Ok(self.dir.display_path(&rel))
    }

    /// Every module, ours and the daemon's, with its populated state and process count.
    pub fn list(&self) -> Result<Vec<ModuleEntry>> {
        self.entries(true)
    }

    /// The modules; `procs` is counted only when `count_procs` (status counts them itself).
    pub(crate) fn entries(&self, count_procs: bool) -> Result<Vec<ModuleEntry>> {
        let mut out = Vec::new();
        for layout in [Layout::Ck, Layout::Daemon] {
            for name in self.dir.subdirs(layout.dir())? {
                let Ok(name) = DirName::new(&name) else {
                    continue;
                };
                let m = ModuleRef { layout, name };
                let rel = m.rel();
                let events = self.events(&rel).ok();
                out.push(ModuleEntry {
                    module: m.module_name(),
                    populated: events.as_ref().and_then(|e| e.populated),
                    frozen: events.as_ref().and_then(|e| e.frozen),
                    procs: if count_procs {
                        self.procs(&rel).ok().map(|p| p.len())
                    } else {
                        None
                    },
                    path: rel,
                    layout,
                    name: m.name,
                });
            }
        }
        Ok(out)
    }

    /// `cgroup.events` of `rel`.
    pub fn events(&self, rel: &str) -> Result<parse::Events> {
        Ok(parse::events(&self.dir.read(&join(rel, "cgroup.events"))?))
    }

    /// The pids in `rel` and every cgroup below it (`cgroup.procs` of each; of a threaded
    /// cgroup, the processes of the threads in its `cgroup.threads`), at any depth.
    pub fn procs(&self, rel: &str) -> Result<Vec<u32>> {
        members(&self.dir, rel)
    }

    /// A spawn into a frozen module would hang: the new process stops before its first
    /// instruction (a task that enters a frozen cgroup is frozen), and whoever waits for it
    /// waits forever. So it is refused (bad input, exit 2) with the two fixes. A module that
    /// does not exist is not frozen.
    fn refuse_frozen(&self, id: &ModuleId, rel: &str) -> Result<()> {
        if cfg!(ck_mutation = "spawn-into-frozen") {
            return Ok(());
        }
        let frozen = self
            .dir
            .read_raw(&join(rel, "cgroup.events"))
            .map(|t| parse::events(&t).frozen == Some(true))
            .unwrap_or(false)
            || self
                .dir
                .read_raw(&join(rel, "cgroup.freeze"))
                .map(|t| t.trim() == "1")
                .unwrap_or(false);
        if !frozen {
            return Ok(());
        }
        let path = self.dir.display_path(rel);
        Err(Error::bad_input(format!(
            "module {id} is frozen ({}: cgroup.freeze 1 or cgroup.events frozen 1): a process started in it would stop before its first instruction",
            path.display()
        ))
        .with_hint(format!(
            "thaw it with `echo 0 > {}/cgroup.freeze`, or stop it with `ck-cgroup kill {id}`",
            path.display()
        )))
    }

    /// Remove an empty module. A populated one is refused with the number of its processes.
    /// The modes of its directories and control files are restored first where this process's
    /// uid owns them; sub-cgroups it made are removed at any depth, threaded ones too.
    pub fn remove(&self, name: &str) -> Result<RemoveReport> {
        match self.remove_module(name)? {
            Removal::Gone => Ok(RemoveReport {
                module: name.to_string(),
                path: None,
                removed: false,
                already_gone: true,
            }),
            Removal::Removed(path) => Ok(RemoveReport {
                module: name.to_string(),
                path: Some(path),
                removed: true,
                already_gone: false,
            }),
            Removal::Populated(n, path) => Err(Error::failed(format!(
                "module {name} is not empty: {n} process{} in {}",
                if n == 1 { "" } else { "es" },
                path.display()
            ))
            .with_hint(format!(
                "stop them with `ck-cgroup kill {name}`, which also removes the module"
            ))),
        }
    }

    /// [`Root::remove`]'s work: gone, removed, or populated (with how many processes).
    fn remove_module(&self, name: &str) -> Result<Removal> {
        let name = DirName::new(name)?;
        self.restore_layout_modes();
        let Some(m) = self.find(name.as_str())? else {
            return Ok(Removal::Gone);
        };
        let rel = m.rel();
        let path = self.dir.display_path(&rel);
        crate::cgroup::tree::restore_modes(&self.dir, &rel);
        let mdir = match self.dir.open_dir(&rel) {
            Ok(d) => d,
            Err(Errno::NOENT) => return Ok(Removal::Gone),
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        let procs = members(&mdir, "")?;
        if !procs.is_empty() {
            return Ok(Removal::Populated(procs.len(), path));
        }
        match self.remove_dir(&m, &mdir) {
            Ok(Gone::No) => Ok(Removal::Removed(path)),
            Ok(Gone::Yes) => Ok(Removal::Gone),
            Err(e) if e.errno() == Some(Errno::BUSY) => {
                // Filled since it was read: not empty (any more).
                let n = crate::cgroup::tree::members(&mdir, "").map_or(0, |p| p.len());
                if n > 0 {
                    Ok(Removal::Populated(n, path))
                } else {
                    Err(e)
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Remove `rel` and its sub-cgroups, deepest first, at any depth (each directory relative
    /// to its parent's fd). `EBUSY` (a cgroup whose last process is still exiting) is retried
    /// for up to one second; then the real errno is reported.
    pub fn remove_tree(&self, rel: &str) -> Result<()> {
        if cfg!(ck_mutation = "no-rmdir") {
            return Ok(());
        }
        crate::cgroup::tree::remove_tree(&self.dir, rel)
    }

    /// Remove module `m`, open as `mdir`: its sub-cgroups (relative to `mdir`), then its
    /// directory by name in its layout's directory, only while that name still is `mdir` (a
    /// module of the same name made after ours was removed is not ours to remove).
    fn remove_dir(&self, m: &ModuleRef, mdir: &CgroupDir) -> Result<Gone> {
        if cfg!(ck_mutation = "no-rmdir") {
            return Ok(Gone::No);
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        let parent_rel = m.layout.dir();
        let parent = self
            .dir
            .open_beneath(
                parent_rel,
                rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
            )
            .map_err(|e| Error::io("open", self.dir.display_path(parent_rel), e))?;
        let name = m.name.as_str();
        loop {
            crate::cgroup::tree::walk_module(
                mdir,
                "",
                &mut crate::cgroup::tree::Remover { deadline },
            )?;
            if !same_dir(&parent, name, mdir) {
                return Ok(Gone::Yes);
            }
            match crate::cgroup::tree::rmdir_at(
                std::os::unix::io::AsFd::as_fd(&parent),
                name,
                deadline,
            ) {
                Ok(()) => return Ok(Gone::No),
                // A child cgroup made meanwhile (before the kill): walk again.
                Err(Errno::BUSY)
                    if Instant::now() < deadline
                        && crate::cgroup::tree::members(mdir, "").is_ok_and(|p| p.is_empty()) =>
                {
                    continue;
                }
                Err(e) => return Err(Error::io("rmdir", mdir.path(), e)),
            }
        }
    }

    /// Restore the modes of the directories that hold modules (a module sharing this process's
    /// uid may have taken them away); what was restored.
    fn restore_layout_modes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for layout in [Layout::Ck, Layout::Daemon] {
            crate::cgroup::tree::restore_path_modes(&self.dir, layout.dir(), &mut out);
        }
        out
    }

    /// SIGKILL the module's whole subtree (the first kill method the kernel supports), wait until
    /// it is empty (at most `timeout`), and remove its directory. See [`Root::stop`].
    pub fn kill(&self, name: &str, timeout: Duration) -> Result<StopReport> {
        self.stop(
            name,
            &StopOptions {
                timeout,
                ..StopOptions::default()
            },
        )
    }

    /// Stop the module's whole tree ([`stop_tree`]: graceful signal and grace on the whole
    /// subtree, then SIGKILL by the method), then remove its directory depth first.
    ///
    /// Before anything, the modes of the directories on the way to the module, of its
    /// directory, its sub-cgroups and their control files are restored where this process's uid
    /// owns them (a module sharing that uid can `chmod 000` them). The module is then opened
    /// once, and every step goes through that handle, relative to it: another module of the
    /// same name made meanwhile is never touched. A process that enters the module after the
    /// kill (an `exec` racing it) keeps `rmdir` busy: it is killed again, until the timeout.
    ///
    /// A module that does not exist, or that disappears while it is being stopped (another
    /// stop removed it), is reported as already gone. A module whose subtree holds the calling
    /// process is refused (exit 2). Check [`StopReport::ok`]: a tree that is not empty or a
    /// directory that could not be removed is reported, not raised.
    pub fn stop(&self, name: &str, opts: &StopOptions) -> Result<StopReport> {
        let start = Instant::now();
        let _boost = crate::stop::Boost::new();
        let mut report = StopReport::gone(name, opts);
        let dname = DirName::new(name)?;
        let mut restored = self.restore_layout_modes();
        let Some(m) = self.find(dname.as_str())? else {
            return Ok(report);
        };
        let rel = m.rel();
        let path = self.dir.display_path(&rel);
        restored.extend(crate::cgroup::tree::restore_modes(&self.dir, &rel));
        let mdir = match self.dir.open_dir(&rel) {
            Ok(d) => d,
            Err(Errno::NOENT) => return Ok(report),
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        report.already_gone = false;
        report.layout = Some(m.layout);
        report.path = Some(path.clone());
        report.restored = restored;
        report.tree = stop_tree(&mdir, "", opts)?;
        let deadline = start + opts.grace + opts.timeout;
        loop {
            if !report.tree.empty {
                if self.vanished(&m, &mdir) {
                    return Ok(gone_meanwhile(report));
                }
                report.error = Some(still_populated(&mdir, "", report.tree.waited_ms));
                return Ok(report);
            }
            match self.remove_dir(&m, &mdir) {
                Ok(Gone::No) => {
                    report.removed = !cfg!(ck_mutation = "no-rmdir");
                    return Ok(report);
                }
                Ok(Gone::Yes) => return Ok(gone_meanwhile(report)),
                // Populated again: a process entered after the kill. Kill again.
                Err(e)
                    if e.errno() == Some(Errno::BUSY)
                        && Instant::now() < deadline
                        && !cfg!(ck_mutation = "no-rekill") =>
                {
                    let again = stop_tree(
                        &mdir,
                        "",
                        &StopOptions {
                            grace: Duration::ZERO,
                            timeout: deadline.saturating_duration_since(Instant::now()),
                            ..*opts
                        },
                    )?;
                    report.tree.killed += again.killed;
                    report.tree.empty = again.empty;
                    report.tree.waited_ms = ms_since(start);
                    for f in again.fell_through {
                        if !report.tree.fell_through.contains(&f) {
                            report.tree.fell_through.push(f);
                        }
                    }
                }
                Err(e) => {
                    report.error = Some(e.to_string());
                    return Ok(report);
                }
            }
        }
    }

    /// Module `m` (open as `mdir`) is no longer in its place: removed by someone else.
    fn vanished(&self, m: &ModuleRef, mdir: &CgroupDir) -> bool {
        match self.dir.open_beneath(
            m.layout.dir(),
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
        ) {
            Ok(parent) => !same_dir(&parent, m.name.as_str(), mdir),
            Err(_) => true,
        }
    }

    /// Remove every empty module that is not in `keep`; with `kill`, also stop and remove the
    /// populated ones (the orphans of a daemon that died). With `dry_run`, change nothing and say
    /// what would be done. Both layouts, ours and the daemon's, are pruned. Unless `dry_run`,
    /// the modes of the modules' directories and control files are restored first where this
    /// process's uid owns them, so that what a module did to them neither hides it from the
    /// listing nor defeats the stop. A module filled after the listing (a spawn racing the
    /// prune) is stopped under `kill`, left alone otherwise; one removed meanwhile is gone.
    pub fn prune(
        &self,
        dry_run: bool,
        kill: bool,
        keep: &[String],
        opts: &StopOptions,
    ) -> Result<Vec<PruneEntry>> {
        if !dry_run {
            self.restore_layout_modes();
            for layout in [Layout::Ck, Layout::Daemon] {
                for name in self.dir.subdirs(layout.dir())? {
                    if let Ok(name) = DirName::new(&name) {
                        let m = ModuleRef { layout, name };
                        crate::cgroup::tree::restore_modes(&self.dir, &m.rel());
                    }
                }
            }
        }
        Ok(prune_entries(
            self.list()?,
            dry_run,
            kill,
            keep,
            |name| self.stop(name, opts),
            |name| match self.remove_module(name)? {
                Removal::Gone | Removal::Removed(_) => Ok(Removed::Done),
                Removal::Populated(..) => Ok(Removed::Populated),
            },
        ))
    }
}

/// What [`Root::remove_module`] found or did.
enum Removal {
    Gone,
    Removed(PathBuf),
    Populated(usize, PathBuf),
}

/// Whether a module disappeared under a removal.
enum Gone {
    Yes,
    No,
}

/// What `prune`'s removal of a module it listed as empty did.
pub(crate) enum Removed {
    /// Removed, or gone already.
    Done,
    /// Not removed: it holds processes now (filled after the listing).
    Populated,
}

/// A stop whose module disappeared before this stop removed it (another stop did): already
/// gone, which is success.
fn gone_meanwhile(mut report: StopReport) -> StopReport {
    report.already_gone = true;
    report.tree.empty = true;
    report.removed = false;
    report.error = None;
    report
}

/// The entry `name` in the directory `parent` is the directory `dir` (same device and inode).
fn same_dir(parent: &OwnedFd, name: &str, dir: &CgroupDir) -> bool {
    let Ok(there) = rustix::fs::statat(parent, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) else {
        return false;
    };
    rustix::fs::fstat(dir.fd())
        .is_ok_and(|st| st.st_ino == there.st_ino && st.st_dev == there.st_dev)
}

fn ms_since(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

/// `prune`'s decisions over `modules`, the same for every layout: `--keep` ones are kept;
/// populated ones are stopped with `stop` under `kill` and skipped otherwise; empty ones are
/// removed with `remove`; `dry_run` only says what would be done.
pub(crate) fn prune_entries(
    modules: Vec<ModuleEntry>,
    dry_run: bool,
    kill: bool,
    keep: &[String],
    stop: impl Fn(&str) -> Result<StopReport>,
    remove: impl Fn(&str) -> Result<Removed>,
) -> Vec<PruneEntry> {
    let mut out = Vec::new();
    for m in modules {
        let mut e = PruneEntry {
            name: m.name.clone(),
            layout: m.layout,
            procs: m.procs,
            action: PruneAction::Kept,
            stop: None,
            error: None,
        };
        let populated = m.procs != Some(0) || m.populated != Some(false);
        if keep
            .iter()
            .any(|k| k == m.name.as_str() || Some(k) == m.module.as_ref())
        {
            e.action = PruneAction::Kept;
        } else if populated && !kill {
            e.action = PruneAction::SkippedPopulated;
        } else if dry_run {
            e.action = if populated {
                PruneAction::WouldKill
            } else {
                PruneAction::WouldRemove
            };
        } else if populated {
            stop_entry(&mut e, &stop);
        } else {
            match remove(m.name.as_str()) {
                Ok(Removed::Done) => e.action = PruneAction::Removed,
                // Filled after the listing: a live module now, stopped only under --kill.
                Ok(Removed::Populated) if kill => stop_entry(&mut e, &stop),
                Ok(Removed::Populated) => e.action = PruneAction::SkippedPopulated,
                Err(err) => {
                    e.action = PruneAction::Failed;
                    e.error = Some(err.to_string());
                }
            }
        }
        out.push(e);
    }
    out
}

/// Check that `pid` may be placed in a module; return a pidfd on it, held until the move.
///
/// Refused (bad input, one line naming the problem and the fix): no such process, PID 1, this
/// process, a thread id that is not its thread group's leader (`Tgid:` in `/proc/<pid>/status`;
/// writing it to `cgroup.procs` would move its whole process), a kernel thread (`PF_KTHREAD` in
/// `/proc/<pid>/stat`), a zombie. The pidfd is opened first and checked to be running after
/// `/proc` was read, so what was read is about the process the pidfd names.
pub(crate) fn placeable(pid: u32) -> Result<OwnedFd> {
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let refuse = |why: String| Error::bad_input(format!("refusing to place pid {pid}: {why}"));
    let none = || {
        Error::bad_input(format!(
            "no process with pid {pid}: pass the pids of running processes"
        ))
    };
    if pid == std::process::id() {
        return Err(refuse(
            "it is this ck-cgroup process; place the module's own processes, or start one in the module with `ck-cgroup exec`".into(),
        ));
    }
    if pid == 1 {
        return Err(refuse(
            "it is PID 1, the init of this PID namespace, which must stay where it is; place the module's own processes".into(),
        ));
    }
    let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return Err(none());
    };
    let pidfd = match pidfd_open(p, PidfdFlags::empty()) {
        Ok(fd) => Some(fd),
        Err(Errno::SRCH) => return Err(none()),
        // A thread id that is not its group's leader (EINVAL before Linux 6.9, ENOENT since):
        // found by its Tgid below.
        Err(Errno::INVAL) | Err(Errno::NOENT) => None,
        Err(e) => return Err(Error::io("pidfd_open", format!("/proc/{pid}"), e)),
    };
    let read = |file: &str| std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok();
    let (Some(status), Some(stat)) = (read("status"), read("stat")) else {
        return Err(none());
    };
    match parse::proc_status_tgid(&status) {
        Some(tgid) if tgid != pid => {
            return Err(refuse(format!(
                "it is a thread of process {tgid}, not a process; place {tgid} (its threads move with it)"
            )));
        }
        Some(_) => {}
        None => return Err(none()),
    }
    let Some(st) = parse::proc_stat(&stat) else {
        return Err(none());
    };
    let comm = stat
        .split_once('(')
        .and_then(|(_, r)| r.rsplit_once(')'))
        .map_or("?", |(c, _)| c);
    if st.kernel_thread() {
        return Err(refuse(format!(
            "it is a kernel thread ({comm}), which cannot be moved into a module; place user processes only"
        )));
    }
    if st.exited() {
        return Err(refuse(format!(
            "it is a zombie ({comm} has exited and waits for its parent {} to reap it); there is nothing left to move",
            st.ppid
        )));
    }
    match pidfd {
        Some(fd) if running(&fd) => Ok(fd),
        Some(_) => Err(none()),
        // pidfd_open refused a leader: it exited in between (or an older kernel's EINVAL).
        None => Err(none()),
    }
}

/// The pidfd's process has not exited (a pidfd polls readable once it has).
fn running(pidfd: &OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&now)), Ok(0))
}

fn exited_meanwhile(pid: u32) -> Error {
    Error::failed(format!(
        "pid {pid} exited while it was being placed: it is not in the module (run the command again with the pids that still run)"
    ))
}

fn stop_entry(e: &mut PruneEntry, stop: &impl Fn(&str) -> Result<StopReport>) {
    match stop(e.name.as_str()) {
        Ok(r) => {
            e.action = if r.ok() {
                PruneAction::Killed
            } else {
                PruneAction::Failed
            };
            e.error = r.error.clone();
            e.stop = Some(r);
        }
        Err(err) => {
            e.action = PruneAction::Failed;
            e.error = Some(err.to_string());
        }
    }
}

/// Why a stop did not end: `rel` still holds processes after `waited_ms`. Each process's state
/// is read (`/proc/<pid>/stat`) before any is named: uninterruptible sleep is blamed only for
/// processes found in it.
pub(crate) fn still_populated(dir: &CgroupDir, rel: &str, waited_ms: f64) -> String {
    let path = dir.display_path(rel);
    match members(dir, rel) {
        Ok(p) => {
            let states: Vec<Option<char>> = p
                .iter()
                .map(|pid| {
                    std::fs::read_to_string(format!("/proc/{pid}/stat"))
                        .ok()
                        .and_then(|t| parse::proc_stat(&t))
                        .map(|s| s.state)
                })
                .collect();
            format!(
                "{} still holds {} after {waited_ms} ms",
                path.display(),
                describe_left(&states)
            )
        }
        Err(e) => format!(
            "{} still holds processes after {waited_ms} ms (which could not be read: {e})",
            path.display()
        ),
    }
}

/// `3 processes: 2 in state D (uninterruptible sleep: ...), 1 in state R (running)`, from the
/// states read (`None`: gone or unreadable by the time it was read).
pub(crate) fn describe_left(states: &[Option<char>]) -> String {
    let n = states.len();
    if n == 0 {
        return "no process any more (it emptied as the timeout passed: run the command again)"
            .into();
    }
    let mut counts: Vec<(Option<char>, usize)> = Vec::new();
    for s in states {
        match counts.iter_mut().find(|(c, _)| c == s) {
            Some((_, k)) => *k += 1,
            None => counts.push((*s, 1)),
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(s, k)| match s {
            Some(c) => format!("{k} in state {c} ({})", state_name(*c)),
            None => format!("{k} gone or unreadable when read"),
        })
        .collect();
    format!(
        "{n} process{}: {}",
        if n == 1 { "" } else { "es" },
        parts.join(", ")
    )
}

fn state_name(c: char) -> &'static str {
    match c {
        'D' => "uninterruptible sleep: it dies only when its I/O ends",
        'R' => "running",
        'S' => "sleeping",
        'T' => "stopped",
        't' => "stopped by a tracer",
        'Z' => "zombie: exited, not yet reaped",
        'X' | 'x' => "dead",
        'I' => "idle",
        'P' => "parked",
        'W' => "waking",
        _ => "as /proc/<pid>/stat says",
    }
}

/// `SIGTERM` for [`Signal::TERM`].
pub fn signal_name(sig: Signal) -> String {
    let n = sig.as_raw();
    let name = match sig {
        Signal::TERM => "TERM",
        Signal::INT => "INT",
        Signal::HUP => "HUP",
        Signal::QUIT => "QUIT",
        Signal::USR1 => "USR1",
        Signal::USR2 => "USR2",
        Signal::KILL => "KILL",
        _ => return format!("signal {n}"),
    };
    format!("SIG{name}")
}

impl Root {
    /// Start `cmd` inside the module (made if needed) with no window between spawn and
    /// placement: `clone3(CLONE_INTO_CGROUP)`, or on kernels before 5.7 a pre-exec write of `0`
    /// to the module's `cgroup.procs`. [`crate::spawn::ModuleChild::placement`] says which ran.
    /// By default the program starts in a cgroup namespace rooted at the module
    /// ([`crate::spawn::ModuleCommand::cgroup_namespace`]); when none can be made nothing is
    /// started and the error says so ([`Error::is_no_cgroup_namespace`]).
    pub fn spawn(
        &self,
        id: &ModuleId,
        cmd: &crate::spawn::ModuleCommand,
    ) -> Result<crate::spawn::ModuleChild> {
        let rel = ModuleRef::ck(id).rel();
        self.refuse_frozen(id, &rel)?;
        let dir = match self.dir.open_beneath(
            &rel,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                self.create(id)?;
                self.dir
                    .open_beneath(
                        &rel,
                        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
                    )
                    .map_err(|e| Error::io("open", self.dir.display_path(&rel), e))?
            }
            Err(e) => return Err(Error::io("open", self.dir.display_path(&rel), e)),
        };
        crate::spawn::spawn_into(std::os::unix::io::AsFd::as_fd(&dir), cmd).map_err(|e| {
            if let Some(errno) = crate::spawn::cgroup_namespace_refused(&e) {
                return Error::no_cgroup_namespace(self.dir.display_path(&rel), errno);
            }
            let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
            Error::io(
                format_args!("spawn {:?} into", cmd.program()),
                self.dir.display_path(&rel),
                errno,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::describe_left;

    #[test]
    fn what_is_left_is_described_by_the_states_read_and_d_only_when_read() {
        let s = describe_left(&[Some('S'), Some('R'), Some('S')]);
        assert_eq!(
            s,
            "3 processes: 2 in state S (sleeping), 1 in state R (running)"
        );
        assert!(!s.contains('D'));
        let d = describe_left(&[Some('D'), None]);
        assert!(
            d.starts_with("2 processes: 1 in state D (uninterruptible sleep"),
            "{d}"
        );
        assert!(d.contains("1 gone or unreadable when read"), "{d}");
        assert_eq!(
            describe_left(&[Some('t')]),
            "1 process: 1 in state t (stopped by a tracer)"
        );
        assert!(describe_left(&[]).starts_with("no process any more"));
    }
}
