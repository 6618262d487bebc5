//! `freeze` and `thaw`: they return once the kernel says the module is frozen
//! (or thawed), a frozen module is still killed, bad input is exit 2. Mutation control
//! `freeze-no-wait`.

use std::process::Stdio;

use crate::common::*;
use ck_cgroup::module::StopReport;

use crate::common::strict::strictly;

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = s.rsplit(')').next().unwrap().split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn frozen_in_events(w: &World, id: &str) -> Option<bool> {
    let e =
        std::fs::read_to_string(w.root().join(format!("subc-modules/{id}/cgroup.events"))).ok()?;
    ck_cgroup::cgroup::parse::events(&e).frozen
}

/// A module running a busy loop (its pid: the module's process) beside `sleepers` sleeping
/// processes, so that a freeze has many tasks to stop.
fn busy_module(w: &World, id: &str, sleepers: usize) -> (std::process::Child, u32) {
    let script = format!(
        "i=0; while [ $i -lt {sleepers} ]; do sleep 600 & i=$((i+1)); done; echo $$ > {}; while :; do :; done",
        w.tmp(&format!("{id}.pid")).display()
    );
    let child = w
        .ck()
        .args(["exec", id, "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(child.id());
    let pid = w.pid_from(&format!("{id}.pid"));
    let procs = w.root().join(format!("subc-modules/{id}/cgroup.procs"));
    eventually("every process in the module", || {
        std::fs::read_to_string(&procs)
            .map(|s| s.lines().count() > sleepers)
            .unwrap_or(false)
    });
    (child, pid)
}

const WRITER_PROBE: &str = "CK_CGROUP_WRITER_PROBE";

/// Not a test of its own: run by [`freeze_stops_a_busy_module_and_thaw_lets_it_run_again`] in a
/// copy of this binary inside the module (when `CK_CGROUP_WRITER_PROBE` names a file). It writes
/// 64 MiB at once, over and over: a write(2) that long checks only for fatal signals, so a
/// freeze waits for each to end (milliseconds) before the kernel says `frozen 1`, and a freeze
/// that returned before that is seen.
#[test]
fn writer_probe() {
    let Some(out) = std::env::var_os(WRITER_PROBE) else {
        return;
    };
    use std::os::unix::fs::FileExt;
    let data = vec![7u8; 64 << 20];
    let f = std::fs::File::create(format!("{}.data", out.to_string_lossy())).unwrap();
    std::fs::write(&out, format!("{}\n", std::process::id())).unwrap();
    loop {
        f.write_all_at(&data, 0).unwrap();
    }
}

#[test]
fn freeze_stops_a_busy_module_and_thaw_lets_it_run_again() {
    let w = World::new();
    let (mut child, pid) = busy_module(&w, "busy", 20);
    let mut writer = w
        .ck()
        .args(["exec", "busy", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "freeze::writer_probe",
            "--test-threads=1",
            "--quiet",
        ])
        .env(WRITER_PROBE, w.tmp("writer"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    w.track(writer.id());
    w.pid_from("writer");
    let r: ck_cgroup::module::FreezeReport =
        serde_json::from_str(&ok(w.run(&["--json", "freeze", "busy"]))).unwrap();
    // Right after the command: the kernel says frozen, not only cgroup.freeze.
    assert_eq!(
        frozen_in_events(&w, "busy"),
        Some(true),
        "not frozen when freeze returned"
    );
    assert!(r.frozen && r.changed, "{r:?}");
    assert_eq!(r.module, "busy");
    let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
    assert!(
        matches!(wchan.as_str(), "do_freezer_trap" | "get_signal")
            || wchan == "0"
            || wchan.is_empty(),
        "the busy loop waits in {wchan:?}"
    );
    let t = cpu_ticks(pid);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(cpu_ticks(pid), t, "the frozen busy loop used CPU");
    let again = ok(w.run(&["freeze", "busy"]));
    assert_eq!(again, "busy: frozen already\n");
    let r: ck_cgroup::module::FreezeReport =
        serde_json::from_str(&ok(w.run(&["--json", "thaw", "busy"]))).unwrap();
    assert_eq!(
        frozen_in_events(&w, "busy"),
        Some(false),
        "still frozen after thaw"
    );
    assert!(!r.frozen && r.changed, "{r:?}");
    eventually("the busy loop to run again", || cpu_ticks(pid) > t);
    ok(w.run(&["kill", "busy"]));
    child.wait().unwrap();
    writer.wait().unwrap();
}

#[test]
fn a_module_frozen_by_freeze_is_killed() {
    let w = World::new();
    let (mut child, pid) = busy_module(&w, "fz", 3);
    ok(w.run(&["freeze", "fz"]));
    assert_eq!(frozen_in_events(&w, "fz"), Some(true));
    let k: StopReport = strictly(&ok(w.run(&["--json", "kill", "--timeout", "5s", "fz"])));
    assert!(k.tree.empty && k.removed);
    child.wait().unwrap();
    assert!(!alive(pid));
    assert!(!w.root().join("subc-modules/fz").exists());
}

#[test]
fn freeze_or_thaw_of_a_bad_name_or_timeout_is_exit_2() {
    let w = World::new();
    let before = w.tree();
    for args in [
        vec!["freeze", "../x"],
        vec!["--json", "thaw", "a/b"],
        vec!["freeze", "--timeout", "soon", "x"],
    ] {
        let o = w.run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        if args.contains(&"--json") {
            let v: serde_json::Value = serde_json::from_str(&e).expect(&e);
            assert_eq!(v["error"]["exit"], 2, "{e}");
        } else {
            assert!(
                e.starts_with("ck-cgroup: ") || e.starts_with("error: "),
                "{e}"
            );
        }
        assert!(stdout(&o).is_empty());
    }
    assert_eq!(w.tree(), before);
}

#[test]
fn human_freeze_and_thaw_output() {
    let w = World::new();
    ok(w.run(&["create", "idle"]));
    // Times vary: the ms are replaced.
    let ms = |s: String| {
        let (head, tail) = s.split_once(" (").unwrap_or((&s, ""));
        if tail.is_empty() {
            s.clone()
        } else {
            format!("{head} (<ms> ms)\n")
        }
    };
    let out = [
        ms(ok(w.run(&["freeze", "idle"]))),
        ok(w.run(&["freeze", "idle"])),
        ms(ok(w.run(&["thaw", "idle"]))),
        ok(w.run(&["thaw", "idle"])),
    ]
    .concat();
    insta::assert_snapshot!("freeze_thaw", out);
}
