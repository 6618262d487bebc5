//! `status`: figures with their sources, the /proc fallback where the memory controller is not
//! enabled (as on this hybrid host), and the null rule: unknown is `null` / `-`, never 0.

mod common;

use ck_cgroup::Layout;
use ck_cgroup::telemetry::ModuleStatus;
use common::strict::{Status, strictly};
use common::*;

fn has_memory_controller(w: &World) -> bool {
    w.root()
        .join("subc-modules/cgroup.subtree_control")
        .exists()
        && std::fs::read_to_string(w.root().join("subc-modules/cgroup.subtree_control"))
            .unwrap()
            .contains("memory")
}

#[test]
fn memory_falls_back_to_proc_and_unknown_figures_are_null() {
    let w = World::new();
    if has_memory_controller(&w) {
        common::skip("the memory controller is enabled here; the guest lane covers it");
        return;
    }
    // A process that holds 40 MiB resident.
    let script = format!(
        "import time\nx = bytearray(40 << 20)\nopen('{}', 'w').write('1\\n')\ntime.sleep(600)",
        w.tmp("ready").display()
    );
    let mut c = w
        .ck()
        .args(["exec", "hoard", "--", "python3", "-c", &script])
        .spawn()
        .unwrap();
    w.track(c.id());
    w.line_from("ready");

    let s: Status = strictly(&ok(w.run(&["--json", "status", "hoard"])));
    let m = &s.modules[0];
    assert_eq!(m.procs.value, Some(1));
    assert!(
        m.memory_current.source.contains("VmRSS"),
        "{:?}",
        m.memory_current
    );
    let rss = m.memory_current.value.expect("rss summed from /proc");
    assert!(rss >= 40 << 20, "rss {rss}");
    // No memory, pids controller here: unknown, not zero.
    let unknown = [
        ("memory_peak", m.memory_peak.value.is_none()),
        ("memory_events", m.memory_events.value.is_none()),
        ("pids_current", m.pids_current.value.is_none()),
        ("memory.max", m.limits.memory_max.value.is_none()),
        ("pids.max", m.limits.pids_max.value.is_none()),
        (
            "memory.oom.group",
            m.limits.memory_oom_group.value.is_none(),
        ),
    ];
    for (name, none) in unknown {
        assert!(none, "{name} must be null: {m:?}");
    }
    let table = ok(w.run(&["status"]));
    let row = table.lines().nth(1).unwrap();
    assert!(row.contains('*'), "fallback marked: {table}");
    assert!(table.contains("/proc/<pid>/status"), "{table}");
    ok(w.run(&["kill", "--timeout", "3s", "hoard"]));
    c.wait().unwrap();
}

#[test]
fn status_of_a_missing_module_is_an_error() {
    let w = World::new();
    let o = w.run(&["status", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("ck-cgroup: no module nope"));
}

#[test]
fn status_table_and_prometheus_snapshots() {
    let w = World::new();
    if has_memory_controller(&w) {
        common::skip("the memory controller is enabled here: the snapshots are of the fallback");
        return;
    }
    ok(w.run(&["create", "aft"]));
    std::fs::create_dir_all(w.root().join("daemon/subc-modules/m-mcp_5f3ax_5f7")).unwrap();
    insta::assert_snapshot!("status_table", ok(w.run(&["status"])));
    insta::assert_snapshot!("status_table_wide", ok(w.run(&["status", "--wide"])));
    insta::assert_snapshot!(
        "status_prometheus",
        ok(w.run(&["status", "--format", "prometheus"]))
    );
}

/// The figure `--sort KEY` orders by, as `status --json` shows it (`None`: unknown).
fn sort_figure(m: &ModuleStatus, key: &str) -> Option<f64> {
    match key {
        "mem" => m.memory_current.value.map(|v| v as f64),
        "peak" => m.memory_peak.value.map(|v| v as f64),
        "cpu" => m.cpu_usage_usec.value.map(|v| v as f64),
        "pids" => m.pids_current.value.map(|v| v as f64),
        "psi" => m.memory_pressure_avg10.value,
        _ => panic!("no key {key}"),
    }
}

#[test]
fn status_sorts_by_each_key_biggest_first_unknown_last_in_every_format() {
    let w = World::new();
    let mut big = hoard(&w, "big", 48);
    ok(w.run(&["create", "idle"]));
    std::fs::create_dir_all(w.root().join("daemon/subc-modules/m-mcp_5f3ax_5f7")).unwrap();
    let listed: serde_json::Value = strictly(&ok(w.run(&["--json", "list"])));
    let list_order: Vec<&str> = listed["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    // Without --sort: the order of `list`, as before.
    let s: Status = strictly(&ok(w.run(&["--json", "status"])));
    let names: Vec<String> = s.modules.iter().map(|m| m.name.to_string()).collect();
    assert_eq!(names, list_order);
    for key in ["mem", "peak", "cpu", "pids", "psi"] {
        let s: Status = strictly(&ok(w.run(&["--json", "status", "--sort", key])));
        let order: Vec<(Option<f64>, String)> = s
            .modules
            .iter()
            .map(|m| (sort_figure(m, key), m.name.to_string()))
            .collect();
        assert_eq!(order.len(), 3, "{key}: {order:?}");
        for pair in order.windows(2) {
            let ((a, an), (b, bn)) = ((pair[0].0, &pair[0].1), (pair[1].0, &pair[1].1));
            let in_order = match (a, b) {
                (Some(a), Some(b)) => a > b || (a == b && an < bn),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => an < bn,
            };
            assert!(in_order, "--sort {key}: {order:?}");
        }
        if key == "mem" {
            assert_eq!(order[0].1, "big", "the hoard leads --sort mem: {order:?}");
        }
        // The table and the Prometheus samples come in the same order.
        let table = ok(w.run(&["status", "--wide", "--sort", key]));
        let rows: Vec<&str> = table
            .lines()
            .skip(1)
            .take(3)
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        let json_order: Vec<&str> = order.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(rows, json_order, "--sort {key} table:\n{table}");
        // Prometheus labels a series by the module id (`module`), not the directory name.
        let prom = ok(w.run(&["status", "--sort", key, "--format", "prometheus"]));
        let samples: Vec<&str> = prom
            .lines()
            .filter(|l| l.starts_with("ck_cgroup_module_processes{"))
            .map(|l| l.split('"').nth(1).unwrap())
            .collect();
        let id_order: Vec<String> = s
            .modules
            .iter()
            .map(|m| m.module.as_ref().unwrap_or(&m.name).to_string())
            .collect();
        assert_eq!(samples, id_order, "--sort {key} prometheus:\n{prom}");
    }
    let o = w.run(&["status", "--sort", "size"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    ok(w.run(&["kill", "--timeout", "3s", "big"]));
    big.wait().unwrap();
}

#[test]
fn the_daemons_directories_show_their_decoded_module_id() {
    let w = World::new();
    ok(w.run(&["create", "aft"]));
    // subc-daemon's naming: m- + escape(escape(id) + _ + launch), where escape writes a byte
    // other than [A-Za-z0-9.-] as _ and two hex digits: module `mcp:x` launch 7, and module
    // `broca` launch 3 (as a module of ours beside it, `aft`).
    for dir in ["m-mcp_5f3ax_5f7", "m-broca_5f3"] {
        std::fs::create_dir_all(w.root().join("daemon/subc-modules").join(dir)).unwrap();
    }
    let table = ok(w.run(&["status", "--wide"]));
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0][..2], ["NAME", "MODULE"], "{table}");
    // The default table has one name column, MODULE: the id.
    let narrow = ok(w.run(&["status"]));
    let firsts: Vec<&str> = narrow
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(firsts[..4], ["MODULE", "aft", "broca", "mcp:x"], "{narrow}");
    let module_of = |name: &str| {
        lines
            .iter()
            .find(|l| l[0] == name)
            .unwrap_or_else(|| panic!("no row {name}:\n{table}"))[1]
    };
    assert_eq!(module_of("m-mcp_5f3ax_5f7"), "mcp:x", "{table}");
    assert_eq!(module_of("m-broca_5f3"), "broca", "{table}");
    assert_eq!(module_of("aft"), "aft", "{table}");
    // JSON has it as `module`, the field `list --json` has too.
    let s: Status = strictly(&ok(w.run(&["--json", "status"])));
    let m = s
        .modules
        .iter()
        .find(|m| m.name == "m-mcp_5f3ax_5f7")
        .unwrap();
    assert!(m.module.as_ref().is_some_and(|n| *n == "mcp:x"), "{m:?}");
    assert_eq!(m.layout, Layout::Daemon);
    let listed: serde_json::Value = strictly(&ok(w.run(&["--json", "list"])));
    assert!(
        listed["modules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["name"] == "m-mcp_5f3ax_5f7" && l["module"] == "mcp:x"),
        "{listed}"
    );
}

#[test]
fn anon_and_file_come_from_memory_stat_or_are_null() {
    let w = World::new();
    let mut c = hoard(&w, "hoard", 32);
    let s: Status = strictly(&ok(w.run(&["--json", "status", "hoard"])));
    let m = &s.modules[0];
    assert_eq!(m.memory_anon.source, "memory.stat anon");
    assert_eq!(m.memory_file.source, "memory.stat file");
    assert_eq!(m.memory_shmem.source, "memory.stat shmem");
    let stat = std::fs::read_to_string(w.root().join("subc-modules/hoard/memory.stat"));
    match stat {
        // The memory controller is enabled: the kernel's figures, the hoard in anon.
        Ok(text) => {
            let anon = m.memory_anon.value.expect("anon is known");
            assert!(anon >= 32 << 20, "anon {anon}: {text}");
            assert!(m.memory_file.value.is_some(), "{:?}", m.memory_file);
            assert!(m.memory_shmem.value.is_some(), "{:?}", m.memory_shmem);
        }
        // No memory.stat: unknown, never 0, and the table says `-`.
        Err(_) => {
            assert_eq!(m.memory_anon.value, None, "{:?}", m.memory_anon);
            assert_eq!(m.memory_file.value, None, "{:?}", m.memory_file);
            assert_eq!(m.memory_shmem.value, None, "{:?}", m.memory_shmem);
            let table = ok(w.run(&["status", "hoard", "--wide"]));
            let head: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
            let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
            for col in ["ANON", "FILE"] {
                let i = head.iter().position(|h| *h == col).expect(col);
                assert_eq!(row[i], "-", "{col}:\n{table}");
            }
        }
    }
    ok(w.run(&["kill", "--timeout", "3s", "hoard"]));
    c.wait().unwrap();
}

/// The default table fits 80 columns: the figures that matter, one name column, and the columns
/// no module has a figure for left out and named under it; `--wide` has them all, `-o` those
/// asked for, in that order; an unknown column is exit 2 naming the columns.
#[test]
fn status_fits_80_columns_and_names_the_columns_it_left_out() {
    let w = World::new();
    ok(w.run(&["create", "a-module-name"]));
    std::fs::create_dir_all(w.root().join("daemon/subc-modules/m-mcp_5f3ax_5f7")).unwrap();
    let table = ok(w.run(&["status"]));
    for l in table.lines() {
        assert!(
            l.chars().count() <= 80,
            "{} columns: {l}\n{table}",
            l.chars().count()
        );
    }
    let head: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(head[0], "MODULE", "{table}");
    if !has_memory_controller(&w) {
        // Here no module has a memory.peak: PEAK is left out, and said to be.
        assert!(!head.contains(&"PEAK"), "{table}");
        let note = table
            .lines()
            .find(|l| l.starts_with("not shown, unknown for every module: "))
            .unwrap_or_else(|| panic!("no note of the columns left out:\n{table}"));
        assert!(note.contains("PEAK"), "{note}");
    }
    let wide = ok(w.run(&["status", "--wide"]));
    let wide_head: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(wide_head.len(), 18, "{wide}");
    assert!(!wide.contains("not shown"), "{wide}");
    let picked = ok(w.run(&["status", "-o", "id,peak,procs"]));
    let picked_head: Vec<&str> = picked.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(picked_head, ["MODULE", "PEAK", "PROCS"], "{picked}");
    let o = w.run(&["status", "-o", "mem,bogus"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no column \"bogus\""), "{}", stderr(&o));
    let o = w.run(&["status", "-o", "mem", "--wide"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// On a host where cold memory cannot be told (this one: no multi-gen LRU, no memory controller
/// on cgroup2) every figure is `null` with the reason, never 0, in every format: JSON, the
/// table's `-` with the reason under it, and no Prometheus series. `--age-cold` writes nothing
/// and fails nothing there.
#[test]
fn cold_memory_is_null_with_its_reason_where_it_cannot_be_told() {
    let w = World::new();
    let lru_gen = std::path::Path::new(ck_cgroup::telemetry::cold::LRU_GEN);
    if has_memory_controller(&w) && std::fs::read_to_string(lru_gen).is_ok() {
        common::skip("this host can tell cold memory; the guest lane covers it (cold-memory)");
        return;
    }
    let ready = w.tmp("ready");
    let mut c = w
        .ck()
        .args([
            "exec",
            "idle",
            "--",
            "sh",
            "-c",
            "echo 1 > \"$0\"; exec sleep 300",
        ])
        .arg(&ready)
        .spawn()
        .unwrap();
    w.track(c.id());
    w.line_from("ready");
    let s: Status = strictly(&ok(w.run(&[
        "--json",
        "status",
        "--age-cold",
        "--cold-window",
        "30s",
        "idle",
    ])));
    let cold = &s.modules[0].cold_memory;
    assert_eq!((cold.value, cold.file), (None, None), "{cold:?}");
    assert_eq!(cold.window_ms, 30_000);
    assert_eq!(cold.source, ck_cgroup::telemetry::cold::SOURCE);
    let reason = cold.reason.as_deref().expect("a reason");
    assert!(
        ["multi-gen LRU", "debugfs", "root", "memory controller"]
            .iter()
            .any(|k| reason.contains(k)),
        "{reason}"
    );
    let table = ok(w.run(&["status", "-o", "id,cold", "idle"]));
    assert!(table.contains("COLD unknown: "), "{table}");
    assert!(table.contains("not touched for 600 s"), "{table}");
    let prom = ok(w.run(&["status", "--format", "prometheus", "idle"]));
    assert!(!prom.contains("ck_cgroup_memory_cold_bytes{"), "{prom}");
    ok(w.run(&["kill", "--timeout", "3s", "idle"]));
    c.wait().unwrap();
}

/// Aging the modules' memory is `status --age-cold`'s alone: nothing on the paths the daemon
/// calls to spawn and kill (`exec`, `run`, `create`, `place`, `kill`, `prune`) opens the
/// multi-gen LRU's files, traced with strace beside `status --age-cold`, which does (the
/// control: on this host it looks for lru_gen and finds none).
#[test]
fn no_spawn_or_kill_path_touches_the_multi_gen_lru_and_status_does() {
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        common::skip("no strace here (CI installs it)");
        return;
    }
    let w = World::new();
    let traced = |args: &[&str]| strace(&w, &["-f", "-e", "trace=%file"], args);
    let lru = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains("lru_gen"))
            .map(str::to_string)
            .collect()
    };
    let t = traced(&["status", "--age-cold"]);
    assert!(!lru(&t).is_empty(), "status reads lru_gen: {t}");
    let mut placed = std::process::Command::new("sleep")
        .arg("605")
        .spawn()
        .unwrap();
    w.track(placed.id());
    let pid = placed.id().to_string();
    for args in [
        &["exec", "m", "--", "true"][..],
        &["run", "r", "--", "true"],
        &["create", "p"],
        &["place", "p", &pid],
        &["kill", "m"],
        &["kill", "p"],
        &["prune", "--kill"],
    ] {
        let t = traced(args);
        assert_eq!(
            lru(&t),
            Vec::<String>::new(),
            "{args:?} touched the multi-gen LRU"
        );
    }
    let _ = placed.wait();
}

/// `status` and `exec` read each cgroup file in one `pread`: every cgroup2 file but
/// `cgroup.procs` and `cgroup.threads` is written by one `show` call, so a short read is its
/// end, and a second `pread` to see 0 is a system call per file for nothing (`status` reads
/// seven files per module here, `exec` five). `strace` counts the `pread`s against the files
/// opened for reading; and a module's directory opened by `openat2` needs no `fstatfs`.
#[test]
fn status_and_exec_read_each_cgroup_file_in_one_pread() {
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        skip("no strace here (CI installs it)");
        return;
    }
    let w = World::new();
    ok(w.run(&["create", "m"]));
    for args in [&["--json", "status"][..], &["exec", "m", "--", "true"]] {
        let t = strace(&w, &["-e", "trace=openat2,pread64,fstatfs,close"], args);
        // The `pread`s of the cgroup files opened for reading (not the loader's of a dynamic
        // build, on descriptors opened otherwise), by descriptor while it is open.
        let (mut open, mut opened, mut preads) = (Vec::<String>::new(), 0, 0);
        for l in t.lines() {
            let fd = |l: &str| l.split(['(', ',']).nth(1).unwrap_or("").trim().to_string();
            let ret = l.rsplit("= ").next().unwrap_or("").trim().to_string();
            if l.starts_with("openat2(")
                && l.contains("O_RDONLY")
                && !l.contains("O_DIRECTORY")
                && !l.contains("O_PATH")
                && !ret.starts_with('-')
            {
                opened += 1;
                open.push(ret);
            } else if l.starts_with("close(") {
                open.retain(|f| *f != fd(l));
            } else if l.starts_with("pread64(") && open.contains(&fd(l)) {
                preads += 1;
            }
        }
        assert!(opened > 0, "{args:?} opened no cgroup file: {t}");
        assert_eq!(preads, opened, "{args:?}: one pread per file read: {t}");
        let statfs = t.lines().filter(|l| l.starts_with("fstatfs(")).count();
        assert_eq!(statfs, 1, "{args:?}: only the root's fstatfs: {t}");
    }
}

/// The helper run on `w`'s root with `args` under `strace -qq` and `how` (its filter, `-f`):
/// the trace, once the command succeeded.
fn strace(w: &World, how: &[&str], args: &[&str]) -> String {
    let log = w.tmp("trace");
    let _ = std::fs::remove_file(&log);
    let o = std::process::Command::new("strace")
        .arg("-qq")
        .args(how)
        .arg("-o")
        .arg(&log)
        .arg(bin())
        .arg("--root")
        .arg(w.root())
        .args(args)
        .env("CK_CGROUP_POLICY", "/dev/null")
        .env_remove("CK_CGROUP_ROOT")
        .output()
        .unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    std::fs::read_to_string(&log).unwrap()
}
