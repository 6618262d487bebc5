//! Crash convergence: a helper SIGKILLed in the middle of its work (`sandbox` with a running
//! CMD tree, `kill` mid-grace, `prune --kill` mid-way), then the next command of ours leaves
//! nothing. Each mechanism has a mutation control in scripts/mutation-controls.
//!
//! The sandboxes of these tests are made under the test's own root (a private parent), so a
//! `sandbox --prune` here sees only this test's sandboxes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use common::*;

/// The `ck-sandbox-*` directories under `parent`.
fn sandboxes(parent: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("ck-sandbox-"))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// SIGKILL `child` and reap it.
fn sigkill(child: &mut Child) {
    signal(child.id(), rustix::process::Signal::KILL);
    child.wait().unwrap();
}

/// True when `pid` is dead within `limit` (polled: the kernel's delivery of a parent-death
/// signal has no event a test could wait on).
fn dead_within(pid: u32, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while alive(pid) {
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// A `sandbox --parent <w's root>` whose CMD (pid in `cmd`) leaves an orphan (pid in `orphan`)
/// and a module `m` of the sandbox's root (pid in `module`), then runs on; returns the helper
/// once all three pids are known (each tracked).
fn sandbox_with_a_tree(w: &World) -> (Child, [u32; 3]) {
    let script = format!(
        "sleep 600 & echo $! > {orphan}
         {ck} exec m -- sh -c 'echo $$ > {module}; exec sleep 600' >/dev/null 2>&1 &
         echo $$ > {cmd}
         exec sleep 600",
        ck = bin(),
        orphan = w.tmp("orphan").display(),
        module = w.tmp("module").display(),
        cmd = w.tmp("cmd").display(),
    );
    let helper = bare()
        .args(["sandbox", "--parent"])
        .arg(w.root())
        .args(["--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(helper.id());
    let pids = [
        w.pid_from("cmd"),
        w.pid_from("orphan"),
        w.pid_from("module"),
    ];
    (helper, pids)
}

#[test]
fn sigkill_of_sandbox_kills_its_cmd_and_sandbox_prune_removes_the_rest() {
    let w = World::new();
    let (mut helper, [cmd, orphan, module]) = sandbox_with_a_tree(&w);
    let sb = sandboxes(w.root());
    assert_eq!(sb.len(), 1, "{sb:?}");
    sigkill(&mut helper);
    // CMD dies with its helper (PR_SET_PDEATHSIG).
    assert!(
        dead_within(cmd, Duration::from_secs(1)),
        "CMD {cmd} outlived its SIGKILLed helper by a second"
    );
    // A live helper's sandbox is not what is left: the next command finds this one.
    let o = bare()
        .args(["--json", "sandbox", "--prune", "--parent"])
        .arg(w.root())
        .output()
        .unwrap();
    let v = json(&o);
    assert!(o.status.success(), "{v} {}", stderr(&o));
    assert_eq!(v["removed"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        v["removed"][0]["sandbox"],
        sb[0].display().to_string(),
        "{v}"
    );
    assert_eq!(v["removed"][0]["killed"], 2, "{v}");
    assert!(!alive(orphan), "CMD's orphan {orphan} survived the prune");
    assert!(!alive(module), "the module's process {module} survived");
    assert!(sandboxes(w.root()).is_empty(), "{:?}", sandboxes(w.root()));
    // Once more: nothing to do.
    let v = json(
        &bare()
            .args(["--json", "sandbox", "--prune", "--parent"])
            .arg(w.root())
            .output()
            .unwrap(),
    );
    assert_eq!(v["removed"], serde_json::json!([]), "{v}");
}

#[test]
fn a_new_sandbox_removes_a_dead_one_under_its_parent() {
    let w = World::new();
    let (mut helper, [cmd, orphan, module]) = sandbox_with_a_tree(&w);
    let dead = sandboxes(w.root());
    sigkill(&mut helper);
    let o = bare()
        .args(["sandbox", "--parent"])
        .arg(w.root())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "removed the leftover sandbox {}",
            dead[0].display()
        )),
        "{}",
        stderr(&o)
    );
    for p in [cmd, orphan, module] {
        assert!(!alive(p), "{p} survived");
    }
    assert!(sandboxes(w.root()).is_empty(), "{:?}", sandboxes(w.root()));
}

#[test]
fn sandbox_prune_leaves_a_live_sandbox_alone() {
    let w = World::new();
    let (mut helper, [cmd, orphan, module]) = sandbox_with_a_tree(&w);
    let o = bare()
        .args(["--json", "sandbox", "--prune", "--parent"])
        .arg(w.root())
        .output()
        .unwrap();
    let v = json(&o);
    assert_eq!(v["alive"], 1, "{v}");
    assert_eq!(v["removed"], serde_json::json!([]), "{v}");
    for p in [cmd, orphan, module] {
        assert!(alive(p), "{p} of a live sandbox was killed: {v}");
    }
    assert_eq!(sandboxes(w.root()).len(), 1);
    // The helper still cleans up: TERM reaches CMD, the sandbox goes.
    signal(helper.id(), rustix::process::Signal::TERM);
    helper.wait().unwrap();
    assert!(sandboxes(w.root()).is_empty());
}

#[test]
fn sandbox_prune_leaves_a_kept_sandbox_alone() {
    let w = World::new();
    let o = bare()
        .args(["--json", "sandbox", "--keep", "--parent"])
        .arg(w.root())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let kept = sandboxes(w.root());
    assert_eq!(kept.len(), 1);
    assert!(kept[0].join("kept").is_dir(), "no kept/ mark");
    let v = json(
        &bare()
            .args(["--json", "sandbox", "--prune", "--parent"])
            .arg(w.root())
            .output()
            .unwrap(),
    );
    assert_eq!(v["kept"], serde_json::json!([kept[0]]), "{v}");
    assert_eq!(v["removed"], serde_json::json!([]), "{v}");
    assert!(
        kept[0].join("root").is_dir(),
        "the kept sandbox was removed"
    );
    // Unmarked, the next prune removes it.
    std::fs::remove_dir(kept[0].join("kept")).unwrap();
    let v = json(
        &bare()
            .args(["--json", "sandbox", "--prune", "--parent"])
            .arg(w.root())
            .output()
            .unwrap(),
    );
    assert_eq!(v["removed"].as_array().unwrap().len(), 1, "{v}");
    assert!(sandboxes(w.root()).is_empty());
}

#[test]
fn sandbox_prune_with_a_command_or_a_scope_is_bad_input_and_changes_nothing() {
    let w = World::new();
    let before = w.tree();
    for args in [
        vec!["sandbox", "--prune", "--", "true"],
        vec!["sandbox", "--prune", "--keep"],
        vec!["sandbox", "--prune", "--backend", "systemd"],
    ] {
        let o = bare()
            .args(&args)
            .arg("--parent")
            .arg(w.root())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "{args:?}: no message");
        assert_eq!(w.tree(), before, "{args:?} changed something");
    }
}

/// A module whose top process writes `term` when TERM reaches it and goes on; two children that
/// ignore TERM. Returns the `exec` child and waits until the module holds three processes.
fn term_ignoring_module(w: &World, id: &str) -> Child {
    let script = format!(
        "trap 'echo t > {f}' TERM
         (trap '' TERM; exec sleep 600) &
         (trap '' TERM; exec sleep 600) &
         while :; do wait; done",
        f = w.tmp(&format!("term-{id}")).display()
    );
    let c = w
        .ck()
        .args(["exec", id, "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(c.id());
    let procs = w.root().join(format!("subc-modules/{id}/cgroup.procs"));
    eventually("the module's three processes", || {
        std::fs::read_to_string(&procs).is_ok_and(|s| s.lines().count() == 3)
    });
    for p in std::fs::read_to_string(&procs).unwrap().lines() {
        w.track(p.parse().unwrap());
    }
    c
}

fn members(w: &World, id: &str) -> Vec<u32> {
    std::fs::read_to_string(w.root().join(format!("subc-modules/{id}/cgroup.procs")))
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

#[test]
fn sigkill_of_kill_mid_grace_then_kill_leaves_nothing() {
    let w = World::new();
    let mut exec = term_ignoring_module(&w, "stubborn");
    let pids = members(&w, "stubborn");
    let mut kill = w
        .ck()
        .args(["kill", "stubborn", "--grace", "60s"])
        .spawn()
        .unwrap();
    w.track(kill.id());
    // Mid-grace: TERM has reached the module, the helper waits on `populated 0`.
    w.line_from("term-stubborn");
    sigkill(&mut kill);
    assert_eq!(members(&w, "stubborn").len(), 3, "the grace killed nothing");
    let o = w.run(&["--json", "kill", "stubborn", "--timeout", "5s"]);
    let v = json(&o);
    assert!(o.status.success(), "{v} {}", stderr(&o));
    assert_eq!(v["removed"], true, "{v}");
    exec.wait().unwrap();
    for p in pids {
        assert!(!alive(p), "{p} survived: {v}");
    }
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

#[test]
fn sigkill_of_prune_kill_mid_way_then_prune_kill_leaves_nothing() {
    let w = World::new();
    let ids = ["p1", "p2", "p3"];
    let mut execs: Vec<Child> = ids.iter().map(|id| term_ignoring_module(&w, id)).collect();
    let pids: Vec<u32> = ids.iter().flat_map(|id| members(&w, id)).collect();
    let mut prune = w
        .ck()
        .args(["prune", "--kill", "--grace", "60s"])
        .spawn()
        .unwrap();
    w.track(prune.id());
    // Mid-way: the first module in its grace, the others not reached yet.
    eventually("TERM to a module", || {
        ids.iter().any(|id| w.tmp(&format!("term-{id}")).exists())
    });
    sigkill(&mut prune);
    let o = w.run(&["--json", "prune", "--kill", "--timeout", "5s"]);
    let v = json(&o);
    assert!(o.status.success(), "{v} {}", stderr(&o));
    for e in &mut execs {
        e.wait().unwrap();
    }
    for p in pids {
        assert!(!alive(p), "{p} survived: {v}");
    }
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// The guard of a sandbox made by a test process holds its lock too: a sweep of the parent
/// leaves it, and once the guard is dropped the directory is gone.
#[test]
fn a_library_sandbox_is_held_while_its_guard_lives() {
    let w = World::new();
    let inner = ck_cgroup::Sandbox::create(w.root()).unwrap();
    let r = ck_cgroup::sandbox::sweep(w.root()).unwrap();
    assert_eq!((r.alive, r.removed.len()), (1, 0), "{r:?}");
    let dir = inner.dir().to_path_buf();
    drop(inner);
    assert!(!dir.exists());
}
