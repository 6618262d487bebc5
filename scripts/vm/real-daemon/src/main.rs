//! `ck-subc`: the real daemon (`subc_daemon::bootstrap`) behind a small main of our own.
//!
//! Environment, besides what the daemon itself reads (`HOME`, `XDG_*`, `SUBC_PORT`, ...):
//!   RUST_LOG               tracing filter for the daemon's log on stderr (default `info`)
//!   SUBC_CGROUP_PLACEMENT  unset: the daemon places modules under its own cgroup (`Current`);
//!                          `disabled`: no placement; any other value is refused at startup.
//!
//! Exit status: 0 when the daemon stopped cleanly (or another one already serves this user),
//! 1 when it failed, 2 for an environment value it refuses.

use std::process::ExitCode;

use subc_daemon::bootstrap::{self, BootstrapConfig, CgroupPlacementConfig};
use tracing_subscriber::filter::{EnvFilter, LevelFilter};

const PLACEMENT_ENV: &str = "SUBC_CGROUP_PLACEMENT";

fn placement_from_env() -> Result<CgroupPlacementConfig, String> {
    match std::env::var_os(PLACEMENT_ENV) {
        None => Ok(CgroupPlacementConfig::Current),
        Some(value) if value == "disabled" => Ok(CgroupPlacementConfig::Disabled),
        Some(value) => Err(format!(
            "invalid {PLACEMENT_ENV} value {value:?}: the only accepted value is \"disabled\" (unset keeps the daemon's own placement)"
        )),
    }
}

fn init_tracing() -> Result<(), String> {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env()
        .map_err(|e| format!("invalid RUST_LOG: {e}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init()
        .map_err(|e| format!("cannot install the log subscriber: {e}"))
}

fn main() -> ExitCode {
    let placement = match placement_from_env() {
        Ok(p) => p,
        Err(msg) => {
            eprintln!("ck-subc: {msg}");
            return ExitCode::from(2);
        }
    };
    if let Err(msg) = init_tracing() {
        eprintln!("ck-subc: {msg}");
        return ExitCode::from(2);
    }
    let config = match BootstrapConfig::from_env_for_daemon_binary() {
        Ok(c) => c.with_cgroup_placement(placement),
        Err(e) => {
            eprintln!("ck-subc: configuration: {e}");
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ck-subc: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(bootstrap::run_with_config(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ck-subc: {e}");
            ExitCode::from(1)
        }
    }
}
