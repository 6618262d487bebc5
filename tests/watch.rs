//! `watch`: JSON Lines as things happen; it reports and never kills.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::watch::Watch;
use common::*;
use serde_json::Value;

#[test]
fn watch_reports_a_module_appearing_filling_emptying_and_going() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    ok(w.run(&["create", "seen"]));
    assert_eq!(watch.next("seen")["event"], "appeared");
    ok(w.run(&["exec", "seen", "--", "sh", "-c", "sleep 0.2"]));
    assert_eq!(watch.next("seen")["event"], "populated");
    assert_eq!(watch.next("seen")["event"], "emptied");
    ok(w.run(&["remove", "seen"]));
    let gone = watch.next("seen");
    assert_eq!(gone["event"], "removed");
    assert!(gone["ts"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn watch_reports_memory_above_the_threshold_and_kills_nothing() {
    let w = World::new();
    let watch = Watch::start(&w, &["--report-above", "10M"]);
    let script = format!(
        "import time\nx = bytearray(30 << 20)\nopen('{}', 'w').write('1\\n')\ntime.sleep(600)",
        w.tmp("ready").display()
    );
    let mut c = w
        .ck()
        .args(["exec", "big", "--", "python3", "-c", &script])
        .spawn()
        .unwrap();
    w.track(c.id());
    w.line_from("ready");
    let mut seen = Vec::new();
    let above = loop {
        let e = watch.next("big");
        seen.push(e["event"].clone());
        if e["event"] == "memory_above" {
            break e;
        }
    };
    assert!(above["value"].as_u64().unwrap() > 10 << 20, "{above}");
    assert_eq!(above["threshold"], 10 << 20);
    assert!(alive(c.id()), "watch must never kill: {seen:?}");
    ok(w.run(&["kill", "--timeout", "3s", "big"]));
    c.wait().unwrap();
}

/// A module removed and made again under the same id before `watch` looks again is another
/// module: each time `removed` then `appeared`, and the new one's own events (not the stale
/// state of the old one, whose files' watches ended with it).
#[test]
fn watch_follows_a_module_removed_and_made_again_under_the_same_id() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    ok(w.run(&["create", "again"]));
    assert_eq!(watch.next("again")["event"], "appeared");
    let dir = w.root().join("subc-modules/again");
    for cycle in 0..30 {
        // rmdir and mkdir back to back: no rescan can fall between them.
        std::fs::remove_dir(&dir).unwrap();
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(watch.next("again")["event"], "removed", "cycle {cycle}");
        assert_eq!(watch.next("again")["event"], "appeared", "cycle {cycle}");
        let mut c = w.exec_sleep("again");
        assert_eq!(watch.next("again")["event"], "populated", "cycle {cycle}");
        c.kill().unwrap();
        c.wait().unwrap();
        assert_eq!(watch.next("again")["event"], "emptied", "cycle {cycle}");
    }
    ok(w.run(&["remove", "again"]));
    assert_eq!(watch.next("again")["event"], "removed");
}

/// Whether the kernel has PSI on (`/proc/pressure/` exists). Without it (`psi=0`, or a kernel
/// built with `CONFIG_PSI_DEFAULT_DISABLED` and booted without `psi=1`) there is no trigger to
/// watch, and the tests that need one say so and stop.
fn psi_on() -> bool {
    let on = std::path::Path::new("/proc/pressure/cpu").exists();
    if !on {
        common::skip("this kernel has PSI off (no /proc/pressure)");
    }
    on
}

/// A PSI window every user may set: a whole multiple of 2 s (the kernel refuses other windows
/// with EINVAL to a process without CAP_SYS_RESOURCE, as in a container).
const CPU_TRIGGER: &str = "cpu:some:50ms/2s";

/// Start `n` busy loops in a new module `id` (more of them than there are CPUs: they wait for a
/// CPU, which is cpu pressure). The sandbox's teardown kills them if the test fails.
fn spin(w: &World, id: &str) -> Child {
    let n = std::thread::available_parallelism().map_or(2, |n| n.get()) + 1;
    let script = format!(
        "for i in $(seq {}); do (while :; do :; done) & done; wait",
        n.max(3)
    );
    let c = w
        .ck()
        .args(["exec", id, "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(c.id());
    c
}

fn assert_cpu_pressure(e: &ck_cgroup::telemetry::watch::WatchEvent) {
    assert_eq!(e.source.as_deref(), Some("cpu.pressure"), "{e:?}");
    assert_eq!(e.resource.as_deref(), Some("cpu"), "{e:?}");
    assert_eq!(e.kind.as_deref(), Some("some"), "{e:?}");
    assert_eq!(e.threshold_us, Some(50_000), "{e:?}");
    assert_eq!(e.window_us, Some(2_000_000), "{e:?}");
    let avg10 = e.avg10.expect("the avg10 of a cpu.pressure that is there");
    assert!((0.0..=100.0).contains(&avg10), "{e:?}");
}

/// A module whose tasks wait for a CPU: the kernel's trigger on its cpu.pressure fires, and
/// `watch` reports it with the trigger and the file's avg10. It kills nothing.
#[test]
fn watch_pressure_reports_a_module_whose_tasks_wait_for_cpu() {
    if !psi_on() {
        return;
    }
    let w = World::new();
    ok(w.run(&["create", "busy"]));
    let mut c = spin(&w, "busy");
    let watch = Watch::start(&w, &["--pressure", CPU_TRIGGER]);
    let e = watch.wait_for("busy", "pressure");
    assert_cpu_pressure(&e);
    assert!(alive(c.id()), "watch must never kill");
    ok(w.run(&["kill", "--timeout", "3s", "busy"]));
    c.wait().unwrap();
}

/// A module made after `watch` started gets its triggers when it appears.
#[test]
fn watch_pressure_sets_the_trigger_on_a_module_made_after_it_started() {
    if !psi_on() {
        return;
    }
    let w = World::new();
    let watch = Watch::start(&w, &["--pressure", CPU_TRIGGER]);
    ok(w.run(&["create", "late"]));
    watch.wait_for("late", "appeared");
    let mut c = spin(&w, "late");
    assert_cpu_pressure(&watch.wait_for("late", "pressure"));
    ok(w.run(&["kill", "--timeout", "3s", "late"]));
    c.wait().unwrap();
}

/// Context switches (every thread's, voluntary and not) and CPU ticks (utime + stime) of `pid`.
fn activity(pid: u32) -> (u64, u64) {
    let mut switches = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            if let Some(v) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                switches += v.trim().parse::<u64>().unwrap();
            }
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15; after the command's ')' they are the 12th and 13th.
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    (switches, ticks)
}

/// A quiet module (its process sleeps) makes no pressure event, and `watch` with triggers on
/// every resource sleeps in poll(2) meanwhile: next to no context switches in 2 s. A sampling
/// loop (even at 10 ms) would switch hundreds of times.
#[test]
fn watch_pressure_sleeps_until_the_kernel_reports() {
    if !psi_on() {
        return;
    }
    let w = World::new();
    let mut c = w.exec_sleep("quiet");
    // Quiet only once the helper has exec'd `sleep` and it sleeps: exec_sleep returns when the
    // helper is placed, and a helper still loading `sleep` on a loaded host stalls on the CPU in
    // the module (it once made this test's pressure event).
    let pid = c.id();
    eventually("quiet's process is an asleep `sleep`", || {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        comm.trim() == "sleep" && state == Some('S')
    });
    let watch = Watch::start(
        &w,
        &[
            "--pressure",
            CPU_TRIGGER,
            "--pressure",
            "memory:some:50ms/2s",
            "--pressure",
            "io:some:50ms/2s",
        ],
    );
    // What the start-up made (its probe modules) is reported before the count starts.
    watch.during(Duration::from_millis(300));
    let pid = watch.pid();
    let (s0, t0) = activity(pid);
    let seen = watch.during(Duration::from_secs(2));
    let (s1, t1) = activity(pid);
    assert!(
        !seen
            .iter()
            .any(|v| v["module"] == "quiet" && v["event"] == "pressure"),
        "a quiet module made a pressure event: {seen:?}"
    );
    assert!(
        s1 - s0 <= 10,
        "watch woke {} times in 2 s with nothing to report ({} CPU ticks): it polls instead of \
         sleeping until the kernel reports; events: {seen:?}",
        s1 - s0,
        t1 - t0
    );
    assert!(t1 - t0 <= 5, "watch used {} CPU ticks in 2 s idle", t1 - t0);
    ok(w.run(&["kill", "--timeout", "3s", "quiet"]));
    c.wait().unwrap();
}

/// Run the binary with `args`; its output, or a panic when it does not exit within 10 s (a bad
/// spec that started watching would never exit).
fn run_briefly(mut c: std::process::Command) -> std::process::Output {
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(scaled(Duration::from_secs(10))) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
            panic!("still running after 10 s");
        }
    }
}

/// Bad specs are refused with exit 2 and one line that names the problem and shows the form,
/// before anything is opened: a root that does not exist is not even looked at.
#[test]
fn watch_pressure_refuses_bad_specs_before_anything_is_opened() {
    for (spec, says) in [
        ("disk:some:100ms/1s", "unknown resource \"disk\""),
        ("cpu:most:100ms/1s", "unknown kind \"most\""),
        ("cpu:some:2s/1s", "longer than the window"),
        ("cpu:some:100ms/400ms", "outside the kernel's 500ms..10s"),
        ("cpu:some:100ms/20s", "outside the kernel's 500ms..10s"),
        ("cpu:some:0us/1s", "is zero"),
        ("cpu:some:100/1s", "no unit"),
        ("cpu:some:1x/1s", "unknown unit"),
        ("cpu:some:100ms", "no '/'"),
        ("cpu", "three parts"),
    ] {
        let mut c = bare();
        c.args([
            "--root",
            "/nonexistent/ck-root",
            "watch",
            "--pressure",
            spec,
        ]);
        let out = run_briefly(c);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(stdout(&out).is_empty(), "{spec}: nothing is watched");
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains(says), "{spec}: {err}");
        assert!(first.contains(&format!("{spec:?}")), "{spec}: {err}");
        assert!(first.contains("e.g. cpu:some:100ms/1s"), "{spec}: {err}");
        assert!(
            !err.contains("nonexistent"),
            "{spec}: the root was looked at: {err}"
        );
    }
}

/// A trigger the kernel refuses is exit 1 and one error naming the file and the real errno:
/// here a 1 s window from a process without CAP_SYS_RESOURCE (EINVAL; only multiples of 2 s).
#[test]
fn watch_pressure_trigger_the_kernel_refuses_is_exit_1_naming_the_file_and_errno() {
    if !psi_on() {
        return;
    }
    // The rule for windows without CAP_SYS_RESOURCE came with Linux 6.5; before it the kernel
    // takes this trigger, and there is no refusal to see.
    let release = rustix::system::uname();
    let release = release.release().to_string_lossy();
    let mut v = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>());
    if let (Some(Ok(major)), Some(Ok(minor))) = (v.next(), v.next())
        && (major, minor) < (6, 5)
    {
        common::skip(&format!(
            "Linux {release} takes any window without CAP_SYS_RESOURCE"
        ));
        return;
    }
    let w = World::new();
    ok(w.run(&["create", "m"]));
    let mut c = std::process::Command::new("setpriv");
    c.args([
        "--inh-caps=-sys_resource",
        "--bounding-set=-sys_resource",
        bin(),
    ])
    .arg("--root")
    .arg(w.root())
    .args(["watch", "--pressure", "cpu:some:100ms/1s"])
    .env_remove("CK_CGROUP_ROOT")
    .env("CK_CGROUP_POLICY", "/dev/null");
    let out = run_briefly(c);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let file = w.root().join("subc-modules/m/cpu.pressure");
    let first = err.lines().next().unwrap_or_default();
    assert!(first.contains(&file.display().to_string()), "{err}");
    assert!(first.contains("EINVAL"), "{err}");
    assert!(err.contains("multiple of 2 s"), "{err}");
}

/// A module whose pressure files the kernel does not show (`cgroup.pressure` 0) gets no
/// trigger, and that is said: a `pressure_unavailable` event with the errno and a line on
/// stderr, not silence; `watch` goes on.
#[test]
fn watch_pressure_reports_a_module_without_the_pressure_file() {
    if !psi_on() {
        return;
    }
    let w = World::new();
    ok(w.run(&["create", "nopsi"]));
    std::fs::write(w.root().join("subc-modules/nopsi/cgroup.pressure"), "0").unwrap();
    let watch = Watch::start(&w, &["--pressure", CPU_TRIGGER]);
    let e = watch.wait_for("nopsi", "pressure_unavailable");
    assert_eq!(e.source.as_deref(), Some("cpu.pressure"), "{e:?}");
    assert_eq!(e.window_us, Some(2_000_000), "{e:?}");
    let error = e.error.clone().unwrap_or_default();
    assert!(error.contains("ENOENT"), "{e:?}");
    // The files hidden after the trigger was set: the kernel ends the trigger (POLLERR).
    ok(w.run(&["create", "hidden"]));
    watch.wait_for("hidden", "appeared");
    std::fs::write(w.root().join("subc-modules/hidden/cgroup.pressure"), "0").unwrap();
    let e = watch.wait_for("hidden", "pressure_unavailable");
    assert!(e.error.unwrap_or_default().contains("POLLERR"));
    assert!(alive(watch.pid()), "watch goes on");
}

/// A kill of a watched module made a false `pressure_unavailable` for each of its triggers: the
/// kernel removes the cgroup's files before its directory, each pressure file it removes ends
/// its trigger (POLLERR), and `watch`, finding the directory still there, took the end for
/// `cgroup.pressure` 0 (9 of 10 kills here). Now a trigger that ends with its module is dropped
/// in silence: the module's `removed` says it went.
#[test]
fn watch_pressure_says_no_pressure_unavailable_of_a_module_killed() {
    if !psi_on() {
        return;
    }
    let w = World::new();
    let triggers = [CPU_TRIGGER, "memory:some:50ms/2s", "io:full:50ms/2s"];
    let mut args = Vec::new();
    for t in triggers {
        args.extend(["--pressure", t]);
    }
    let watch = Watch::start(&w, &args);
    // Each module's lines up to its `removed`: the kernel ends the triggers as it removes the
    // files, before the directory, and `watch` reads a trigger's end before inotify's events.
    let mut seen: Vec<Value> = Vec::new();
    for i in 0..6 {
        let id = format!("killed{i}");
        let mut c = w.exec_sleep(&id);
        ok(w.run(&["kill", "--grace", "0s", &id]));
        c.wait().unwrap();
        loop {
            let e = watch.next(&id);
            seen.push(e.clone());
            if e["event"] == "removed" {
                break;
            }
        }
    }
    let unavailable: Vec<&Value> = seen
        .iter()
        .filter(|e| e["event"] == "pressure_unavailable")
        .collect();
    assert!(unavailable.is_empty(), "{unavailable:?}");
    assert!(alive(watch.pid()), "watch goes on");
}

/// Whose fault: after an operator's `kill`, `watch`'s `emptied` said `killed_by: []`, as for a
/// module that exited on its own. Our own stop now marks the module (`user.ck_cgroup_stops`)
/// before it signals, as systemd-oomd does before its kill: `killed_by` names `ck-cgroup`, and
/// `kill --json`'s `kills.ck_stops` counts it; a module that exits on its own names no one.
#[test]
fn watch_names_ck_cgroup_for_a_module_its_own_kill_stopped() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    let mut s = w.exec_sleep("stopped");
    let e = watch.wait_for("stopped", "populated");
    assert_eq!(e.module, "stopped");
    let r = json(&w.run(&["--json", "kill", "--grace", "0s", "stopped"]));
    assert_eq!(r["kills"]["ck_stops"], 1, "{r}");
    s.wait().unwrap();
    let e = watch.wait_for("stopped", "emptied");
    assert_eq!(e.killed_by, Some(vec!["ck-cgroup".to_string()]), "{e:?}");
    // A module whose process ends on its own: no one.
    ok(w.run(&["exec", "alone", "--", "sh", "-c", "sleep 0.2"]));
    let e = watch.wait_for("alone", "emptied");
    assert_eq!(e.killed_by, Some(Vec::new()), "{e:?}");
}

/// A reader that stalls while thousands of module lifetimes pass: `watch` blocks on its full
/// stdout, the kernel's inotify queue overflows, and what was lost was rescanned in silence (the
/// red team got 8,366 of 9,000 lifetimes and no word of it). Now each module followed is told
/// (`events_lost`, with why), then the rescan's lines say what is there now.
#[test]
fn a_stalled_reader_is_told_that_events_were_lost() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let w = World::new();
    ok(w.run(&["init"]));
    ok(w.run(&["create", "steady"]));
    let mut child = w.ck().arg("watch").stdout(Stdio::piped()).spawn().unwrap();
    w.track(child.id());
    let out = child.stdout.take().unwrap();
    // The reader: it passes each line on and, once told to stall, reads nothing until released.
    let stall = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<String>();
    let (release, released) = mpsc::channel::<()>();
    let stalled = stall.clone();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
            if stalled.load(Ordering::SeqCst) && released.recv().is_err() {
                break;
            }
        }
    });
    // Ready: a module made after it started is reported.
    let mut ready = false;
    'probe: for n in 0..50 {
        let probe = format!("probe-{n}");
        ok(w.run(&["create", &probe]));
        while let Ok(l) = rx.recv_timeout(Duration::from_millis(300)) {
            if l.contains(&format!("\"module\":\"{probe}\"")) {
                ready = true;
                break 'probe;
            }
        }
    }
    assert!(ready, "watch never reported a probe");
    // Stall: nothing more is read while the lifetimes pass. Past the pipe's 64 KiB, watch blocks
    // on its stdout and stops reading its queue (16,384 events by default: two per lifetime).
    stall.store(true, Ordering::SeqCst);
    let modules = w.root().join("subc-modules");
    let queued = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
        .unwrap_or(16384);
    for n in 0..(queued / 2 + 2000) {
        let d = modules.join(format!("churn-{n}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::remove_dir(&d).unwrap();
    }
    // Read on: the loss is said.
    stall.store(false, Ordering::SeqCst);
    let _ = release.send(());
    let deadline = std::time::Instant::now() + scaled(Duration::from_secs(60));
    let lost = loop {
        let left = deadline
            .checked_duration_since(std::time::Instant::now())
            .expect("no events_lost line within 60 s of the stall");
        let l = rx
            .recv_timeout(left)
            .expect("no events_lost line within 60 s of the stall");
        let v: Value = serde_json::from_str(&l).expect(&l);
        if v["event"] == "events_lost" && v["module"] == "steady" {
            break v;
        }
    };
    assert!(
        lost["error"]
            .as_str()
            .is_some_and(|e| e.contains("overflowed")),
        "{lost}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// A module whose files cannot be watched (the inotify watch limit) was never reported again,
/// and nothing said so; now `events_lost` names it and why (ENOSPC, the limit). The limit is set
/// low in a user namespace of the test's own (`user.max_inotify_watches`), never the host's.
#[test]
fn a_module_past_the_watch_limit_is_said_to_be_unwatched() {
    let w = World::new();
    ok(w.run(&["init"]));
    for m in ["a", "b", "c"] {
        ok(w.run(&["create", m]));
    }
    let o = std::process::Command::new("unshare")
        .args(["-U", "-r", "sh", "-c"])
        .arg("echo 4 > /proc/sys/user/max_inotify_watches && exec timeout 3 \"$0\" --root \"$1\" watch")
        .arg(bin())
        .arg(w.root())
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .expect("unshare");
    if !o.status.success() && stdout(&o).is_empty() {
        // No user namespaces here (a hardened host): nothing to show.
        assert!(
            stderr(&o).contains("unshare") || stderr(&o).contains("max_inotify_watches"),
            "{}",
            stderr(&o)
        );
        eprintln!(
            "no user namespace to lower the watch limit in: {}",
            stderr(&o)
        );
        return;
    }
    let lost: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect(l))
        .filter(|v: &Value| v["event"] == "events_lost")
        .collect();
    assert!(!lost.is_empty(), "no events_lost: {}", stdout(&o));
    assert!(
        lost.iter()
            .all(|v| v["error"].as_str().is_some_and(|e| e.contains("ENOSPC"))),
        "{lost:?}"
    );
}
