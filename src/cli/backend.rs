//! The CLI's side of the backend: `--backend` and `--manager` to the library's
//! [`ck_cgroup::backend::Backend`], which every command matches on instead of a backend of its
//! own; the only file of the CLI that names a systemd bus.

use std::path::PathBuf;

use ck_cgroup::backend::Bus;
pub use ck_cgroup::backend::{Backend, Cgroupfs, ENV_BACKEND};
use ck_cgroup::{Error, Sandbox};

use super::args::{self, BackendArgs, ManagerArg};

/// `--backend` and `--manager` (or the variable, through clap) of a command that has them.
pub fn from_args(a: &BackendArgs, root: Option<PathBuf>) -> Backend {
    match a.backend {
        args::Backend::Systemd => Backend::Systemd(bus(a.manager)),
        args::Backend::Cgroupfs => Backend::Cgroupfs(Cgroupfs(root)),
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
