//! `kill` and `remove` take the module's directory away (again and again: a second `kill` says
//! `already_gone`), `remove` refuses a populated module naming `kill`, and `kill` refuses the
//! module that holds its caller. Mutation controls `no-kill`, `no-rmdir`.

use crate::common::*;
use ck_cgroup::module::{RemoveReport, StopReport};

use crate::common::strict::strictly;

#[test]
fn kill_removes_the_directory_and_is_repeatable() {
    let w = World::new();
    let mut c = w.exec_sleep("k");
    ok(w.run(&["kill", "--timeout", "3s", "k"]));
    c.wait().unwrap();
    assert!(!w.root().join("subc-modules/k").exists(), "directory left");
    let again = ok(w.run(&["--json", "kill", "--timeout", "3s", "k"]));
    let k: StopReport = strictly(&again);
    assert!(k.already_gone);
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

#[test]
fn remove_empty_module_leaves_no_directory() {
    let w = World::new();
    ok(w.run(&["create", "empty"]));
    ok(w.run(&["create", "empty"])); // idempotent
    assert!(w.root().join("subc-modules/empty").is_dir());
    let r: RemoveReport = strictly(&ok(w.run(&["--json", "remove", "empty"])));
    assert!(r.removed);
    assert!(
        !w.root().join("subc-modules/empty").exists(),
        "directory left"
    );
}

#[test]
fn remove_refuses_a_populated_module_and_says_what_to_run() {
    let w = World::new();
    let mut c = w.exec_sleep("busy");
    let o = w.run(&["remove", "busy"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("1 process in"), "{e}");
    assert!(e.contains("ck-cgroup kill busy"), "{e}");
    assert!(w.root().join("subc-modules/busy").is_dir());
    ok(w.run(&["kill", "--timeout", "3s", "busy"]));
    c.wait().unwrap();
}

#[test]
fn kill_refuses_the_module_that_holds_the_caller() {
    let w = World::new();
    let root = w.root().display().to_string();
    let o = w.run(&["exec", "self", "--", bin(), "--root", &root, "kill", "self"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds this process"), "{}", stderr(&o));
}

/// A stop that may not touch the module (the delegated user's helper, a module of root's): each
/// method is refused at once (EACCES on `cgroup.kill` and `cgroup.freeze`, EPERM on the
/// signal), and the stop said so only after waiting out its whole `--timeout`. It ends at once,
/// exit 1, naming each refusal; the process is left as it was.
#[test]
fn a_stop_refused_by_permission_ends_at_once_naming_the_errno() {
    use crate::common::nobody::ck_as_nobody;
    let w = World::new();
    ok(w.run(&["init"]));
    let mut held = sleep_in_dir(&w, &w.root().join("subc-modules/theirs"));
    let o = ck_as_nobody(&w, &["--json", "kill", "theirs", "--timeout", "60s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r: ck_cgroup::module::StopReport =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|_| panic!("{}", stdout(&o)));
    assert!(r.tree.method.is_none(), "{r:?}");
    let reasons: Vec<&str> = r
        .tree
        .fell_through
        .iter()
        .map(|f| f.reason.as_str())
        .collect();
    assert!(reasons.iter().any(|x| x.contains("EPERM")), "{reasons:?}");
    assert!(
        r.tree.waited_ms < 30_000.0,
        "it waited out the timeout: {} ms",
        r.tree.waited_ms
    );
    assert!(alive(held.id()));
    ok(w.run(&["kill", "theirs"]));
    held.wait().unwrap();
}
