//! The facts `doctor` judges, read from the machine: `/proc/self/mountinfo`, the kernel release,
//! the service root's cgroup files, the systemd manager and the unit's properties over D-Bus. The
//! only file of `doctor` that does I/O; [`super::judge`] turns a [`Facts`] into checks without
//! any. A fact that could not be read is `None` (or an `Err` saying why), never a made-up zero.

use std::path::{Path, PathBuf};

// Every item of the rest of the crate that `doctor` uses, in one place: `mod.rs` and `judge/`
// take them from here, so a module that moves elsewhere in the crate changes this line only.
pub(super) use crate::{
    backend::{Bus, Unavailable, UnitFacts},
    cgroup::parse,
    discover,
    error::Error,
    layout::{MODULES_DIR, MODULES_SLICE, WANTED_CONTROLLERS},
    module::Root,
};

/// Something that failed while gathering, as the crate's [`Error`] said it: its message and the
/// fix it suggests, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error's message.
    pub error: String,
    /// The error's hint.
    pub hint: Option<String>,
}

impl From<&Error> for Failure {
    fn from(e: &Error) -> Failure {
        Failure {
            error: e.to_string(),
            hint: e.hint().map(str::to_string),
        }
    }
}

/// What the systemd backend's manager gave (`doctor --backend systemd`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeFacts {
    /// The manager asked: system or user.
    pub bus: Bus,
    /// The connection to it: how it was reached, or why it was not.
    pub manager: Result<ManagerFacts, Failure>,
}

/// The systemd backend's manager, once connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerFacts {
    /// How it was reached: "the system bus" or "the session bus".
    pub via: String,
    /// `cgroup.controllers` of the cgroup of its `-.slice` (the hierarchy's root for the system
    /// manager, the manager's own cgroup for a user manager); `None` where it could not be read.
    pub controllers: Option<Vec<String>>,
}

/// The service root, as far as it could be found and opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceRoot {
    /// No `--root`, and discovery failed.
    Undiscovered(Failure),
    /// The root (given or discovered) could not be opened as a cgroup2 directory.
    Unopenable(Failure),
    /// The root, opened.
    Opened(RootFacts),
}

/// What an opened service root holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootFacts {
    /// Its path.
    pub path: PathBuf,
    /// This user may write to it (`access(2)` with `W_OK`).
    pub writable: bool,
    /// Its `cgroup.controllers`; `None` where it could not be read.
    pub controllers: Option<Vec<String>>,
    /// `subc-modules/cgroup.subtree_control` (empty when `subc-modules/` does not exist); `None`
    /// where it could not be read.
    pub enabled: Option<Vec<String>>,
    /// `subc-modules/` is a directory; `None` where that could not be told.
    pub layout: Option<bool>,
    /// `cgroup.kill` could be opened (kernel 5.14 or newer).
    pub cgroup_kill: bool,
    /// `cgroup.freeze` could be opened (kernel 5.2 or newer).
    pub cgroup_freeze: bool,
    /// `memory.peak` could be opened (kernel 5.19 or newer, with the memory controller).
    pub memory_peak: bool,
}

/// Every fact `doctor` needs.
#[derive(Debug)]
pub struct Facts {
    /// `/proc/self/mountinfo`; `None` where it could not be read.
    pub mountinfo: Option<String>,
    /// The kernel's release (`uname -r`).
    pub kernel_release: String,
    /// With the systemd backend: its manager. `None` for the default backend.
    pub scopes: Option<ScopeFacts>,
    /// The service root; `None` with the systemd backend, whose modules are not under it.
    pub root: Option<ServiceRoot>,
    /// What systemd says about the unit, or why it could not be asked.
    pub unit: Result<UnitFacts, Unavailable>,
    /// systemd-oomd and the candidates it would see below the root; `None` with the systemd
    /// backend (no service root).
    pub oomd: Option<super::oomd_checks::OomdFacts>,
    /// What cold memory (the multi-gen LRU's `lru_gen`) needs here.
    pub cold: ColdFacts,
}

/// What `status` needs to tell a module's cold memory ([`crate::telemetry::cold`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColdFacts {
    /// The text of `/sys/kernel/mm/lru_gen/enabled`; `None` where it is absent (no
    /// `CONFIG_LRU_GEN`).
    pub enabled: Option<String>,
    /// debugfs is mounted on `/sys/kernel/debug`.
    pub debugfs: bool,
    /// `/sys/kernel/debug/lru_gen` could be read: `Ok`, else why.
    pub lru_gen: Result<(), String>,
    /// The process runs as root (debugfs is root's).
    pub is_root: bool,
}

impl ColdFacts {
    /// Read them from this machine.
    pub fn gather(mountinfo: Option<&str>) -> ColdFacts {
        use crate::telemetry::cold::{LRU_GEN, LRU_GEN_ENABLED};
        ColdFacts {
            enabled: std::fs::read_to_string(LRU_GEN_ENABLED).ok(),
            debugfs: mountinfo.is_some_and(|m| {
                parse::mountinfo(m).iter().any(|x| {
                    x.fs_type == "debugfs" && x.mount_point == Path::new("/sys/kernel/debug")
                })
            }),
            lru_gen: std::fs::File::open(LRU_GEN)
                .map(drop)
                .map_err(|e| e.to_string()),
            is_root: rustix::process::geteuid().is_root(),
        }
    }
}

/// Read every fact from this machine. `root`: the explicit root, else discovered (unless
/// `scopes`); `unit`: the unit to ask systemd about, else the unit of the calling process;
/// `scopes`: the systemd backend's manager.
pub fn gather(root: Option<&Path>, unit: Option<&str>, scopes: Option<Bus>) -> Facts {
    let own_cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| parse::proc_cgroup_v2(&t));
    let bus = unit_bus(
        scopes,
        own_cgroup.as_deref(),
        rustix::process::getuid().is_root(),
    );
    let root = match scopes {
        Some(_) => None,
        None => Some(service_root(root)),
    };
    let unit = unit_facts(bus, unit);
    let oomd = match &root {
        Some(r) => {
            let path = match r {
                ServiceRoot::Opened(f) => Some(f.path.as_path()),
                _ => None,
            };
            let name = match &unit {
                Ok(u) => Ok(u.unit.as_str()),
                Err(Unavailable::NoBus(e)) | Err(Unavailable::Failed(e)) => Err(e.clone()),
                Err(Unavailable::NotBuilt) => Err("no systemd support in this build".into()),
            };
            Some(super::oomd_checks::gather(path, name, bus))
        }
        None => None,
    };
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok();
    Facts {
        cold: ColdFacts::gather(mountinfo.as_deref()),
        mountinfo,
        kernel_release: rustix::system::uname()
            .release()
            .to_string_lossy()
            .into_owned(),
        scopes: scopes.map(scope_facts),
        root,
        unit,
        oomd,
    }
}

/// The manager to ask about the unit: the backend's, else the user manager for a process of a
/// user's manager (`/user@` in its cgroup) that is not root, else the system manager.
fn unit_bus(scopes: Option<Bus>, own_cgroup: Option<&str>, is_root: bool) -> Bus {
    match scopes {
        Some(b) => b,
        None if own_cgroup.is_some_and(|c| c.contains("/user@")) && !is_root => Bus::User,
        None => Bus::System,
    }
}

/// The unit's properties over D-Bus; without the `systemd` feature, [`Unavailable::NotBuilt`].
fn unit_facts(bus: Bus, unit: Option<&str>) -> Result<UnitFacts, Unavailable> {
    #[cfg(feature = "systemd")]
    return crate::backend::systemd::manager::unit_facts(bus, unit, std::process::id());
    #[cfg(not(feature = "systemd"))]
    {
        let _ = (bus, unit);
        Err(Unavailable::NotBuilt)
    }
}

#[cfg(not(feature = "systemd"))]
fn scope_facts(bus: Bus) -> ScopeFacts {
    let manager = Err(Failure {
        error: "this build of the ck-cgroup library has no systemd backend".into(),
        hint: Some("build the ck-cgroup crate with its `systemd` feature".into()),
    });
    ScopeFacts { bus, manager }
}

#[cfg(feature = "systemd")]
fn scope_facts(bus: Bus) -> ScopeFacts {
    let manager = crate::backend::systemd::manager::Manager::connect(bus)
        .map(|m| {
            let top = m
                .control_group("-.slice")
                .ok()
                .flatten()
                .unwrap_or_default();
            let controllers = discover::cgroup2_mount()
                .ok()
                .and_then(|mnt| {
                    std::fs::read_to_string(
                        mnt.join(top.trim_start_matches('/'))
                            .join("cgroup.controllers"),
                    )
                    .ok()
                })
                .map(|t| parse::controllers(&t));
            ManagerFacts {
                via: m.via().to_string(),
                controllers,
            }
        })
        .map_err(|e| Failure::from(&e));
    ScopeFacts { bus, manager }
}

fn service_root(root: Option<&Path>) -> ServiceRoot {
    let path = match root {
        Some(p) => p.to_path_buf(),
        None => match discover::discover() {
            Ok(p) => p,
            Err(e) => return ServiceRoot::Undiscovered(Failure::from(&e)),
        },
    };
    let r = match Root::open(&path) {
        Ok(r) => r,
        Err(e) => return ServiceRoot::Unopenable(Failure::from(&e)),
    };
    ServiceRoot::Opened(RootFacts {
        writable: rustix::fs::access(&path, rustix::fs::Access::WRITE_OK).is_ok(),
        controllers: r
            .dir()
            .read("cgroup.controllers")
            .ok()
            .map(|t| parse::controllers(&t)),
        enabled: r.module_controllers().ok(),
        layout: r.dir().is_dir(MODULES_DIR).ok(),
        cgroup_kill: r.dir().exists("cgroup.kill"),
        cgroup_freeze: r.dir().exists("cgroup.freeze"),
        memory_peak: r.dir().exists("memory.peak"),
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_is_asked_of_the_backends_manager_else_by_the_callers_cgroup() {
        let user = Some("/user.slice/user-1000.slice/user@1000.service/app.slice/x.service");
        assert_eq!(unit_bus(Some(Bus::User), None, true), Bus::User);
        assert_eq!(unit_bus(Some(Bus::System), user, false), Bus::System);
        assert_eq!(unit_bus(None, user, false), Bus::User);
        assert_eq!(unit_bus(None, user, true), Bus::System);
        assert_eq!(
            unit_bus(None, Some("/system.slice/ck-subc.service"), false),
            Bus::System
        );
        assert_eq!(unit_bus(None, None, false), Bus::System);
    }

    #[test]
    fn a_failure_keeps_the_errors_message_and_hint() {
        let e = Error::failed("no cgroup2").with_hint("mount it");
        assert_eq!(
            Failure::from(&e),
            Failure {
                error: "no cgroup2".into(),
                hint: Some("mount it".into())
            }
        );
    }
}
