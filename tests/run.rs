//! `run`: the helper stays as the module's parent, relays signals, and takes the tree down when
//! CMD exits.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use common::*;

#[test]
fn run_returns_the_exit_code_and_the_death_signal_unchanged() {
    let w = World::new();
    let o = w.run(&["run", "code", "--", "sh", "-c", "exit 3"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = w.run(&["run", "sig", "--", "sh", "-c", "kill -USR1 $$"]);
    assert_eq!(
        o.status.signal(),
        Some(rustix::process::Signal::USR1.as_raw()),
        "{:?}",
        o.status
    );
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

#[test]
fn run_takes_down_the_grandchild_cmd_left_behind() {
    let w = World::new();
    let gc = w.tmp("gc.pid");
    let script = format!(
        "sleep 600 >/dev/null 2>&1 & echo $! > {}; exit 0",
        gc.display()
    );
    let o = w.run(&["run", "leaver", "--", "sh", "-c", &script]);
    let gc = w.pid_from("gc.pid");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!alive(gc), "the grandchild {gc} survived run");
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "module left");
}

#[test]
fn term_sent_to_run_reaches_cmd() {
    let w = World::new();
    let got = w.tmp("got-term");
    let script = format!(
        "trap 'echo term > {g}; exit 4' TERM; echo $$ > {r}; sleep 5 & wait",
        g = got.display(),
        r = w.tmp("ready").display()
    );
    let mut run = w
        .ck()
        .args(["run", "relay", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(run.id());
    w.pid_from("ready");
    let pid = rustix::process::Pid::from_raw(run.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = run.wait().unwrap();
    assert!(got.exists(), "CMD did not get the TERM sent to run");
    assert_eq!(status.code(), Some(4));
}

#[test]
fn sigkill_of_run_takes_cmd_with_it() {
    let w = World::new();
    let script = format!("echo $$ > {}; exec sleep 600", w.tmp("cmd.pid").display());
    let mut run = w
        .ck()
        .args(["run", "orphaned", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(run.id());
    let cmd = w.pid_from("cmd.pid");
    run.kill().unwrap();
    run.wait().unwrap();
    eventually("CMD to die with run", || !alive(cmd));
    // What the dead helper could not remove, prune finds.
    std::thread::sleep(Duration::from_millis(10));
    ok(w.run(&["prune", "--kill"]));
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}
