//! One wait for many modules (`spawn::wait_any`, `spawn::Waiter`) on real modules of a sandbox:
//! the child that ended is the one named, whichever place it has in the set, with or without a
//! PID namespace, and the others still run.

use std::path::PathBuf;
use std::time::Duration;

use ck_cgroup::spawn::{ModuleChild, ModuleCommand, Waiter, wait_any};
use ck_cgroup::stop::StopOptions;
use ck_cgroup::{ModuleId, Root, Sandbox};

/// Long enough for `true` to end on a loaded machine; a wait that misses the end runs it out.
const ENOUGH: Duration = Duration::from_secs(20);

fn parent() -> PathBuf {
    match std::env::var_os("CK_CGROUP_TEST_PARENT") {
        Some(p) => PathBuf::from(p),
        None => Sandbox::default_parent().expect("a parent for sandboxes"),
    }
}

fn spawn(root: &Root, name: &str, script: &str, pidns: bool) -> ModuleChild {
    let mut cmd = ModuleCommand::new("/bin/sh");
    cmd.args(["-c", script]).pid_namespace(pidns);
    root.spawn(&ModuleId::new(name).unwrap(), &cmd)
        .unwrap_or_else(|e| panic!("spawn {name}: {e}"))
}

fn stop_all(root: &Root, children: &mut [&mut ModuleChild]) {
    for c in children.iter_mut() {
        let _ = c.signal(ck_cgroup::Signal::KILL);
        let _ = root.reap(c, &StopOptions::default());
    }
}

fn names_the_child_that_ended(pidns: bool) {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let mut a = spawn(&root, "a", "exec sleep 60", pidns);
    let mut b = spawn(&root, "b", "exit 7", pidns);
    let mut c = spawn(&root, "c", "exec sleep 60", pidns);
    let ended = {
        let mut set = [&mut a, &mut b, &mut c];
        wait_any(&mut set, Some(ENOUGH)).unwrap()
    };
    let ended = ended.expect("the second child's end ended the wait");
    assert_eq!(ended.index, 1, "{ended:?}");
    assert_eq!(ended.status.code(), Some(7));
    assert_eq!(a.try_wait().unwrap(), None, "the first child still runs");
    assert_eq!(c.try_wait().unwrap(), None, "the third child still runs");
    // The status was kept: the death report reads the same.
    let r = root.reap(&mut b, &StopOptions::default()).unwrap();
    assert_eq!(r.death.exit_code, Some(7));
    a.signal(ck_cgroup::Signal::KILL).unwrap();
    let ended = {
        let mut set = [&mut a, &mut c];
        wait_any(&mut set, Some(ENOUGH)).unwrap()
    };
    assert_eq!(ended.map(|e| e.index), Some(0));
    stop_all(&root, &mut [&mut a, &mut c]);
}

#[test]
fn wait_any_names_the_child_that_ended_not_the_first() {
    names_the_child_that_ended(false);
}

#[test]
fn wait_any_names_the_child_that_ended_in_a_pid_namespace() {
    names_the_child_that_ended(true);
}

#[test]
fn wait_any_gives_none_after_its_timeout_and_refuses_an_endless_wait_on_nothing() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let mut a = spawn(&root, "a", "exec sleep 60", false);
    let ended = wait_any(&mut [&mut a], Some(Duration::from_millis(50))).unwrap();
    assert_eq!(ended, None);
    assert_eq!(wait_any(&mut [], Some(Duration::ZERO)).unwrap(), None);
    let e = wait_any(&mut [], None).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    stop_all(&root, &mut [&mut a]);
}

#[test]
fn a_waiter_hands_back_each_child_as_it_ends_then_none() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let mut waiter = Waiter::new();
    // The last one inserted ends first; the first one ends only when told to.
    let gate = tempfile::tempdir().unwrap();
    let go = gate.path().join("go");
    let wait_go = format!(
        "while [ ! -e {} ]; do sleep 0.05; done; exit 3",
        go.display()
    );
    waiter.insert("slow", spawn(&root, "slow", &wait_go, false));
    waiter.insert("ns", spawn(&root, "ns", "exec sleep 60", true));
    waiter.insert("quick", spawn(&root, "quick", "exit 5", false));
    let (key, mut child) = waiter.wait(Some(ENOUGH)).unwrap().expect("quick ended");
    assert_eq!(key, "quick");
    assert_eq!(child.wait().unwrap().code(), Some(5));
    let _ = root.reap(&mut child, &StopOptions::default());
    assert_eq!(waiter.len(), 2);
    assert_eq!(waiter.exit_fds().count(), 2);
    std::fs::write(&go, "").unwrap();
    let (key, mut child) = waiter.wait(Some(ENOUGH)).unwrap().expect("slow ended");
    assert_eq!(key, "slow");
    assert_eq!(child.wait().unwrap().code(), Some(3));
    let _ = root.reap(&mut child, &StopOptions::default());
    let mut ns = waiter.remove(&"ns").expect("ns is held");
    assert!(waiter.is_empty());
    assert!(waiter.wait(None).unwrap().is_none(), "an empty waiter ends");
    ns.signal(ck_cgroup::Signal::TERM).unwrap();
    let _ = root.reap(&mut ns, &StopOptions::default());
}
