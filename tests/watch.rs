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
    assert!(e.module.is_some_and(|m| m == "stopped"));
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

// ---- No silent loss (issue 42): every lifetime reported, or an `events_lost` that says which
// were lost and why. Each case runs as root and as the daemon's (an unprivileged) uid.

/// `watch ARGS` on `w`, as root or as the daemon's uid (nobody, the root delegated to it), with
/// `wrap` before the binary (`prlimit ...`): its lines as they come, every one kept.
struct Lines {
    child: Child,
    rx: mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl Lines {
    fn start(w: &World, daemon_uid: bool, wrap: &[&str], args: &[&str]) -> Lines {
        let mut all = vec!["watch"];
        all.extend_from_slice(args);
        let mut c = if daemon_uid {
            match wrap.split_first() {
                None => common::nobody::ck_as_nobody(w, &all),
                Some((prog, rest)) => {
                    common::nobody::delegate_root_to_nobody(w);
                    common::nobody::as_nobody(w, prog, &all, |c| {
                        c.args(rest).arg(bin()).arg("--root").arg(w.root());
                    })
                }
            }
        } else {
            let mut c = std::process::Command::new(wrap.first().copied().unwrap_or(bin()));
            if !wrap.is_empty() {
                c.args(&wrap[1..]).arg(bin());
            }
            c.arg("--root")
                .arg(w.root())
                .args(&all)
                .env_remove("CK_CGROUP_ROOT")
                .env("CK_CGROUP_POLICY", "/dev/null");
            c
        };
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        w.track(child.id());
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Lines {
            child,
            rx,
            seen: Vec::new(),
        }
    }

    /// The first line (seen or to come within `limit`) that `f` takes.
    fn within(&mut self, limit: Duration, f: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(v) = self.seen.iter().find(|v| f(v)) {
            return Some(v.clone());
        }
        let deadline = std::time::Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let v = self.rx.recv_timeout(left).ok()?;
            self.seen.push(v.clone());
            if f(&v) {
                return Some(v);
            }
        }
        None
    }

    /// The first line `f` takes; panics, with every line seen, after 30 s (scaled).
    fn until(&mut self, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        self.within(scaled(Duration::from_secs(30)), f)
            .unwrap_or_else(|| panic!("no {what} within 30 s; lines: {:#?}", self.seen))
    }

    /// Ready: `probe` made in `dir` after it started is reported; then removed again (a watch of
    /// names must be given `probe`). Each try a new lifetime, never a sleep.
    fn ready(&mut self, dir: &std::path::Path) {
        let p = dir.join("probe");
        for _ in 0..50 {
            std::fs::create_dir(&p).unwrap();
            let seen = self.within(Duration::from_millis(300), |v| {
                v["module"] == "probe" && v["event"] == "appeared"
            });
            std::fs::remove_dir(&p).unwrap();
            if seen.is_some() {
                self.until("probe removed", |v| {
                    v["module"] == "probe" && v["event"] == "removed"
                });
                self.seen.retain(|v| v["module"] != "probe");
                return;
            }
        }
        panic!("watch reported none of 50 probes; lines: {:#?}", self.seen);
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lost_of(v: &Value, module: &str) -> bool {
    v["event"] == "events_lost" && v["module"] == module
}

/// More make/remove pairs in `dir` than the kernel's inotify queue holds (two events each).
fn overflow(dir: &std::path::Path) {
    let queued = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
        .unwrap_or(16384);
    for n in 0..queued / 2 + 100 {
        let d = dir.join(format!("churn-{n}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::remove_dir(&d).unwrap();
    }
}

/// Names that are not UTF-8, made and removed within one read (`watch` stopped meanwhile) in both
/// layouts beside ordinary ones: the red team saw the ordinary reported and the raw ones not, with
/// no `events_lost` (such an inotify name became a rescan, which cannot see a lifetime already
/// over). Each lifetime is reported, appeared then removed.
fn raw_names_within_one_read(daemon_uid: bool) {
    use rustix::process::Signal;
    use std::os::unix::ffi::OsStrExt;
    let w = World::new();
    ok(w.run(&["init"]));
    let ck = w.root().join("subc-modules");
    let daemon = w.root().join("daemon/subc-modules");
    std::fs::create_dir_all(&daemon).unwrap();
    let mut l = Lines::start(&w, daemon_uid, &[], &[]);
    l.ready(&ck);
    signal(l.pid(), Signal::STOP);
    let mut expected = Vec::new();
    for (dir, layout) in [(&ck, "ck"), (&daemon, "daemon")] {
        for i in 1..=3 {
            for (bytes, shown) in [
                (format!("ok{i}").into_bytes(), format!("ok{i}")),
                (
                    [b"raw\xfa".as_slice(), i.to_string().as_bytes()].concat(),
                    format!("raw\\xfa{i}"),
                ),
            ] {
                let d = dir.join(std::ffi::OsStr::from_bytes(&bytes));
                std::fs::create_dir(&d).unwrap();
                std::fs::remove_dir(&d).unwrap();
                expected.push((layout, shown));
            }
        }
    }
    signal(l.pid(), Signal::CONT);
    for (layout, name) in &expected {
        for event in ["appeared", "removed"] {
            l.until(&format!("{event} of {layout} {name}"), |v| {
                v["module"] == name.as_str() && v["layout"] == *layout && v["event"] == event
            });
        }
    }
    assert!(
        !l.seen.iter().any(|v| v["event"] == "events_lost"),
        "{:#?}",
        l.seen
    );
}

#[test]
fn raw_names_made_and_removed_within_one_read_are_each_reported_in_both_layouts() {
    raw_names_within_one_read(false);
}

#[test]
fn raw_names_made_and_removed_within_one_read_are_reported_as_the_daemons_uid() {
    raw_names_within_one_read(true);
}

/// An overflow while no module is followed (an empty root): 8,192 of 8,593 lifetimes were
/// reported and nothing said the rest were lost (the loss was said only of modules followed).
/// Now one `events_lost` of all modules, then the rescan.
fn overflow_with_none_followed(daemon_uid: bool) {
    use rustix::process::Signal;
    let w = World::new();
    ok(w.run(&["init"]));
    let mut l = Lines::start(&w, daemon_uid, &[], &[]);
    let ck = w.root().join("subc-modules");
    l.ready(&ck);
    signal(l.pid(), Signal::STOP);
    overflow(&ck);
    signal(l.pid(), Signal::CONT);
    let v = l.until("events_lost of all modules", |v| {
        v["event"] == "events_lost" && v["scope"] == "all modules"
    });
    assert!(v["module"].is_null() && v["name"].is_null(), "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("overflowed")),
        "{v}"
    );
}

#[test]
fn an_overflow_while_no_module_is_followed_says_all_modules_were_lost() {
    overflow_with_none_followed(false);
}

#[test]
fn an_overflow_while_no_module_is_followed_says_so_as_the_daemons_uid() {
    overflow_with_none_followed(true);
}

/// `watch late`, waiting for `late`, while the queue overflows and `late` comes and goes in the
/// part that was lost: it was not reported and nothing said so. Now `events_lost` names it.
fn overflow_while_waiting(daemon_uid: bool) {
    use rustix::process::Signal;
    let w = World::new();
    ok(w.run(&["init"]));
    let mut l = Lines::start(&w, daemon_uid, &[], &["late", "probe"]);
    let ck = w.root().join("subc-modules");
    l.ready(&ck);
    signal(l.pid(), Signal::STOP);
    overflow(&ck);
    // Past the queue's end: its events are the ones dropped.
    std::fs::create_dir(ck.join("late")).unwrap();
    std::fs::remove_dir(ck.join("late")).unwrap();
    signal(l.pid(), Signal::CONT);
    let v = l.until("events_lost of late", |v| lost_of(v, "late"));
    assert_eq!(v["scope"], "named", "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("overflowed")),
        "{v}"
    );
}

#[test]
fn an_overflow_while_watch_waits_for_a_name_says_that_names_lifetimes_were_lost() {
    overflow_while_waiting(false);
}

#[test]
fn an_overflow_while_watch_waits_for_a_name_says_so_as_the_daemons_uid() {
    overflow_while_waiting(true);
}

/// A module of the daemon's uid makes its own directory mode 000 before `watch` (as that uid)
/// starts: its directory cannot be opened, its `emptied` never came and nothing said so. Now
/// `events_lost` names it with EACCES; one hidden after `watch` followed it is said at the read
/// that fails. As root (which reads through mode 000) its lifetime is reported whole.
fn hidden_directory(daemon_uid: bool) {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    ok(w.run(&["init"]));
    common::nobody::delegate_root_to_nobody(&w);
    let ck = w.root().join("subc-modules");
    let (early, later) = (ck.join("early"), ck.join("later"));
    std::fs::create_dir(&early).unwrap();
    std::os::unix::fs::chown(&early, Some(common::nobody::NOBODY), None).unwrap();
    let mut s = sleep_in_dir(&w, &early);
    let chmod = |d: &std::path::Path| {
        // As the module's uid: its own directory.
        let o = common::nobody::as_nobody(&w, "chmod", &["000"], |_| {})
            .arg(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    chmod(&early);
    let mut l = Lines::start(&w, daemon_uid, &[], &[]);
    l.ready(&ck);
    std::fs::create_dir(&later).unwrap();
    std::os::unix::fs::chown(&later, Some(common::nobody::NOBODY), None).unwrap();
    l.until("later appeared", |v| {
        v["module"] == "later" && v["event"] == "appeared"
    });
    chmod(&later);
    let mut t = sleep_in_dir(&w, &later);
    // Read populated (root), or the read refused and said (the module's uid).
    l.until("later populated, or its loss", |v| {
        v["module"] == "later" && (v["event"] == "populated" || v["event"] == "events_lost")
    });
    let _ = s.kill();
    let _ = s.wait();
    let _ = t.kill();
    let _ = t.wait();
    if daemon_uid {
        for m in ["early", "later"] {
            let v = l.until(&format!("events_lost of {m}"), |v| lost_of(v, m));
            assert!(
                v["error"].as_str().is_some_and(|e| e.contains("EACCES")),
                "{v}"
            );
        }
    } else {
        l.until("early emptied", |v| {
            v["module"] == "early" && v["event"] == "emptied"
        });
        l.until("later emptied", |v| {
            v["module"] == "later" && v["event"] == "emptied"
        });
    }
    for d in [&early, &later] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn a_module_that_hides_its_directory_is_said_lost_as_the_daemons_uid() {
    hidden_directory(true);
}

#[test]
fn a_module_that_hides_its_directory_is_reported_whole_to_root() {
    hidden_directory(false);
}

/// Twelve modules, and `watch` with 16 descriptors: a module whose directory could not be opened
/// (EMFILE) was followed blind, `appeared` at most, and nothing said so. Now `events_lost` names
/// it with EMFILE.
fn no_descriptor(daemon_uid: bool) {
    let w = World::new();
    ok(w.run(&["init"]));
    let ck = w.root().join("subc-modules");
    for n in 0..12 {
        std::fs::create_dir(ck.join(format!("m{n:02}"))).unwrap();
    }
    let mut l = Lines::start(&w, daemon_uid, &["prlimit", "--nofile=16:16", "--"], &[]);
    let v = l.until("events_lost with EMFILE", |v| {
        v["event"] == "events_lost" && v["error"].as_str().is_some_and(|e| e.contains("EMFILE"))
    });
    assert!(
        v["module"].as_str().is_some_and(|m| m.starts_with('m')),
        "{v}"
    );
}

#[test]
fn a_module_whose_directory_finds_no_descriptor_is_said_lost() {
    no_descriptor(false);
}

#[test]
fn a_module_whose_directory_finds_no_descriptor_is_said_lost_as_the_daemons_uid() {
    no_descriptor(true);
}

/// Eight modules of nine processes each raise `user.oomd_ooms` at once, `watch` at 64
/// descriptors: the pidfds held for the 10 s checks took every descriptor, and a module that
/// appeared, filled and emptied meanwhile was `appeared` only. Now the checks hold at most a
/// quarter of the limit (each rise past it an `events_lost` that says so), and the new module's
/// lifetime is reported whole.
fn oomd_checks_budgeted(daemon_uid: bool) {
    let w = World::new();
    ok(w.run(&["init"]));
    let ck = w.root().join("subc-modules");
    let mut held = Vec::new();
    for n in 0..8 {
        let d = ck.join(format!("busy{n}"));
        std::fs::create_dir(&d).unwrap();
        for _ in 0..9 {
            held.push(sleep_in_dir(&w, &d));
        }
    }
    let mut l = Lines::start(&w, daemon_uid, &["prlimit", "--nofile=64:64", "--"], &[]);
    l.ready(&ck);
    for n in 0..8 {
        let d = ck.join(format!("busy{n}"));
        rustix::fs::setxattr(&d, "user.oomd_ooms", b"1", rustix::fs::XattrFlags::empty()).unwrap();
    }
    for n in 0..8 {
        let m = format!("busy{n}");
        l.until(&format!("oomd_kill of {m}"), |v| {
            v["module"] == m.as_str() && v["event"] == "oomd_kill"
        });
    }
    // 16 of the 72 held at most: the rest said.
    let v = l.until("events_lost of a check past the budget", |v| {
        v["event"] == "events_lost"
            && v["error"]
                .as_str()
                .is_some_and(|e| e.contains("user.oomd_ooms"))
    });
    assert!(v["error"].as_str().unwrap().contains("at most 16"), "{v}");
    // A module that comes, fills and empties while the checks are held.
    let late = ck.join("late");
    std::fs::create_dir(&late).unwrap();
    l.until("late appeared", |v| {
        v["module"] == "late" && v["event"] == "appeared"
    });
    let mut s = sleep_in_dir(&w, &late);
    l.until("late populated", |v| {
        v["module"] == "late" && v["event"] == "populated"
    });
    let _ = s.kill();
    let _ = s.wait();
    l.until("late emptied", |v| {
        v["module"] == "late" && v["event"] == "emptied"
    });
    assert!(!l.seen.iter().any(|v| lost_of(v, "late")), "{:#?}", l.seen);
    for mut c in held {
        let _ = c.kill();
        let _ = c.wait();
    }
}

#[test]
fn oomd_checks_past_the_descriptor_budget_are_said_lost() {
    oomd_checks_budgeted(false);
}

#[test]
fn a_module_that_appears_while_oomd_checks_are_held_is_reported_whole() {
    oomd_checks_budgeted(true);
}

/// `watch '\xfb\xfc'`, a raw name as `list` shows it, never matched (the red team's report):
/// watch's names are read by the one parser, and match the directory `subc-modules/<fb fc>` and
/// the daemon's `m-<escaped>_<launch>` of that id alike.
fn raw_name_given(daemon_uid: bool) {
    use std::os::unix::ffi::OsStrExt;
    let w = World::new();
    ok(w.run(&["init"]));
    let ck = w.root().join("subc-modules");
    let daemon = w.root().join("daemon/subc-modules");
    std::fs::create_dir_all(&daemon).unwrap();
    let mut l = Lines::start(&w, daemon_uid, &[], &["\\xfb\\xfc", "probe"]);
    l.ready(&ck);
    let raw = ck.join(std::ffi::OsStr::from_bytes(b"\xfb\xfc"));
    // The daemon's spelling of that id at launch 1: m- + escape(escape(id) + "_1").
    let launched = daemon.join("m-_5ffb_5ffc_5f1");
    for d in [&raw, &launched] {
        std::fs::create_dir(d).unwrap();
    }
    let v = l.until("the raw name appeared", |v| {
        v["module"] == "\\xfb\\xfc" && v["layout"] == "ck" && v["event"] == "appeared"
    });
    assert_eq!(v["id"], "\\xfb\\xfc", "{v}");
    let v = l.until("the daemon's directory of it appeared", |v| {
        v["module"] == "m-_5ffb_5ffc_5f1" && v["layout"] == "daemon" && v["event"] == "appeared"
    });
    assert_eq!(v["id"], "\\xfb\\xfc", "{v}");
    for d in [&raw, &launched] {
        std::fs::remove_dir(d).unwrap();
    }
}

#[test]
fn watch_takes_a_raw_name_as_list_shows_it_in_both_layouts() {
    raw_name_given(false);
}

#[test]
fn watch_takes_a_raw_name_as_list_shows_it_as_the_daemons_uid() {
    raw_name_given(true);
}

/// With 14 inotify watches for the modules made after `watch` started, the red team saw 4 of 10
/// modules become populated unreported and nothing said. Every module is now reported populated
/// or named in an `events_lost` with ENOSPC (then nothing of its files is silent). The limit is
/// the kernel's own, set in a user namespace of the test's (`user.max_inotify_watches`, per user
/// and namespace), never the host's sysctl.
fn past_the_watch_limit(daemon_uid: bool) {
    let w = World::new();
    ok(w.run(&["init"]));
    std::fs::create_dir_all(w.root().join("daemon/subc-modules")).unwrap();
    let lower = "echo 14 > /proc/sys/user/max_inotify_watches && exec \"$0\" \"$@\"";
    let wrap = ["unshare", "-U", "-r", "sh", "-c", lower];
    // No user namespaces here (a hardened host): nothing to show.
    let probe = if daemon_uid {
        common::nobody::as_nobody(&w, "unshare", &["-U", "-r", "true"], |_| {}).output()
    } else {
        std::process::Command::new("unshare")
            .args(["-U", "-r", "true"])
            .output()
    };
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("no user namespace to lower the watch limit in: {probe:?}");
        return;
    }
    let mut l = Lines::start(&w, daemon_uid, &wrap, &[]);
    let ck = w.root().join("subc-modules");
    l.ready(&ck);
    let mut held = Vec::new();
    for n in 0..10 {
        let m = format!("m{n}");
        let d = ck.join(&m);
        std::fs::create_dir(&d).unwrap();
        l.until(&format!("{m} appeared"), |v| {
            v["module"] == m.as_str() && v["event"] == "appeared"
        });
        held.push(sleep_in_dir(&w, &d));
    }
    let mut lost = 0;
    for n in 0..10 {
        let m = format!("m{n}");
        let v = l.until(&format!("{m} populated or lost"), |v| {
            v["module"] == m.as_str() && (v["event"] == "populated" || v["event"] == "events_lost")
        });
        if v["event"] == "events_lost" {
            assert!(
                v["error"].as_str().is_some_and(|e| e.contains("ENOSPC")),
                "{v}"
            );
            lost += 1;
        }
    }
    assert!(lost > 0, "the limit was never reached: {:#?}", l.seen);
    for mut c in held {
        let _ = c.kill();
        let _ = c.wait();
    }
}

#[test]
fn modules_past_the_watch_limit_are_each_reported_or_said_lost() {
    past_the_watch_limit(false);
}

#[test]
fn modules_past_the_watch_limit_are_each_reported_or_said_lost_as_the_daemons_uid() {
    past_the_watch_limit(true);
}

/// A module that raises ck-cgroup's stop mark itself and then exits with a code (a red team's
/// shape, as the daemon's uid can): `watch` read the rise as a stop of ck-cgroup's and named it
/// in `emptied`. The kernel's process events (the connector, as root) say how the process
/// ended, and no stop ends one with `exit 1`: a `stop_unconfirmed` event, and `emptied` names
/// no `ck-cgroup`. A real stop (`kill`) still names it.
#[test]
fn a_forged_stop_mark_then_an_exit_code_is_doubted_by_watch() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    let go = w.tmp("go");
    let mut c = w.ck();
    c.args([
        "exec",
        "forger",
        "--",
        "sh",
        "-c",
        &format!(
            "while [ ! -e {} ]; do sleep 0.01; done; exit 1",
            go.display()
        ),
    ]);
    let mut forger = w.exec_placed(c, "forger");
    assert_eq!(watch.wait_for("forger", "populated").event, "populated");
    // What the module does: the mark, then its own exit.
    rustix::fs::setxattr(
        w.root().join("subc-modules/forger"),
        "user.ck_cgroup_stops",
        b"1",
        rustix::fs::XattrFlags::empty(),
    )
    .expect("raise the stop mark");
    std::fs::write(&go, "").unwrap();
    assert_eq!(forger.wait().unwrap().code(), Some(1));
    let doubt = watch.wait_for("forger", "stop_unconfirmed");
    let why = doubt.source.clone().unwrap_or_default();
    assert!(why.contains("exited with code 1"), "{doubt:?}");
    let e = watch.wait_for("forger", "emptied");
    assert_eq!(e.killed_by, Some(vec![]), "{e:?}");
    // A stop of ck-cgroup's: named, not doubted.
    let mut real = w.exec_sleep("stopped");
    assert_eq!(watch.wait_for("stopped", "populated").event, "populated");
    ok(w.run(&["kill", "stopped", "--grace", "5s"]));
    let _ = real.wait();
    let e = watch.wait_for("stopped", "emptied");
    assert_eq!(e.killed_by, Some(vec!["ck-cgroup".to_string()]), "{e:?}");
}
