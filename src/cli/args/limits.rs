//! The limit flags of `create`, `set`, `exec` and `run`: one clap field per row of the library's
//! limit table.

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::limits::Value;

/// Per-module limits (written to the module's own leaf). One flag per row of the library's
/// `limits::LIMITS`, named as its policy key (`-` for `_`) and parsed by that row's parser.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// memory.high: throttle and reclaim above SIZE (K, M, G, T suffixes, or max).
    #[arg(long, value_parser = flag("memory_high"), value_name = "SIZE")]
    pub memory_high: Option<Value>,
    /// memory.max: the module is OOM-killed above SIZE.
    #[arg(long, value_parser = flag("memory_max"), value_name = "SIZE")]
    pub memory_max: Option<Value>,
    /// memory.swap.max.
    #[arg(long, value_parser = flag("memory_swap_max"), value_name = "SIZE")]
    pub memory_swap_max: Option<Value>,
    /// memory.low: reclaim spares the module's memory below SIZE while it can (best-effort
    /// protection; systemd: MemoryLow=).
    #[arg(long, value_parser = flag("memory_low"), value_name = "SIZE")]
    pub memory_low: Option<Value>,
    /// memory.min: the module's memory below SIZE is never reclaimed (hard protection; systemd:
    /// MemoryMin=).
    #[arg(long, value_parser = flag("memory_min"), value_name = "SIZE")]
    pub memory_min: Option<Value>,
    /// pids.max: at most N processes and threads.
    #[arg(long, value_parser = flag("pids_max"), value_name = "N")]
    pub pids_max: Option<Value>,
    /// cpu.weight, 1 to 10000 (default 100).
    #[arg(long, value_parser = flag("cpu_weight"), value_name = "N")]
    pub cpu_weight: Option<Value>,
    /// cpu.max: at most QUOTA microseconds of CPU time in each PERIOD (default 100000, 1000 to
    /// 1000000): 50000 is half a CPU, 200000 two CPUs; or max. systemd: CPUQuota= (QUOTA/PERIOD
    /// in percent) and CPUQuotaPeriodSec=.
    #[arg(long, value_parser = flag("cpu_max"), value_name = "QUOTA[/PERIOD]")]
    pub cpu_max: Option<Value>,
    /// cpuset.cpus: the CPUs the module may run on, as 0-3,6 (needs the cpuset controller;
    /// systemd: AllowedCPUs=).
    #[arg(long, value_parser = flag("cpus"), value_name = "LIST")]
    pub cpus: Option<Value>,
    /// io.weight (`default N`), 1 to 10000 (default 100); the kernel has the file only with an
    /// IO scheduler or io.cost that weighs (systemd: IOWeight=).
    #[arg(long, value_parser = flag("io_weight"), value_name = "N")]
    pub io_weight: Option<Value>,
    /// io.max on one block device, DEV as MAJ:MIN or a path (/dev/sda): rbps and wbps in bytes
    /// per second (K, M, G, T suffixes), riops and wiops in operations per second, each a number
    /// or max; e.g. 8:0:rbps=10M,wiops=100 (systemd: IOReadBandwidthMax=, IOWriteBandwidthMax=,
    /// IOReadIOPSMax=, IOWriteIOPSMax=).
    #[arg(long, value_parser = flag("io_max"), value_name = "DEV:KEY=VALUE,...")]
    pub io_max: Option<Value>,
    /// memory.oom.group 1: an OOM kill takes the module's whole tree (the default for a module
    /// made now where the memory controller is enabled).
    #[arg(long, overrides_with = "no_oom_group")]
    pub oom_group: bool,
    /// memory.oom.group 0: the OOM killer picks single processes.
    #[arg(long)]
    pub no_oom_group: bool,
    /// systemd-oomd's preference for the module: avoid (user.oomd_avoid: picked last), omit
    /// (user.oomd_omit: never picked) or none (both removed); set on the module's directory and
    /// read back (systemd backend: ManagedOOMPreference= on the scope). systemd-oomd honours it
    /// only where the cgroup's owner is the monitored unit's owner (see docs/operations.md).
    #[arg(long, value_parser = oomd_preference, value_name = "avoid|omit|none")]
    pub oomd: Option<ck_cgroup::cgroup::oomd::OomdPreference>,
    /// Apply the limits whose controller is enabled; list the others as skipped (exit 0).
    #[arg(long)]
    pub best_effort: bool,
}

/// clap's parser of the flag of the limit with policy key `key`: that row's parser, its error in
/// one line with the fix.
fn flag(key: &'static str) -> impl Fn(&str) -> Result<Value, String> + Clone + Send + Sync {
    move |s: &str| match ck_cgroup::limits::spec(key) {
        Some(spec) => (spec.parse)(s).map_err(|e| match e.hint() {
            Some(h) => format!("{}: {h}", e.message()),
            None => e.message().to_string(),
        }),
        None => Err(format!("no limit has the key {key}")),
    }
}

/// clap's parser of a systemd-oomd preference (`--oomd`, `init --oomd-daemon`): the library's,
/// its error in one line naming the value and the accepted set.
pub fn oomd_preference(s: &str) -> Result<ck_cgroup::cgroup::oomd::OomdPreference, String> {
    ck_cgroup::cgroup::oomd::OomdPreference::parse(s).map_err(|e| e.message().to_string())
}

pub(super) fn size(s: &str) -> Result<Limit, String> {
    ck_cgroup::limits::parse_size(s).map_err(|e| e.to_string())
}

impl LimitArgs {
    /// Every limit flag by its row's policy key, with its value when given.
    pub fn flags(&self) -> Vec<(&'static str, Option<Value>)> {
        let oom_group = if self.oom_group {
            Some(Value::Bool(true))
        } else if self.no_oom_group {
            Some(Value::Bool(false))
        } else {
            None
        };
        vec![
            ("memory_high", self.memory_high.clone()),
            ("memory_max", self.memory_max.clone()),
            ("memory_swap_max", self.memory_swap_max.clone()),
            ("memory_low", self.memory_low.clone()),
            ("memory_min", self.memory_min.clone()),
            ("pids_max", self.pids_max.clone()),
            ("cpu_weight", self.cpu_weight.clone()),
            ("cpu_max", self.cpu_max.clone()),
            ("cpus", self.cpus.clone()),
            ("io_weight", self.io_weight.clone()),
            ("io_max", self.io_max.clone()),
            ("oom_group", oom_group),
        ]
    }

    /// The library's limits: each flag given, set by its row's key.
    pub fn limits(&self) -> ck_cgroup::limits::Limits {
        let mut l = ck_cgroup::limits::Limits::default();
        for (key, v) in self.flags() {
            if let Some(v) = v {
                l.set(key, v);
            }
        }
        l.oomd = self.oomd;
        l
    }
}
