//! No hang: a spawn under a frozen ancestor of its module is refused at once
//! in one line naming the frozen cgroup, and a `thaw` or `freeze` whose module a `kill` removes
//! answers at once. Mutation controls: `spawn-into-frozen`, `freeze-blind-to-removal`.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::nobody::ck_as_nobody;
use common::*;

/// The count of read calls of process `pid` (`syscr` of `/proc/PID/io`), `None` where the
/// kernel keeps no such count.
fn reads(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("syscr: "))
        .and_then(|n| n.trim().parse().ok())
}

/// Wait until process `pid` sleeps in `poll` and has made no read call for 300 ms (30 times the
/// kernel's 10 ms hold-back of a `cgroup.events` notification), at most 60 s (scaled).
fn settled(pid: u32) {
    let wchan = format!("/proc/{pid}/wchan");
    let polling = || std::fs::read_to_string(&wchan).is_ok_and(|s| s.contains("poll"));
    let deadline = Instant::now() + scaled(Duration::from_secs(60));
    let mut quiet = 0;
    let mut last = None;
    while quiet < 3 {
        assert!(
            Instant::now() < deadline,
            "process {pid} never settled in poll (wchan {:?}, reads {last:?})",
            std::fs::read_to_string(&wchan).unwrap_or_else(|e| format!("unreadable: {e}"))
        );
        std::thread::sleep(Duration::from_millis(100));
        let now = reads(pid);
        quiet = if polling() && now == last {
            quiet + 1
        } else {
            0
        };
        last = now;
    }
}

/// `exec` and `run` of a new module while `subc-modules/` was frozen hung (10 to 13 s
/// until killed, and `run` ignored TERM): the new module was frozen from birth. With
/// `subc-modules/` or the root frozen, both are refused (exit 1, one line naming the frozen
/// cgroup), as root and as a delegated user, and nothing is made.
#[test]
fn exec_and_run_of_a_new_module_under_a_frozen_ancestor_are_refused_at_once() {
    let w = World::new();
    for frozen in ["subc-modules", ""] {
        let freeze = w.root().join(frozen).join("cgroup.freeze");
        std::fs::write(&freeze, "1").unwrap();
        let mut cases: Vec<(&str, Command)> = vec![
            ("exec", {
                let mut c = w.ck();
                c.args(["exec", "new", "--", "true"]);
                c
            }),
            ("run", {
                let mut c = w.ck();
                c.args(["run", "new", "--", "true"]);
                c
            }),
        ];
        if !frozen.is_empty() {
            // Started in the root's daemon/, which a frozen root freezes with it.
            cases.push((
                "exec as nobody",
                ck_as_nobody(&w, &["exec", "new", "--", "true"]),
            ));
        }
        for (what, mut cmd) in cases {
            let mut c = cmd
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let status = wait_at_most(&mut c, Duration::from_secs(20));
            let mut err = String::new();
            std::io::Read::read_to_string(c.stderr.as_mut().unwrap(), &mut err).unwrap();
            assert!(
                status.is_some(),
                "{what} under frozen {frozen:?} hung: {err}"
            );
            assert_eq!(
                status.unwrap().code(),
                Some(1),
                "{what} under {frozen:?}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{what}: {err}");
            let named = if frozen.is_empty() {
                w.root().to_path_buf()
            } else {
                w.root().join(frozen)
            };
            assert!(
                err.contains(&format!("{} is frozen", named.display())),
                "{what} under {frozen:?}: {err}"
            );
            std::fs::write(&freeze, "0").unwrap();
            assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "{what}");
            std::fs::write(&freeze, "1").unwrap();
        }
        std::fs::write(&freeze, "0").unwrap();
    }
    // Thawed, the same commands run.
    ok(w.run(&["run", "new", "--", "true"]));
}

/// `freeze` racing a `kill` that removes the module waited out its whole `--timeout`:
/// a poll on `cgroup.events` is woken by a change of the file, and a removal is none. Here a
/// `thaw` that cannot end (an ancestor holds the empty module frozen) waits with a 120 s
/// timeout; the module is removed (`remove`: no event of `cgroup.events`), and the `thaw`
/// answers at once: exit 1, the module is gone.
///
/// The module is empty from the start: a process killed while frozen leaves the freezer first,
/// so `cgroup.events` says `frozen 0` for a moment, and a thaw that reads it then has reached
/// its goal and ends (CI saw it, under load).
#[test]
fn thaw_racing_a_kill_that_removes_the_module_answers_at_once() {
    let w = World::new();
    ok(w.run(&["create", "fz"]));
    let events = w.root().join("subc-modules/fz/cgroup.events");
    let ancestor = w.root().join("subc-modules/cgroup.freeze");
    std::fs::write(&ancestor, "1").unwrap();
    eventually("the module frozen by its ancestor", || {
        std::fs::read_to_string(&events).is_ok_and(|s| s.contains("frozen 1"))
    });
    let mut thaw = w
        .ck()
        .args(["thaw", "fz", "--timeout", "120s"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The thaw waits in its poll (it cannot end while the ancestor is frozen). The kernel may
    // hold a change of `cgroup.events` back (it wakes pollers at most once per 10 ms and sends
    // the rest from a timer): such a late wake after the removal below would end the thaw
    // without the watch for the removal, and the mutation control pass. So the thaw must be
    // settled: in its poll, with no read of the file for a while.
    settled(thaw.id());
    assert!(
        thaw.try_wait().unwrap().is_none(),
        "thaw ended before the removal"
    );
    ok(w.run(&["remove", "fz"]));
    let status = wait_at_most(&mut thaw, Duration::from_secs(30));
    std::fs::write(&ancestor, "0").unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(thaw.stderr.as_mut().unwrap(), &mut err).unwrap();
    let status = status.unwrap_or_else(|| panic!("thaw waited on after its module was removed"));
    // The one rule for a module that is not there (tests/missing_module.rs): exit 1.
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("no module fz"), "{err}");
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}
