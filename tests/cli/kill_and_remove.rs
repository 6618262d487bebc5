//! `kill` and `remove` take the module's directory away (again and again: a second `kill` says
//! `already_gone`), `remove` refuses a populated module naming `kill`, and `kill` refuses the
//! module that holds its caller. Mutation controls `no-kill`, `no-rmdir`.

use crate::common::*;
use crate::shapes::{Kill, Remove};

#[test]
fn kill_removes_the_directory_and_is_repeatable() {
    let w = World::new();
    let mut c = w.exec_sleep("k");
    ok(w.run(&["kill", "--timeout", "3s", "k"]));
    c.wait().unwrap();
    assert!(!w.root().join("subc-modules/k").exists(), "directory left");
    let again = ok(w.run(&["--json", "kill", "--timeout", "3s", "k"]));
    let k: Kill = serde_json::from_str(&again).unwrap();
    assert!(k.already_gone);
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

#[test]
fn remove_empty_module_leaves_no_directory() {
    let w = World::new();
    ok(w.run(&["create", "empty"]));
    ok(w.run(&["create", "empty"])); // idempotent
    assert!(w.root().join("subc-modules/empty").is_dir());
    let r: Remove = serde_json::from_str(&ok(w.run(&["--json", "remove", "empty"]))).unwrap();
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
