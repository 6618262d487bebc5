//! The systemd backend: modules as transient scopes, for hosts where the service cannot be
//! delegated (`Delegate=no`).
//!
//! A module `id` is the scope `subc-module-<id>.scope` in `module-<id>.slice` (a child of
//! [`MODULES_SLICE`], `units/module.slice`), so its cgroup is
//! `<mount><module.slice's ControlGroup>/module-<id>.slice/subc-module-<id>.scope`. systemd makes,
//! limits and removes those cgroups; ck-cgroup only reads them (`cgroup.events`, `cgroup.procs`,
//! the controllers' files) and asks systemd over D-Bus for everything else, as
//! <https://systemd.io/CGROUP_DELEGATION/> asks of programs that were not delegated a subtree.
//!
//! [`Scopes`] is this backend's type, as [`Root`](crate::module::Root) is cgroupfs's, with the
//! same methods for the operations both have ([`crate::backend::Backend`] lists them):
//!
//! - [`Scopes::enter_with_limits`]: `StartTransientUnit` with the caller's own pid (`PIDs=`) and
//!   the limits as unit properties; after the job is done, the caller is in the scope and can
//!   exec the module's command (the daemon stays its parent, and the command cannot fork before
//!   it is placed).
//! - [`Scopes::stop`]: `KillUnit(all, SIG)` and a grace that waits on `populated 0`, then
//!   `KillUnit(all, SIGKILL)`, then `StopUnit` of the scope and of its slice.
//! - [`Scopes::list`], [`Scopes::status`], [`Scopes::processes`]: the scopes found under
//!   `module.slice`'s cgroup; [`Scopes::prune`].

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use rustix::process::Signal;

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::parse;
use crate::cgroup::tree::Removal;
use crate::cgroup::tree::members;
use crate::discover::cgroup2_mount;
use crate::error::{Error, Result};
use crate::gpu::{GpuCensus, GpuProbe};
use crate::id::{DirName, ModuleId};
use crate::layout::{Layout, ModuleName, ModuleRef};
use crate::limits::{Limits, Skipped};
use crate::module::{ModuleEntry, PruneEntry, StopReport, prune_entries};
use crate::mutation::{self, Control};
use crate::stop::{KillMethod, StopOptions, stop_tree_by};
pub mod manager;
pub mod oomd_units;

use crate::backend::Bus;
use crate::layout::{MODULES_SLICE, module_id, module_of_scope, scope_unit, slice_unit};
use crate::telemetry::procs::{ModuleProcesses, modules_processes};
use crate::telemetry::{ModuleStatus, module_status_with};
use manager::{Manager, ScopeSpec};

/// How long `exec` waits for systemd to start a module's scope.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Where `module.slice`'s cgroup is: `None` when systemd has not loaded it (no module scope was
/// ever started, or all are gone and it was unloaded).
fn modules_dir(m: &Manager) -> Result<Option<CgroupDir>> {
    let Some(cg) = m.control_group(MODULES_SLICE)? else {
        return Ok(None);
    };
    let path = join_cg(&cgroup2_mount()?, &cg);
    if !path.exists() {
        return Ok(None);
    }
    CgroupDir::open(&path).map(Some)
}

/// The service root of `unit` (`--unit`): its `ControlGroup` from the manager on `bus`, made
/// absolute with the cgroup2 mount. The only D-Bus call of the cgroupfs backend, made only when a
/// unit is named. Every failure is bad input (exit 2) in one line without a hint, naming the unit
/// and `--root`/`CK_CGROUP_ROOT` as the way without systemd: the manager cannot be reached
/// ([`ErrorKind::SystemdUnavailable`](crate::error::ErrorKind::SystemdUnavailable)), the unit is not
/// loaded or has no cgroup (it is not running).
pub fn unit_root(bus: Bus, unit: &str) -> Result<PathBuf> {
    let which = match bus {
        Bus::System => "the system manager",
        Bus::User => "the user manager (--user)",
    };
    let instead = "pass the service's cgroup with --root PATH or CK_CGROUP_ROOT=PATH instead";
    if unit.is_empty() || unit.contains('/') || unit.chars().any(char::is_control) {
        return Err(Error::bad_input(format!(
            "--unit {unit:?} is not a unit name (e.g. ck-subc.service)"
        )));
    }
    let one_line = |e: Error| {
        let kind = e.kind();
        Error::bad_input(format!(
            "--unit {unit}: {}; {instead}",
            e.message().replace('\n', " ")
        ))
        .with_kind(kind)
    };
    let m = Manager::connect(bus).map_err(one_line)?;
    let Some(cg) = m.control_group(unit).map_err(one_line)? else {
        return Err(Error::bad_input(format!(
            "--unit {unit}: {which} has no cgroup for it (not loaded, or not running: `systemctl{} status {unit}`); {instead}",
            if bus == Bus::User { " --user" } else { "" }
        )));
    };
    Ok(join_cg(&cgroup2_mount()?, &cg))
}

fn join_cg(mount: &Path, cg: &str) -> PathBuf {
    mount.join(cg.trim_start_matches('/'))
}

/// What [`Scopes::enter_scope`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Entered {
    /// The scope.
    pub unit: String,
    /// Its slice.
    pub slice: String,
    /// The caller's cgroup afterwards (from `/proc/self/cgroup`).
    pub cgroup: String,
}

/// The module scopes of one systemd manager: the systemd backend's type, as
/// [`Root`](crate::module::Root) is the cgroupfs backend's, with the same methods for the
/// operations both have (`enter_with_limits`, `stop`, `prune`, `list`, `status_cold`,
/// `processes`; [`crate::backend::Backend`] lists them and matches over the two).
///
/// Made without I/O ([`Scopes::new`]): the first operation that needs the manager connects to
/// it, and the handle keeps that connection for the operations after, as a `Root` keeps its
/// directory open. Bad input (a forced `--method`, a module name that is no id) is refused
/// before any connection.
#[derive(Debug, Clone)]
pub struct Scopes {
    bus: Bus,
    manager: OnceLock<Manager>,
}

impl Scopes {
    /// The scopes of the manager on `bus`; nothing is connected yet.
    pub fn new(bus: Bus) -> Scopes {
        Scopes {
            bus,
            manager: OnceLock::new(),
        }
    }

    /// The manager asked: the system manager or the caller's user manager.
    pub fn bus(&self) -> Bus {
        self.bus
    }

    /// The connection to the manager, made at the first call.
    fn manager(&self) -> Result<&Manager> {
        if let Some(m) = self.manager.get() {
            return Ok(m);
        }
        let m = Manager::connect(self.bus)?;
        Ok(self.manager.get_or_init(|| m))
    }

    /// `exec`: put the calling process into module `id`'s scope, started with `limits`
    /// ([`Scopes::enter_scope`] with [`START_TIMEOUT`]). systemd applies every limit or starts
    /// nothing, so none is skipped (there is no best effort to ask for): the list is empty. As
    /// [`Root::enter_with_limits`](crate::module::Root::enter_with_limits).
    pub fn enter_with_limits(&self, id: &ModuleId, limits: &Limits) -> Result<Vec<Skipped>> {
        self.enter_scope(id, limits, START_TIMEOUT)
            .map(|_| Vec::new())
    }

    /// Put the calling process into module `id`'s scope: `StartTransientUnit` holding this pid,
    /// with `limits` as unit properties, and wait (at most `timeout`) for the job. When the
    /// caller runs in a service (the daemon's), the scope is `PartOf=` and `Before=` it:
    /// stopping or restarting the service stops the module too, after the daemon has stopped.
    /// Checks `/proc/self/cgroup` afterwards: the process must be in the scope.
    pub fn enter_scope(
        &self,
        id: &ModuleId,
        limits: &Limits,
        timeout: Duration,
    ) -> Result<Entered> {
        let m = self.manager()?;
        let me = std::process::id();
        let mut spec = ScopeSpec::module(id, me, limits);
        spec.part_of = m.unit_of_pid(me)?.filter(|u| u.ends_with(".service"));
        m.start_scope(&spec, timeout)?;
        let cgroup = placed_in(&spec.unit, &format!("/{}/{}", slice_unit(id), spec.unit))?;
        Ok(Entered {
            unit: spec.unit,
            slice: slice_unit(id),
            cgroup,
        })
    }

    /// `module.slice`'s cgroup, where the module scopes are: `None` when systemd has not loaded
    /// it (no module scope was ever started, or all are gone and it was unloaded). What `list`
    /// shows as its root, as [`Root::path`](crate::module::Root::path) for cgroupfs.
    pub fn path(&self) -> Result<Option<PathBuf>> {
        Ok(modules_dir(self.manager()?)?.map(|d| d.path().to_path_buf()))
    }

    /// The module scopes under `module.slice`: one entry per
    /// `module-*.slice/subc-module-*.scope` (none when module.slice is not loaded).
    pub fn list(&self) -> Result<Vec<ModuleEntry>> {
        match modules_dir(self.manager()?)? {
            Some(dir) => entries(&dir, true),
            None => Ok(Vec::new()),
        }
    }

    /// The figures of every module scope (`names` empty), or of those named (by id or scope
    /// name), device memory as [`GpuProbe::default`] finds it.
    pub fn status(&self, names: &[ModuleName]) -> Result<Vec<ModuleStatus>> {
        let cold =
            crate::telemetry::cold::ColdCensus::read(crate::telemetry::cold::DEFAULT_WINDOW_MS);
        self.status_cold(names, &GpuProbe::default(), &cold)
    }

    /// [`Scopes::status`], device memory as `gpu` finds it (looked for once the modules are
    /// found), cold memory from `cold` (aged where the caller chose to).
    pub fn status_cold(
        &self,
        names: &[ModuleName],
        gpu: &GpuProbe,
        cold: &crate::telemetry::cold::ColdCensus,
    ) -> Result<Vec<ModuleStatus>> {
        let (dir, chosen) = self.selected(names)?;
        let gpu = GpuCensus::take(gpu);
        Ok(match dir {
            Some(dir) => {
                let top = crate::telemetry::cold::hierarchy_path(dir.path());
                chosen
                    .iter()
                    .filter_map(|e| module_status_with(&dir, e, None, &gpu, cold, top.as_deref()))
                    .collect()
            }
            None => Vec::new(),
        })
    }

    /// `ps`: the processes of the module scopes (`names` empty), or of those named, each
    /// process's device memory as `gpu` finds it.
    pub fn processes(&self, names: &[ModuleName], gpu: &GpuProbe) -> Result<Vec<ModuleProcesses>> {
        let (dir, chosen) = self.selected(names)?;
        Ok(match dir {
            Some(dir) => {
                let gpu = GpuCensus::take(gpu);
                modules_processes(&dir, &chosen, &gpu)
            }
            None => Vec::new(),
        })
    }

    /// The modules' directory (`None`: module.slice is not loaded) and every module scope, or
    /// those named, in that order; a name that is no module scope is an error.
    fn selected(&self, names: &[ModuleName]) -> Result<(Option<CgroupDir>, Vec<ModuleEntry>)> {
        let ids = names
            .iter()
            .map(|n| module_id(n.name.text()))
            .collect::<Result<Vec<_>>>()?;
        let dir = modules_dir(self.manager()?)?;
        let all = match &dir {
            Some(d) => entries(d, false)?,
            None => Vec::new(),
        };
        if dir.is_none() {
            if let Some(n) = names.first() {
                return Err(no_module(n));
            }
            return Ok((None, Vec::new()));
        }
        if names.is_empty() {
            return Ok((dir, all));
        }
        let mut out = Vec::new();
        for (n, id) in names.iter().zip(&ids) {
            match all
                .iter()
                .find(|e| e.module.as_ref() == Some(&DirName::from(id)))
            {
                Some(e) => out.push(e.clone()),
                None => return Err(no_module(n)),
            }
        }
        Ok((dir, out))
    }

    /// `prune` of the module scopes: the same decisions as for a service root
    /// ([`crate::module::Root::prune`]): empty scopes are stopped, populated ones killed with
    /// `kill` (else skipped), `keep` ones left. Run from a service (the daemon's
    /// `ExecStartPre=`), only the scopes `PartOf=` that service are pruned, so that the modules
    /// of another service that uses the backend are not touched; run from anywhere else, every
    /// module scope is.
    pub fn prune(
        &self,
        dry_run: bool,
        kill: bool,
        keep: &[ModuleName],
        opts: &StopOptions,
    ) -> Result<Vec<PruneEntry>> {
        if opts.method != crate::stop::Method::Auto {
            return Err(method_forced());
        }
        let m = self.manager()?;
        let Some(dir) = modules_dir(m)? else {
            return Ok(Vec::new());
        };
        let owner = m
            .unit_of_pid(std::process::id())?
            .filter(|u| u.ends_with(".service"));
        let mut mine = Vec::new();
        for e in entries(&dir, true)? {
            if let Some(owner) = &owner
                && !m.part_of(e.name.text())?.contains(owner)
            {
                continue;
            }
            mine.push(e);
        }
        let id_of = |r: &ModuleRef| module_id(r.name.text());
        Ok(prune_entries(
            mine,
            dry_run,
            kill,
            keep,
            |r| stop_with(m, &id_of(r)?, &ModuleName::from(r), opts),
            |r| {
                let id = id_of(r)?;
                m.stop_unit(&scope_unit(&id), opts.timeout)?;
                m.stop_unit(&slice_unit(&id), opts.timeout)?;
                Ok(Removal::Removed)
            },
        ))
    }

    /// Stop module `name`'s scope: `KillUnit(all, opts.signal)` and a grace that ends on
    /// `populated 0`, then `KillUnit(all, SIGKILL)` and a wait of at most `opts.timeout`, then
    /// `StopUnit` of the scope and of its slice (systemd removes their cgroups). The report's
    /// method is `systemd`. A scope that is not loaded is reported as already gone. A stop that
    /// did not end is an `Err` that carries its report, as of
    /// [`Root::stop`](crate::module::Root::stop).
    pub fn stop(&self, name: &ModuleName, opts: &StopOptions) -> Result<StopReport> {
        if opts.method != crate::stop::Method::Auto {
            return Err(method_forced());
        }
        let id = module_id(name.name.text())?;
        stop_with(self.manager()?, &id, name, opts)
    }
}

/// After systemd started `unit` holding this process: this process's cgroup (from
/// `/proc/self/cgroup`), which must end with `want`; else the job's "done" was not the placement
/// it promised, and nothing may run.
pub(crate) fn placed_in(unit: &str, want: &str) -> Result<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| Error::failed(format!("failed to read /proc/self/cgroup: {e}")))?;
    let cgroup = parse::proc_cgroup_v2(&text).unwrap_or_default();
    if !cgroup.ends_with(want) {
        return Err(Error::failed(format!(
            "systemd started {unit} but this process is in {cgroup:?}, not in the scope"
        )));
    }
    Ok(cgroup)
}

fn entries(dir: &CgroupDir, count_procs: bool) -> Result<Vec<ModuleEntry>> {
    let mut out = Vec::new();
    for slice in dir.subdirs("")? {
        if !(slice.starts_with("module-") && slice.ends_with(".slice")) {
            continue;
        }
        for scope in dir.subdirs(&slice)? {
            let Some(module) = module_of_scope(&scope) else {
                continue;
            };
            let Ok(name) = DirName::from_text(&scope) else {
                continue;
            };
            let Ok(module) = ModuleId::new(&module).map(DirName::from) else {
                continue;
            };
            let rel = format!("{slice}/{scope}");
            let events = dir
                .read_raw(&format!("{rel}/cgroup.events"))
                .ok()
                .map(|t| parse::events(&t));
            out.push(ModuleEntry {
                populated: events.as_ref().and_then(|e| e.populated),
                frozen: events.as_ref().and_then(|e| e.frozen),
                procs: if count_procs {
                    members(dir, &rel).ok().map(|p| p.len())
                } else {
                    None
                },
                module: Some(module),
                layout: Layout::Systemd,
                path: rel,
                name,
            });
        }
    }
    Ok(out)
}

fn method_forced() -> Error {
    Error::bad_input(
        "--method cannot be chosen with --backend systemd: the scope's cgroup is systemd's, and systemd kills it (KillUnit)",
    )
    .with_hint("leave --method out (auto)")
}

fn no_module(n: &ModuleName) -> Error {
    Error::failed(format!("no module scope {n} under {MODULES_SLICE}"))
        .with_hint("`ck-cgroup list --backend systemd` shows the module scopes")
        .with_kind(crate::error::ErrorKind::NoSuchModule)
}

/// [`Scopes::stop`] on the connection `m` (and each kill of [`Scopes::prune`]).
fn stop_with(
    m: &Manager,
    id: &ModuleId,
    name: &ModuleName,
    opts: &StopOptions,
) -> Result<StopReport> {
    let unit = scope_unit(id);
    let slice = slice_unit(id);
    let mut report = StopReport::gone(name, opts);
    let Some(cg) = m.control_group(&unit)? else {
        // No scope; an empty slice left behind goes too.
        m.stop_unit(&slice, opts.timeout)?;
        return Ok(report);
    };
    let path = join_cg(&cgroup2_mount()?, &cg);
    let (parent, rel) = match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(p), Some(n)) => (p.to_path_buf(), n.to_string()),
        _ => {
            return Err(Error::failed(format!(
                "systemd gave {unit} the cgroup {cg:?}, which is not a path below the mount"
            )));
        }
    };
    let dir = CgroupDir::open(&parent)?;
    let me = std::process::id();
    if members(&dir, &rel)?.contains(&me) {
        return Err(Error::bad_input(format!(
            "refusing to kill {}: it holds this process ({me})",
            path.display()
        ))
        .with_hint("run `ck-cgroup kill` from outside the module, e.g. from the daemon")
        .with_kind(crate::error::ErrorKind::ModuleHoldsCaller));
    }
    report.already_gone = false;
    report.layout = Some(Layout::Systemd);
    report.path = Some(path.clone());
    report.tree = stop_tree_by(
        &dir,
        &rel,
        opts,
        |sig| {
            let before = members(&dir, &rel)?;
            m.kill_unit(&unit, sig.as_raw())?;
            Ok(before)
        },
        |_, out| {
            if !mutation::active(Control::NoKill) {
                m.kill_unit(&unit, Signal::KILL.as_raw())?;
            }
            out.method = Some(KillMethod::Systemd);
            Ok(())
        },
    )?;
    if !report.tree.empty {
        // Still populated, or empty with a process it listed alive outside (a module's
        // process that moved itself out): the same line as the cgroupfs stop's.
        report.error = Some(crate::stop::not_ended(&dir, &rel, &report.tree));
        return Err(Error::stop_failed(report, None));
    }
    // systemd stops an empty scope by itself; StopUnit makes it happen now and waits for it.
    m.stop_unit(&unit, opts.timeout)?;
    m.stop_unit(&slice, opts.timeout)?;
    report.removed = !path.exists();
    if !report.removed {
        report.error = Some(format!(
            "systemd stopped {unit} but {} is still there",
            path.display()
        ));
        return Err(Error::stop_failed(report, None));
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
