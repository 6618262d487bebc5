//! The metrics of the modules' figures and counters, and of their parents' counters.

use ck_cgroup::telemetry::{Figure, ModuleStatus, PROC_RSS_SOURCE, ParentStatus};

use super::series::{Series, each, each_counter};
use super::{Metric, Num, escape};

/// The metrics of one figure per module: populated, processes, memory.
pub(super) fn figures(series: &[Series<'_>]) -> Vec<Metric> {
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
pub(super) fn gpu(series: &[Series<'_>]) -> Vec<Metric> {
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
pub(super) fn cold(series: &[Series<'_>]) -> Vec<Metric> {
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
pub(super) fn counted(series: &[Series<'_>]) -> Vec<Metric> {
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
pub(super) fn parent_metrics(parents: &[ParentStatus]) -> Vec<Metric> {
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
