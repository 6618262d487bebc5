use ck_cgroup::Layout;
use ck_cgroup::limits::{LIMITS, Unit};

use super::limits::limit_metric_name;
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
    ] {
        assert!(s.contains(&want), "{want:?} missing from:\n{s}");
    }
    // memory.swap.max could not be read: no series, nor a HELP naming its file.
    assert!(!s.contains("memory_swap_max"), "{s}");
    assert!(!s.contains("memory.swap.max"), "{s}");
    // No metric of every limit labelled by its file and the directory's name.
    assert!(!s.contains("file=\""), "{s}");
    assert!(!s.contains("name=\""), "{s}");
    assert!(
        s.contains(
            "ck_cgroup_cpu_usage_seconds_total{module=\"aft\",layout=\"ck\",slot=\"main\"} 1.5\n"
        ),
        "{s}"
    );
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
    for l in s.lines() {
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
/// its own label value, in every layout.
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
