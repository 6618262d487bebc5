//! Renderers of `status`: the table (the Prometheus text exposition format is in `prometheus`).

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::{Figure, ModuleStatus, PROC_RSS_SOURCE};

/// `1.5G`, `12.0M`, `512K`, `100B`; `-` for unknown.
pub fn size(v: Option<u64>) -> String {
    let Some(v) = v else {
        return "-".into();
    };
    const UNITS: [(&str, u64); 4] = [
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    for (u, n) in UNITS {
        if v >= n {
            return format!("{:.1}{u}", v as f64 / n as f64);
        }
    }
    format!("{v}B")
}

fn limit_size(l: &Figure<Limit>) -> String {
    match l.value {
        Some(Limit::Max) => "max".into(),
        Some(Limit::Value(v)) => size(Some(v)),
        None => "-".into(),
    }
}

fn limit_num(l: &Figure<Limit>) -> String {
    match l.value {
        Some(Limit::Max) => "max".into(),
        Some(Limit::Value(v)) => v.to_string(),
        None => "-".into(),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// The human table, with a note under it for figures that came from a fallback.
pub fn table(rows: &[ModuleStatus]) -> String {
    let mut t = vec![
        [
            "NAME", "POP", "PROCS", "MEM", "PEAK", "SWAP", "HIGH", "MAX", "OOM_KILL", "PIDS",
            "PIDS_MAX", "CPU_S", "PSI_MEM",
        ]
        .map(String::from),
    ];
    let mut fallback = false;
    for m in rows {
        let proc_mem = m.memory_current.source == PROC_RSS_SOURCE;
        fallback |= proc_mem;
        let mark = |s: String| {
            if proc_mem && s != "-" {
                format!("{s}*")
            } else {
                s
            }
        };
        t.push([
            m.name.clone(),
            match m.populated.value {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => "-".into(),
            },
            opt(m.procs.value),
            mark(size(m.memory_current.value)),
            size(m.memory_peak.value),
            mark(size(m.memory_swap_current.value)),
            limit_size(&m.limits.memory_high),
            limit_size(&m.limits.memory_max),
            opt(m.memory_events.value.and_then(|e| e.oom_kill)),
            opt(m.pids_current.value),
            limit_num(&m.limits.pids_max),
            m.cpu_usage_usec
                .value
                .map_or("-".into(), |u| format!("{:.1}", u as f64 / 1e6)),
            m.memory_pressure_avg10
                .value
                .map_or("-".into(), |v| format!("{v:.2}")),
        ]);
    }
    let mut s = super::output::table(&t);
    if fallback {
        s += "* summed from VmRSS/VmSwap in /proc/<pid>/status: the memory controller is not enabled for the modules\n";
    }
    let frozen: Vec<&str> = rows
        .iter()
        .filter(|m| m.frozen.value == Some(true))
        .map(|m| m.name.as_str())
        .collect();
    if !frozen.is_empty() {
        s += &format!(
            "frozen (cgroup.events frozen 1, its processes do not run): {}; `kill` stops it, `echo 0 > <module>/cgroup.freeze` thaws it\n",
            frozen.join(", ")
        );
    }
    if t.iter().skip(1).any(|r| r.iter().any(|c| c == "-")) {
        s +=
            "- could not be read (the controller is not enabled, or the kernel has no such file)\n";
    }
    s
}
