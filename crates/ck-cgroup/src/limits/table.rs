//! The table: one [`LimitSpec`] row per limit, and what its rows share (how a value is written,
//! compared, and given to systemd).

use super::{
    Limit, LimitSpec, Limits, Property, Unit, Value, parse_bool, parse_count, parse_cpu_max,
    parse_cpus, parse_io_max, parse_size, parse_weight,
};
use crate::error::Result;

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
pub(super) fn infinity(l: Limit) -> u64 {
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
        value_name: "SIZE",
        help: "memory.high: throttle and reclaim above SIZE (K, M, G, T suffixes, or max)",
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
        value_name: "SIZE",
        help: "memory.max: the module is OOM-killed above SIZE",
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
        value_name: "SIZE",
        help: "memory.swap.max",
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
        value_name: "SIZE",
        help: "memory.low: reclaim spares the module's memory below SIZE while it can (best-effort protection; systemd: MemoryLow=)",
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
        value_name: "SIZE",
        help: "memory.min: the module's memory below SIZE is never reclaimed (hard protection; systemd: MemoryMin=)",
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
        value_name: "N",
        help: "pids.max: at most N processes and threads",
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
        value_name: "N",
        help: "cpu.weight, 1 to 10000 (default 100)",
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
        value_name: "QUOTA[/PERIOD]",
        help: "cpu.max: at most QUOTA microseconds of CPU time in each PERIOD (default 100000, 1000 to 1000000): 50000 is half a CPU, 200000 two CPUs; or max. systemd: CPUQuota= (QUOTA/PERIOD in percent) and CPUQuotaPeriodSec=",
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
        value_name: "LIST",
        help: "cpuset.cpus: the CPUs the module may run on, as 0-3,6 (needs the cpuset controller; systemd: AllowedCPUs=)",
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
        value_name: "N",
        help: "io.weight (`default N`), 1 to 10000 (default 100); the kernel has the file only with an IO scheduler or io.cost that weighs (systemd: IOWeight=)",
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
        value_name: "DEV:KEY=VALUE,...",
        help: "io.max on one block device, DEV as MAJ:MIN or a path (/dev/sda): rbps and wbps in bytes per second (K, M, G, T suffixes), riops and wiops in operations per second, each a number or max; e.g. 8:0:rbps=10M,wiops=100 (systemd: IOReadBandwidthMax=, IOWriteBandwidthMax=, IOReadIOPSMax=, IOWriteIOPSMax=)",
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
        value_name: "",
        help: "memory.oom.group 1: an OOM kill takes the module's whole tree (the default for a module made now where the memory controller is enabled)",
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
