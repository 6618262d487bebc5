//! The Prometheus text exposition format of `status`, and the file `status --output` replaces
//! whole (for the node exporter's textfile collector, which may read it at any moment).
//!
//! One series per module, keyed by stable labels: `module` (the module id, decoded for the
//! daemon's layout: never its directory name, which carries the launch number), `layout`, and
//! `slot` (`swap` for the daemon's alternate slot, else `main`). Where several directories share
//! those labels (a launch still being torn down beside the next one) the series is the newest
//! launch that holds a process (an empty directory never hides a populated one: a module may
//! make look-alikes), else the newest, and `ck_cgroup_module_directories` counts them; its
//! counters are the newest launch that ran (so they never go back to an older launch's). The
//! modules' parent directories' counters (hierarchical: they outlive the modules) are series
//! labelled `layout` only. At most
//! [`MAX_SERIES`] modules are written, ours (`ck`) first, then those that hold a process;
//! `ck_cgroup_modules_left_out` counts the rest (module-chosen ids must not grow the series
//! without bound). One metric per limit, named after its
//! file with its unit, driven by the limits table; the old `ck_cgroup_limit` is kept, with its old
//! labels, for one release, marked deprecated.

use std::fmt::{self, Write as _};

use ck_cgroup::Layout;
use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::id::decode_daemon_name;
use ck_cgroup::limits::{LIMITS, Unit};
use ck_cgroup::telemetry::{Figure, ModuleStatus, PROC_RSS_SOURCE, ParentStatus};

use crate::cli::mutation::{self, Control};

/// A label value in the exposition format: text as people see it (a name's shown form, or
/// `id::shown` of other text: one-to-one, no control character), then `\`, `"` and newline
/// escaped as the format wants, so that two names are never one label value.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample's value: an integer as it was read, a float, or `+Inf` (a limit of `max`).
#[derive(Clone, Copy)]
enum Num {
    Int(u64),
    Float(f64),
    Inf,
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Num::Int(v) => write!(f, "{v}"),
            Num::Float(v) if v.is_nan() => f.write_str("NaN"),
            Num::Float(v) if v == f64::INFINITY => f.write_str("+Inf"),
            Num::Float(v) if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            Num::Float(v) => write!(f, "{v}"),
            Num::Inf => f.write_str("+Inf"),
        }
    }
}

fn limit(l: Limit) -> Num {
    match l {
        Limit::Max => Num::Inf,
        Limit::Value(v) => Num::Int(v),
    }
}

/// One metric family: name, type, help, and its samples (labels, value); none: left out.
struct Metric(String, &'static str, String, Vec<(String, Num)>);

impl Metric {
    fn new(name: &str, kind: &'static str, help: &str, samples: Vec<(String, Num)>) -> Metric {
        Metric(name.into(), kind, help.into(), samples)
    }
}

/// The Prometheus text exposition format of the modules' figures and their parents' counters.
/// Unknown figures are left out, never written as 0.
pub fn prometheus(rows: &[ModuleStatus], parents: &[ParentStatus]) -> String {
    let (series, left_out) = series(rows);
    let mut s = String::new();
    let metrics = figures(&series)
        .into_iter()
        .chain(gpu(&series))
        .chain(cold(&series))
        .chain(counted(&series))
        .chain(parent_metrics(parents))
        .chain(limit_metrics(&series))
        .chain([
            deprecated_limit(rows),
            Metric::new(
                "ck_cgroup_modules_left_out",
                "gauge",
                &format!(
                    "Modules not written as series: past the first {MAX_SERIES} (ours first, then those that hold a process)."
                ),
                vec![(String::new(), Num::Int(left_out as u64))],
            ),
        ]);
    for Metric(name, kind, help, values) in metrics {
        if values.is_empty() {
            continue;
        }
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} {kind}");
        for (l, v) in values {
            if l.is_empty() {
                let _ = writeln!(s, "{name} {v}");
            } else {
                let _ = writeln!(s, "{name}{{{l}}} {v}");
            }
        }
    }
    s
}

/// A module as the series see it: the directory of its labels its gauges come from (the newest
/// launch that holds a process), the one its counters come from (the newest launch that ran),
/// and how many there are.
struct Series<'a> {
    m: &'a ModuleStatus,
    counters: &'a ModuleStatus,
    labels: String,
    directories: usize,
}

/// What tells one module's series from another's: `(module, layout, slot)`; and the launch
/// number (the daemon's layout), which picks the newest directory of those.
fn identity(m: &ModuleStatus) -> ((String, &'static str, &'static str), Option<String>) {
    let layout = m.layout.name();
    if m.layout == Layout::Daemon
        && let Some(d) = decode_daemon_name(&m.name)
    {
        let slot = if d.swap { "swap" } else { "main" };
        return ((d.module.to_string(), layout, slot), Some(d.launch));
    }
    // Not the daemon's encoding (or not its layout): the id, else the name as found, which
    // carries no launch number that we know of.
    let module = m.module.as_ref().unwrap_or(&m.name).to_string();
    ((module, layout, "main"), None)
}

/// A launch number for comparison: its digits without leading zeros, shorter is older.
fn launch_order(launch: &Option<String>) -> (usize, String) {
    let digits = launch.as_deref().unwrap_or("").trim_start_matches('0');
    (digits.len(), digits.to_string())
}

/// The most modules written as series; the rest are counted in `ck_cgroup_modules_left_out`.
pub const MAX_SERIES: usize = 2000;

/// Whether a directory holds a process (unknown counts as not).
fn holds(m: &ModuleStatus) -> bool {
    m.populated.value == Some(true)
}

/// Whether a directory ever ran something: it holds a process, or its CPU counter moved (an
/// empty look-alike a module made never did).
fn ran(m: &ModuleStatus) -> bool {
    holds(m) || m.cpu_usage_usec.value.is_some_and(|u| u > 0)
}

/// The series of `rows` (at most [`MAX_SERIES`]) and how many modules were left out.
fn series(rows: &[ModuleStatus]) -> (Vec<Series<'_>>, usize) {
    type Key = (String, &'static str, &'static str);
    type Launches = (Option<String>, Option<String>);
    let mut out: Vec<(Key, Launches, Series<'_>)> = Vec::new();
    let mut index: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
    for m in rows {
        let (key, launch) = identity(m);
        if let Some(&i) = index.get(&key) {
            let (_, (newest, counted), s) = &mut out[i];
            s.directories += 1;
            // Mutation: the newest launch is the series, empty or not.
            let by_holding = !mutation::active(Control::SeriesByLaunchOnly);
            let rank =
                |m: &ModuleStatus, l: &Option<String>| (by_holding && holds(m), launch_order(l));
            // The counters: the newest launch that ran, held or not, so that a counter moves
            // forward to a new launch and never back to an older launch's (when the newest
            // empties beside an older one still being torn down).
            let by_run = |m: &ModuleStatus, l: &Option<String>| (ran(m), launch_order(l));
            if by_run(m, &launch) > by_run(s.counters, counted) {
                *counted = launch.clone();
                s.counters = m;
            }
            if rank(m, &launch) > rank(s.m, newest) {
                *newest = launch;
                s.m = m;
            }
            continue;
        }
        index.insert(key.clone(), out.len());
        let labels = format!(
            "module=\"{}\",layout=\"{}\",slot=\"{}\"",
            escape(&key.0),
            key.1,
            key.2
        );
        out.push((
            key,
            (launch.clone(), launch),
            Series {
                m,
                counters: m,
                labels,
                directories: 1,
            },
        ));
    }
    // Mutation: the counters come from the gauges' directory (an older launch's when the
    // newest empties beside it).
    if mutation::active(Control::CountersFollowPopulated) {
        for (_, _, s) in &mut out {
            s.counters = s.m;
        }
    }
    // Ours first, then those that hold a process, each in the order found (by name).
    out.sort_by_key(|(k, _, s)| (k.1 != Layout::Ck.name(), !holds(s.m)));
    let left_out = out.len().saturating_sub(MAX_SERIES);
    out.truncate(MAX_SERIES);
    (out.into_iter().map(|(_, _, s)| s).collect(), left_out)
}

/// `f` of every series that has it, labelled.
fn each(series: &[Series<'_>], f: impl Fn(&ModuleStatus) -> Option<Num>) -> Vec<(String, Num)> {
    series
        .iter()
        .filter_map(|s| f(s.m).map(|v| (s.labels.clone(), v)))
        .collect()
}

/// `f` of the counters' directory of every series that has it, labelled.
fn each_counter(
    series: &[Series<'_>],
    f: impl Fn(&ModuleStatus) -> Option<Num>,
) -> Vec<(String, Num)> {
    series
        .iter()
        .filter_map(|s| f(s.counters).map(|v| (s.labels.clone(), v)))
        .collect()
}

/// The metrics of one figure per module: populated, processes, memory.
fn figures(series: &[Series<'_>]) -> Vec<Metric> {
    let from_kernel = |m: &ModuleStatus| m.memory_current.source != PROC_RSS_SOURCE;
    let kernel = |f: &Figure<u64>, m: &ModuleStatus| f.value.filter(|_| from_kernel(m));
    let proc = |f: &Figure<u64>, m: &ModuleStatus| f.value.filter(|_| !from_kernel(m));
    vec![
        Metric::new(
            "ck_cgroup_module_populated",
            "gauge",
            "1 when a process is in the module or below (cgroup.events).",
            each(series, |m| m.populated.value.map(|b| Num::Int(b.into()))),
        ),
        Metric::new(
            "ck_cgroup_module_processes",
            "gauge",
            "Processes in the module and its sub-cgroups (cgroup.procs).",
            each(series, |m| m.procs.value.map(|v| Num::Int(v as u64))),
        ),
        Metric::new(
            "ck_cgroup_memory_current_bytes",
            "gauge",
            "memory.current of the module.",
            each(series, |m| kernel(&m.memory_current, m).map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_rss_proc_bytes",
            "gauge",
            "Sum of VmRSS of the module's processes (/proc; the memory controller is not enabled).",
            each(series, |m| proc(&m.memory_current, m).map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_peak_bytes",
            "gauge",
            "memory.peak of the module.",
            each(series, |m| m.memory_peak.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_swap_current_bytes",
            "gauge",
            "memory.swap.current of the module.",
            each(series, |m| kernel(&m.memory_swap_current, m).map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_anon_bytes",
            "gauge",
            "memory.stat anon of the module: anonymous memory (what swap or an OOM kill frees).",
            each(series, |m| m.memory_anon.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_file_bytes",
            "gauge",
            "memory.stat file of the module: page cache the kernel can reclaim.",
            each(series, |m| m.memory_file.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_shmem_bytes",
            "gauge",
            "memory.stat shmem of the module: shared memory and tmpfs pages, which a kill does not free.",
            each(series, |m| m.memory_shmem.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_zswapped_bytes",
            "gauge",
            "memory.stat zswapped of the module: anonymous memory in zswap, uncompressed size (in ck_cgroup_memory_swap_current_bytes too).",
            each(series, |m| m.memory_zswapped.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_zswap_bytes",
            "gauge",
            "memory.stat zswap of the module: what its zswapped memory takes compressed (in ck_cgroup_memory_current_bytes).",
            each(series, |m| m.memory_zswap.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_memory_swap_proc_bytes",
            "gauge",
            "Sum of VmSwap of the module's processes (/proc; the memory controller is not enabled).",
            each(series, |m| proc(&m.memory_swap_current, m).map(Num::Int)),
        ),
    ]
}

/// The device-memory metrics: each module's total, and per device, where it is known (a module
/// whose figure is unknown has neither: never 0).
fn gpu(series: &[Series<'_>]) -> Vec<Metric> {
    let mut devices = Vec::new();
    for s in series {
        let g = &s.m.gpu_memory;
        if g.value.is_none() {
            continue;
        }
        for d in &g.devices {
            devices.push((
                format!(
                    "{},device=\"{}\",driver=\"{}\"",
                    s.labels,
                    escape(&ck_cgroup::id::shown(&d.device)),
                    escape(&ck_cgroup::id::shown(&d.driver))
                ),
                Num::Int(d.bytes),
            ));
        }
    }
    vec![
        Metric::new(
            "ck_cgroup_gpu_memory_bytes",
            "gauge",
            "Device (GPU) memory the module's processes hold, every device together (dmem.current, DRM fdinfo or nvidia-smi).",
            each(series, |m| m.gpu_memory.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_gpu_device_memory_bytes",
            "gauge",
            "Device (GPU) memory the module's processes hold on one device (its PCI address).",
            devices,
        ),
    ]
}

/// The cold-memory metrics (the multi-gen LRU's, `status --cold-window`): each module's
/// anonymous and file memory not touched within the window, and the window, where it is known
/// (a module whose figure is unknown has none: never 0).
fn cold(series: &[Series<'_>]) -> Vec<Metric> {
    let mut bytes = Vec::new();
    let mut window = Vec::new();
    for s in series {
        let c = &s.m.cold_memory;
        let Some(anon) = c.value else { continue };
        bytes.push((format!("{},type=\"anon\"", s.labels), Num::Int(anon)));
        if let Some(file) = c.file {
            bytes.push((format!("{},type=\"file\"", s.labels), Num::Int(file)));
        }
        window.push((s.labels.clone(), Num::Float(c.window_ms as f64 / 1e3)));
    }
    vec![
        Metric::new(
            "ck_cgroup_memory_cold_bytes",
            "gauge",
            "Memory of the module not touched within ck_cgroup_memory_cold_window_seconds (the multi-gen LRU's old generations, /sys/kernel/debug/lru_gen), anonymous (type=\"anon\": what a hoard grows in) or file.",
            bytes,
        ),
        Metric::new(
            "ck_cgroup_memory_cold_window_seconds",
            "gauge",
            "The window of ck_cgroup_memory_cold_bytes: memory not touched for this long is cold.",
            window,
        ),
    ]
}

/// The metrics after those: memory events, pids, cpu, pressure, directories.
fn counted(series: &[Series<'_>]) -> Vec<Metric> {
    let mut events = Vec::new();
    let mut psi = Vec::new();
    let mut stalled = Vec::new();
    for s in series {
        let (m, c) = (s.m, s.counters);
        if let Some(e) = c.memory_events.value {
            for (k, v) in [
                ("low", e.low),
                ("high", e.high),
                ("max", e.max),
                ("oom", e.oom),
                ("oom_kill", e.oom_kill),
                ("oom_group_kill", e.oom_group_kill),
            ] {
                if let Some(v) = v {
                    events.push((format!("{},event=\"{k}\"", s.labels), Num::Int(v)));
                }
            }
        }
        for (r, f) in [
            ("memory", &m.memory_pressure_avg10),
            ("cpu", &m.cpu_pressure_avg10),
            ("io", &m.io_pressure_avg10),
        ] {
            if let Some(v) = f.value {
                psi.push((format!("{},resource=\"{r}\"", s.labels), Num::Float(v)));
            }
        }
        for (r, f) in [
            ("memory", &c.memory_pressure_stalled_usec),
            ("cpu", &c.cpu_pressure_stalled_usec),
            ("io", &c.io_pressure_stalled_usec),
        ] {
            let Some(t) = f.value else { continue };
            for (kind, usec) in [("some", t.some), ("full", t.full)] {
                if let Some(u) = usec {
                    stalled.push((
                        format!("{},resource=\"{r}\",kind=\"{kind}\"", s.labels),
                        Num::Float(u as f64 / 1e6),
                    ));
                }
            }
        }
    }
    vec![
        Metric::new(
            "ck_cgroup_memory_events_total",
            "counter",
            "memory.events counters of the module.",
            events,
        ),
        Metric::new(
            "ck_cgroup_oomd_kills_total",
            "counter",
            "systemd-oomd's kills of the module (user.oomd_ooms xattr; the kernel's are ck_cgroup_memory_events_total{event=\"oom_kill\"}).",
            each_counter(series, |m| m.oomd_ooms.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_oomd_killed_processes_total",
            "counter",
            "Processes systemd-oomd killed in the module (user.oomd_kill xattr).",
            each_counter(series, |m| m.oomd_kill.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_pids_current",
            "gauge",
            "pids.current of the module.",
            each(series, |m| m.pids_current.value.map(Num::Int)),
        ),
        Metric::new(
            "ck_cgroup_cpu_usage_seconds_total",
            "counter",
            "cpu.stat usage_usec of the module, in seconds.",
            each_counter(series, |m| {
                m.cpu_usage_usec.value.map(|u| Num::Float(u as f64 / 1e6))
            }),
        ),
        Metric::new(
            "ck_cgroup_pressure_some_avg10",
            "gauge",
            "PSI some avg10 of the module, percent (a 10-second average; rate(ck_cgroup_pressure_stalled_seconds_total) covers every second).",
            psi,
        ),
        Metric::new(
            "ck_cgroup_pressure_stalled_seconds_total",
            "counter",
            "PSI total of the module, in seconds: time in which some (kind=\"some\") or all non-idle (kind=\"full\") tasks stalled on the resource.",
            stalled,
        ),
        Metric::new(
            "ck_cgroup_module_directories",
            "gauge",
            "Directories of the module with these labels; above 1, an older launch is still there (its figures are not in the other series, the newest launch's are).",
            series
                .iter()
                .map(|s| (s.labels.clone(), Num::Int(s.directories as u64)))
                .collect(),
        ),
    ]
}

/// The counters of each layout's parent directory (`subc-modules/`, `daemon/subc-modules/`),
/// labelled `layout` only: its `memory.events` counts the events of every module below it, so a
/// kill of a module removed before the next scrape still raises them.
fn parent_metrics(parents: &[ParentStatus]) -> Vec<Metric> {
    let mut events = Vec::new();
    let mut ooms = Vec::new();
    let mut killed = Vec::new();
    for p in parents {
        let l = format!("layout=\"{}\"", p.layout.name());
        if let Some(e) = p.memory_events.value {
            for (k, v) in [
                ("low", e.low),
                ("high", e.high),
                ("max", e.max),
                ("oom", e.oom),
                ("oom_kill", e.oom_kill),
                ("oom_group_kill", e.oom_group_kill),
            ] {
                if let Some(v) = v {
                    events.push((format!("{l},event=\"{k}\""), Num::Int(v)));
                }
            }
        }
        if let Some(v) = p.oomd_ooms.value {
            ooms.push((l.clone(), Num::Int(v)));
        }
        if let Some(v) = p.oomd_kill.value {
            killed.push((l, Num::Int(v)));
        }
    }
    vec![
        Metric::new(
            "ck_cgroup_modules_memory_events_total",
            "counter",
            "memory.events counters of the modules' parent directory (subc-modules/, daemon/subc-modules/): every module below it, removed ones too.",
            events,
        ),
        Metric::new(
            "ck_cgroup_modules_oomd_kills_total",
            "counter",
            "systemd-oomd's kills of the modules' parent directory as a whole (user.oomd_ooms xattr on it).",
            ooms,
        ),
        Metric::new(
            "ck_cgroup_modules_oomd_killed_processes_total",
            "counter",
            "Processes systemd-oomd killed in a kill of the modules' parent directory (user.oomd_kill xattr on it).",
            killed,
        ),
    ]
}

/// The metric of a limit of `unit`: its name's suffix (`_bytes`), or `None` for a limit that is
/// not one number (a CPU list, per-device limits, a quota and its period), which has no metric.
/// Counts, weights and booleans are dimensionless: no suffix (`_count` is a histogram's).
fn unit_suffix(unit: Unit) -> Option<&'static str> {
    match unit {
        Unit::Bytes => Some("_bytes"),
        Unit::Count | Unit::Weight | Unit::Bool => Some(""),
        _ => None,
    }
}

/// The name of the metric of the limit in `file` of `unit`: `ck_cgroup_memory_max_bytes`.
pub fn limit_metric_name(file: &str, unit: Unit) -> Option<String> {
    unit_suffix(unit).map(|u| format!("ck_cgroup_{}{u}", file.replace('.', "_")))
}

/// One metric per limit `status` reads (each row of the limits table with `status`), named after
/// its file with its unit; `max` is `+Inf`; a file that could not be read is left out.
fn limit_metrics(series: &[Series<'_>]) -> Vec<Metric> {
    let mut out = Vec::new();
    for spec in LIMITS.iter().filter(|s| s.status) {
        let Some(name) = limit_metric_name(spec.file, spec.unit) else {
            continue;
        };
        let max = match spec.unit {
            Unit::Bytes | Unit::Count => "; max is +Inf",
            _ => "",
        };
        let help = format!(
            "{} of the module ({}{max}; left out where it could not be read).",
            spec.file,
            spec.unit.name()
        );
        let samples = each(series, |m| {
            m.limits
                .figures()
                .into_iter()
                .find(|f| f.source == spec.file)
                .and_then(|f| f.value)
                .map(limit)
        });
        out.push(Metric(name, "gauge", help, samples));
    }
    out
}

/// The old `ck_cgroup_limit`, one sample per directory and file with its old labels (`name`,
/// the directory name, changes with every launch of a daemon-layout module). Deprecated: kept
/// for one release beside the per-limit metrics.
fn deprecated_limit(rows: &[ModuleStatus]) -> Metric {
    let mut limits = Vec::new();
    for m in rows.iter().take(MAX_SERIES) {
        let labels = format!(
            "name=\"{}\",module=\"{}\",layout=\"{}\"",
            escape(&m.name.to_string()),
            escape(
                &m.module
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            ),
            m.layout.name()
        );
        for f in m.limits.figures() {
            if let Some(v) = f.value {
                limits.push((format!("{labels},file=\"{}\"", f.source), limit(v)));
            }
        }
    }
    Metric::new(
        "ck_cgroup_limit",
        "gauge",
        "DEPRECATED, to be removed in the next release: use the per-limit metrics (ck_cgroup_memory_max_bytes, ck_cgroup_pids_max, ...), labelled by module. A limit in force on the module (the file's value; max is +Inf).",
        limits,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(
        name: &str,
        module: Option<&str>,
        layout: &str,
        limits: serde_json::Value,
    ) -> ModuleStatus {
        let layout: Layout = serde_json::from_value(layout.into()).expect("a layout");
        let n = |s: &str| ck_cgroup::DirName::new(s).expect("a name");
        let unknown = ModuleStatus::unknown(n(name), module.map(n), layout, name);
        let mut m = serde_json::to_value(unknown).expect("a ModuleStatus serialises");
        for (field, v) in [
            ("populated", true.into()),
            ("frozen", false.into()),
            ("procs", 1.into()),
            ("memory_current", 4096.into()),
            ("cpu_usage_usec", 1500000.into()),
            ("oomd_preference", "omit".into()),
            ("oomd_ooms", 2.into()),
            ("memory_zswapped", 8192.into()),
            (
                "memory_pressure_stalled_usec",
                serde_json::json!({"some": 1250000, "full": null}),
            ),
        ] {
            m[field]["value"] = v;
        }
        m["limits"] = limits;
        serde_json::from_value(m).expect("a ModuleStatus")
    }

    fn limits(
        high: serde_json::Value,
        max: serde_json::Value,
        pids: serde_json::Value,
    ) -> serde_json::Value {
        let fig = |v: serde_json::Value, s: &str| serde_json::json!({ "value": v, "source": s });
        serde_json::json!({
            "memory_high": fig(high, "memory.high"),
            "memory_max": fig(max, "memory.max"),
            "memory_swap_max": fig(serde_json::Value::Null, "memory.swap.max"),
            "pids_max": fig(pids, "pids.max"),
            "cpu_weight": fig(100.into(), "cpu.weight"),
            "memory_oom_group": fig(1.into(), "memory.oom.group"),
        })
    }

    #[test]
    fn each_limit_is_its_own_metric_with_its_unit_and_max_is_inf() {
        let rows = [module(
            "aft",
            Some("aft"),
            "ck",
            limits("max".into(), 1073741824u64.into(), 512.into()),
        )];
        let s = prometheus(&rows, &[]);
        let l = "{module=\"aft\",layout=\"ck\",slot=\"main\"}";
        for want in [
            format!("ck_cgroup_memory_high_bytes{l} +Inf\n"),
            format!("ck_cgroup_memory_max_bytes{l} 1073741824\n"),
            format!("ck_cgroup_pids_max{l} 512\n"),
            format!("ck_cgroup_cpu_weight{l} 100\n"),
            format!("ck_cgroup_memory_oom_group{l} 1\n"),
            "# TYPE ck_cgroup_memory_max_bytes gauge\n".to_string(),
            "ck_cgroup_limit{name=\"aft\",module=\"aft\",layout=\"ck\",file=\"memory.max\"} 1073741824\n".to_string(),
        ] {
            assert!(s.contains(&want), "{want:?} missing from:\n{s}");
        }
        // memory.swap.max could not be read: no series, neither here nor in the old metric.
        assert!(!s.contains("memory_swap_max"), "{s}");
        assert!(!s.contains("memory.swap.max"), "{s}");
        assert!(s.contains("# HELP ck_cgroup_limit DEPRECATED"), "{s}");
        assert!(s.contains("ck_cgroup_cpu_usage_seconds_total{module=\"aft\",layout=\"ck\",slot=\"main\"} 1.5\n"), "{s}");
    }

    /// The kernel's PSI `total` (microseconds) is a counter in seconds, per resource and kind;
    /// a kind the file has no line for has no sample, nor has a file that could not be read.
    #[test]
    fn cold_memory_is_a_series_per_type_with_its_window_and_none_where_unknown() {
        let none = || {
            limits(
                serde_json::Value::Null,
                serde_json::Value::Null,
                serde_json::Value::Null,
            )
        };
        let mut known = module("aft", Some("aft"), "ck", none());
        known.cold_memory = serde_json::from_value(serde_json::json!({
            "value": 3 << 20, "file": 0, "source": ck_cgroup::telemetry::cold::SOURCE,
            "window_ms": 600000, "untouched_ms": 600100, "aged_ms_ago": 1000,
            "aging_us": null, "reason": null
        }))
        .expect("a ColdMemory");
        let unknown = module("broca", Some("broca"), "ck", none());
        let s = prometheus(&[known, unknown], &[]);
        let l = "module=\"aft\",layout=\"ck\",slot=\"main\"";
        for line in [
            format!("ck_cgroup_memory_cold_bytes{{{l},type=\"anon\"}} 3145728\n"),
            format!("ck_cgroup_memory_cold_bytes{{{l},type=\"file\"}} 0\n"),
            format!("ck_cgroup_memory_cold_window_seconds{{{l}}} 600\n"),
        ] {
            assert!(s.contains(&line), "{line}{s}");
        }
        // Unknown: no series, never 0.
        assert!(
            !s.contains("module=\"broca\",layout=\"ck\",slot=\"main\",type="),
            "{s}"
        );
        assert_eq!(
            s.matches("ck_cgroup_memory_cold_window_seconds{").count(),
            1,
            "{s}"
        );
    }

    #[test]
    fn pressure_totals_are_counters_in_seconds() {
        let none = limits(
            serde_json::Value::Null,
            serde_json::Value::Null,
            serde_json::Value::Null,
        );
        let s = prometheus(&[module("aft", Some("aft"), "ck", none)], &[]);
        let l = "module=\"aft\",layout=\"ck\",slot=\"main\"";
        assert!(
            s.contains("# TYPE ck_cgroup_pressure_stalled_seconds_total counter\n"),
            "{s}"
        );
        assert!(
            s.contains(&format!(
                "ck_cgroup_pressure_stalled_seconds_total{{{l},resource=\"memory\",kind=\"some\"}} 1.25\n"
            )),
            "{s}"
        );
        assert_eq!(
            s.matches("ck_cgroup_pressure_stalled_seconds_total{")
                .count(),
            1,
            "{s}"
        );
    }

    #[test]
    fn every_status_limit_of_one_number_has_a_metric() {
        for spec in LIMITS.iter().filter(|s| s.status) {
            let name = limit_metric_name(spec.file, spec.unit)
                .unwrap_or_else(|| panic!("{} has no metric", spec.file));
            assert!(name.starts_with("ck_cgroup_"), "{name}");
            assert_eq!(name.ends_with("_bytes"), spec.unit == Unit::Bytes, "{name}");
            assert!(
                !name.ends_with("_count") && !name.ends_with("_total"),
                "{name}"
            );
        }
    }

    #[test]
    fn daemon_launches_are_one_series_the_newest() {
        let none = || {
            limits(
                serde_json::Value::Null,
                serde_json::Value::Null,
                serde_json::Value::Null,
            )
        };
        let rows = [
            module("m-mcp_5f3ax_5f9", Some("mcp:x"), "daemon", none()),
            module("m-mcp_5f3ax_5f10", Some("mcp:x"), "daemon", none()),
            module("m-mcp_5f3ax_5fswap_5f11", Some("mcp:x"), "daemon", none()),
        ];
        let mut rows = rows;
        rows[1].procs.value = Some(7);
        let s = prometheus(&rows, &[]);
        for l in s.lines().filter(|l| !l.starts_with("ck_cgroup_limit{")) {
            assert!(!l.contains("m-mcp"), "a directory name in {l:?}:\n{s}");
        }
        let main = "{module=\"mcp:x\",layout=\"daemon\",slot=\"main\"}";
        let swap = "{module=\"mcp:x\",layout=\"daemon\",slot=\"swap\"}";
        assert!(
            s.contains(&format!("ck_cgroup_module_directories{main} 2\n")),
            "{s}"
        );
        assert!(
            s.contains(&format!("ck_cgroup_module_directories{swap} 1\n")),
            "{s}"
        );
        // The newest launch (10, not 9) is the main slot's series.
        assert!(
            s.contains(&format!("ck_cgroup_module_processes{main} 7\n")),
            "{s}"
        );
        assert!(
            s.contains(&format!("ck_cgroup_module_processes{swap} 1\n")),
            "{s}"
        );
        assert_eq!(s.matches("ck_cgroup_module_processes{").count(), 2, "{s}");
    }

    /// A module made an empty `m-web_5f99999` beside the live launch `m-web_5f2`: the newest
    /// launch number was the series, so `module="web"` read populated 0. An empty directory
    /// never hides one that holds a process.
    #[test]
    fn an_empty_look_alike_does_not_replace_the_live_launch() {
        let none = || {
            limits(
                serde_json::Value::Null,
                serde_json::Value::Null,
                serde_json::Value::Null,
            )
        };
        let mut rows = [
            module("m-web_5f2", Some("web"), "daemon", none()),
            module("m-web_5f99999", Some("web"), "daemon", none()),
        ];
        rows[1].populated.value = Some(false);
        rows[1].procs.value = Some(0);
        let s = prometheus(&rows, &[]);
        let main = "{module=\"web\",layout=\"daemon\",slot=\"main\"}";
        assert!(
            s.contains(&format!("ck_cgroup_module_populated{main} 1\n")),
            "{s}"
        );
        assert!(
            s.contains(&format!("ck_cgroup_module_directories{main} 2\n")),
            "{s}"
        );
    }

    /// Two names, one label: the literal text `new\x09line` and a name holding a real tab (or
    /// the text `\xff\xfe` and those bytes; the kernel refuses a newline in a name) were one
    /// label set, so the file held duplicate
    /// series the node exporter serves once. The shown form doubles a backslash: each name is
    /// its own label value, in every layout and in the deprecated metric's `name` too.
    #[test]
    fn names_that_showed_alike_are_two_label_sets() {
        let none = || limits(serde_json::Value::Null, serde_json::Value::Null, 1.into());
        let named = |bytes: &[u8], layout: &str| {
            let n = ck_cgroup::DirName::from_bytes(bytes).expect("a name");
            let mut m = module("x", Some("x"), layout, none());
            m.name = n.clone();
            m.module = Some(n);
            m
        };
        let pairs: [(&[u8], &[u8]); 2] = [
            (b"new\\x09line", b"new\tline"),
            (b"\\xff\\xfe", b"\xff\xfe"),
        ];
        for (literal, raw) in pairs {
            for layout in ["ck", "systemd"] {
                let rows = [named(literal, layout), named(raw, layout)];
                let s = prometheus(&rows, &[]);
                let populated: Vec<&str> = s
                    .lines()
                    .filter(|l| l.starts_with("ck_cgroup_module_populated{"))
                    .collect();
                assert_eq!(populated.len(), 2, "{s}");
                assert_ne!(populated[0], populated[1], "{s}");
                let mut series: Vec<&str> = s.lines().filter(|l| !l.starts_with('#')).collect();
                let all = series.len();
                series.sort();
                series.dedup();
                assert_eq!(series.len(), all, "a series twice:\n{s}");
                // No raw control byte in the file.
                assert!(!s.contains("new\tline"), "{s}");
            }
        }
        // The two label values, as the exposition format writes them.
        let s = prometheus(
            &[named(b"new\\x09line", "ck"), named(b"new\tline", "ck")],
            &[],
        );
        assert!(
            s.contains("ck_cgroup_module_populated{module=\"new\\\\\\\\x09line\","),
            "{s}"
        );
        assert!(
            s.contains("ck_cgroup_module_populated{module=\"new\\\\x09line\","),
            "{s}"
        );
    }

    /// Swap is what a hoard moves to: memory.stat zswapped (in swap too) and zswap (charged to
    /// memory) are gauges; a kernel without the keys gives no series, never 0.
    #[test]
    fn zswap_figures_are_gauges_and_unknown_is_left_out() {
        let none = limits(
            serde_json::Value::Null,
            serde_json::Value::Null,
            serde_json::Value::Null,
        );
        let s = prometheus(&[module("aft", Some("aft"), "ck", none)], &[]);
        assert!(
            s.contains(
                "ck_cgroup_memory_zswapped_bytes{module=\"aft\",layout=\"ck\",slot=\"main\"} 8192\n"
            ),
            "{s}"
        );
        assert!(!s.contains("ck_cgroup_memory_zswap_bytes"), "{s}");
    }

    /// When the newest launch of a module (`m-web_5f10`, which ran 1 s of CPU) empties beside
    /// an older one still being torn down (`m-web_5f9`, 5 s and an OOM kill), the counters went
    /// back to the older launch's: the CPU counter jumped, and its OOM counter re-fired the alert.
    /// A counter of a module moves forward to a new launch, never back; an empty look-alike
    /// that never ran (`m-web_5f99999`) takes neither the gauges nor the counters.
    #[test]
    fn a_module_counter_never_goes_back_to_an_older_launch() {
        let none = || {
            limits(
                serde_json::Value::Null,
                serde_json::Value::Null,
                serde_json::Value::Null,
            )
        };
        let mut rows = [
            module("m-web_5f9", Some("web"), "daemon", none()),
            module("m-web_5f10", Some("web"), "daemon", none()),
            module("m-web_5f99999", Some("web"), "daemon", none()),
        ];
        rows[0].cpu_usage_usec.value = Some(5_000_000);
        rows[0].memory_events.value = serde_json::from_value(serde_json::json!({
            "low": 0, "high": 0, "max": 3, "oom": 1, "oom_kill": 1, "oom_group_kill": 1
        }))
        .ok();
        rows[1].populated.value = Some(false);
        rows[1].procs.value = Some(0);
        rows[1].cpu_usage_usec.value = Some(1_000_000);
        rows[1].memory_events.value = serde_json::from_value(serde_json::json!({
            "low": 0, "high": 0, "max": 0, "oom": 0, "oom_kill": 0, "oom_group_kill": 0
        }))
        .ok();
        rows[2].populated.value = Some(false);
        rows[2].procs.value = Some(0);
        rows[2].cpu_usage_usec.value = Some(0);
        rows[2].oomd_ooms.value = Some(0);
        let s = prometheus(&rows, &[]);
        let l = "module=\"web\",layout=\"daemon\",slot=\"main\"";
        for want in [
            // The gauges: the launch that holds a process.
            format!("ck_cgroup_module_populated{{{l}}} 1\n"),
            // The counters: the newest launch that ran, empty or not.
            format!("ck_cgroup_cpu_usage_seconds_total{{{l}}} 1\n"),
            format!("ck_cgroup_memory_events_total{{{l},event=\"oom_kill\"}} 0\n"),
            format!("ck_cgroup_oomd_kills_total{{{l}}} 2\n"),
            format!("ck_cgroup_module_directories{{{l}}} 3\n"),
        ] {
            assert!(s.contains(&want), "{want:?} missing from:\n{s}");
        }
    }

    /// A module OOM-killed and removed before the next scrape took its memory.events with it;
    /// the parent's hierarchical counters, which outlive it, are their own series, by layout.
    #[test]
    fn the_parents_counters_are_series_of_their_own() {
        let parent = |layout: &str, path: &str, kills: serde_json::Value| -> ParentStatus {
            serde_json::from_value(serde_json::json!({
                "layout": layout,
                "path": path,
                "memory_events": {"value": {"low": 0, "high": 2, "max": 4, "oom": 1,
                    "oom_kill": kills, "oom_group_kill": 1}, "source": "memory.events"},
                "oomd_ooms": {"value": 1, "source": "user.oomd_ooms xattr"},
                "oomd_kill": {"value": null, "source": "user.oomd_kill xattr"},
            }))
            .expect("a ParentStatus")
        };
        let s = prometheus(
            &[],
            &[
                parent("ck", "subc-modules", 3.into()),
                parent("daemon", "daemon/subc-modules", serde_json::Value::Null),
            ],
        );
        for want in [
            "# TYPE ck_cgroup_modules_memory_events_total counter\n",
            "ck_cgroup_modules_memory_events_total{layout=\"ck\",event=\"oom_kill\"} 3\n",
            "ck_cgroup_modules_memory_events_total{layout=\"ck\",event=\"oom_group_kill\"} 1\n",
            "ck_cgroup_modules_memory_events_total{layout=\"daemon\",event=\"oom_group_kill\"} 1\n",
            "ck_cgroup_modules_oomd_kills_total{layout=\"daemon\"} 1\n",
        ] {
            assert!(s.contains(want), "{want:?} missing from:\n{s}");
        }
        // Unknown is left out, never 0.
        assert!(!s.contains("layout=\"daemon\",event=\"oom_kill\""), "{s}");
        assert!(
            !s.contains("ck_cgroup_modules_oomd_killed_processes_total"),
            "{s}"
        );
    }

    /// Module-chosen ids do not grow the series without bound: past [`MAX_SERIES`], ours and
    /// the populated first, and the rest counted.
    #[test]
    fn the_series_are_capped_ours_first_and_the_rest_counted() {
        let none = || {
            limits(
                serde_json::Value::Null,
                serde_json::Value::Null,
                serde_json::Value::Null,
            )
        };
        let mut rows: Vec<ModuleStatus> = (0..MAX_SERIES + 5)
            .map(|i| {
                let mut m = module(
                    &format!("m-x{i:05}_5f1"),
                    Some(&format!("x{i:05}")),
                    "daemon",
                    none(),
                );
                m.populated.value = Some(false);
                m
            })
            .collect();
        rows.push(module("zzz-ours", Some("zzz-ours"), "ck", none()));
        let s = prometheus(&rows, &[]);
        assert_eq!(
            s.matches("ck_cgroup_module_populated{").count(),
            MAX_SERIES,
            "capped"
        );
        assert!(
            s.contains("ck_cgroup_module_populated{module=\"zzz-ours\",layout=\"ck\""),
            "ours kept"
        );
        assert!(
            s.contains("\nck_cgroup_modules_left_out 6\n"),
            "the rest counted"
        );
    }
}
