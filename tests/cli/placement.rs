//! Placement by membership: `exec` puts CMD in its module before CMD runs (the same pid, the
//! caller's child), `place` moves running processes, and a grandchild reparented away from the
//! module's process is still the module's, listed and killed with it. Mutation controls
//! `no-placement`, `no-kill`.

use std::process::{Command, Stdio};

use crate::common::*;
use ck_cgroup::module::{PlaceReport, StopReport};
use ck_cgroup::stop::KillMethod;

use crate::common::strict::{Listing, strictly};

/// A module whose process starts a child that starts a grandchild, then the child exits so the
/// grandchild is reparented away from the module's process. Returns (module pid, grandchild pid).
fn orphaning_module(w: &World, id: &str) -> (std::process::Child, u32) {
    let script = format!(
        "sh -c 'sleep 600 & echo $! > {gc}; echo $$ > {c}'; exec sleep 600",
        gc = w.tmp("gc.pid").display(),
        c = w.tmp("c.pid").display()
    );
    let child = w
        .ck()
        .args(["exec", id, "--", "sh", "-c", &script])
        .spawn()
        .expect("spawn exec");
    w.track(child.id());
    let gc = w.pid_from("gc.pid");
    let c = w.pid_from("c.pid");
    eventually("the intermediate child to exit", || !alive(c));
    assert_ne!(ppid(gc), Some(c));
    assert_ne!(
        ppid(gc),
        Some(child.id()),
        "grandchild reparented away from the module's process"
    );
    (child, gc)
}

fn ppid(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[test]
fn grandchild_reparented_away_is_in_the_module_and_killed() {
    let w = World::new();
    let (mut child, gc) = orphaning_module(&w, "orphans");
    let module = v2_path(&w.root().join("subc-modules/orphans"));
    // Membership, not ancestry: the grandchild's parent is no longer the module's process.
    assert_eq!(cgroup_of(gc), module, "grandchild placed in the module");
    assert_eq!(cgroup_of(child.id()), module, "module process placed");

    let listed = ok(w.run(&["--json", "list"]));
    let list: Listing = strictly(&listed);
    assert_eq!(list.modules.len(), 1);
    assert_eq!(list.modules[0].procs, Some(2), "{listed}");
    assert_eq!(list.modules[0].populated, Some(true));

    let out = ok(w.run(&["--json", "kill", "--timeout", "3s", "orphans"]));
    let k: StopReport = strictly(&out);
    child.wait().unwrap();
    assert!(!alive(gc), "grandchild {gc} survived kill");
    assert!(k.tree.empty && k.removed && !k.already_gone, "{out}");
    assert_eq!(k.tree.killed, 2);
    assert_eq!(k.tree.method, Some(KillMethod::CgroupKill));
    assert!(!w.root().join("subc-modules/orphans").exists());
}

#[test]
fn exec_places_before_the_command_runs() {
    let w = World::new();
    // CMD sees its module as the root of its cgroup namespace (tests/contain.rs), so the
    // placement is read from the module's cgroup.procs, from inside.
    let procs = w.root().join("subc-modules/early/cgroup.procs");
    let out = ok(w.run(&[
        "exec",
        "early",
        "--",
        "sh",
        "-c",
        &format!("grep -cx $$ {}", procs.display()),
    ]));
    assert_eq!(out.trim(), "1", "CMD's pid is in the module's cgroup.procs");
}

#[test]
fn exec_keeps_the_pid_and_the_parent() {
    let w = World::new();
    // The pid the caller spawned is the module's process: `exec` replaces itself with CMD.
    let child = w
        .ck()
        .args(["exec", "samepid", "--", "sh", "-c", "echo $$ $PPID"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let s = stdout(&out);
    let mut it = s.split_whitespace();
    assert_eq!(it.next(), Some(pid.to_string().as_str()));
    assert_eq!(it.next(), Some(std::process::id().to_string().as_str()));
}

#[test]
fn place_moves_existing_processes() {
    let w = World::new();
    let mut a = Command::new("sleep").arg("600").spawn().unwrap();
    let mut b = Command::new("sleep").arg("600").spawn().unwrap();
    w.track(a.id());
    w.track(b.id());
    let out = ok(w.run(&[
        "--json",
        "place",
        "p",
        &a.id().to_string(),
        &b.id().to_string(),
    ]));
    let p: PlaceReport = strictly(&out);
    assert_eq!(p.placed, vec![a.id(), b.id()]);
    let module = v2_path(&w.root().join("subc-modules/p"));
    assert_eq!(cgroup_of(a.id()), module);
    assert_eq!(cgroup_of(b.id()), module);
    ok(w.run(&["kill", "--timeout", "3s", "p"]));
    a.wait().unwrap();
    b.wait().unwrap();
}

/// `place` answered "no process with pid N" for a running process whose name is not UTF-8
/// (`/proc/<pid>/stat` and `status` were read as UTF-8 text); it places it.
#[test]
fn place_takes_a_process_whose_name_is_not_utf8() {
    let w = World::new();
    ok(w.run(&["init"]));
    let ready = w.tmp("named.pid");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '\\377\\376' > /proc/$$/comm; echo $$ > {}; while :; do sleep 1; done",
            ready.display()
        ))
        .spawn()
        .unwrap();
    w.track(child.id());
    let pid = w.pid_from("named.pid");
    ok(w.run(&["place", "named", &pid.to_string()]));
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    assert!(cg.trim_end().ends_with("/subc-modules/named"), "{cg}");
    let _ = child.kill();
    let _ = child.wait();
}
