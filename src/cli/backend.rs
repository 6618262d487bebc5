//! The CLI's side of the backend: `--backend` and `--manager` (or `CK_CGROUP_BACKEND`) to the
//! library's [`ck_cgroup::backend::Backend`], which every command matches on instead of a
//! backend of its own, and `CK_CGROUP_NVIDIA_SMI` to the [`GpuProbe`] of `status` and `ps`: the
//! library reads neither variable, this file does. The only file of the CLI that names a
//! systemd bus.

use std::path::PathBuf;

use ck_cgroup::backend::Bus;
pub use ck_cgroup::backend::{Backend, Cgroupfs};
use ck_cgroup::gpu::{GpuProbe, NVIDIA_SMI_ENV, NvidiaSmi};
use ck_cgroup::{Error, Sandbox};

use super::args::{self, BackendArgs, Cli, ManagerArg};
use super::promises::RootUse;

pub use super::args::values::ENV_BACKEND;

/// Whether the variable says systemd, for a command without `--backend`: only `systemd` does
/// (any other value is cgroupfs, as it always was for these commands).
fn env_says_systemd() -> bool {
    std::env::var_os(ENV_BACKEND).is_some_and(|v| v == "systemd")
}

/// The variable alone, for a command without `--backend` (`init -- DAEMON`).
pub fn from_env(root: Option<PathBuf>) -> Backend {
    if env_says_systemd() {
        Backend::Systemd(Bus::default_for_caller())
    } else {
        Backend::Cgroupfs(Cgroupfs(root))
    }
}

/// The service root, for `command`, which only cgroupfs has. Where the variable says systemd (a
/// unit with `Delegate=no`) it is refused, rather than write into a root that systemd owns.
pub fn cgroupfs(root: Option<PathBuf>, command: &str) -> Result<Cgroupfs, Error> {
    if !env_says_systemd() {
        return Ok(Cgroupfs(root));
    }
    Err(Error::bad_input(format!(
        "{command} has no systemd backend, and CK_CGROUP_BACKEND=systemd says this service's cgroup is not delegated"
    ))
    .with_hint(
        "modules are scopes here: use exec, kill, prune, list, status or doctor (they take the backend from the variable); or unset CK_CGROUP_BACKEND",
    ))
}

/// How `status` and `ps` look for GPUs: `CK_CGROUP_NVIDIA_SMI` unset, `nvidia-smi` on `PATH`
/// where the NVIDIA driver is loaded; a path, that program; empty, none (NVIDIA's figures
/// unknown).
pub fn gpu_probe() -> GpuProbe {
    GpuProbe::new(match std::env::var_os(NVIDIA_SMI_ENV) {
        None => NvidiaSmi::Auto,
        Some(v) if v.is_empty() => NvidiaSmi::Off,
        Some(v) => NvidiaSmi::Program(PathBuf::from(v)),
    })
}

/// `--backend` and `--manager` (or the variable, through clap) of a command that has them.
pub fn from_args(a: &BackendArgs, root: Option<PathBuf>) -> Backend {
    match a.backend {
        args::BackendArg::Systemd => Backend::Systemd(bus(a.manager)),
        args::BackendArg::Cgroupfs => Backend::Cgroupfs(Cgroupfs(root)),
    }
}

/// `sandbox` on a systemd host: a transient delegated scope made by `manager`.
pub fn scope_sandbox(manager: Option<ManagerArg>) -> Result<Sandbox, Error> {
    Sandbox::create_in_scope(bus(manager))
}

/// `--manager`, or the default: the system manager for root, the user's own for everyone else.
fn bus(manager: Option<ManagerArg>) -> Bus {
    match manager {
        Some(ManagerArg::System) => Bus::System,
        Some(ManagerArg::User) => Bus::User,
        None => Bus::default_for_caller(),
    }
}

/// The root a command works on: `--root`, else `--unit`, else `CK_CGROUP_ROOT`, else
/// `CK_CGROUP_UNIT` (`parse` in main.rs has dropped the other source by that order): a unit's cgroup from systemd (`--user`: the caller's manager), else `None`
/// (discovered when opened). systemd is asked only when a unit is named and the command uses a
/// root ([`RootUse`]): not `sandbox`, `generate`, nor a command on the systemd backend. For `doctor` a unit
/// whose cgroup cannot be had leaves the root to discovery: doctor reports systemd itself.
pub fn root(cli: &Cli) -> Result<Option<PathBuf>, Error> {
    let Some(unit) = cli.globals.unit.as_deref() else {
        return Ok(cli.globals.root.clone());
    };
    let on_systemd = cli
        .command
        .given()
        .backend
        .is_some_and(|b| b.backend == args::BackendArg::Systemd);
    let doctor = match cli.command.promises().root {
        RootUse::None => return Ok(cli.globals.root.clone()),
        _ if on_systemd => return Ok(cli.globals.root.clone()),
        RootUse::Checks => true,
        RootUse::Service | RootUse::LaysOut => false,
    };
    if cli.globals.root.is_some() {
        return Ok(cli.globals.root.clone());
    }
    let bus = if cli.globals.user {
        Bus::User
    } else {
        Bus::System
    };
    match ck_cgroup::backend::systemd::unit_root(bus, unit) {
        Ok(p) => Ok(Some(p)),
        Err(_) if doctor => Ok(None),
        Err(e) => Err(e),
    }
}
