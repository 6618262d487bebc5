//! Per-module limits, written to the module's leaf only (never to the service's own cgroup).
//!
//! Every limit is one row of [`LIMITS`]: its policy key (the flag is the key with `-` for `_`),
//! its kernel file and controller, its unit of measure, its systemd properties, its parser, the
//! flag's value name and help, and how it is read from and stored in [`Limits`]. `Limits::writes`, the policy's keys and merge,
//! the systemd backend's properties, `status`'s limit figures and the CLI's flags (made from the
//! rows, help included) all go through that table.
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
use crate::mutation::{self, Control};

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
    /// systemd-oomd's preference (`user.oomd_avoid`/`user.oomd_omit` on the module's directory;
    /// systemd: `ManagedOOMPreference=`): no row of [`LIMITS`], as it is no kernel file
    /// (`--oomd`, the policy's `oomd`).
    pub oomd: Option<crate::cgroup::oomd::OomdPreference>,
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
    /// A figure of `status` (and a Prometheus metric of its own), read from [`Self::file`].
    pub status: bool,
    /// A valid value, for the tests and the docs.
    pub example: &'static str,
    /// The flag's value name in `--help` (`SIZE`, `N`, ...).
    pub value_name: &'static str,
    /// The flag's one paragraph of `--help` (and of the man pages).
    pub help: &'static str,
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

// After the macros above, which the table uses.
mod parse_values;
mod table;

pub use parse_values::{
    CPU_PERIOD_DEFAULT, CpuList, CpuMax, IoMax, MAX_CPU, parse_bool, parse_count, parse_cpu_max,
    parse_cpus, parse_io_max, parse_io_max_with, parse_size, parse_weight,
};
pub use table::LIMITS;

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
        out.oomd = self.oomd.or(under.oomd);
        out
    }

    /// No limit asked for (nor an oomd preference).
    pub fn is_empty(&self) -> bool {
        self.values().is_empty() && self.oomd.is_none()
    }

    /// The `ManagedOOMPreference=` property of the oomd preference, for the systemd backend.
    pub fn oomd_property(&self) -> Option<(&'static str, Property)> {
        self.oomd
            .map(|p| ("ManagedOOMPreference", Property::Str(p.name())))
    }
}

/// What a module made now gets: `asked` (the flags over the policy, see
/// `policy::merge`) and, where `enabled` (the controllers in
/// `subc-modules/cgroup.subtree_control`) has `memory` and `asked` says nothing of
/// `memory.oom.group`, `memory.oom.group` 1, so that an OOM kill takes the module's whole tree
/// and nothing else. Without the memory controller nothing is added: nothing is written for it
/// and nothing can fail for it. `--no-oom-group` or the policy's `oom_group = false` is
/// `Some(false)` in `asked` and is kept. Applied once, when the module is made
/// (`Root::create_module`); a module that exists keeps what it has.
pub fn creation_limits(enabled: &[String], asked: &Limits) -> Limits {
    let mut limits = asked.clone();
    // Mutation: no default; a module made without the flag keeps the kernel's 0.
    if limits.oom_group.is_none()
        && enabled.iter().any(|c| c == "memory")
        && !mutation::active(Control::NoOomGroupDefault)
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
        if enabled.iter().any(|c| c == controller) || mutation::active(Control::LimitsUnchecked) {
            ok.push((file, value));
            continue;
        }
        let reason = format!(
            "the {controller} controller is not enabled for the modules in {}",
            root.display()
        );
        if !best_effort {
            let fix = if crate::cgroup::mount::controller_on_v1(controller) {
                format!(
                    "this host's cgroup v1 holds the {controller} controller (a hybrid host), so no \
                     cgroup2 directory can have it: boot with systemd.unified_cgroup_hierarchy=1, \
                     or pass --best-effort to apply the other limits"
                )
            } else {
                format!(
                    "delegate it to the service (add {controller} to Delegate= in the unit) and run \
                     `ck-cgroup init`; or pass --best-effort to apply the other limits"
                )
            };
            return Err(Error::bad_input(format!(
                "{file} needs the {controller} controller, which is not enabled for the modules in {}",
                root.display()
            ))
            .with_hint(fix)
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
mod tests;
