//! Renderers of `status`: the table and the Prometheus text exposition format.

use std::fmt::Write as _;

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

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The Prometheus text exposition format. Unknown figures are left out, never written as 0.
pub fn prometheus(rows: &[ModuleStatus]) -> String {
    let mut s = String::new();
    let metrics = figures(rows).into_iter().chain(counted(rows));
    for Metric(name, kind, help, values) in metrics {
        if values.is_empty() {
            continue;
        }
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} {kind}");
        for (l, v) in values {
            let _ = writeln!(s, "{name}{{{l}}} {v}");
        }
    }
    s.replace("inf\n", "+Inf\n")
}

/// One metric: name, type, help, and its samples (labels, value); none: left out.
struct Metric(&'static str, &'static str, &'static str, Vec<(String, f64)>);

fn labels(m: &ModuleStatus) -> String {
    format!(
        "name=\"{}\",module=\"{}\",layout=\"{}\"",
        escape(&m.name),
        escape(m.module.as_deref().unwrap_or("")),
        m.layout.name()
    )
}

/// `f` of every module that has it, labelled.
fn each(rows: &[ModuleStatus], f: impl Fn(&ModuleStatus) -> Option<f64>) -> Vec<(String, f64)> {
    rows.iter()
        .filter_map(|m| f(m).map(|v| (labels(m), v)))
        .collect()
}

/// The metrics of one figure per module: populated, processes, memory.
fn figures(rows: &[ModuleStatus]) -> Vec<Metric> {
    let from_kernel = |m: &ModuleStatus| m.memory_current.source != PROC_RSS_SOURCE;
    let kernel = |f: &Figure<u64>, m: &ModuleStatus| f.value.filter(|_| from_kernel(m));
    let proc = |f: &Figure<u64>, m: &ModuleStatus| f.value.filter(|_| !from_kernel(m));
    vec![
        Metric(
            "ck_cgroup_module_populated",
            "gauge",
            "1 when a process is in the module or below (cgroup.events).",
            each(rows, |m| m.populated.value.map(|b| b as u8 as f64)),
        ),
        Metric(
            "ck_cgroup_module_processes",
            "gauge",
            "Processes in the module and its sub-cgroups (cgroup.procs).",
            each(rows, |m| m.procs.value.map(|v| v as f64)),
        ),
        Metric(
            "ck_cgroup_memory_current_bytes",
            "gauge",
            "memory.current of the module.",
            each(rows, |m| kernel(&m.memory_current, m).map(|v| v as f64)),
        ),
        Metric(
            "ck_cgroup_memory_rss_proc_bytes",
            "gauge",
            "Sum of VmRSS of the module's processes (/proc; the memory controller is not enabled).",
            each(rows, |m| proc(&m.memory_current, m).map(|v| v as f64)),
        ),
        Metric(
            "ck_cgroup_memory_peak_bytes",
            "gauge",
            "memory.peak of the module.",
            each(rows, |m| m.memory_peak.value.map(|v| v as f64)),
        ),
        Metric(
            "ck_cgroup_memory_swap_current_bytes",
            "gauge",
            "memory.swap.current of the module.",
            each(rows, |m| {
                kernel(&m.memory_swap_current, m).map(|v| v as f64)
            }),
        ),
        Metric(
            "ck_cgroup_memory_swap_proc_bytes",
            "gauge",
            "Sum of VmSwap of the module's processes (/proc; the memory controller is not enabled).",
            each(rows, |m| proc(&m.memory_swap_current, m).map(|v| v as f64)),
        ),
    ]
}

/// The metrics after those: memory events, pids, cpu, pressure, limits.
fn counted(rows: &[ModuleStatus]) -> Vec<Metric> {
    let mut events = Vec::new();
    let mut psi = Vec::new();
    for m in rows {
        if let Some(e) = m.memory_events.value {
            for (k, v) in [
                ("low", e.low),
                ("high", e.high),
                ("max", e.max),
                ("oom", e.oom),
                ("oom_kill", e.oom_kill),
                ("oom_group_kill", e.oom_group_kill),
            ] {
                if let Some(v) = v {
                    events.push((format!("{},event=\"{k}\"", labels(m)), v as f64));
                }
            }
        }
        for (r, f) in [
            ("memory", &m.memory_pressure_avg10),
            ("cpu", &m.cpu_pressure_avg10),
            ("io", &m.io_pressure_avg10),
        ] {
            if let Some(v) = f.value {
                psi.push((format!("{},resource=\"{r}\"", labels(m)), v));
            }
        }
    }
    vec![
        Metric(
            "ck_cgroup_memory_events_total",
            "counter",
            "memory.events counters of the module.",
            events,
        ),
        Metric(
            "ck_cgroup_pids_current",
            "gauge",
            "pids.current of the module.",
            each(rows, |m| m.pids_current.value.map(|v| v as f64)),
        ),
        Metric(
            "ck_cgroup_cpu_usage_seconds_total",
            "counter",
            "cpu.stat usage_usec of the module, in seconds.",
            each(rows, |m| m.cpu_usage_usec.value.map(|v| v as f64 / 1e6)),
        ),
        Metric(
            "ck_cgroup_pressure_some_avg10",
            "gauge",
            "PSI some avg10 of the module, percent.",
            psi,
        ),
        Metric(
            "ck_cgroup_limit",
            "gauge",
            "A limit in force on the module (the file's value; max is +Inf).",
            limits(rows),
        ),
    ]
}

/// The limits in force, one sample per file (max is +Inf).
fn limits(rows: &[ModuleStatus]) -> Vec<(String, f64)> {
    let mut limits = Vec::new();
    for m in rows {
        for f in m.limits.figures() {
            if let Some(v) = f.value {
                let v = match v {
                    Limit::Max => f64::INFINITY,
                    Limit::Value(v) => v as f64,
                };
                limits.push((format!("{},file=\"{}\"", labels(m), f.source), v));
            }
        }
    }
    limits
}
