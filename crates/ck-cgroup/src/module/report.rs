//! What the service root's operations report (the JSON the CLI prints).

use std::path::PathBuf;

use rustix::io::Errno;
use rustix::process::Signal;
use serde::Serialize;

use super::{signal_from_name, signal_name};
use crate::cgroup::oomd::OomdMark;
use crate::error::{Class, Error, ErrorKind, Result, io_kind};
use crate::id::{DirName, ModuleId};
use crate::layout::{Layout, ModuleName, ToModuleName};
use crate::stop::{StopOptions, TreeStop};

/// What `init` did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
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
    /// Those of `missing` that a cgroup v1 hierarchy holds (a hybrid host: no delegation gives
    /// them to cgroup2; `/proc/self/mountinfo`). Empty where none is held, or it was unreadable.
    pub missing_held_by_v1: Vec<String>,
    /// `daemon/`'s systemd-oomd preference, read back after it was set.
    pub oomd_daemon: OomdMark,
}

/// What `create` did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct CreateReport {
    /// The module.
    pub module: ModuleId,
    /// Its cgroup directory.
    pub path: PathBuf,
    /// Made now (false: it existed).
    pub created: bool,
}

/// What `place` did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct PlaceReport {
    /// The module.
    pub module: ModuleId,
    /// Its cgroup directory.
    pub path: PathBuf,
    /// The pids moved in.
    pub placed: Vec<u32>,
}

/// One module in `list`. An entry is itself what the calls that act on one module take
/// ([`ToModuleName`]): `root.stop(&entry, &opts)` stops the directory listed (by its layout
/// and name, [`ModuleName::of_dir`]), even where a directory of the same name is in the other
/// layout.
///
/// ```no_run
/// use ck_cgroup::stop::StopOptions;
///
/// # fn main() -> ck_cgroup::Result<()> {
/// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
/// for m in root.list()? {
///     if m.populated == Some(false) {
///         root.stop(&m, &StopOptions::default())?; // the entry, or &m.name, or m.path
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ModuleEntry {
    /// Directory name as found. Every call that acts on one module takes it (`&m.name`:
    /// [`DirName`] is [`ToModuleName`]), as `kill` and `remove` take it on the command line;
    /// by the bare name a directory of that name in both layouts is refused as two, where the
    /// entry itself (or [`path`](Self::path)) names the one listed.
    pub name: DirName,
    /// The module id; for the daemon's layout decoded from the name, `null` where it does not decode.
    pub module: Option<DirName>,
    /// Which placement made it.
    pub layout: Layout,
    /// Path relative to the root, as shown ([`ModuleRef::shown_path`](crate::layout::ModuleRef::shown_path)): it names this
    /// directory alone.
    pub path: String,
    /// `cgroup.events` `populated`; `null` when it could not be read.
    pub populated: Option<bool>,
    /// `cgroup.events` `frozen`: the module is frozen (by itself, or by a freeze-kill that did
    /// not finish), its own or an ancestor's `cgroup.freeze`; `null` when it could not be read.
    pub frozen: Option<bool>,
    /// Processes in the module and its sub-cgroups; `null` when it could not be read.
    pub procs: Option<usize>,
}

impl ToModuleName for ModuleEntry {
    fn to_module_name(&self) -> Result<ModuleName> {
        Ok(ModuleName::of_dir(self.layout, &self.name))
    }
}

impl ModuleEntry {
    /// Its path relative to the root, in the crate's text (for access beneath the root).
    pub(crate) fn rel(&self) -> String {
        match self.layout {
            // Relative to module.slice's cgroup: the scope in its module's slice.
            Layout::Systemd => self.path.clone(),
            _ => format!("{}/{}", self.layout.dir(), self.name.text()),
        }
    }
}

/// What `remove` did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct RemoveReport {
    /// The name asked for, in its shown form.
    pub module: ModuleName,
    /// Its path, when found.
    pub path: Option<PathBuf>,
    /// Removed now.
    pub removed: bool,
    /// It did not exist.
    pub already_gone: bool,
}

/// What `kill` (a stop of one module) did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct StopReport {
    /// The name asked for, in its shown form.
    pub module: ModuleName,
    /// Which placement made it; `null` when it was already gone.
    pub layout: Option<Layout>,
    /// Its path, when found.
    pub path: Option<PathBuf>,
    /// It did not exist: nothing to do.
    pub already_gone: bool,
    /// The graceful signal (`SIGTERM`); `null` without a grace period. As a [`Signal`]:
    /// [`StopReport::signal_kind`].
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
    /// Who killed in the module before it was removed: the kernel's OOM killer
    /// (`memory.events`) and systemd-oomd (`user.oomd_ooms`, `user.oomd_kill`), read after the
    /// stop and before the `rmdir` (each `null` where it could not be read; all `null` when the
    /// module was already gone).
    pub kills: crate::cause::counters::KillCounters,
    /// What stayed charged to the module once its processes were gone, read before the `rmdir`
    /// (`memory.stat` `shmem` and `file`; each `null` where it could not be read, all `null`
    /// when the module was already gone): shared memory a kill cannot free.
    #[serde(default)]
    pub memory_left: crate::cause::memory_left::MemoryLeft,
    /// Marks on the module that this stop found no agreement for: `user.oomd_ooms` raised while
    /// processes ran unkilled when the stop began (systemd-oomd kills every process of the cgroup
    /// it picks; a module that owns its directory can raise the mark itself). Left out of the
    /// JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks_unconfirmed: Vec<crate::cause::death_cause::UnconfirmedMark>,
}

impl StopReport {
    /// The graceful signal as the [`Signal`] the calls take ([`signal_name`]'s inverse); `None`
    /// without a grace period.
    pub fn signal_kind(&self) -> Option<Signal> {
        let name = self.signal.as_deref()?;
        signal_from_name(name)
    }

    /// The report of a stop of `name` that found nothing: already gone.
    pub(crate) fn gone(name: &ModuleName, opts: &StopOptions) -> StopReport {
        StopReport {
            module: name.clone(),
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
            kills: crate::cause::counters::KillCounters::default(),
            memory_left: crate::cause::memory_left::MemoryLeft::default(),
            marks_unconfirmed: Vec::new(),
        }
    }

    /// Done: the tree is empty and its directory removed, or it was already gone.
    pub fn ok(&self) -> bool {
        self.already_gone || (self.tree.empty && self.removed)
    }
}

/// One module in `prune`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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

/// A failed stop as an [`Error`] that carries its [`StopReport`]; defined here, beside the
/// report, so that `error` (the bottom layer) imports nothing above it.
impl Error {
    /// A stop of a module that did not end with its tree empty and its directory removed: the
    /// message is the report's `error`, the kind [`ErrorKind::StillPopulated`] (or, when the
    /// tree is empty and the removal failed for another reason than `EBUSY`, the kind of that
    /// errno), and the report is kept ([`Error::stop_report`]).
    pub(crate) fn stop_failed(report: StopReport, errno: Option<Errno>) -> Error {
        let kind = match errno {
            Some(e) if report.tree.empty && e != Errno::BUSY => io_kind(e),
            _ => ErrorKind::StillPopulated,
        };
        Error {
            class: Class::Failed,
            kind,
            message: report
                .error
                .clone()
                .unwrap_or_else(|| format!("the stop of {} did not end", report.module)),
            errno,
            hint: None,
            stop: Some(Box::new(report)),
        }
    }

    /// The report of a stop that did not end ([`ErrorKind::StillPopulated`]): what was done,
    /// what is left. `None` for every other error.
    pub fn stop_report(&self) -> Option<&StopReport> {
        self.stop.as_deref()?.downcast_ref()
    }

    /// Take the report of a stop that did not end out of the error; the error itself otherwise.
    pub fn into_stop_report(mut self) -> std::result::Result<StopReport, Error> {
        match self.stop.take().map(|r| r.downcast::<StopReport>()) {
            Some(Ok(r)) => Ok(*r),
            Some(Err(other)) => {
                self.stop = Some(other);
                Err(self)
            }
            None => Err(self),
        }
    }
}
