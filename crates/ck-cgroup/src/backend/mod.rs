//! Backends: who makes and stops a module's cgroup, as one type, [`Backend`], over two types
//! with the same methods for the operations both have: the cgroupfs backend is
//! [`crate::module::Root`] on a delegated subtree; the systemd backend (`systemd::Scopes`,
//! behind the `systemd` feature) makes each module a transient scope over D-Bus. A new
//! operation both have is a method of each and one line here; an operation only cgroupfs has
//! takes [`Cgroupfs`].

use std::path::PathBuf;

use crate::cgroup::oomd::{OomdMark, OomdPreference};
use crate::discover;
use crate::error::Error;
use crate::id::ModuleId;
use crate::layout::{ModuleName, ToModuleName};
use crate::limits::{Limits, Skipped};
use crate::module::{ModuleEntry, PruneEntry, Root, StopReport};
use crate::stop::StopOptions;
use crate::telemetry::ModuleStatus;
use crate::telemetry::procs::ModuleProcesses;

#[cfg(feature = "systemd")]
pub mod systemd;
#[cfg(feature = "systemd")]
pub use systemd::Scopes;

/// The variable that names the backend (`CK_CGROUP_BACKEND=systemd`), read by every command.
pub const ENV_BACKEND: &str = "CK_CGROUP_BACKEND";

/// Who makes and stops the modules, decided once: the CLI matches on nothing else. Each variant
/// says where the modules are; every operation opens the backend's type there (a [`Root`], a
/// `systemd::Scopes`) and calls the method of the same name and signature on it. An
/// enum rather than a trait: the systemd variant is there only with the feature, the CLI holds
/// one value and calls one method, and no caller needs to be generic or boxed.
#[derive(Debug, Clone)]
pub enum Backend {
    /// Module cgroups under the service's root: `--root` (or `CK_CGROUP_ROOT`), else discovered.
    Cgroupfs(Cgroupfs),
    /// Transient scopes, made by the manager on this bus (`--root` does not apply).
    #[cfg(feature = "systemd")]
    Systemd(Bus),
}

/// `$backend`'s type opened for one operation (a [`Root`] by `Cgroupfs::$open`, a
/// `systemd::Scopes` on the bus, which connects when the operation first needs it),
/// bound to `$m`, and `$call` on it: both arms are the same expression, so the two types must
/// have the method with the same signature.
macro_rules! on_modules {
    ($backend:expr, $open:ident, $m:ident => $call:expr) => {
        match $backend {
            Backend::Cgroupfs(fs) => {
                let $m = fs.$open()?;
                $call
            }
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => {
                let $m = systemd::Scopes::new(*bus);
                $call
            }
        }
    };
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

impl Backend {
    /// The variable alone, for a command without `--backend`.
    pub fn from_env(root: Option<PathBuf>) -> Backend {
        match std::env::var_os(ENV_BACKEND) {
            #[cfg(feature = "systemd")]
            Some(v) if v == "systemd" => Backend::Systemd(Bus::default_for_caller()),
            _ => Backend::Cgroupfs(Cgroupfs(root)),
        }
    }

    /// The service root, for an operation only cgroupfs has. On the systemd backend (a unit with
    /// `Delegate=no`) `command` is refused, rather than write into a root that systemd owns.
    pub fn cgroupfs(self, command: &str) -> Result<Cgroupfs, Error> {
        let _ = command; // named in the refusal, which only the systemd backend gives
        match self {
            Backend::Cgroupfs(fs) => Ok(fs),
            #[cfg(feature = "systemd")]
            Backend::Systemd(_) => Err(Error::bad_input(format!(
                "{command} has no systemd backend, and CK_CGROUP_BACKEND=systemd says this service's cgroup is not delegated"
            ))
            .with_hint(
                "modules are scopes here: use exec, kill, prune, list, status or doctor (they take the backend from the variable); or unset CK_CGROUP_BACKEND",
            )),
        }
    }

    /// `init -- DAEMON`: the daemon's place before it is executed. Its own leaf of a laid-out
    /// root, marked for systemd-oomd with `oomd_daemon` ([`Root::enter_daemon`]; the mark read
    /// back is returned); with systemd, where it is (the modules are scopes, the unit's cgroup
    /// is systemd's: `None`). The root is opened as it is: this lays it out.
    pub fn enter_daemon(&self, oomd_daemon: OomdPreference) -> Result<Option<OomdMark>, Error> {
        on_modules!(self, open_unchecked, m => m.enter_daemon(oomd_daemon))
    }

    /// `exec`: move this process into module `id`, made with `limits` when it is not there.
    /// Returns the limits skipped (`best_effort`, a controller missing). D-Bus is paid for only
    /// on the systemd backend.
    pub fn enter_with_limits(
        &self,
        id: &ModuleId,
        limits: &Limits,
        best_effort: bool,
    ) -> Result<Vec<Skipped>, Error> {
        on_modules!(self, open, m => m.enter_with_limits(id, limits, best_effort))
    }

    /// `kill`.
    pub fn stop(&self, id: &ModuleName, opts: &StopOptions) -> Result<StopReport, Error> {
        on_modules!(self, open, m => m.stop(id, opts))
    }

    /// `prune`.
    pub fn prune(
        &self,
        dry_run: bool,
        kill: bool,
        keep: &[ModuleName],
        opts: &StopOptions,
    ) -> Result<Vec<PruneEntry>, Error> {
        on_modules!(self, open, m => m.prune(dry_run, kill, keep, opts))
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
                let scopes = systemd::Scopes::new(*bus);
                let dir = scopes.path()?;
                Ok((dir, scopes.list()?))
            }
        }
    }

    /// `status`.
    pub fn status<S: ToModuleName>(&self, ids: &[S]) -> Result<Vec<ModuleStatus>, Error> {
        let ids = ids
            .iter()
            .map(ToModuleName::to_module_name)
            .collect::<Result<Vec<_>, Error>>()?;
        let ids = ids.as_slice();
        on_modules!(self, open, m => m.status(ids))
    }

    /// `status` with the modules' cold memory over `window_ms`
    /// ([`crate::telemetry::cold`]), their memory cgroups aged first where `age` (each whose
    /// youngest generation is older than half the window: the only write `status` makes). The
    /// second field: why aging failed, where it did (the figures then say what they could).
    pub fn status_cold<S: ToModuleName>(
        &self,
        ids: &[S],
        window_ms: u64,
        age: bool,
    ) -> Result<(Vec<ModuleStatus>, Option<String>), Error> {
        #[cfg(feature = "systemd")]
        use crate::telemetry::cold;
        use crate::telemetry::cold::ColdCensus;
        let ids = ids
            .iter()
            .map(ToModuleName::to_module_name)
            .collect::<Result<Vec<_>, Error>>()?;
        let ids = ids.as_slice();
        let mut census = ColdCensus::read(window_ms);
        let mut aging = None;
        match self {
            Backend::Cgroupfs(fs) => {
                let root = fs.open()?;
                // The modules' parents only: the daemon's own leaf is no module, and is not aged.
                if age && let Some(top) = root.hierarchy_path() {
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
                let gpu = crate::gpu::GpuCensus::take(&crate::gpu::GpuProbe::from_env());
                Ok((root.status_cold(ids, &gpu, &census)?, aging))
            }
            #[cfg(feature = "systemd")]
            Backend::Systemd(bus) => {
                let scopes = systemd::Scopes::new(*bus);
                if age
                    && let Some(dir) = scopes.path()?
                    && let Some(top) = cold::hierarchy_path(&dir)
                {
                    aging = census.age(&top).err();
                }
                Ok((scopes.status_cold(ids, &census)?, aging))
            }
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

    /// `ps`: the processes of every module, or of those named.
    pub fn processes<S: ToModuleName>(&self, ids: &[S]) -> Result<Vec<ModuleProcesses>, Error> {
        let ids = ids
            .iter()
            .map(ToModuleName::to_module_name)
            .collect::<Result<Vec<_>, Error>>()?;
        let ids = ids.as_slice();
        on_modules!(self, open, m => m.processes(ids))
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
