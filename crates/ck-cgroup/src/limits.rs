//! Per-module limits, written to the module's leaf only (never to the service's own cgroup).
//!
//! Every limit is one row of [`LIMITS`]: its policy key (the flag is the key with `-` for `_`),
//! its kernel file and controller, its unit of measure, its systemd properties, its parser, and
//! how it is read from and stored in [`Limits`]. `Limits::writes`, the policy's keys and merge,
//! the systemd backend's properties, `status`'s limit figures and the CLI's flags all go through
//! that table.
//!
//! Every limit's controller must be enabled for the modules (`subc-modules/cgroup.subtree_control`)
//! before anything is written: a missing controller is bad input (exit 2) that names the
//! controller and the fix, and nothing is half-applied, unless `best_effort` is asked for.
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html> ("Memory", "PID",
//! "CPU", "IO", "Cpuset"); systemd's: systemd.resource-control(5).

use serde::Serialize;

use crate::cgroup::parse::Limit;
use crate::error::{Error, Result};
use crate::id::ModuleId;

/// Limits to apply; `None` leaves a limit as it is. One field per row of [`LIMITS`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// `memory.high`: throttle and reclaim above this.
    pub memory_high: Option<Limit>,
    /// `memory.max`: the OOM killer acts above this.
    pub memory_max: Option<Limit>,
    /// `memory.swap.max`.
    pub memory_swap_max: Option<Limit>,
    /// `memory.low`: best-effort protection from reclaim below this.
    pub memory_low: Option<Limit>,
    /// `memory.min`: hard protection from reclaim below this.
    pub memory_min: Option<Limit>,
    /// `pids.max`.
    pub pids_max: Option<Limit>,
    /// `cpu.weight` (1 to 10000).
    pub cpu_weight: Option<u64>,
    /// `cpu.max`: at most a quota of CPU time in each period.
    pub cpu_max: Option<CpuMax>,
    /// `cpuset.cpus`: the CPUs the module may run on.
    pub cpus: Option<CpuList>,
    /// `io.weight` (`default N`, 1 to 10000).
    pub io_weight: Option<u64>,
    /// `io.max`: bandwidth and IOPS ceilings on one block device.
    pub io_max: Option<IoMax>,
    /// `memory.oom.group`: an OOM kill takes the module's whole tree.
    pub oom_group: Option<bool>,
}

/// The value of one limit, as its row's parser gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Value {
    /// Bytes or a count, or `max`.
    Limit(Limit),
    /// A weight.
    Number(u64),
    /// On or off.
    Bool(bool),
    /// `cpu.max`.
    CpuMax(CpuMax),
    /// `cpuset.cpus`.
    Cpus(CpuList),
    /// `io.max`.
    IoMax(IoMax),
}

/// What a limit is measured in (the policy accepts a TOML integer for the numeric ones, a string
/// for all but [`Unit::Bool`], and a boolean for that one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unit {
    /// Bytes (`K`, `M`, `G`, `T` suffixes), or `max`.
    Bytes,
    /// A count, or `max`.
    Count,
    /// A weight, 1 to 10000.
    Weight,
    /// true or false.
    Bool,
    /// Microseconds of CPU time per period: `QUOTA[/PERIOD]`, or `max`.
    Microseconds,
    /// A list of CPUs: `0-3,6`.
    CpuList,
    /// Per-device bytes per second and IOPS: `DEV:rbps=..,wbps=..,riops=..,wiops=..`.
    DeviceLimits,
}

impl Unit {
    /// How the unit reads in help and messages.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Count => "count",
            Unit::Weight => "weight",
            Unit::Bool => "bool",
            Unit::Microseconds => "microseconds",
            Unit::CpuList => "cpu list",
            Unit::DeviceLimits => "device limits",
        }
    }
}

/// A systemd unit property's value, as the systemd backend sends it (the library builds these
/// without D-Bus; the backend turns them into D-Bus variants).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Property {
    /// `t`: a number; `u64::MAX` is systemd's infinity.
    U64(u64),
    /// `s`.
    Str(&'static str),
    /// `ay`: a CPU mask, bit N of byte N/8 for CPU N.
    Bytes(Vec<u8>),
    /// `a(st)`: (device path, number) pairs.
    Devices(Vec<(String, u64)>),
}

/// One limit: everything every part of ck-cgroup needs to know of it.
#[derive(Clone, Copy)]
pub struct LimitSpec {
    /// The policy key; the flag is `--` and the key with `-` for `_`.
    pub key: &'static str,
    /// The kernel file in the module's leaf.
    pub file: &'static str,
    /// The controller the file belongs to, enabled for the modules before it is written.
    pub controller: &'static str,
    /// The unit of measure.
    pub unit: Unit,
    /// The systemd properties it becomes on the systemd backend.
    pub systemd: &'static [&'static str],
    /// A figure of `status` (and of the Prometheus `ck_cgroup_limit`), read from [`Self::file`].
    pub status: bool,
    /// A valid value, for the tests and the docs.
    pub example: &'static str,
    /// The parser of the flag's and the policy's text.
    pub parse: fn(&str) -> Result<Value>,
    /// The value in a [`Limits`].
    pub get: fn(&Limits) -> Option<Value>,
    /// Store a value in a [`Limits`] (a value of another kind is ignored).
    pub set: fn(&mut Limits, Value),
    /// The text written to the kernel file.
    pub text: fn(&Value) -> String,
    /// The systemd properties and their values.
    pub properties: fn(&Value) -> Vec<(&'static str, Property)>,
    /// Whether the kernel file's current text already says the value (`apply` writes only the
    /// differences).
    pub same: fn(&str, &Value) -> bool,
}

impl std::fmt::Debug for LimitSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitSpec")
            .field("key", &self.key)
            .field("file", &self.file)
            .field("controller", &self.controller)
            .field("unit", &self.unit)
            .field("systemd", &self.systemd)
            .finish_non_exhaustive()
    }
}

impl LimitSpec {
    /// The flag's long name: the key with `-` for `_` (`memory-high`).
    pub fn flag(&self) -> String {
        self.key.replace('_', "-")
    }
}

/// The getter of field `$f`, a `Value::$v`.
macro_rules! get {
    ($f:ident, $v:ident) => {
        |l: &Limits| l.$f.clone().map(Value::$v)
    };
}

/// The setter of field `$f`, a `Value::$v`.
macro_rules! set {
    ($f:ident, $v:ident) => {
        |l: &mut Limits, v: Value| {
            if let Value::$v(x) = v {
                l.$f = Some(x);
            }
        }
    };
}

fn limit_text(v: &Value) -> String {
    match v {
        Value::Limit(Limit::Max) => "max".into(),
        Value::Limit(Limit::Value(n)) | Value::Number(n) => n.to_string(),
        Value::Bool(b) => u8::from(*b).to_string(),
        Value::CpuMax(c) => c.to_string(),
        Value::Cpus(c) => c.to_string(),
        Value::IoMax(m) => m.to_string(),
    }
}

/// `u64::MAX` for `max`: systemd's infinity.
fn infinity(l: Limit) -> u64 {
    match l {
        Limit::Max => u64::MAX,
        Limit::Value(v) => v,
    }
}

fn single(name: &'static str) -> impl Fn(&Value) -> Vec<(&'static str, Property)> {
    move |v| match v {
        Value::Limit(l) => vec![(name, Property::U64(infinity(*l)))],
        Value::Number(n) => vec![(name, Property::U64(*n))],
        _ => Vec::new(),
    }
}

/// A single-value file: the same when both read as the same `max` or number.
fn same_limit(current: &str, v: &Value) -> bool {
    let want = limit_text(v);
    match (
        crate::cgroup::parse::limit(current),
        crate::cgroup::parse::limit(&want),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => current.trim() == want,
    }
}

fn same_text(current: &str, v: &Value) -> bool {
    current.trim() == limit_text(v)
}

fn size_value(s: &str) -> Result<Value> {
    parse_size(s).map(Value::Limit)
}

fn count_value(s: &str) -> Result<Value> {
    parse_count(s).map(Value::Limit)
}

fn weight_value(s: &str) -> Result<Value> {
    parse_weight(s).map(Value::Number)
}

/// Every limit, in the order they are written (`memory.oom.group` last).
pub const LIMITS: &[LimitSpec] = &[
    LimitSpec {
        key: "memory_high",
        file: "memory.high",
        controller: "memory",
        unit: Unit::Bytes,
        systemd: &["MemoryHigh"],
        status: true,
        example: "2G",
        parse: size_value,
        get: get!(memory_high, Limit),
        set: set!(memory_high, Limit),
        text: limit_text,
        properties: |v| single("MemoryHigh")(v),
        same: same_limit,
    },
    LimitSpec {
        key: "memory_max",
        file: "memory.max",
        controller: "memory",
        unit: Unit::Bytes,
        systemd: &["MemoryMax"],
        status: true,
        example: "4G",
        parse: size_value,
        get: get!(memory_max, Limit),
        set: set!(memory_max, Limit),
        text: limit_text,
        properties: |v| single("MemoryMax")(v),
        same: same_limit,
    },
    LimitSpec {
        key: "memory_swap_max",
        file: "memory.swap.max",
        controller: "memory",
        unit: Unit::Bytes,
        systemd: &["MemorySwapMax"],
        status: true,
        example: "0",
        parse: size_value,
        get: get!(memory_swap_max, Limit),
        set: set!(memory_swap_max, Limit),
        text: limit_text,
        properties: |v| single("MemorySwapMax")(v),
        same: same_limit,
    },
    LimitSpec {
        key: "memory_low",
        file: "memory.low",
        controller: "memory",
        unit: Unit::Bytes,
        systemd: &["MemoryLow"],
        status: false,
        example: "256M",
        parse: size_value,
        get: get!(memory_low, Limit),
        set: set!(memory_low, Limit),
        text: limit_text,
        properties: |v| single("MemoryLow")(v),
        same: same_limit,
    },
    LimitSpec {
        key: "memory_min",
        file: "memory.min",
        controller: "memory",
        unit: Unit::Bytes,
        systemd: &["MemoryMin"],
        status: false,
        example: "64M",
        parse: size_value,
        get: get!(memory_min, Limit),
        set: set!(memory_min, Limit),
        text: limit_text,
        properties: |v| single("MemoryMin")(v),
        same: same_limit,
    },
    LimitSpec {
        key: "pids_max",
        file: "pids.max",
        controller: "pids",
        unit: Unit::Count,
        systemd: &["TasksMax"],
        status: true,
        example: "512",
        parse: count_value,
        get: get!(pids_max, Limit),
        set: set!(pids_max, Limit),
        text: limit_text,
        properties: |v| single("TasksMax")(v),
        same: same_limit,
    },
    LimitSpec {
        key: "cpu_weight",
        file: "cpu.weight",
        controller: "cpu",
        unit: Unit::Weight,
        systemd: &["CPUWeight"],
        status: true,
        example: "100",
        parse: weight_value,
        get: get!(cpu_weight, Number),
        set: set!(cpu_weight, Number),
        text: limit_text,
        properties: |v| single("CPUWeight")(v),
        same: same_limit,
    },
    LimitSpec {
        key: "cpu_max",
        file: "cpu.max",
        controller: "cpu",
        unit: Unit::Microseconds,
        systemd: &["CPUQuotaPerSecUSec", "CPUQuotaPeriodUSec"],
        status: false,
        example: "50000/100000",
        parse: |s| parse_cpu_max(s).map(Value::CpuMax),
        get: get!(cpu_max, CpuMax),
        set: set!(cpu_max, CpuMax),
        text: limit_text,
        properties: |v| match v {
            Value::CpuMax(c) => c.properties(),
            _ => Vec::new(),
        },
        same: same_text,
    },
    LimitSpec {
        key: "cpus",
        file: "cpuset.cpus",
        controller: "cpuset",
        unit: Unit::CpuList,
        systemd: &["AllowedCPUs"],
        status: false,
        example: "0-1",
        parse: |s| parse_cpus(s).map(Value::Cpus),
        get: get!(cpus, Cpus),
        set: set!(cpus, Cpus),
        text: limit_text,
        properties: |v| match v {
            Value::Cpus(c) => vec![("AllowedCPUs", Property::Bytes(c.mask()))],
            _ => Vec::new(),
        },
        same: same_text,
    },
    LimitSpec {
        key: "io_weight",
        file: "io.weight",
        controller: "io",
        unit: Unit::Weight,
        systemd: &["IOWeight"],
        status: false,
        example: "100",
        parse: weight_value,
        get: get!(io_weight, Number),
        set: set!(io_weight, Number),
        text: |v| format!("default {}", limit_text(v)),
        properties: |v| single("IOWeight")(v),
        // The file's first line is `default N`, then one line per device with its own weight.
        same: |current, v| {
            current.lines().next().map(str::trim) == Some(&format!("default {}", limit_text(v)))
        },
    },
    LimitSpec {
        key: "io_max",
        file: "io.max",
        controller: "io",
        unit: Unit::DeviceLimits,
        systemd: &[
            "IOReadBandwidthMax",
            "IOWriteBandwidthMax",
            "IOReadIOPSMax",
            "IOWriteIOPSMax",
        ],
        status: false,
        example: "8:0:rbps=10M,wiops=100",
        parse: |s| parse_io_max(s).map(Value::IoMax),
        get: get!(io_max, IoMax),
        set: set!(io_max, IoMax),
        text: limit_text,
        properties: |v| match v {
            Value::IoMax(m) => m.properties(),
            _ => Vec::new(),
        },
        same: |current, v| match v {
            Value::IoMax(m) => m.same(current),
            _ => false,
        },
    },
    LimitSpec {
        key: "oom_group",
        file: "memory.oom.group",
        controller: "memory",
        unit: Unit::Bool,
        systemd: &["OOMPolicy"],
        status: true,
        example: "true",
        parse: |s| parse_bool(s).map(Value::Bool),
        get: get!(oom_group, Bool),
        set: set!(oom_group, Bool),
        text: limit_text,
        // memory.oom.group is systemd's to write: OOMPolicy=kill sets it (the kernel kills the
        // whole scope); continue leaves it off (only the chosen process dies, the scope lives).
        // Unset, systemd's DefaultOOMPolicy (stop) stops the scope after an OOM kill.
        properties: |v| match v {
            Value::Bool(g) => vec![(
                "OOMPolicy",
                Property::Str(if *g { "kill" } else { "continue" }),
            )],
            _ => Vec::new(),
        },
        same: same_limit,
    },
];

/// The row of the limit with policy key `key`.
pub fn spec(key: &str) -> Option<&'static LimitSpec> {
    LIMITS.iter().find(|s| s.key == key)
}

/// The row of the limit written to `file`.
pub fn spec_of_file(file: &str) -> Option<&'static LimitSpec> {
    LIMITS.iter().find(|s| s.file == file)
}

/// A write that passed the check: the file and the value.
pub type Write = (&'static str, String);

/// One limit written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Applied {
    /// The file.
    pub file: std::borrow::Cow<'static, str>,
    /// The value written.
    pub value: String,
}

/// One limit not written under `--best-effort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Skipped {
    /// The file.
    pub file: std::borrow::Cow<'static, str>,
    /// The controller it needs.
    pub controller: std::borrow::Cow<'static, str>,
    /// Why.
    pub reason: String,
}

/// What a limit change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct LimitReport {
    /// The module.
    pub module: ModuleId,
    /// Written.
    pub applied: Vec<Applied>,
    /// Not written (only with best effort).
    pub skipped: Vec<Skipped>,
}

impl Limits {
    /// The limits asked for, each with its row, in the table's order.
    pub fn values(&self) -> Vec<(&'static LimitSpec, Value)> {
        LIMITS
            .iter()
            .filter_map(|s| (s.get)(self).map(|v| (s, v)))
            .collect()
    }

    /// The writes these limits make: (file, controller, value), in the table's order.
    pub fn writes(&self) -> Vec<(&'static str, &'static str, String)> {
        self.values()
            .into_iter()
            .map(|(s, v)| (s.file, s.controller, (s.text)(&v)))
            .collect()
    }

    /// The limit with policy key `key`, if it is set (`None` too for an unknown key).
    pub fn get(&self, key: &str) -> Option<Value> {
        spec(key).and_then(|s| (s.get)(self))
    }

    /// Set the limit with policy key `key`; false when no row has that key or `value` is not of
    /// its kind.
    pub fn set(&mut self, key: &str, value: Value) -> bool {
        let Some(s) = spec(key) else {
            return false;
        };
        (s.set)(self, value.clone());
        (s.get)(self) == Some(value)
    }

    /// These limits over `under`, key by key: a limit set here wins.
    pub fn or(&self, under: &Limits) -> Limits {
        let mut out = self.clone();
        for s in LIMITS {
            if (s.get)(&out).is_none()
                && let Some(v) = (s.get)(under)
            {
                (s.set)(&mut out, v);
            }
        }
        out
    }

    /// No limit asked for.
    pub fn is_empty(&self) -> bool {
        self.values().is_empty()
    }
}

/// `512K`, `100M`, `2G`, `1T` (powers of 1024), a byte count, or `max`.
pub fn parse_size(s: &str) -> Result<Limit> {
    let bad = || {
        Error::bad_input(format!("invalid size {s:?}"))
            .with_hint("a size is a number of bytes with an optional K, M, G or T suffix, or max")
    };
    if s == "max" {
        return Ok(Limit::Max);
    }
    let (num, mul) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(bad()),
            };
            (&s[..i], m)
        }
        _ => (s, 1),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_mul(mul).map(Limit::Value).ok_or_else(bad)
}

/// A count (`pids.max`) or `max`.
pub fn parse_count(s: &str) -> Result<Limit> {
    if s == "max" {
        return Ok(Limit::Max);
    }
    s.parse().map(Limit::Value).map_err(|_| {
        Error::bad_input(format!("invalid count {s:?}")).with_hint("a count is a number, or max")
    })
}

/// A weight (`cpu.weight`, `io.weight`): 1 to 10000 (the kernel's default is 100).
pub fn parse_weight(s: &str) -> Result<u64> {
    match s.parse::<u64>() {
        Ok(w) if (1..=10_000).contains(&w) => Ok(w),
        Ok(w) => Err(
            Error::bad_input(format!("weight {w} is outside 1 to 10000"))
                .with_hint("a weight is a number from 1 to 10000; the default is 100"),
        ),
        Err(_) => Err(Error::bad_input(format!("invalid weight {s:?}"))
            .with_hint("a weight is a number from 1 to 10000; the default is 100")),
    }
}

/// `true` or `false` (`1`, `0`).
pub fn parse_bool(s: &str) -> Result<bool> {
    match s {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(Error::bad_input(format!("invalid switch {s:?}")).with_hint("say true or false")),
    }
}

/// `cpu.max`: at most `quota` microseconds of CPU time in each `period` microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuMax {
    /// Microseconds per period, or `max` (no ceiling).
    pub quota: Limit,
    /// The period in microseconds (the kernel's default, 100000, when not given).
    pub period: u64,
}

/// The kernel's default `cpu.max` period, in microseconds.
pub const CPU_PERIOD_DEFAULT: u64 = 100_000;

impl std::fmt::Display for CpuMax {
    /// The text of `cpu.max`: `$MAX $PERIOD`, as the kernel shows it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.quota {
            Limit::Max => write!(f, "max {}", self.period),
            Limit::Value(q) => write!(f, "{q} {}", self.period),
        }
    }
}

impl CpuMax {
    /// `CPUQuotaPerSecUSec=` (the quota per second of wall time: 500000 is `CPUQuota=50%`;
    /// `u64::MAX` for `max`) and `CPUQuotaPeriodUSec=`.
    pub fn properties(&self) -> Vec<(&'static str, Property)> {
        let per_sec = match self.quota {
            Limit::Max => u64::MAX,
            // The parser bounds the quota so this cannot overflow; saturate all the same.
            Limit::Value(q) => q.saturating_mul(1_000_000) / self.period.max(1),
        };
        vec![
            ("CPUQuotaPerSecUSec", Property::U64(per_sec)),
            ("CPUQuotaPeriodUSec", Property::U64(self.period)),
        ]
    }

    /// The share of one CPU, in percent, as systemd's `CPUQuota=` says it (`None` for `max`).
    pub fn percent(&self) -> Option<f64> {
        match self.quota {
            Limit::Max => None,
            Limit::Value(q) => Some(q as f64 * 100.0 / self.period.max(1) as f64),
        }
    }
}

/// `QUOTA[/PERIOD]` in microseconds, or `max[/PERIOD]`: the quota at least 1000 (1 ms), the
/// period 1000 to 1000000 (1 s; default 100000).
pub fn parse_cpu_max(s: &str) -> Result<CpuMax> {
    const HINT: &str = "say QUOTA[/PERIOD] in microseconds (50000/100000 is half a CPU, 200000 two CPUs at the default period of 100000) or max; the quota is at least 1000, the period 1000 to 1000000";
    let bad =
        |what: String| Error::bad_input(format!("invalid cpu max {s:?}: {what}")).with_hint(HINT);
    let (q, p) = match s.split_once('/') {
        Some((q, p)) => (q, Some(p)),
        None => (s, None),
    };
    let period = match p {
        None => CPU_PERIOD_DEFAULT,
        Some(p) => match p.parse::<u64>() {
            Ok(p) if (1_000..=1_000_000).contains(&p) => p,
            Ok(p) => return Err(bad(format!("the period {p} is outside 1000 to 1000000"))),
            Err(_) => return Err(bad(format!("the period {p:?} is not a number"))),
        },
    };
    let quota = match q {
        "max" => Limit::Max,
        q => match q.parse::<u64>() {
            Ok(q) if (1_000..=u64::MAX / 1_000_000).contains(&q) => Limit::Value(q),
            Ok(q) => {
                return Err(bad(format!(
                    "the quota {q} is outside 1000 to {}",
                    u64::MAX / 1_000_000
                )));
            }
            Err(_) => return Err(bad(format!("the quota {q:?} is not a number or max"))),
        },
    };
    Ok(CpuMax { quota, period })
}

/// The highest CPU number a list may name (systemd's `AllowedCPUs=` takes up to 8192 CPUs).
pub const MAX_CPU: u32 = 8191;

/// A set of CPUs (`cpuset.cpus`), as sorted, disjoint, non-adjacent ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(Vec<(u32, u32)>);

impl CpuList {
    /// The ranges, first to last CPU inclusive.
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.0
    }

    /// The mask systemd's `AllowedCPUs=` takes: bit N of byte N/8 for CPU N.
    pub fn mask(&self) -> Vec<u8> {
        let top = self.0.last().map_or(0, |r| r.1 as usize);
        let mut m = vec![0u8; top / 8 + 1];
        for &(a, b) in &self.0 {
            for c in a..=b {
                if let Some(byte) = m.get_mut(c as usize / 8) {
                    *byte |= 1 << (c % 8);
                }
            }
        }
        m
    }
}

impl std::fmt::Display for CpuList {
    /// As the kernel shows `cpuset.cpus`: `0-3,6`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, &(a, b)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
        }
        Ok(())
    }
}

/// A CPU list, `0-3,6` (cpuset(7)'s list format): numbers and ranges separated by commas, CPUs
/// 0 to [`MAX_CPU`]; normalised (sorted, merged).
pub fn parse_cpus(s: &str) -> Result<CpuList> {
    const HINT: &str = "say CPU numbers and ranges separated by commas, as 0-3,6 (see /sys/devices/system/cpu/online)";
    let bad =
        |what: String| Error::bad_input(format!("invalid cpu list {s:?}: {what}")).with_hint(HINT);
    let num = |t: &str| -> Result<u32> {
        match t.trim().parse::<u32>() {
            Ok(n) if n <= MAX_CPU => Ok(n),
            Ok(n) => Err(bad(format!("cpu {n} is above {MAX_CPU}"))),
            Err(_) => Err(bad(format!("{t:?} is not a cpu number"))),
        }
    };
    if s.trim().is_empty() {
        return Err(bad("it is empty".into()));
    }
    let mut ranges = Vec::new();
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(part)?;
                (n, n)
            }
        };
        if a > b {
            return Err(bad(format!("the range {a}-{b} runs backwards")));
        }
        ranges.push((a, b));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    Ok(CpuList(merged))
}

/// `io.max` on one block device: bytes per second and IO operations per second, read and write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoMax {
    /// The device's major number.
    pub major: u32,
    /// The device's minor number.
    pub minor: u32,
    /// The path given (systemd's properties take a path); `None` when `MAJ:MIN` was given.
    pub path: Option<String>,
    /// `rbps`: read bytes per second.
    pub rbps: Option<Limit>,
    /// `wbps`: written bytes per second.
    pub wbps: Option<Limit>,
    /// `riops`: read operations per second.
    pub riops: Option<Limit>,
    /// `wiops`: write operations per second.
    pub wiops: Option<Limit>,
}

impl IoMax {
    fn keys(&self) -> [(&'static str, Option<Limit>); 4] {
        [
            ("rbps", self.rbps),
            ("wbps", self.wbps),
            ("riops", self.riops),
            ("wiops", self.wiops),
        ]
    }

    /// The device as systemd's properties take it: the path given, or `/dev/block/MAJ:MIN`.
    pub fn device_path(&self) -> String {
        self.path
            .clone()
            .unwrap_or_else(|| format!("/dev/block/{}:{}", self.major, self.minor))
    }

    /// `IOReadBandwidthMax=`, `IOWriteBandwidthMax=`, `IOReadIOPSMax=`, `IOWriteIOPSMax=` of the
    /// keys given, each `[(device path, value)]` (`u64::MAX` for `max`).
    pub fn properties(&self) -> Vec<(&'static str, Property)> {
        let names = [
            "IOReadBandwidthMax",
            "IOWriteBandwidthMax",
            "IOReadIOPSMax",
            "IOWriteIOPSMax",
        ];
        names
            .into_iter()
            .zip(self.keys())
            .filter_map(|(name, (_, v))| {
                v.map(|v| {
                    (
                        name,
                        Property::Devices(vec![(self.device_path(), infinity(v))]),
                    )
                })
            })
            .collect()
    }

    /// Whether `io.max`'s text (one line per device, `MAJ:MIN rbps=.. wbps=.. riops=.. wiops=..`)
    /// has this device with every key given at its value.
    pub fn same(&self, current: &str) -> bool {
        let dev = format!("{}:{}", self.major, self.minor);
        let Some(line) = current
            .lines()
            .find(|l| l.split_whitespace().next() == Some(dev.as_str()))
        else {
            // No line: every key is max.
            return self
                .keys()
                .iter()
                .all(|(_, v)| matches!(v, None | Some(Limit::Max)));
        };
        self.keys().iter().all(|(k, v)| {
            let Some(want) = v else { return true };
            line.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .find(|(key, _)| key == k)
                .and_then(|(_, got)| crate::cgroup::parse::limit(got))
                == Some(*want)
        })
    }
}

impl std::fmt::Display for IoMax {
    /// The line written to `io.max`: `MAJ:MIN` and the keys given (`rbps=1048576 wiops=max`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)?;
        for (k, v) in self.keys() {
            match v {
                Some(Limit::Max) => write!(f, " {k}=max")?,
                Some(Limit::Value(n)) => write!(f, " {k}={n}")?,
                None => {}
            }
        }
        Ok(())
    }
}

const IO_MAX_HINT: &str = "say DEV:KEY=VALUE,... with DEV a block device (MAJ:MIN, or a path such as /dev/sda) and KEY rbps or wbps (bytes per second, K/M/G/T suffixes) or riops or wiops (operations per second), each value a number or max";

/// `DEV:rbps=..,wbps=..,riops=..,wiops=..` (at least one key), DEV a block device as `MAJ:MIN`
/// or a path resolved with `stat(2)` (it must be a block device).
pub fn parse_io_max(s: &str) -> Result<IoMax> {
    parse_io_max_with(s, |path| {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
        if !meta.file_type().is_block_device() {
            return Err(format!("{path} is not a block device"));
        }
        Ok((
            rustix::fs::major(meta.rdev()),
            rustix::fs::minor(meta.rdev()),
        ))
    })
}

/// [`parse_io_max`] with `resolve` turning a device path into its (major, minor) or saying why
/// it cannot (no I/O here: the fuzz targets pass a resolver that refuses).
pub fn parse_io_max_with(
    s: &str,
    resolve: impl Fn(&str) -> std::result::Result<(u32, u32), String>,
) -> Result<IoMax> {
    let bad = |what: String| {
        Error::bad_input(format!("invalid io max {s:?}: {what}")).with_hint(IO_MAX_HINT)
    };
    let eq = s.find('=').ok_or_else(|| bad("no KEY=VALUE".into()))?;
    let colon = s[..eq]
        .rfind(':')
        .ok_or_else(|| bad("no DEV: before the keys".into()))?;
    let (dev, keys) = (&s[..colon], &s[colon + 1..]);
    let number = |t: &str| {
        t.parse::<u32>()
            .ok()
            .filter(|_| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
    };
    let (major, minor, path) = match dev.split_once(':') {
        Some((a, b)) if !dev.starts_with('/') => match (number(a), number(b)) {
            (Some(a), Some(b)) => (a, b, None),
            _ => {
                return Err(bad(format!(
                    "the device {dev:?} is neither MAJ:MIN nor a path"
                )));
            }
        },
        _ if dev.starts_with('/') => {
            let (a, b) = resolve(dev).map_err(bad)?;
            (a, b, Some(dev.to_string()))
        }
        _ => {
            return Err(bad(format!(
                "the device {dev:?} is neither MAJ:MIN nor a path"
            )));
        }
    };
    let mut m = IoMax {
        major,
        minor,
        path,
        rbps: None,
        wbps: None,
        riops: None,
        wiops: None,
    };
    for kv in keys.split(',') {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad(format!("{kv:?} is not KEY=VALUE")))?;
        let value = match k {
            "rbps" | "wbps" => parse_size(v),
            "riops" | "wiops" => parse_count(v),
            _ => return Err(bad(format!("unknown key {k:?}"))),
        }
        .map_err(|e| bad(format!("{k}: {}", e.message())))?;
        let slot = match k {
            "rbps" => &mut m.rbps,
            "wbps" => &mut m.wbps,
            "riops" => &mut m.riops,
            _ => &mut m.wiops,
        };
        if slot.replace(value).is_some() {
            return Err(bad(format!("{k} is given twice")));
        }
    }
    Ok(m)
}

/// What a module made now gets: `asked` (the flags over the policy, see
/// [`crate::policy::merge`]) and, where `enabled` (the controllers in
/// `subc-modules/cgroup.subtree_control`) has `memory` and `asked` says nothing of
/// `memory.oom.group`, `memory.oom.group` 1, so that an OOM kill takes the module's whole tree
/// and nothing else. Without the memory controller nothing is added: nothing is written for it
/// and nothing can fail for it. `--no-oom-group` or the policy's `oom_group = false` is
/// `Some(false)` in `asked` and is kept. Applied once, when the module is made
/// ([`Root::create_module`](crate::Root::create_module)); a module that exists keeps what it has.
pub fn creation_limits(enabled: &[String], asked: &Limits) -> Limits {
    let mut limits = asked.clone();
    // Mutation: no default; a module made without the flag keeps the kernel's 0.
    if limits.oom_group.is_none()
        && enabled.iter().any(|c| c == "memory")
        && !cfg!(ck_mutation = "no-oom-group-default")
    {
        limits.oom_group = Some(true);
    }
    limits
}

/// Sort `limits`' writes by whether their controller is in `enabled` (the controllers of the
/// modules of the root at `root`): the writes that may go ahead, and under `best_effort` the
/// ones skipped. Without `best_effort` a missing controller is bad input (exit 2) naming the
/// controller and the fix.
pub(crate) fn sort_writes(
    enabled: &[String],
    root: &std::path::Path,
    limits: &Limits,
    best_effort: bool,
) -> Result<(Vec<Write>, Vec<Skipped>)> {
    let mut ok = Vec::new();
    let mut skipped = Vec::new();
    for (file, controller, value) in limits.writes() {
        // Mutation: skip the check, so a missing controller is found by a failed write.
        if enabled.iter().any(|c| c == controller) || cfg!(ck_mutation = "limits-unchecked") {
            ok.push((file, value));
            continue;
        }
        let reason = format!(
            "the {controller} controller is not enabled for the modules in {}",
            root.display()
        );
        if !best_effort {
            return Err(Error::bad_input(format!("{file} needs {reason}"))
                .with_hint(format!(
                    "delegate it to the service (add {controller} to Delegate= in the unit) and run `ck-cgroup init`; or pass --best-effort to apply the other limits"
                ))
                .with_kind(crate::error::ErrorKind::ControllerMissing));
        }
        skipped.push(Skipped {
            file: file.into(),
            controller: controller.into(),
            reason,
        });
    }
    Ok((ok, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("max").unwrap(), Limit::Max);
        assert_eq!(parse_size("512").unwrap(), Limit::Value(512));
        assert_eq!(parse_size("4K").unwrap(), Limit::Value(4096));
        assert_eq!(parse_size("100M").unwrap(), Limit::Value(100 << 20));
        assert_eq!(parse_size("2g").unwrap(), Limit::Value(2 << 30));
        assert_eq!(parse_size("1T").unwrap(), Limit::Value(1 << 40));
        for bad in ["", "M", "1.5G", "10X", "-1", "99999999999999999999T"] {
            assert_eq!(parse_size(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
        assert_eq!(parse_count("64").unwrap(), Limit::Value(64));
        assert!(parse_count("6x").is_err());
    }

    /// Every row has a policy key, which takes its example (a TOML string, or a boolean for a
    /// switch) into the row's value; a row's getter and setter are of its field.
    #[test]
    fn every_limit_has_a_policy_key() {
        for s in LIMITS {
            let want = (s.parse)(s.example).unwrap_or_else(|e| panic!("{}: {e}", s.key));
            let toml = if s.unit == Unit::Bool {
                format!("[defaults]\n{} = {}\n", s.key, s.example)
            } else {
                format!("[defaults]\n{} = \"{}\"\n", s.key, s.example)
            };
            let p = crate::policy::Policy::parse(&toml, std::path::Path::new("p.toml"))
                .unwrap_or_else(|e| panic!("{}: no policy key: {e}", s.key));
            assert_eq!(
                p.defaults.limits.get(s.key),
                Some(want.clone()),
                "{}",
                s.key
            );
            assert_eq!(p.defaults.limits.values().len(), 1, "{}", s.key);
            let mut l = Limits::default();
            assert!(l.set(s.key, want.clone()), "{}", s.key);
            assert_eq!(l.writes(), vec![(s.file, s.controller, (s.text)(&want))]);
            assert!((s.same)(&(s.text)(&want), &want), "{}: same", s.key);
        }
        let keys: std::collections::BTreeSet<&str> = LIMITS.iter().map(|s| s.key).collect();
        let files: std::collections::BTreeSet<&str> = LIMITS.iter().map(|s| s.file).collect();
        assert_eq!(keys.len(), LIMITS.len(), "a key twice");
        assert_eq!(files.len(), LIMITS.len(), "a file twice");
    }

    #[test]
    fn every_controller_is_one_init_enables() {
        use crate::layout::{OPTIONAL_CONTROLLERS, WANTED_CONTROLLERS};
        for s in LIMITS {
            assert!(
                WANTED_CONTROLLERS.contains(&s.controller)
                    || OPTIONAL_CONTROLLERS.contains(&s.controller),
                "{}: {}",
                s.key,
                s.controller
            );
            assert!(
                s.file.starts_with(&format!("{}.", s.controller)),
                "{}",
                s.key
            );
        }
    }

    #[test]
    fn the_new_knobs_write_what_the_kernel_takes() {
        let l = Limits {
            memory_low: Some(Limit::Value(256 << 20)),
            memory_min: Some(Limit::Max),
            cpu_max: Some(parse_cpu_max("50000").unwrap()),
            cpus: Some(parse_cpus("3,0-1,2").unwrap()),
            io_weight: Some(parse_weight("200").unwrap()),
            io_max: Some(parse_io_max("8:16:wbps=1M,riops=max").unwrap()),
            ..Limits::default()
        };
        assert_eq!(
            l.writes(),
            vec![
                ("memory.low", "memory", "268435456".to_string()),
                ("memory.min", "memory", "max".to_string()),
                ("cpu.max", "cpu", "50000 100000".to_string()),
                ("cpuset.cpus", "cpuset", "0-3".to_string()),
                ("io.weight", "io", "default 200".to_string()),
                ("io.max", "io", "8:16 wbps=1048576 riops=max".to_string()),
            ]
        );
        let io = spec("io_max").unwrap();
        let v = l.get("io_max").unwrap();
        // The kernel shows every key of the device; the ones asked for decide.
        assert!((io.same)(
            "8:0 rbps=max wbps=max riops=max wiops=max\n8:16 rbps=5 wbps=1048576 riops=max wiops=max\n",
            &v
        ));
        assert!(!(io.same)(
            "8:16 rbps=max wbps=max riops=max wiops=max\n",
            &v
        ));
        assert!(!(io.same)("", &v));
        let w = spec("io_weight").unwrap();
        assert!((w.same)("default 200\n8:0 50\n", &Value::Number(200)));
        assert!(!(w.same)("default 100\n", &Value::Number(200)));
        let c = spec("cpu_max").unwrap();
        assert!((c.same)("50000 100000\n", &l.get("cpu_max").unwrap()));
    }

    #[test]
    fn the_new_knobs_become_systemd_properties() {
        let props = |key: &str, text: &str| {
            let s = spec(key).unwrap();
            (s.properties)(&(s.parse)(text).unwrap())
        };
        // CPUQuota=50% is 500000 µs per second.
        assert_eq!(
            props("cpu_max", "50000/100000"),
            vec![
                ("CPUQuotaPerSecUSec", Property::U64(500_000)),
                ("CPUQuotaPeriodUSec", Property::U64(100_000)),
            ]
        );
        assert_eq!(
            props("cpu_max", "20000/10000")[0],
            ("CPUQuotaPerSecUSec", Property::U64(2_000_000))
        );
        assert_eq!(
            props("cpu_max", "max")[0],
            ("CPUQuotaPerSecUSec", Property::U64(u64::MAX))
        );
        assert_eq!(parse_cpu_max("25000").unwrap().percent(), Some(25.0));
        assert_eq!(
            props("cpus", "0-1,9"),
            vec![("AllowedCPUs", Property::Bytes(vec![0b11, 0b10]))]
        );
        assert_eq!(
            props("io_weight", "300"),
            vec![("IOWeight", Property::U64(300))]
        );
        assert_eq!(
            props("memory_low", "1K"),
            vec![("MemoryLow", Property::U64(1024))]
        );
        assert_eq!(
            props("memory_min", "max"),
            vec![("MemoryMin", Property::U64(u64::MAX))]
        );
        assert_eq!(
            props("io_max", "8:0:rbps=1K,wiops=max"),
            vec![
                (
                    "IOReadBandwidthMax",
                    Property::Devices(vec![("/dev/block/8:0".into(), 1024)])
                ),
                (
                    "IOWriteIOPSMax",
                    Property::Devices(vec![("/dev/block/8:0".into(), u64::MAX)])
                ),
            ]
        );
        for s in LIMITS {
            let names: Vec<&str> = (s.properties)(&(s.parse)(s.example).unwrap())
                .into_iter()
                .map(|(n, _)| n)
                .collect();
            assert!(!names.is_empty(), "{}", s.key);
            assert!(
                names.iter().all(|n| s.systemd.contains(n)),
                "{}: {names:?}",
                s.key
            );
        }
    }

    #[test]
    fn the_new_parsers_refuse_bad_input_in_one_line_with_the_fix() {
        let line = |e: Error| {
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(!e.to_string().contains('\n'), "{e}");
            assert!(e.hint().is_some(), "{e}: no fix");
            e.to_string()
        };
        for bad in ["", "0", "10001", "x", "-5", "1.5"] {
            line(parse_weight(bad).unwrap_err());
        }
        for bad in [
            "",
            "999",
            "x",
            "50000/999",
            "50000/1000001",
            "max/x",
            "1/2/3",
            "50000/",
        ] {
            line(parse_cpu_max(bad).unwrap_err());
        }
        assert_eq!(parse_cpu_max("max").unwrap().to_string(), "max 100000");
        assert_eq!(parse_cpu_max("max/50000").unwrap().to_string(), "max 50000");
        assert_eq!(parse_cpu_max("1000/1000").unwrap().to_string(), "1000 1000");
        for bad in ["", ",", "1-", "-1", "3-1", "8192", "a", "1,,2", "0-99999"] {
            line(parse_cpus(bad).unwrap_err());
        }
        assert_eq!(parse_cpus("5,4, 0").unwrap().to_string(), "0,4-5");
        assert_eq!(parse_cpus("8191").unwrap().mask().len(), 1024);
        let refuse = |_: &str| Err::<(u32, u32), _>("no stat here".to_string());
        for bad in [
            "",
            "8:0",
            "8:0:",
            "8:0:rbps",
            "8:0:xbps=1",
            "8:0:rbps=1X",
            "8:0:rbps=1,rbps=2",
            "sda:rbps=1",
            "8:x:rbps=1",
            "8:0:riops=1K",
            "/dev/nope:rbps=1",
            ":rbps=1",
        ] {
            let e = line(parse_io_max_with(bad, refuse).unwrap_err());
            assert!(e.starts_with("invalid io max"), "{e}");
        }
        let m = parse_io_max_with("/dev/disk/by-path/pci-0:1:wbps=2K", |p| {
            assert_eq!(p, "/dev/disk/by-path/pci-0:1");
            Ok((259, 1))
        })
        .unwrap();
        assert_eq!(m.to_string(), "259:1 wbps=2048");
        assert_eq!(m.device_path(), "/dev/disk/by-path/pci-0:1");
        // A path that is not a block device, resolved for real.
        let e = line(parse_io_max("/dev/null:rbps=1").unwrap_err());
        assert!(e.contains("/dev/null is not a block device"), "{e}");
        let e = line(parse_io_max("/nonexistent/sdz:rbps=1").unwrap_err());
        assert!(e.contains("/nonexistent/sdz"), "{e}");
        line(parse_bool("yes").unwrap_err());
    }

    #[test]
    fn writes_in_order() {
        let l = Limits {
            memory_max: Some(Limit::Value(1 << 20)),
            pids_max: Some(Limit::Max),
            oom_group: Some(false),
            ..Limits::default()
        };
        assert_eq!(
            l.writes(),
            vec![
                ("memory.max", "memory", "1048576".to_string()),
                ("pids.max", "pids", "max".to_string()),
                ("memory.oom.group", "memory", "0".to_string()),
            ]
        );
        assert!(Limits::default().is_empty());
    }

    fn on(controllers: &[&str]) -> Vec<String> {
        controllers.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn a_module_made_where_memory_is_on_gets_oom_group_1() {
        let all = on(&["cpu", "io", "memory", "pids"]);
        // No limits (create, exec and run without flags, Root::spawn, place).
        assert_eq!(
            creation_limits(&all, &Limits::default()).writes(),
            vec![("memory.oom.group", "memory", "1".to_string())]
        );
        // Limits without an oom_group: the default comes last, after them.
        let asked = Limits {
            memory_max: Some(Limit::Value(32 << 20)),
            ..Limits::default()
        };
        assert_eq!(
            creation_limits(&all, &asked).writes(),
            vec![
                ("memory.max", "memory", "33554432".to_string()),
                ("memory.oom.group", "memory", "1".to_string()),
            ]
        );
        // Memory alone is enough.
        assert_eq!(
            creation_limits(&on(&["memory"]), &Limits::default()).oom_group,
            Some(true)
        );
    }

    #[test]
    fn no_oom_group_and_the_policy_win_over_the_default() {
        let all = on(&["cpu", "io", "memory", "pids"]);
        for asked in [Some(false), Some(true)] {
            let l = Limits {
                oom_group: asked,
                ..Limits::default()
            };
            assert_eq!(creation_limits(&all, &l), l.clone(), "{asked:?}");
        }
        // The policy's oom_group = false, merged under flags that say nothing of it.
        let policy = Limits {
            oom_group: Some(false),
            ..Limits::default()
        };
        let asked = crate::policy::merge(&Limits::default(), &policy);
        assert_eq!(
            creation_limits(&all, &asked).writes(),
            vec![("memory.oom.group", "memory", "0".to_string())]
        );
    }

    #[test]
    fn without_the_memory_controller_nothing_is_added() {
        for enabled in [on(&[]), on(&["pids", "cpu", "io"])] {
            assert_eq!(
                creation_limits(&enabled, &Limits::default()),
                Limits::default(),
                "{enabled:?}"
            );
            // Nothing to write, so nothing to check and nothing that can fail.
            let (ok, skipped) = sort_writes(
                &enabled,
                std::path::Path::new("/r"),
                &Limits::default(),
                false,
            )
            .unwrap();
            assert!(ok.is_empty() && skipped.is_empty());
        }
    }
}
