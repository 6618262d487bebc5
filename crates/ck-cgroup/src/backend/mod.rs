//! Backends: who makes and stops a module's cgroup, as one type, [`Backend`], over two types:
//! the cgroupfs backend is [`crate::module::Root`] on a delegated subtree; the systemd backend
//! (`systemd::Scopes`, behind the `systemd` feature) makes each module a transient scope over
//! D-Bus.
//!
//! [`Backend`]'s methods are the one list of what the backends do, each a plain `match` whose arms
//! call the backend's own method, so that a reader (and an editor's "go to definition") goes
//! from a call to its callee:
//!
//! - both have: [`Backend::enter_with_limits`] (`exec`), [`Backend::stop`] (`kill`),
//!   [`Backend::prune`], [`Backend::list`], [`Backend::status`], [`Backend::processes`] (`ps`):
//!   `Root`'s and `Scopes`' methods of the same name;
//! - cgroupfs has, systemd answers without asking: [`Backend::enter_daemon`] (the daemon stays in
//!   its unit's cgroup), [`Backend::not_laid_out`], [`Backend::parents_status`];
//! - cgroupfs only: the commands that take a [`Cgroupfs`] (the CLI refuses them on systemd).
//!
//! A new operation both have is a method of `Root` and of `Scopes` and one method here with its
//! two arms. The library reads no variable of the CLI's: the caller decides the backend (the CLI
//! from `--backend` or `CK_CGROUP_BACKEND`) and how GPUs are looked for ([`GpuProbe`], the CLI
//! from `CK_CGROUP_NVIDIA_SMI`), and passes them in.

use std::path::PathBuf;

use crate::cgroup::oomd::{OomdMark, OomdPreference};
use crate::discover;
use crate::error::Error;
use crate::gpu::{GpuCensus, GpuProbe};
use crate::id::ModuleId;
use crate::layout::ModuleName;
use crate::limits::{Limits, Skipped};
use crate::module::{ModuleEntry, PruneEntry, Root, StopReport};
use crate::stop::StopOptions;
use crate::telemetry::ModuleStatus;
use crate::telemetry::cold::ColdCensus;
use crate::telemetry::procs::ModuleProcesses;

#[cfg(feature = "systemd")]
pub mod systemd;
#[cfg(feature = "systemd")]
pub use systemd::Scopes;

/// Who makes and stops the modules, decided once by the caller (the CLI: `--backend`, else
/// `CK_CGROUP_BACKEND`): the CLI matches on nothing else. Each variant says where the modules
/// are; every operation opens the backend's type there (a [`Root`], a `systemd::Scopes`) and
/// calls its method. An enum rather than a trait: the systemd variant is there only with the
/// feature, the CLI holds one value and calls one method, and no caller needs to be generic or
/// boxed.
#[derive(Debug, Clone)]
pub enum Backend {
    /// Module cgroups under the service's root: `--root` (or `CK_CGROUP_ROOT`), else discovered.
    Cgroupfs(Cgroupfs),
    /// Transient scopes, made by the manager on this bus (`--root` does not apply).
    #[cfg(feature = "systemd")]
    Systemd(Bus),
}

/// How [`Backend::status`] reads: the cold memory's window, whether to age first, and how GPUs
/// are looked for.
#[derive(Debug, Clone)]
pub struct StatusOptions {
    /// Cold memory is what was not touched for this long ([`crate::telemetry::cold`]).
    pub cold_window_ms: u64,
    /// Age the modules' memory cgroups first (each whose youngest generation is older than half
    /// the window: the only write `status` makes).
    pub age_cold: bool,
    /// Where device memory is read from ([`GpuCensus::take`]).
    pub gpu: GpuProbe,
}
/// The service's root, not yet looked for: the explicit one (`None`: discovered).
#[derive(Debug, Clone)]
pub struct Cgroupfs(pub Option<PathBuf>);

impl Cgroupfs {
    /// The service root, for an operation on modules: the explicit one, else discovered, and
    /// checked to be laid out ([`Root::check_service_root`]): a root with neither `daemon/` nor
    /// `subc-modules/` is refused (exit 2, [`ErrorKind::NotAServiceRoot`](crate::error::ErrorKind)),
    /// never shown as a root without modules.
    pub fn open(&self) -> Result<Root, Error> {
        let root = self.open_unchecked()?;
        let found = match &self.0 {
            Some(_) => "",
            None if std::env::var_os(discover::ENV_ROOT).is_some() => " (from CK_CGROUP_ROOT)",
            None => " (discovered from this process's cgroup)",
        };
        root.check_service_root(found)?;
        Ok(root)
    }

    /// The root as it is, laid out or not: for `init`, which lays it out.
    pub fn open_unchecked(&self) -> Result<Root, Error> {
        match &self.0 {
            Some(p) => Root::open(p),
            None => Root::open(&discover::discover()?),
        }
    }
}

/// The operations both backends have: each arm calls the method of the same name of the type
/// its variant opens.
impl Backend {
    /// `exec`: move this process into module `id`, made with `limits` when it is not there.
    /// Returns the limits skipped (`best_effort`, a controller missing): none on systemd, which
    /// applies every limit or starts nothing (`best_effort` changes nothing there). D-Bus is
    /// paid for only on the systemd backend.
    pub fn enter_with_limits(
        &self,
        id: &ModuleId,
        limits: &Limits,
        best_effort: bool,
    ) -> Result<Vec<Skipped>, Error> {
        match self {
            Backend::Cgroupfs(fs) => fs.open()?.enter_with_limits(id, limits, best_effort),
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => Scopes::new(*bus).enter_with_limits(id, limits),
        }
    }

    /// `kill`.
    pub fn stop(&self, name: &ModuleName, opts: &StopOptions) -> Result<StopReport, Error> {
        match self {
            Backend::Cgroupfs(fs) => fs.open()?.stop(name, opts),
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => Scopes::new(*bus).stop(name, opts),
        }
    }

    /// `prune`.
    pub fn prune(
        &self,
        dry_run: bool,
        kill: bool,
        keep: &[ModuleName],
        opts: &StopOptions,
    ) -> Result<Vec<PruneEntry>, Error> {
        match self {
            Backend::Cgroupfs(fs) => fs.open()?.prune(dry_run, kill, keep, opts),
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => Scopes::new(*bus).prune(dry_run, kill, keep, opts),
        }
    }

    /// `list`: where the modules are (the service root; for systemd module.slice's cgroup,
    /// `None`: not loaded) and the modules.
    pub fn list(&self) -> Result<(Option<PathBuf>, Vec<ModuleEntry>), Error> {
        match self {
            Backend::Cgroupfs(fs) => {
                let root = fs.open()?;
                let r = root.list()?;
                Ok((Some(root.path().to_path_buf()), r))
            }
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => {
                let scopes = Scopes::new(*bus);
                let dir = scopes.path()?;
                Ok((dir, scopes.list()?))
            }
        }
    }

    /// `status`: the figures of every module (`names` empty), or of those named, with their
    /// cold memory over `opts.cold_window_ms` ([`crate::telemetry::cold`]), their memory
    /// cgroups aged first where `opts.age_cold`, and their device memory as `opts.gpu` finds
    /// it. The second field: why aging failed, where it did (the figures then say what they
    /// could).
    pub fn status(
        &self,
        names: &[ModuleName],
        opts: &StatusOptions,
    ) -> Result<(Vec<ModuleStatus>, Option<String>), Error> {
        let mut census = ColdCensus::read(opts.cold_window_ms);
        let mut aging = None;
        match self {
            Backend::Cgroupfs(fs) => {
                let root = fs.open()?;
                // The modules' parents only: the daemon's own leaf is no module, and is not aged.
                if opts.age_cold
                    && let Some(top) = root.hierarchy_path()
                {
                    let top = top.trim_end_matches('/');
                    for parent in [
                        crate::layout::MODULES_DIR.to_string(),
                        format!("daemon/{}", crate::layout::MODULES_DIR),
                    ] {
                        if let Err(e) = census.age(&format!("{top}/{parent}")) {
                            aging = Some(e);
                        }
                    }
                }
                let gpu = GpuCensus::take(&opts.gpu);
                Ok((root.status_cold(names, &gpu, &census)?, aging))
            }
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => {
                let scopes = Scopes::new(*bus);
                if opts.age_cold
                    && let Some(dir) = scopes.path()?
                    && let Some(top) = crate::telemetry::cold::hierarchy_path(&dir)
                {
                    aging = census.age(&top).err();
                }
                Ok((scopes.status_cold(names, &opts.gpu, &census)?, aging))
            }
        }
    }

    /// `ps`: the processes of every module (`names` empty), or of those named, each process's
    /// device memory as `gpu` finds it.
    pub fn processes(
        &self,
        names: &[ModuleName],
        gpu: &GpuProbe,
    ) -> Result<Vec<ModuleProcesses>, Error> {
        match self {
            Backend::Cgroupfs(fs) => fs.open()?.processes_with(names, &GpuCensus::take(gpu)),
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => Scopes::new(*bus).processes(names, gpu),
        }
    }
}

/// What cgroupfs has and systemd answers without asking, and what only the backend itself
/// says.
impl Backend {
    /// `init -- DAEMON`: the daemon's place before it is executed. Its own leaf of a laid-out
    /// root, marked for systemd-oomd with `oomd_daemon` ([`Root::enter_daemon`]; the mark read
    /// back is returned); with systemd, where it is: in its unit's cgroup, which is systemd's
    /// (the modules are scopes, there is no daemon leaf to mark): `None`, and nothing is asked
    /// of systemd. The root is opened as it is: this lays it out.
    pub fn enter_daemon(&self, oomd_daemon: OomdPreference) -> Result<Option<OomdMark>, Error> {
        match self {
            Backend::Cgroupfs(fs) => fs.open_unchecked()?.enter_daemon(oomd_daemon),
            #[cfg(feature = "systemd")]
            Backend::Systemd(_) => Ok(None),
        }
    }

    /// `prune --if-laid-out`: the root, when it is not laid out yet (neither `daemon/` nor
    /// `subc-modules/`: a service's first `ExecStartPre=`, before `init`), which is nothing to
    /// prune; `None` when it is, and always on systemd (module.slice is systemd's).
    pub fn not_laid_out(&self) -> Result<Option<PathBuf>, Error> {
        match self {
            Backend::Cgroupfs(fs) => {
                let root = fs.open_unchecked()?;
                Ok((!root.is_service_root()?).then(|| root.path().to_path_buf()))
            }
            #[cfg(feature = "systemd")]
            Backend::Systemd(_) => Ok(None),
        }
    }

    /// The counters of each layout's parent directory ([`Root::parents_status`]); none for
    /// systemd's scopes (no parent of ours holds them).
    pub fn parents_status(&self) -> Result<Vec<crate::telemetry::ParentStatus>, Error> {
        match self {
            Backend::Cgroupfs(fs) => Ok(fs.open()?.parents_status()),
            #[cfg(feature = "systemd")]
            Backend::Systemd(_) => Ok(Vec::new()),
        }
    }

    /// The systemd manager whose scopes hold the modules; `None` on cgroupfs (what
    /// `doctor::doctor_for` takes as `scopes`).
    pub fn scopes_bus(&self) -> Option<Bus> {
        match self {
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => Some(*bus),
            Backend::Cgroupfs(_) => None,
        }
    }
}

/// Which manager to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bus {
    /// The system manager, on the system bus.
    System,
    /// The caller's user manager, on the session bus.
    User,
}

impl Bus {
    /// The manager of a caller that names none: the system manager for root, the user's own
    /// for everyone else.
    pub fn default_for_caller() -> Bus {
        if rustix::process::geteuid().is_root() {
            Bus::System
        } else {
            Bus::User
        }
    }
}

/// What systemd says about the unit that runs the service.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct UnitFacts {
    /// systemd's version (`Version`, e.g. `252.38-1~deb12u1`), and its leading number.
    pub version: String,
    /// The unit's name.
    pub unit: String,
    /// `Delegate`.
    pub delegate: Option<bool>,
    /// `DelegateControllers`.
    pub delegate_controllers: Option<Vec<String>>,
    /// `OOMPolicy`.
    pub oom_policy: Option<String>,
    /// `KillMode`.
    pub kill_mode: Option<String>,
    /// `TimeoutStopUSec`.
    pub timeout_stop_usec: Option<u64>,
    /// `ControlGroup`.
    pub control_group: Option<String>,
}

impl UnitFacts {
    /// The major version number (`252`).
    pub fn major(&self) -> Option<u32> {
        self.version
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|v| v.parse().ok())
    }
}

/// What systemd says about systemd-oomd and the service (`doctor`, over D-Bus only there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomdUnits {
    /// `ActiveState` of `systemd-oomd.service` on the system manager (`None`: not loaded);
    /// `Err`: why it could not be asked.
    pub active: std::result::Result<Option<String>, String>,
    /// The service and each slice above it, the service first; `Err`: why not asked.
    pub chain: std::result::Result<Vec<MonitorUnit>, String>,
}

/// One unit at or above the service, as systemd-oomd sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorUnit {
    /// The unit's name (`ck-subc.service`, `system.slice`, `-.slice`).
    pub unit: String,
    /// `ManagedOOMSwap` (`auto` or `kill`).
    pub swap: Option<String>,
    /// `ManagedOOMMemoryPressure` (`auto` or `kill`).
    pub pressure: Option<String>,
    /// `ManagedOOMMemoryPressureLimit`, as systemd gives it (a fraction of 2^32, or permyriad
    /// on older versions); `None` where it could not be read.
    pub pressure_limit: Option<u64>,
}

impl MonitorUnit {
    /// systemd-oomd monitors this unit's cgroup (one of the two is `kill`).
    pub fn monitors(&self) -> bool {
        self.swap.as_deref() == Some("kill") || self.pressure.as_deref() == Some("kill")
    }
}

/// Why systemd could not be asked.
#[derive(Debug)]
pub enum Unavailable {
    /// No bus socket: systemd is not on the bus (a container, a host without systemd).
    NoBus(String),
    /// The bus answered with an error.
    Failed(String),
    /// This build has no D-Bus client: the library without its `systemd` feature.
    NotBuilt,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// What the library may read of the environment, each read's argument as written: the
    /// service root's variable (discover's rule, which a daemon uses too), the test sandboxes'
    /// parent, and `PATH` (a program's lookup). `CK_CGROUP_BACKEND`, `CK_CGROUP_NVIDIA_SMI` and
    /// the CLI's other variables are the CLI's to read; it passes the choice in.
    const MAY_READ: [&str; 4] = [
        "discover::ENV_ROOT",
        "ENV_ROOT",
        "\"CK_CGROUP_TEST_PARENT\"",
        "\"PATH\"",
    ];

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The library read `CK_CGROUP_BACKEND` (`Backend::from_env`) and `CK_CGROUP_NVIDIA_SMI`
    /// (inside `Root::status`): every `var`/`var_os` of its code (not its tests) names what it
    /// may read.
    #[test]
    fn the_library_reads_none_of_the_clis_variables() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut reads = 0;
        for f in &files {
            if f.ends_with("tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(f).unwrap();
            // The library's code, not its tests.
            let text = text
                .split("\n#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or_default();
            for call in ["env::var(", "env::var_os("] {
                for (at, _) in text.match_indices(call) {
                    let arg = &text[at + call.len()..];
                    let arg = &arg[..arg.find(')').unwrap_or(arg.len())];
                    assert!(
                        MAY_READ.contains(&arg.trim()),
                        "{}: reads the environment's {arg}: the CLI reads its variables and passes the choice in",
                        f.display()
                    );
                    reads += 1;
                }
            }
        }
        assert!(reads >= 4, "found {reads} reads: the scan reads nothing");
    }
}
