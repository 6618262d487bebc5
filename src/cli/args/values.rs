//! The values the commands' arguments take that are not the library's: `--backend` and
//! `--manager`, `status`'s `--format`, `-o` and `--cold-window`, `ps --sort`, `top --interval`,
//! `generate`'s kind, and the parsers clap calls for them.

use std::time::Duration;

use ck_cgroup::telemetry::pressure::PressureTrigger;
use clap::ValueEnum;

use super::Col;
pub use crate::cli::duration::parse_duration;

/// `--pressure SPEC`: the library's parser, its one-line message (problem and an example).
pub(super) fn pressure_trigger(s: &str) -> Result<PressureTrigger, String> {
    s.parse().map_err(|e: ck_cgroup::Error| e.to_string())
}

/// The variable that names the backend (`CK_CGROUP_BACKEND=systemd`): `--backend`'s (through
/// clap) for a command that has the flag; read by `cli::backend` (`from_env`, `cgroupfs`) for
/// one that has not.
pub const ENV_BACKEND: &str = "CK_CGROUP_BACKEND";

/// Where modules live.
#[derive(Debug, Clone, clap::Args)]
pub struct BackendArgs {
    /// Where modules live. cgroupfs: subc-modules/<id> under the service's delegated root (no
    /// D-Bus). systemd: transient scopes subc-module-<id>.scope in module-<id>.slice, started,
    /// limited and killed by systemd over D-Bus, for hosts where the service is not delegated
    /// (--root does not apply).
    #[arg(
        long,
        value_enum,
        default_value = "cgroupfs",
        env = ENV_BACKEND,
        value_name = "BACKEND"
    )]
    pub backend: BackendArg,
    /// The systemd manager the systemd backend asks: system, or user (the caller's own). Default:
    /// system for root, user for everyone else.
    #[arg(long, value_enum, value_name = "MANAGER")]
    pub manager: Option<ManagerArg>,
}

/// `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// Module cgroups under the service's delegated root.
    Cgroupfs,
    /// Transient scopes made by systemd.
    Systemd,
}

/// `--manager`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ManagerArg {
    /// The system manager (PID 1).
    System,
    /// The caller's user manager (systemd --user).
    User,
}

/// `status` output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    Table,
    /// JSON: every figure as {"value", "source"}.
    Json,
    /// Prometheus text exposition format (node_exporter's textfile collector).
    Prometheus,
}

/// `--cold-window`: a duration of at least a second (generations are coarser than that).
pub(super) fn cold_window(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_secs(1) {
        return Err(format!(
            "{s} is shorter than 1s; give the window memory must go untouched for, e.g. 10m"
        ));
    }
    Ok(d)
}

/// `status -o`'s list: the columns' names, comma-separated (`cpu_pct`, `top`'s CPU%, is not
/// one: status has no interval).
pub(super) fn status_columns(s: &str) -> Result<ColumnList, String> {
    let names: Vec<String> = Col::for_o().map(|c| c.key()).collect();
    let mut cols = Vec::new();
    let mut unknown = Vec::new();
    for n in s.split(',') {
        let n = n.trim().to_ascii_lowercase();
        match Col::for_o().find(|c| c.key() == n) {
            Some(c) => cols.push(c),
            None => unknown.push(format!("{n:?}")),
        }
    }
    match unknown.len() {
        0 => Ok(ColumnList(cols)),
        1 => Err(format!(
            "no column {}; the columns: {}",
            unknown[0],
            names.join(",")
        )),
        _ => Err(format!(
            "no columns {}; the columns: {}",
            unknown.join(", "),
            names.join(",")
        )),
    }
}

/// `status -o`'s columns, in order.
#[derive(Debug, Clone)]
pub struct ColumnList(pub Vec<Col>);

/// What `ps --sort` orders a module's processes by, the biggest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PsSort {
    /// Resident memory (RSS: VmRSS).
    Rss,
    /// Swapped out (SWAP: VmSwap).
    Swap,
}

/// The shortest `top --interval`: a faster refresh costs the host reads and tells no more.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// `top --interval`: seconds, a whole number or a fraction, at least [`MIN_INTERVAL`].
pub(super) fn parse_interval(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds (e.g. 2 or 0.5)"))?;
    if !secs.is_finite() {
        return Err(format!("{s:?} is not a number of seconds (e.g. 2 or 0.5)"));
    }
    if secs < MIN_INTERVAL.as_secs_f64() {
        return Err(format!("{s} s is below the shortest interval, 0.1 s"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{s} s is too long an interval"))
}

/// What `generate` writes.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GenerateKind {
    /// Man pages, into --out-dir.
    Man,
    /// bash completion, on stdout.
    Bash,
    /// zsh completion, on stdout.
    Zsh,
    /// fish completion, on stdout.
    Fish,
    /// What each command promises (its result on stdout, the modules it takes, the policy it
    /// reads, CMD, --backend, its root), as JSON Lines on stdout: what the tests iterate.
    Promises,
}
