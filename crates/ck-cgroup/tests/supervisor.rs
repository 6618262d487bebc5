//! The death report as a supervisor charges its restart budget by it, on a real cgroup: the
//! example supervisor (`examples/supervisor.rs`) driven through each cause this host can make for
//! real. A crash and an exit with a code are charged; systemd-oomd's kill at an ancestor (its
//! mark `user.oomd_ooms` rising there, as systemd-oomd leaves it, and the process SIGKILLed) and
//! a stop of ck-cgroup's (an operator's `kill` while the supervisor waits) are not. Where the
//! memory controller is off (this host), a bare SIGKILL's cause is unknown and says why: never
//! "not OOM". An ancestor's memory limit needs the memory controller: lane 2's check
//! `62-oom-cause` makes one for real (`run --json`'s death); here the counters' logic is
//! unit-tested (`cause::death_cause`).

#[path = "../examples/supervisor.rs"]
#[allow(dead_code)]
mod supervisor;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ck_cgroup::cause::death_cause::Cause;
use ck_cgroup::spawn::ModuleCommand;
use ck_cgroup::stop::StopOptions;
use ck_cgroup::{ModuleId, Root, Sandbox};
use supervisor::Supervisor;

fn parent() -> PathBuf {
    match std::env::var_os("CK_CGROUP_TEST_PARENT") {
        Some(p) => PathBuf::from(p),
        None => ck_cgroup::discover::cgroup2_mount().expect("a cgroup2 mount"),
    }
}

fn sh(script: &str) -> ModuleCommand {
    let mut c = ModuleCommand::new("/bin/sh");
    c.args(["-c", script]);
    c
}

/// Whether the modules have the memory controller (not on this hybrid host).
fn has_memory(root: &Root) -> bool {
    std::fs::read_to_string(root.path().join("subc-modules/cgroup.subtree_control"))
        .unwrap_or_default()
        .split_whitespace()
        .any(|c| c == "memory")
}

/// Set a counter xattr on a directory, as systemd-oomd marks the cgroup it killed.
fn mark(dir: &Path, name: &str, n: u64) {
    rustix::fs::setxattr(
        dir,
        name,
        n.to_string().as_bytes(),
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap_or_else(|e| panic!("setxattr {name} on {}: {e}", dir.display()));
}

/// The pid in the first line the module's process writes to `file` (`echo $$`), waited for.
fn pid_from(file: &Path) -> i32 {
    for _ in 0..500 {
        if let Some(p) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return p;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the module never wrote its pid to {}", file.display());
}

/// `ck-cgroup kill`'s stop without `--grace`: SIGKILL at once.
fn stop_now() -> StopOptions {
    StopOptions::kill(Duration::from_secs(10))
}

fn supervisor(sb: &Sandbox) -> Supervisor {
    Supervisor::new(Root::open(sb.path()).unwrap())
}

#[test]
fn a_crash_and_an_exit_code_are_charged_and_a_clean_exit_is_not() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let mut sup = supervisor(&sb);
    let id = ModuleId::new("crasher").unwrap();
    // SIGSEGV, three times: the budget is spent and it is not started again.
    let cmd = sh("kill -SEGV $$");
    assert!(sup.run_once(&id, &cmd).unwrap());
    assert!(sup.run_once(&id, &cmd).unwrap());
    assert!(!sup.run_once(&id, &cmd).unwrap());
    assert_eq!(sup.charged[&id], 3);
    let id = ModuleId::new("exit3").unwrap();
    let mut child = sup.root.spawn(&id, &sh("exit 3")).unwrap();
    let r = sup.root.reap(&mut child, &StopOptions::default()).unwrap();
    assert_eq!(r.death.cause, Cause::Exited { code: 3 });
    assert_eq!(r.death.charged, Some(true));
    assert!(r.stop.ok() && r.stop.removed, "{:?}", r.stop);
    let id = ModuleId::new("clean").unwrap();
    assert!(!sup.run_once(&id, &sh("true")).unwrap());
    assert_eq!(sup.charged[&id], 0);
}

#[test]
fn the_processes_it_left_are_named_and_stopped_with_the_module() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let sup = supervisor(&sb);
    let id = ModuleId::new("leaver").unwrap();
    let mut child = sup
        .root
        .spawn(&id, &sh("sleep 600 & echo $! > /dev/null; exit 1"))
        .unwrap();
    let r = sup.root.reap(&mut child, &StopOptions::default()).unwrap();
    assert_eq!(r.death.cause, Cause::Exited { code: 1 });
    let left = r.death.survivors.clone().expect("listed");
    assert_eq!(left.len(), 1, "{:?}", r.death);
    // The default stop: TERM reached the one it left, which ended in the grace.
    assert!(r.stop.ok() && r.stop.tree.signalled == 1, "{:?}", r.stop);
    assert!(!sb.path().join("subc-modules/leaver").exists());
}

#[test]
fn systemd_oomds_kill_at_an_ancestor_is_not_charged() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let mut sup = supervisor(&sb);
    let id = ModuleId::new("victim").unwrap();
    let pidfile = std::env::temp_dir().join(format!("ck-victim-{}", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let cmd = sh(&format!("echo $$ > {}; exec sleep 600", pidfile.display()));
    std::thread::scope(|s| {
        let oomd = s.spawn(|| {
            let pid = pid_from(&pidfile);
            // systemd-oomd's kill of subc-modules/: its mark rises, then SIGKILL.
            mark(&sb.path().join("subc-modules"), "user.oomd_ooms", 1);
            rustix::process::kill_process(
                rustix::process::Pid::from_raw(pid).unwrap(),
                rustix::process::Signal::KILL,
            )
            .unwrap();
        });
        assert!(sup.run_once(&id, &cmd).unwrap(), "restarted");
        oomd.join().unwrap();
    });
    let _ = std::fs::remove_file(&pidfile);
    assert_eq!(sup.charged[&id], 0, "an ancestor's oomd kill was charged");
    // The report itself names the ancestor.
    let mut child = sup.root.spawn(&id, &cmd).unwrap();
    let pid = pid_from(&pidfile);
    mark(sb.path(), "user.oomd_ooms", 1);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let r = sup.root.reap(&mut child, &StopOptions::default()).unwrap();
    assert_eq!(
        r.death.cause,
        Cause::Oomd {
            ancestor: Some(sb.path().display().to_string())
        }
    );
    assert_eq!(r.death.signal.as_deref(), Some("SIGKILL"));
    let _ = std::fs::remove_file(&pidfile);
}

#[test]
fn an_operators_stop_is_not_charged_even_when_it_removed_the_module_first() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let mut sup = supervisor(&sb);
    let id = ModuleId::new("stopped").unwrap();
    let pidfile = std::env::temp_dir().join(format!("ck-stopped-{}", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let cmd = sh(&format!("echo $$ > {}; exec sleep 600", pidfile.display()));
    let operator = Root::open(sb.path()).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let _pid = pid_from(&pidfile);
            // `ck-cgroup kill stopped`, as an operator runs it (the supervisor's own stop may
            // remove the module first: both are fine).
            // SIGKILL at once, as `ck-cgroup kill` without --grace.
            let r = operator.stop("stopped", &stop_now()).unwrap();
            assert!(r.ok(), "{r:?}");
        });
        // Stopped on purpose: not started again.
        assert!(!sup.run_once(&id, &cmd).unwrap());
    });
    assert_eq!(sup.charged[&id], 0, "the operator's stop was charged");
    // The stop removed the module before the death was read: its mark is read through the
    // directory the spawn held.
    let _ = std::fs::remove_file(&pidfile);
    let mut child = sup.root.spawn(&id, &cmd).unwrap();
    let _pid = pid_from(&pidfile);
    let op = operator.stop("stopped", &stop_now()).unwrap();
    assert!(op.removed, "{op:?}");
    let r = sup.root.reap(&mut child, &StopOptions::default()).unwrap();
    assert_eq!(r.death.cause, Cause::Stopped, "{:?}", r.death);
    assert_eq!(r.death.survivors, Some(vec![]));
    // The operator's stop was this process's: the reap reports it whole, not "already gone".
    assert!(r.stop.removed && !r.stop.already_gone, "{:?}", r.stop);
    assert_eq!(r.stop.tree.killed, op.tree.killed, "{:?}", r.stop);
    let _ = std::fs::remove_file(&pidfile);
}

#[test]
fn a_reused_directory_does_not_carry_an_earlier_death_into_this_one() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let id = ModuleId::new("reused").unwrap();
    let _made = root.create(&id).unwrap();
    let dir = sb.path().join("subc-modules/reused");
    // Marks of earlier lives: a stop of ours and a systemd-oomd kill.
    mark(&dir, "user.ck_cgroup_stops", 2);
    mark(&dir, "user.oomd_ooms", 1);
    let mut child = root.spawn(&id, &sh("kill -SEGV $$")).unwrap();
    let r = root.reap(&mut child, &StopOptions::default()).unwrap();
    assert_eq!(
        r.death.cause,
        Cause::Signal {
            signal: "SIGSEGV".into()
        }
    );
}

#[test]
fn a_bare_sigkill_without_the_memory_controller_is_unknown_and_says_why() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    if has_memory(&root) {
        eprintln!("the memory controller is on: lane 2's 62-oom-cause covers this host");
        return;
    }
    let id = ModuleId::new("bare").unwrap();
    let mut child = root.spawn(&id, &sh("kill -KILL $$")).unwrap();
    let r = root.reap(&mut child, &StopOptions::default()).unwrap();
    let Cause::Unknown { why } = &r.death.cause else {
        panic!("{:?}", r.death);
    };
    assert!(why.contains("memory.events"), "{why}");
    assert_eq!(r.death.charged, None);
    // The JSON a supervisor logs parses back into the library's own type.
    let text = serde_json::to_string(&r.death).unwrap();
    assert!(text.contains(r#""cause":{"kind":"unknown""#), "{text}");
    let back: ck_cgroup::module::Death = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r.death);
}

/// The example's binary, built beside this test (`cargo build --all-targets`, what `make test`
/// runs first): `target/<profile>/examples/supervisor`.
fn example_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    Some(profile.join("examples/supervisor")).filter(|p| p.exists())
}

/// The example runs end to end: three modules at once from one thread, in a sandbox of its own
/// under the tests' parent. The crasher spends its budget (3 in a minute) and is given up, the
/// flaky one is charged its two failures and not its clean exit, the one an operator stops is
/// not charged and not started again. The flaky module's last run ends only once the steady
/// one was stopped: a supervisor that ran them one after another never gets there, and is
/// killed after a minute. A fourth module raises its own stop mark before each crash: the mark is
/// not believed, and it is charged as the crasher is.
#[test]
fn the_supervisor_example_runs_three_modules_at_once_and_charges_only_their_faults() {
    let Some(bin) = example_binary() else {
        ck_testkit::skip(
            "the supervisor example is not built beside this test: `cargo build -p ck-cgroup --examples` (make test builds it)",
        );
        return;
    };
    let mut child = std::process::Command::new(&bin)
        .arg(parent())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the supervisor example did not end within a minute: it does not run its modules at once"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    assert!(status.success(), "{status}\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    let at = |want: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(want))
            .unwrap_or_else(|| panic!("no line {want:?} in:\n{out}"))
    };
    for want in [
        "crasher: 3 charged",
        "flaky: 2 charged",
        "steady: 0 charged",
        // It raised the stop mark before each crash: not believed, charged as a crash.
        "forger: 3 charged",
    ] {
        assert!(lines.contains(&want), "no line {want:?} in:\n{out}");
    }
    at("crasher: Signal { signal: \"SIGSEGV\" }; charged true, 3 of 3 this minute; done");
    let stopped = at("steady: Stopped; charged false, 0 of 3 this minute; done");
    let clean = at("flaky: Exited { code: 0 }; charged false");
    assert!(
        stopped < clean,
        "flaky ended before steady was stopped:\n{out}"
    );
    at("forger: Signal { signal: \"SIGSEGV\" }; charged true, 3 of 3 this minute; done");
    assert_eq!(
        lines.iter().filter(|l| l.contains("restart")).count(),
        6,
        "two restarts each of crasher, flaky and forger:\n{out}"
    );
}
