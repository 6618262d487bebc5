//! The Prometheus text exposition format of `status`.

use std::fmt::Write as _;

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::{Figure, ModuleStatus, PROC_RSS_SOURCE};

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
