//! Conformance: what a module does to its own cgroup, or what state its processes are in, never
//! defeats the stop. Modelled on what the kernel's cgroup selftests (`test_kill.c`: simple, tree,
//! fork bomb; `test_core.c`: threaded subtrees, kill and rmdir in a loop; `test_freezer.c`:
//! frozen, stopped, ptraced and vfork-blocked members), systemd's TEST-19-CGROUP and runc's
//! `kill.bats`/`delete.bats` check, written anew for ck-cgroup. Every case drives the real binary
//! with each stop there is: `kill` with every method, `prune --kill`, `remove` of the emptied
//! module, and `run`'s stop (TERM to `run`, or CMD's exit). Each ends with no process and no
//! directory left.
//!
//! Module trees start under `hostile reaper` (tests/fixtures/hostile.c, compiled here), a child
//! subreaper that reaps the orphans a killed tree leaves (PID 1 on some hosts never does).
//! Processes the test started are held as `Child` handles and killed on the way out; pids of
//! module members are never tracked (a fork storm recycles pids quickly, and a tracked pid
//! SIGKILLed after its reuse would hit another test's process). The sandbox kills what is left.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::kids::Kids;
use common::*;
use serde_json::Value;

/// The uid of a supervisor and a module that share it (no one else on this host uses it).
const USER: u32 = SHARED_UID;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Case {
    /// 100 processes (test_cgkill_simple).
    Simple,
    /// Processes in C, H and three in K of test_cgkill_tree's hierarchy of sub-cgroups.
    Tree,
    /// 200 workers forking and reaping children without pause (test_cgkill_forkbomb).
    ForkBomb,
    /// A threaded sub-cgroup holding a whole process and one thread of another.
    Threaded,
    /// A chain of 20 sub-cgroups with 250-byte names: the deepest path is past PATH_MAX.
    DeepLong,
    /// A chain of 900 sub-cgroups with 4-byte names: past PATH_MAX, and deeper than the fd limit
    /// the stop runs under (`prlimit --nofile=64`). (The kernel's cost of a mkdir grows with the
    /// depth: 2,500 levels take 13 s to make here, 900 take 1.3 s.)
    DeepMany,
    /// The module froze itself (`1` to its own cgroup.freeze).
    FrozenSelf,
    /// The module froze a sub-cgroup of its own.
    FrozenSub,
    /// SIGSTOPped members.
    Stopped,
    /// A member in ptrace-stop, traced by another member.
    PtracedInside,
    /// A member in ptrace-stop, traced from outside the module.
    PtracedOutside,
    /// A parent blocked in vfork (state D, killable).
    Vfork,
    /// The top process exited; its orphans live on.
    TopGone,
    /// A module sharing the supervisor's uid ran `chmod 000` on its directory, its control
    /// files, a sub-cgroup and the modules' directory. Stopped by that uid.
    Chmod,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Driver {
    /// `kill --method M` (`auto` passes no --method).
    Kill(&'static str),
    /// `prune --kill`.
    PruneKill,
    /// The module is emptied (cgroup.kill by the test, as the module ending would), then
    /// `remove` must remove what it left.
    Remove,
    /// The module runs under `run`, stopped by TERM to `run` (or by CMD's exit).
    Run,
}

/// The module's directory.
fn mdir(w: &World, id: &str) -> PathBuf {
    w.root().join("subc-modules").join(id)
}

/// The shell script of `case` for module `m` at `dir`; ready (`echo ready > READY`) once set up.
fn script(case: Case, dir: &Path, ready: &Path) -> String {
    let m = dir.display();
    let r = ready.display();
    let h = hostile();
    let ready = format!("echo ready > {r}");
    match case {
        Case::Simple => format!(
            "i=0; while [ $i -lt 100 ]; do sleep 600 & i=$((i+1)); done; {ready}; wait"
        ),
        Case::Tree => format!(
            "mkdir -p {m}/B/C {m}/B/D {m}/E/F/G/H {m}/I {m}/K
             to() {{ sh -c \"echo 0 > $1/cgroup.procs && exec sleep 600\" & }}
             to {m}/B/C; to {m}/E/F/G/H; to {m}/K; to {m}/K; to {m}/K
             until [ \"$(cat {m}/B/C/cgroup.procs {m}/E/F/G/H/cgroup.procs {m}/K/cgroup.procs | wc -l)\" -eq 5 ]; do sleep 0.01; done
             {ready}; exec sleep 600"
        ),
        Case::ForkBomb => format!("exec {h} storm 200 0 {r}"),
        Case::Threaded => format!(
            "mkdir {m}/t && echo threaded > {m}/t/cgroup.type || exit 1
             sh -c 'echo 0 > {m}/t/cgroup.procs && exec sleep 600' &
             python3 -c '
import threading, time
def moved():
    with open(\"{m}/t/cgroup.threads\", \"w\") as f:
        f.write(\"0\")
    time.sleep(600)
threading.Thread(target=moved, daemon=True).start()
time.sleep(600)' &
             until [ \"$(wc -l < {m}/t/cgroup.threads)\" -ge 2 ]; do sleep 0.01; done
             {ready}; exec sleep 600"
        ),
        Case::DeepLong => format!("{h} deep {m} 20 250 {r} & exec sleep 600"),
        Case::DeepMany => format!("{h} deep {m} 900 4 {r} & exec sleep 600"),
        // The module tries to freeze its own top; contained (its cgroup namespace rooted at the
        // module) on a cgroup2 with nsdelegate that write is refused, so `settle` freezes it
        // from outside then, as a freeze-kill that crashed or an operator would have.
        Case::FrozenSelf => format!(
            "sleep 600 & sh -c 'sleep 600' & {ready}; echo 1 > {m}/cgroup.freeze 2>/dev/null; wait"
        ),
        Case::FrozenSub => format!(
            "mkdir {m}/f || exit 1
             sh -c 'echo 0 > {m}/f/cgroup.procs && exec sleep 600' &
             sh -c 'echo 0 > {m}/f/cgroup.procs && exec sleep 600' &
             until [ \"$(wc -l < {m}/f/cgroup.procs)\" -eq 2 ]; do sleep 0.01; done
             echo 1 > {m}/f/cgroup.freeze; {ready}; exec sleep 600"
        ),
        Case::Stopped => format!(
            "sleep 600 & kill -STOP $!; sh -c 'kill -STOP $$; exec sleep 600' & {ready}; exec sleep 600"
        ),
        Case::PtracedInside => format!("exec {h} ptrace-child {r}"),
        Case::PtracedOutside => format!("{ready}; exec sleep 600"),
        Case::Vfork => format!("exec {h} vfork {r}"),
        Case::TopGone => format!("sh -c 'sleep 600 & sleep 600 &'; sleep 600 & {ready}; exit 0"),
        Case::Chmod => format!(
            "mkdir {m}/s && chmod 000 {m}/s/cgroup.procs {m}/s/cgroup.events {m}/s || exit 1
             cd {m} && chmod 000 cgroup.procs cgroup.kill cgroup.events cgroup.freeze cgroup.stat cgroup.threads cgroup.type || exit 1
             cd .. && chmod 000 {name} . || exit 1
             cd / && sleep 600 & {ready}; exec sleep 600",
            name = dir.file_name().unwrap().to_string_lossy()
        ),
    }
}

fn read_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn events_say(path: &Path, line: &str) -> bool {
    std::fs::read_to_string(path.join("cgroup.events"))
        .map(|s| s.lines().any(|l| l == line))
        .unwrap_or(false)
}

/// Wait until the case's state is set up (beyond its ready mark).
fn settle(w: &World, id: &str, case: Case, under_run: bool, kids: &mut Kids) {
    let m = mdir(w, id);
    let procs = || {
        std::fs::read_to_string(m.join("cgroup.procs"))
            .map(|s| {
                s.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<u32>>()
            })
            .unwrap_or_default()
    };
    match case {
        Case::FrozenSelf => {
            std::fs::write(m.join("cgroup.freeze"), "1").unwrap();
            eventually("the module frozen", || events_say(&m, "frozen 1"))
        }
        Case::FrozenSub => eventually("the sub-cgroup frozen", || {
            events_say(&m.join("f"), "frozen 1")
        }),
        Case::Stopped => eventually("two members stopped", || {
            procs().iter().filter(|p| state(**p) == Some('T')).count() == 2
        }),
        Case::PtracedInside => eventually("a member in ptrace-stop", || {
            procs().iter().any(|p| state(*p) == Some('t'))
        }),
        Case::PtracedOutside => {
            let sleep = || {
                procs().into_iter().find(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/comm")).ok()
                        == Some("sleep\n".into())
                })
            };
            eventually("the module's sleep", || sleep().is_some());
            let target = sleep().unwrap();
            let ready = w.tmp("traced");
            kids.add(
                Command::new(hostile())
                    .args(["ptrace", &target.to_string()])
                    .arg(&ready)
                    .spawn()
                    .unwrap(),
            );
            w.line_from("traced");
            assert_eq!(state(target), Some('t'), "not in ptrace-stop");
        }
        Case::Vfork => eventually("a parent blocked in vfork", || {
            procs().iter().any(|p| state(*p) == Some('D'))
        }),
        // Under `run`, CMD's exit is the stop itself.
        Case::TopGone if !under_run => {
            eventually("the top process gone, three left", || procs().len() == 3)
        }
        _ => {}
    }
}

/// Hand the modules' directory and module `id` to `USER`, as `Delegate=` hands a service's
/// cgroup to its user.
fn delegate_to_user(w: &World, id: &str) {
    ok(w.run(&["create", id]));
    let chown = |p: &Path| {
        std::os::unix::fs::chown(p, Some(USER), Some(USER)).unwrap_or_else(|e| panic!("{p:?}: {e}"))
    };
    let subc = w.root().join("subc-modules");
    chown(&subc);
    for f in ["cgroup.procs", "cgroup.threads", "cgroup.subtree_control"] {
        chown(&subc.join(f));
    }
    let m = mdir(w, id);
    chown(&m);
    for e in std::fs::read_dir(&m).unwrap() {
        chown(&e.unwrap().path());
    }
    // The module writes its ready mark as USER.
    std::fs::set_permissions(w.tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// `ck-cgroup exec ID -- CMD...` under `hostile reaper`, which is the child returned.
fn exec_reaped(w: &World, id: &str, cmd: &[impl AsRef<std::ffi::OsStr>]) -> Child {
    Command::new(hostile())
        .arg("reaper")
        .arg(w.tmp(&format!("reaper-{id}")))
        .arg(bin())
        .arg("--root")
        .arg(w.root())
        .args(["exec", id, "--"])
        .args(cmd)
        .env_remove("CK_CGROUP_ROOT")
        .env("CK_CGROUP_POLICY", "/dev/null")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

/// Start `case` as module `id` for `driver`; returns the index of the child that stands for the
/// module (the reaper, or `run`).
fn start(w: &World, id: &str, case: Case, driver: Driver, kids: &mut Kids) -> usize {
    let ready = w.tmp("ready");
    let sh = script(case, &mdir(w, id), &ready);
    let mut cmd = vec!["sh".to_string(), "-c".into(), sh];
    if case == Case::Chmod {
        delegate_to_user(w, id);
        let mut c = vec![
            "setpriv".to_string(),
            format!("--reuid={USER}"),
            format!("--regid={USER}"),
            "--clear-groups".into(),
        ];
        c.append(&mut cmd);
        cmd = c;
    }
    let child = if driver == Driver::Run {
        w.ck()
            .args(["run", id, "--grace", "1s", "--"])
            .args(&cmd)
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    } else {
        exec_reaped(w, id, &cmd)
    };
    let i = kids.add(child);
    w.line_from("ready");
    settle(w, id, case, driver == Driver::Run, kids);
    i
}

/// Run `args` as the stopping side of `case` (as `USER` for Chmod, under `ulimit -n 64` for the
/// deep chain of 900).
fn stop_cmd(w: &World, case: Case, args: &[&str]) -> Output {
    let mut c = if case == Case::Chmod {
        ck_as_shared_uid(w)
    } else if case == Case::DeepMany {
        let mut c = Command::new("prlimit");
        c.args(["--nofile=64:64", bin(), "--root"])
            .arg(w.root())
            .env_remove("CK_CGROUP_ROOT")
            .env("CK_CGROUP_POLICY", "/dev/null");
        c
    } else {
        w.ck()
    };
    c.args(args).output().expect("run ck-cgroup")
}

/// Empty the module as its own ending would (the test writes cgroup.kill as root), and wait.
fn empty_it(w: &World, id: &str) {
    let m = mdir(w, id);
    std::fs::write(m.join("cgroup.kill"), "1").unwrap();
    let dir = ck_cgroup::CgroupDir::open(&m).expect("open the module");
    assert_eq!(
        ck_cgroup::cgroup::wait::wait_empty(&dir, "", scaled(Duration::from_secs(10))).unwrap(),
        ck_cgroup::cgroup::wait::Waited::Empty
    );
}

fn check(case: Case, driver: Driver) {
    let w = World::new();
    let mut kids = Kids::default();
    let id = "m";
    let top = start(&w, id, case, driver, &mut kids);
    let t0 = Instant::now();
    let report = match driver {
        Driver::Kill(method) => {
            let mut a = vec!["--json", "kill", id, "--timeout", "5s"];
            if method != "auto" {
                a.extend(["--method", method]);
            }
            let o = stop_cmd(&w, case, &a);
            let v = json(&o);
            assert!(o.status.success(), "{case:?} {method}: {v} {}", stderr(&o));
            assert_eq!(v["empty"], true, "{v}");
            assert_eq!(v["removed"], true, "{v}");
            if method != "auto" {
                assert_eq!(v["method"], method, "{v}");
            }
            v
        }
        Driver::PruneKill => {
            let o = stop_cmd(&w, case, &["--json", "prune", "--kill", "--timeout", "5s"]);
            let v = json(&o);
            assert!(o.status.success(), "{case:?}: {v} {}", stderr(&o));
            assert_eq!(v["modules"][0]["action"], "killed", "{v}");
            v
        }
        Driver::Remove => {
            empty_it(&w, id);
            let o = stop_cmd(&w, case, &["--json", "remove", id]);
            let v = json(&o);
            assert!(o.status.success(), "{case:?}: {v} {}", stderr(&o));
            assert_eq!(v["removed"], true, "{v}");
            v
        }
        Driver::Run => {
            if case != Case::TopGone {
                signal(kids.pid(top), rustix::process::Signal::TERM);
            }
            let status = kids
                .wait(top, scaled(Duration::from_secs(15)))
                .unwrap_or_else(|| panic!("{case:?}: run did not return"));
            // run exits 1 when it could not stop the rest; else as CMD did.
            assert_ne!(
                status.code(),
                Some(1),
                "{case:?}: run failed to stop the module"
            );
            if case == Case::TopGone {
                assert_eq!(status.code(), Some(0));
            } else {
                assert!(status.code().is_some() || status.signal().is_some());
            }
            Value::Null
        }
    };
    let took = t0.elapsed();
    assert_eq!(
        w.tree(),
        vec!["daemon", "subc-modules"],
        "{case:?} {driver:?}: directories left: {report}"
    );
    assert!(
        !mdir(&w, id).exists(),
        "{case:?} {driver:?}: module left: {report}"
    );
    // The reaper exits once every process of the tree is gone and reaped.
    if driver != Driver::Run {
        kids.wait(top, scaled(Duration::from_secs(10)))
            .unwrap_or_else(|| panic!("{case:?} {driver:?}: processes left: {report}"));
    }
    // A guard against a stop that hangs, not a speed claim (speed is for benches): a remove of
    // 900 nested cgroups took 8.6 s at a load average of 47 on 2 cores.
    assert!(
        took < scaled(Duration::from_secs(120)),
        "{case:?} {driver:?}: took {took:?}: {report}"
    );
}

macro_rules! cases {
    ($($name:ident: $case:ident, $driver:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check(Case::$case, $driver);
            }
        )*
    };
}

use Driver::{Kill, PruneKill, Remove, Run};

cases! {
    simple_kill_auto: Simple, Kill("auto");
    simple_kill_cgroup_kill: Simple, Kill("cgroup-kill");
    simple_kill_freeze: Simple, Kill("freeze");
    simple_kill_signal: Simple, Kill("signal");
    simple_prune_kill: Simple, PruneKill;
    simple_run: Simple, Run;

    tree_kill_auto: Tree, Kill("auto");
    tree_kill_cgroup_kill: Tree, Kill("cgroup-kill");
    tree_kill_freeze: Tree, Kill("freeze");
    tree_kill_signal: Tree, Kill("signal");
    tree_prune_kill: Tree, PruneKill;
    tree_remove: Tree, Remove;
    tree_run: Tree, Run;

    fork_bomb_kill_auto: ForkBomb, Kill("auto");
    fork_bomb_kill_cgroup_kill: ForkBomb, Kill("cgroup-kill");
    fork_bomb_kill_freeze: ForkBomb, Kill("freeze");
    fork_bomb_kill_signal: ForkBomb, Kill("signal");
    fork_bomb_prune_kill: ForkBomb, PruneKill;
    fork_bomb_run: ForkBomb, Run;

    threaded_kill_auto: Threaded, Kill("auto");
    threaded_kill_cgroup_kill: Threaded, Kill("cgroup-kill");
    threaded_kill_freeze: Threaded, Kill("freeze");
    threaded_kill_signal: Threaded, Kill("signal");
    threaded_prune_kill: Threaded, PruneKill;
    threaded_remove: Threaded, Remove;
    threaded_run: Threaded, Run;

    deep_long_names_kill_auto: DeepLong, Kill("auto");
    deep_long_names_kill_cgroup_kill: DeepLong, Kill("cgroup-kill");
    deep_long_names_kill_freeze: DeepLong, Kill("freeze");
    deep_long_names_kill_signal: DeepLong, Kill("signal");
    deep_long_names_prune_kill: DeepLong, PruneKill;
    deep_long_names_remove: DeepLong, Remove;
    deep_long_names_run: DeepLong, Run;

    deep_900_kill_auto: DeepMany, Kill("auto");
    deep_900_kill_cgroup_kill: DeepMany, Kill("cgroup-kill");
    deep_900_kill_freeze: DeepMany, Kill("freeze");
    deep_900_kill_signal: DeepMany, Kill("signal");
    deep_900_prune_kill: DeepMany, PruneKill;
    deep_900_remove: DeepMany, Remove;
    deep_900_run: DeepMany, Run;

    frozen_self_kill_auto: FrozenSelf, Kill("auto");
    frozen_self_kill_cgroup_kill: FrozenSelf, Kill("cgroup-kill");
    frozen_self_kill_freeze: FrozenSelf, Kill("freeze");
    frozen_self_kill_signal: FrozenSelf, Kill("signal");
    frozen_self_prune_kill: FrozenSelf, PruneKill;
    frozen_self_remove: FrozenSelf, Remove;
    frozen_self_run: FrozenSelf, Run;

    frozen_sub_cgroup_kill_auto: FrozenSub, Kill("auto");
    frozen_sub_cgroup_kill_cgroup_kill: FrozenSub, Kill("cgroup-kill");
    frozen_sub_cgroup_kill_freeze: FrozenSub, Kill("freeze");
    frozen_sub_cgroup_kill_signal: FrozenSub, Kill("signal");
    frozen_sub_cgroup_prune_kill: FrozenSub, PruneKill;
    frozen_sub_cgroup_remove: FrozenSub, Remove;
    frozen_sub_cgroup_run: FrozenSub, Run;

    stopped_kill_auto: Stopped, Kill("auto");
    stopped_kill_cgroup_kill: Stopped, Kill("cgroup-kill");
    stopped_kill_freeze: Stopped, Kill("freeze");
    stopped_kill_signal: Stopped, Kill("signal");
    stopped_prune_kill: Stopped, PruneKill;
    stopped_run: Stopped, Run;

    ptraced_inside_kill_auto: PtracedInside, Kill("auto");
    ptraced_inside_kill_cgroup_kill: PtracedInside, Kill("cgroup-kill");
    ptraced_inside_kill_freeze: PtracedInside, Kill("freeze");
    ptraced_inside_kill_signal: PtracedInside, Kill("signal");
    ptraced_inside_prune_kill: PtracedInside, PruneKill;
    ptraced_inside_run: PtracedInside, Run;

    ptraced_outside_kill_auto: PtracedOutside, Kill("auto");
    ptraced_outside_kill_cgroup_kill: PtracedOutside, Kill("cgroup-kill");
    ptraced_outside_kill_freeze: PtracedOutside, Kill("freeze");
    ptraced_outside_kill_signal: PtracedOutside, Kill("signal");
    ptraced_outside_prune_kill: PtracedOutside, PruneKill;
    ptraced_outside_run: PtracedOutside, Run;

    vfork_kill_auto: Vfork, Kill("auto");
    vfork_kill_cgroup_kill: Vfork, Kill("cgroup-kill");
    vfork_kill_freeze: Vfork, Kill("freeze");
    vfork_kill_signal: Vfork, Kill("signal");
    vfork_prune_kill: Vfork, PruneKill;
    vfork_run: Vfork, Run;

    top_gone_kill_auto: TopGone, Kill("auto");
    top_gone_kill_cgroup_kill: TopGone, Kill("cgroup-kill");
    top_gone_kill_freeze: TopGone, Kill("freeze");
    top_gone_kill_signal: TopGone, Kill("signal");
    top_gone_prune_kill: TopGone, PruneKill;
    top_gone_run: TopGone, Run;

    chmod_kill_auto: Chmod, Kill("auto");
    chmod_kill_cgroup_kill: Chmod, Kill("cgroup-kill");
    chmod_kill_freeze: Chmod, Kill("freeze");
    chmod_kill_signal: Chmod, Kill("signal");
    chmod_prune_kill: Chmod, PruneKill;
    chmod_remove: Chmod, Remove;
}

/// test_cgcore_destroy: kill and remove right away, ten times over, the module made anew each
/// time with the same id.
#[test]
fn kill_and_rmdir_in_a_loop() {
    let w = World::new();
    let mut kids = Kids::default();
    for round in 0..10 {
        let c = exec_reaped(&w, "loop", &["sh", "-c", "sleep 600 & exec sleep 600"]);
        let i = kids.add(c);
        eventually("two processes", || {
            read_lines(&mdir(&w, "loop").join("cgroup.procs")) == 2
        });
        let o = w.run(&["--json", "kill", "loop", "--timeout", "3s"]);
        let v = json(&o);
        assert!(o.status.success(), "round {round}: {v}");
        assert_eq!(v["removed"], true, "round {round}: {v}");
        assert!(kids.wait(i, Duration::from_secs(5)).is_some());
        assert!(!mdir(&w, "loop").exists(), "round {round}");
    }
}

/// A module left frozen (by itself, or by a freeze-kill that crashed) shows as frozen in `list`
/// and `status`, and thaws in neither.
#[test]
fn a_frozen_module_shows_as_frozen_in_list_and_status() {
    let w = World::new();
    let mut kids = Kids::default();
    start(&w, "ice", Case::FrozenSelf, Kill("auto"), &mut kids);
    ok(w.run(&["create", "warm"]));
    let list = json(&w.run(&["--json", "list"]));
    let entry = |v: &Value, name: &str| {
        v["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(entry(&list, "ice")["frozen"], true, "{list}");
    assert_eq!(entry(&list, "warm")["frozen"], false, "{list}");
    let status = json(&w.run(&["--json", "status"]));
    assert_eq!(entry(&status, "ice")["frozen"]["value"], true, "{status}");
    assert_eq!(
        entry(&status, "ice")["frozen"]["source"],
        "cgroup.events frozen",
        "{status}"
    );
    assert_eq!(entry(&status, "warm")["frozen"]["value"], false, "{status}");
    // The human views say it too: list's FROZEN column, and a line under status's table.
    let human = ok(w.run(&["list"]));
    let row = |name: &str| {
        human
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(
        human.lines().next().map(|h| h.contains("FROZEN")),
        Some(true)
    );
    assert_eq!(row("ice").get(4), Some(&"yes"), "{human}");
    assert_eq!(row("warm").get(4), Some(&"no"), "{human}");
    let table = ok(w.run(&["status"]));
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("frozen (cgroup.events frozen 1") && l.ends_with(": ice")),
        "{table}"
    );
    assert!(
        events_say(&mdir(&w, "ice"), "frozen 1"),
        "list or status thawed it"
    );
    ok(w.run(&["kill", "ice", "--timeout", "5s"]));
}

/// Spawning into a frozen module must not hang: `exec` and `run` refuse it (exit 2), name the
/// fix, and change nothing (the module stays frozen, nothing is placed in it).
#[test]
fn spawn_into_a_frozen_module_is_refused_and_does_not_hang() {
    let w = World::new();
    let mut kids = Kids::default();
    start(&w, "ice", Case::FrozenSelf, Kill("auto"), &mut kids);
    let before = read_lines(&mdir(&w, "ice").join("cgroup.procs"));
    for args in [
        vec!["exec", "ice", "--", "true"],
        vec!["run", "ice", "--", "true"],
    ] {
        let c = w
            .ck()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let i = kids.add(c);
        let status = kids
            .wait(i, Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{args:?} hangs on a frozen module"));
        let mut err = String::new();
        use std::io::Read;
        kids.child(i)
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("frozen"), "{args:?}: {err}");
        assert!(
            err.contains("cgroup.freeze"),
            "{args:?}: names the fix: {err}"
        );
        assert!(
            err.contains("ck-cgroup kill ice"),
            "{args:?}: names the fix: {err}"
        );
    }
    assert_eq!(read_lines(&mdir(&w, "ice").join("cgroup.procs")), before);
    assert!(events_say(&mdir(&w, "ice"), "frozen 1"));
    ok(w.run(&["kill", "ice", "--timeout", "5s"]));
}

/// A graceful stop of a frozen module thaws it first: its processes get the signal and exit on
/// it within the grace, and no kill is needed.
#[test]
fn grace_on_a_frozen_module_thaws_it_so_the_tree_can_exit() {
    let w = World::new();
    let mut kids = Kids::default();
    let ready = w.tmp("ready");
    let m = mdir(&w, "polite");
    let script = format!(
        // Ready only once both children run `sleep`: a TERM that reaches a child between its
        // fork and its execve is taken by the shell's inherited trap handler and lost, and that
        // child then sleeps on (a race of the fixture that failed this test about 1 run in 8).
        "trap 'exit 0' TERM; sleep 600 & a=$!; sleep 600 & b=$!; until [ \"$(cat /proc/$a/comm /proc/$b/comm)\" = \"sleep
sleep\" ]; do :; done; echo ready > {r}; wait",
        r = ready.display(),
    );
    ok(w.run(&["create", "polite"]));
    std::fs::create_dir(m.join("f")).unwrap();
    let c = exec_reaped(&w, "polite", &["sh", "-c", &script]);
    let i = kids.add(c);
    w.line_from("ready");
    // The test freezes the module and its child f (f's own freeze bit, which the stop must clear
    // too), not the module's shell: a freeze it wrote after `ready` could come after the stop's
    // thaw and freeze the tree again under the TERM (the tree then outlived a 30 s grace once).
    std::fs::write(m.join("f/cgroup.freeze"), "1").unwrap();
    std::fs::write(m.join("cgroup.freeze"), "1").unwrap();
    eventually("frozen", || events_say(&m, "frozen 1"));
    let o = w.run(&[
        "--json",
        "kill",
        "polite",
        "--grace",
        "30s",
        "--timeout",
        "3s",
    ]);
    let v = json(&o);
    assert!(o.status.success(), "{v}");
    assert_eq!(
        v["left_after_grace"], 0,
        "the tree could not exit on TERM: {v}"
    );
    assert_eq!(v["method"], Value::Null, "{v}");
    // Ended by the TERM, not by the end of the grace (a long grace: thawing and the exits took
    // over 5 s once, with the whole suite running on a loaded 2-core host).
    assert!(v["waited_ms"].as_f64().unwrap() < 25_000.0, "{v}");
    assert!(kids.wait(i, Duration::from_secs(5)).is_some());
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// A fork storm of 2,000 processes, killed by every method within the timeout (the figures of
/// the trials are in docs/performance.md).
#[test]
fn fork_storm_of_2000_is_killed_by_every_method() {
    let w = World::new();
    let mut kids = Kids::default();
    for method in ["cgroup-kill", "freeze", "signal"] {
        let id = format!("storm-{method}");
        let ready = format!("ready-{method}");
        let r = w.tmp(&ready).display().to_string();
        let c = exec_reaped(&w, &id, &[hostile(), "storm", "2000", "300", &r]);
        let i = kids.add(c);
        w.line_from(&ready);
        let o = w.run(&[
            "--json",
            "kill",
            &id,
            "--method",
            method,
            "--timeout",
            "20s",
        ]);
        let v = json(&o);
        assert!(o.status.success(), "{method}: {v} {}", stderr(&o));
        assert_eq!(v["removed"], true, "{method}: {v}");
        assert!(
            kids.wait(i, Duration::from_secs(20)).is_some(),
            "{method}: processes left"
        );
    }
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// Figures, not a check (`cargo test --release --test conformance -- --ignored --nocapture
/// fork_storm_figures`): 2,000 workers forking without pause; `cgroup.kill` written by this
/// (running) process alone, against `Root::stop` called in this process (as a daemon using the
/// library does, no helper to start) with each method, five runs each. docs/performance.md has
/// the results and the helper's figures.
#[test]
#[ignore]
fn fork_storm_figures() {
    use ck_cgroup::stop::{Method, StopOptions};
    let w = World::new();
    let root = ck_cgroup::Root::open(w.root()).unwrap();
    let mut kids = Kids::default();
    for run in 0..5 {
        for mode in ["kernel", "cgroup-kill", "freeze", "signal"] {
            let id = format!("f{run}{}", mode.replace('-', ""));
            let ready = format!("ready-{id}");
            let r = w.tmp(&ready).display().to_string();
            let i = kids.add(exec_reaped(&w, &id, &[hostile(), "storm", "2000", "0", &r]));
            w.line_from(&ready);
            std::thread::sleep(Duration::from_secs(1));
            let m = mdir(&w, &id);
            let members = read_lines(&m.join("cgroup.procs"));
            let t0 = Instant::now();
            let note = if mode == "kernel" {
                let dir = ck_cgroup::CgroupDir::open(&m).unwrap();
                dir.write("cgroup.kill", "1").unwrap();
                ck_cgroup::cgroup::wait::wait_empty(&dir, "", Duration::from_secs(120)).unwrap();
                String::new()
            } else {
                let method = match mode {
                    "cgroup-kill" => Method::CgroupKill,
                    "freeze" => Method::Freeze,
                    _ => Method::Signal,
                };
                let r = root
                    .stop(
                        &id,
                        &StopOptions {
                            method,
                            ..StopOptions::kill(Duration::from_secs(120))
                        },
                    )
                    .unwrap();
                assert!(r.ok(), "{r:?}");
                format!(" killed {} stop {} ms", r.tree.killed, r.tree.waited_ms)
            };
            let took = t0.elapsed();
            if mode == "kernel" {
                std::fs::remove_dir(&m).unwrap();
            }
            println!(
                "storm run {run} {mode:<11} members {members:>5} took {:>8.3} s{note}",
                took.as_secs_f64()
            );
            assert!(kids.wait(i, Duration::from_secs(300)).is_some());
        }
    }
}
