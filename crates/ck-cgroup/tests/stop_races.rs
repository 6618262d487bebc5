//! Stops that race end right: `Root::stop` of one module from several threads at once, each
//! round a module with a process in it and a child of that process. Every stop succeeds (the
//! ones that lose the race say "already gone"), at least one removed the module, and nothing
//! is left. A stop that lost the race reads the module's files while the winner removes them:
//! the kernel answers `ENODEV` for a file of a directory being removed, and `ENOENT` for a path
//! beneath it, and either is the module gone, never a failed stop (`make test` under load saw
//! `failed to open .../subc-modules/twice/cgroup.events: ENODEV`, exit 1, once). And `status`
//! beside a stop: never an error, never a row of a module that went while it was read.
//!
//! Threads, not processes, so that many rounds stay cheap: the binary's few rounds are in
//! tests/teardown.rs.

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use ck_cgroup::spawn::ModuleCommand;
use ck_cgroup::stop::StopOptions;
use ck_cgroup::{ModuleId, Root, Sandbox};

fn parent() -> PathBuf {
    match std::env::var_os("CK_CGROUP_TEST_PARENT") {
        Some(p) => PathBuf::from(p),
        None => ck_cgroup::discover::cgroup2_mount().expect("a cgroup2 mount"),
    }
}

/// Wait (at most 10 s) until `procs` lists at least `n` processes.
fn holds(procs: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let count = std::fs::read_to_string(procs).map_or(0, |t| t.lines().count());
        if count >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held {n} processes ({count})",
            procs.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `rounds` times: a module holding a shell and its child, stopped by `stoppers` threads at
/// once; every stop must succeed, one must have removed it, and nothing may be left. The
/// threads' stops are joined into one (`module::stop_once`); the race of two processes' stops
/// over one directory is `tests/teardown.rs`'s.
fn concurrent_stops(stoppers: usize, rounds: usize) {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).expect("the sandbox's root");
    let id = ModuleId::new("raced").unwrap();
    let modules = sb.path().join("subc-modules");
    let dir = modules.join("raced");
    let opts = StopOptions::kill(Duration::from_secs(10));
    for round in 0..rounds {
        let mut cmd = ModuleCommand::new("/bin/sh");
        // A process (the shell) and its child (the sleep it forked).
        cmd.args(["-c", "sleep 600 & wait"]);
        let mut child = root.spawn(&id, &cmd).expect("spawn");
        holds(&dir.join("cgroup.procs"), 2);
        let barrier = Barrier::new(stoppers);
        let results: Vec<_> = std::thread::scope(|s| {
            let each: Vec<_> = (0..stoppers)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        root.stop("raced", &opts)
                    })
                })
                .collect();
            each.into_iter()
                .map(|h| h.join().expect("a stop thread panicked"))
                .collect()
        });
        let mut removed = 0;
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Ok(r) => {
                    assert!(r.ok(), "round {round}, stop {i}: not ok: {r:?}");
                    if r.removed {
                        removed += 1;
                    }
                }
                Err(e) => panic!(
                    "round {round}, stop {i} of {stoppers} at once failed: {e} ({:?})",
                    e.errno()
                ),
            }
        }
        assert!(
            removed >= 1,
            "round {round}: none of {stoppers} stops removed it"
        );
        let _ = child.wait();
        assert!(!dir.exists(), "round {round}: {} is left", dir.display());
        let left: Vec<_> = std::fs::read_dir(&modules)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name())
            .collect();
        assert!(
            left.is_empty(),
            "round {round}: left in subc-modules: {left:?}"
        );
    }
}

#[test]
fn two_concurrent_stops_of_one_module_all_succeed_and_leave_nothing() {
    concurrent_stops(2, 100);
}

#[test]
fn ten_concurrent_stops_of_one_module_all_succeed_and_leave_nothing() {
    concurrent_stops(10, 100);
}

/// `Root::status` (every module, and the module by name) while the module is being stopped:
/// it never fails, and the module is either shown as read while it was there (its
/// `cgroup.events` read: `populated` known) or left out; never a row of a module that went
/// while it was read (every figure unknown). By name, after the stop removed it, the one
/// error is that there is no such module.
#[test]
fn status_of_a_module_being_stopped_shows_it_read_or_leaves_it_out() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).expect("the sandbox's root");
    let id = ModuleId::new("raced").unwrap();
    let dir = sb.path().join("subc-modules/raced");
    for round in 0..30 {
        let mut cmd = ModuleCommand::new("/bin/sh");
        cmd.args(["-c", "sleep 600 & wait"]);
        let mut child = root.spawn(&id, &cmd).expect("spawn");
        holds(&dir.join("cgroup.procs"), 2);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let readers: Vec<_> = [&[][..], &["raced"][..]]
                .into_iter()
                .map(|names| {
                    let (root, done) = (&root, &done);
                    s.spawn(move || {
                        let mut reads = 0;
                        while reads == 0 || !done.load(std::sync::atomic::Ordering::SeqCst) {
                            reads += 1;
                            match root.status(names) {
                                Ok(rows) => {
                                    for r in rows.iter().filter(|r| r.name == "raced") {
                                        assert!(
                                            r.populated.value.is_some(),
                                            "round {round}: a row of a module that went while \
                                             it was read: {r:?}"
                                        );
                                    }
                                }
                                Err(e)
                                    if !names.is_empty()
                                        && e.kind() == ck_cgroup::ErrorKind::NoSuchModule => {}
                                Err(e) => panic!("round {round}: status {names:?}: {e}"),
                            }
                        }
                    })
                })
                .collect();
            let stopped = root.stop("raced", &StopOptions::kill(Duration::from_secs(10)));
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            for r in readers {
                r.join().expect("a status thread panicked");
            }
            assert!(stopped.is_ok_and(|r| r.ok()), "round {round}");
        });
        let _ = child.wait();
    }
}

/// A wait on `cgroup.events` whose cgroup another process removes ends then, not at its
/// timeout: kernfs wakes no poller at an `rmdir`, and the kernel's deferred `populated 0` event
/// (at most one per 10 ms) is lost with the cgroup, so a stop whose module a supervisor's reap
/// removed during its grace waited the whole grace (10 s of a default stop). Here the condition
/// never holds (`frozen 1` of a cgroup nobody freezes), so only the removal can end the wait.
#[test]
fn a_wait_on_a_cgroup_ends_when_another_process_removes_it() {
    use ck_cgroup::cgroup::wait::{Waited, wait_events};
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let dir = ck_cgroup::CgroupDir::open(sb.path()).expect("the sandbox");
    let x = sb.path().join("subc-modules/x");
    std::fs::create_dir(&x).unwrap();
    let start = Instant::now();
    let waited = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            std::fs::remove_dir(&x).expect("rmdir x");
        });
        wait_events(&dir, "subc-modules/x", Duration::from_secs(60), |e| {
            e.frozen == Some(true)
        })
    });
    // At its timeout the wait reads the removed cgroup's file (ENODEV) and says Empty too:
    // only its time tells the removal's wake from the timeout's (60 s; 30 s is room for load).
    let took = start.elapsed();
    assert_eq!(waited.expect("the wait"), Waited::Empty);
    assert!(
        took < Duration::from_secs(30),
        "the removal did not end the wait: it ran {took:.1?} of its 60 s"
    );
}

/// A stop from one thread while another reaps the same module (a supervisor's operator thread
/// beside its reap): both reports are the whole stop, the same one (before, one said "killed 3"
/// and the other "killed 0"). The processes ignore TERM, so the stop's grace runs out and its
/// SIGKILL ends the main process: the reap's stop comes while that stop runs (it waits for it)
/// or after it removed the module (it takes its report).
#[test]
fn a_stop_beside_a_reap_of_one_module_reports_the_whole_stop() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).expect("the sandbox's root");
    let id = ModuleId::new("halves").unwrap();
    let dir = sb.path().join("subc-modules/halves");
    let mut cmd = ModuleCommand::new("/bin/sh");
    cmd.args(["-c", "trap '' TERM; sleep 600 & sleep 600 & wait"]);
    let mut child = root.spawn(&id, &cmd).expect("spawn");
    holds(&dir.join("cgroup.procs"), 3);
    let opts = StopOptions {
        grace: Duration::from_millis(300),
        ..StopOptions::default()
    };
    let (reaped, stopped) = std::thread::scope(|s| {
        let stopper = s.spawn(|| root.stop(&id, &opts));
        let reaped = root.reap(&mut child, &opts);
        (reaped, stopper.join().expect("the stop thread"))
    });
    let s = stopped.expect("the stop");
    let r = reaped.expect("the reap").stop;
    assert!(s.ok() && s.removed, "{s:?}");
    assert!(
        r.ok() && r.removed && !r.already_gone,
        "the reap's half: {r:?}"
    );
    assert_eq!(
        (r.tree.signalled, r.tree.killed),
        (s.tree.signalled, s.tree.killed),
        "two halves: {r:?} and {s:?}"
    );
    assert_eq!(s.tree.signalled, 3, "{s:?}");
    assert!(!dir.exists());
}
