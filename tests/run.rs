//! `run`: the helper stays as the module's parent, relays signals, and takes the tree down when
//! CMD exits, when it is told to stop, and (kill-on-close, its PID namespace) when it is killed.
//!
//! CMD runs in a PID namespace by default, so `$$` and `$!` there are the namespace's numbers.
//! Scripts write host pids with `read -r p _ < /proc/self/stat` (`/proc` is the host's).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use common::nobody::{NOBODY, ck_as_nobody};
use common::*;

/// Shell: write this shell's host pid to FILE (`/proc` is the host's, `$$` the namespace's).
fn host_pid_to(file: &std::path::Path) -> String {
    format!(
        "read -r p _ < /proc/self/stat; echo $p > {}",
        file.display()
    )
}

/// The module's directory under the sandbox.
fn module(w: &World, id: &str) -> std::path::PathBuf {
    w.root().join("subc-modules").join(id)
}

/// Wait up to `limit` for `populated 0` in the module's cgroup.events (inotify, no sleeps).
fn empty_within(w: &World, id: &str, limit: Duration) -> bool {
    let dir = ck_cgroup::CgroupDir::open(&module(w, id)).expect("open the module");
    ck_cgroup::cgroup::wait::wait_empty(&dir, "", limit).expect("wait on cgroup.events")
        == ck_cgroup::cgroup::wait::Waited::Empty
}

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

/// `run` takes down the module it made, by its path: with a directory of the same name in the
/// daemon's layout (the daemon's own launch of the id, or a decoy a module made), a stop by the
/// bare id found two directories and refused, and the module's tree outlived `run`.
#[test]
fn run_takes_down_its_own_module_beside_a_daemon_directory_of_the_same_name() {
    let w = World::new();
    ok(w.run(&["init"]));
    for decoy in ["daemon/subc-modules/dec", "daemon/subc-modules/m-dec_5f1"] {
        std::fs::create_dir_all(w.root().join(decoy)).unwrap();
        let o = w.run(&["run", "dec", "--", "sh", "-c", "sleep 600 & exit 3"]);
        assert_eq!(o.status.code(), Some(3), "{decoy}: {}", stderr(&o));
        assert!(
            !module(&w, "dec").exists(),
            "{decoy}: run's module outlived it"
        );
        assert!(
            w.root().join(decoy).exists(),
            "{decoy}: run removed the daemon's"
        );
        std::fs::remove_dir(w.root().join(decoy)).unwrap();
    }
}

#[test]
fn run_takes_down_the_grandchild_cmd_left_behind() {
    let w = World::new();
    let gc = w.tmp("gc.pid");
    // The grandchild ignores TERM, so the grace ends and the kill must take it.
    let script = format!(
        "sh -c 'trap \"\" TERM; {}; exec sleep 600' >/dev/null 2>&1 & \
         while [ ! -s {g} ]; do sleep 0.01; done; exit 0",
        host_pid_to(&gc),
        g = gc.display()
    );
    let o = w.run(&[
        "run", "leaver", "--grace", "200ms", "--", "sh", "-c", &script,
    ]);
    let gc = w.pid_from("gc.pid");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!alive(gc), "the grandchild {gc} survived run");
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "module left");
}

#[test]
fn term_sent_to_run_reaches_cmd() {
    let w = World::new();
    let got = w.tmp("got-term");
    let script = trapping_sh(
        &format!("trap 'echo term > {}; exit 4' TERM", got.display()),
        &w.tmp("ready"),
        5,
    );
    let mut run = w
        .ck()
        .args(["run", "relay", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(run.id());
    w.line_from("ready");
    signal(run.id(), rustix::process::Signal::TERM);
    let status = run.wait().unwrap();
    assert!(got.exists(), "CMD did not get the TERM sent to run");
    assert_eq!(status.code(), Some(4));
}

/// Without a PID namespace (`--no-pid-namespace`), CMD's parent-death signal takes it along.
#[test]
fn sigkill_of_run_takes_cmd_with_it() {
    let w = World::new();
    let script = format!("{}; exec sleep 600", host_pid_to(&w.tmp("cmd.pid")));
    let mut run = w
        .ck()
        .args([
            "run",
            "orphaned",
            "--no-pid-namespace",
            "--",
            "sh",
            "-c",
            &script,
        ])
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

/// The incident: the daemon SIGKILLs a module's helper (its drain timeout, a hung
/// module's restart) and a reparented grandchild and a TERM-ignoring one live on in the module.
/// With kill-on-close nothing of the module is left within one second, 20 times out of 20.
#[test]
fn sigkill_of_run_leaves_no_process_of_the_module() {
    let w = World::new();
    sigkill_of_run_rounds(&w, 20, |args| {
        let mut c = w.ck();
        c.args(args);
        c
    });
    // The empty directory a killed helper leaves is no error: the next run of the id reuses it.
    let o = w.run(&["run", "hung", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// The init of a module's namespace reaps what is reparented to it: a module that keeps making
/// orphans does not pile up zombies.
#[test]
fn no_zombie_piles_up_in_a_module_that_keeps_making_orphans() {
    let w = World::new();
    let script = format!(
        "{}; i=0; while [ $i -lt 100 ]; do (true &); i=$((i+1)); done; echo done > {}; exec sleep 600",
        host_pid_to(&w.tmp("cmd")),
        w.tmp("done").display()
    );
    let mut run = w
        .ck()
        .args(["run", "churn", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(run.id());
    let cmd = w.pid_from("cmd");
    w.line_from("done");
    let init = ppid(cmd);
    let zombies = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&p| ppid(p) == init && state(p) == Some('Z'))
            .count()
    };
    eventually("the namespace's init to reap 100 orphans", || {
        zombies() == 0
    });
    run.kill().unwrap();
    run.wait().unwrap();
    assert!(empty_within(&w, "churn", Duration::from_secs(1)));
}

/// TERM to `run` stops the whole module, not only CMD: a TERM-ignoring grandchild is killed when
/// the grace ends, the directory is removed, and `run` exits as CMD did.
#[test]
fn term_to_run_stops_the_whole_module_within_the_grace() {
    let w = World::new();
    let script = trapping_sh(
        &format!(
            "(sh -c 'trap \"\" TERM; {}; exec sleep 602' &); trap 'exit 7' TERM",
            host_pid_to(&w.tmp("gc"))
        ),
        &w.tmp("ready"),
        600,
    );
    let mut run = w
        .ck()
        .args(["run", "drain", "--grace", "1s", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(run.id());
    let gc = w.pid_from("gc");
    w.line_from("ready");
    let t0 = std::time::Instant::now();
    signal(run.id(), rustix::process::Signal::TERM);
    let status = run.wait().unwrap();
    let took = t0.elapsed();
    assert_eq!(status.code(), Some(7), "run exits as CMD did on TERM");
    assert!(!alive(gc), "the TERM-ignoring grandchild {gc} survived");
    assert!(
        took >= Duration::from_millis(900),
        "the grace did not wait ({took:?})"
    );
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "module left");
}

/// TERM to `run` stops the module even when CMD ignores TERM: `run` does not wait for CMD, it
/// ends the whole tree within the grace and the kill (and dies of the SIGKILL CMD got).
#[test]
fn term_to_run_ends_a_module_whose_cmd_ignores_term() {
    let w = World::new();
    let script = trapping_sh("trap '' TERM", &w.tmp("ready"), 600);
    let mut run = w
        .ck()
        .args(["run", "deaf", "--grace", "300ms", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(run.id());
    w.line_from("ready");
    signal(run.id(), rustix::process::Signal::TERM);
    let mut status = None;
    eventually("run to end after TERM, CMD ignoring it", || {
        status = run.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.and_then(|s| s.signal()), Some(9));
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "module left");
}

/// USR1 goes to CMD alone, once (the namespace's init passes on only what the helper tags).
#[test]
fn usr1_to_run_reaches_cmd_once() {
    let w = World::new();
    let got = w.tmp("got");
    let script = trapping_sh(
        &format!(
            "trap 'echo usr1 >> {}' USR1; trap 'exit 5' TERM",
            got.display()
        ),
        &w.tmp("ready"),
        600,
    );
    let mut run = w
        .ck()
        .args(["run", "usr", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(run.id());
    w.line_from("ready");
    signal(run.id(), rustix::process::Signal::USR1);
    eventually("CMD to get USR1", || got.exists());
    signal(run.id(), rustix::process::Signal::TERM);
    assert_eq!(run.wait().unwrap().code(), Some(5));
    let n = std::fs::read_to_string(&got).unwrap().lines().count();
    assert_eq!(n, 1, "CMD got USR1 {n} times");
}

/// What a module sees: its own pid namespace (it is pid 2 there), unless --no-pid-namespace.
#[test]
fn cmd_is_pid_2_in_its_namespace_and_sees_host_pids_without_one() {
    let w = World::new();
    let inside = ok(w.run(&["run", "ns", "--", "sh", "-c", "echo $$"]));
    assert_eq!(inside.trim(), "2");
    let host = ok(w.run(&[
        "run",
        "ns",
        "--no-pid-namespace",
        "--",
        "sh",
        "-c",
        "echo $$",
    ]));
    assert_ne!(host.trim(), "2");
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        s.rsplit(')')
            .next()?
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

fn ppid(pid: u32) -> u32 {
    stat_fields(pid)
        .and_then(|f| f.get(1)?.parse().ok())
        .unwrap_or(0)
}

/// `run` takes the limit flags (and the policy) as `exec` does: checked before anything is made.
#[test]
fn run_with_a_limit_whose_controller_is_off_is_refused_and_makes_nothing() {
    let w = World::new();
    let enabled = std::fs::read_to_string(w.root().join("subc-modules/cgroup.subtree_control"))
        .unwrap_or_default();
    if enabled.split_whitespace().any(|c| c == "memory") {
        return; // a host with the memory controller: the guest lane checks the limit itself
    }
    let o = w.run(&["run", "lim", "--memory-max", "64M", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("memory"), "{}", stderr(&o));
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// Lane 2 of the guest lane: a helper without CAP_SYS_ADMIN (a user's manager runs it) got
/// EPERM for CLONE_NEWPID and ran CMD without a PID namespace. It now makes the PID namespace
/// together with a user namespace (its own uid and gid mapped to themselves): CMD is PID 2 there,
/// in a cgroup namespace rooted at its module, and nothing says there is no PID namespace.
#[test]
fn unprivileged_run_gets_a_pid_namespace_through_a_user_namespace() {
    if !needs_root("the root handed to nobody (chown)") {
        return;
    }
    let w = World::new();
    let o = ck_as_nobody(
        &w,
        &[
            "run",
            "userns",
            "--",
            "sh",
            "-c",
            "echo $$; id -u; cat /proc/self/uid_map /proc/self/setgroups; grep '^0::' /proc/self/cgroup",
        ],
    )
    .output()
    .expect("setpriv (util-linux)");
    let err = stderr(&o);
    assert!(!err.contains("no PID namespace"), "{err}");
    let out = ok(o);
    let l: Vec<&str> = out.lines().collect();
    assert_eq!(l.len(), 5, "{out}\n{err}");
    assert_eq!(l[0], "2", "CMD is PID 2 of its namespace: {out}\n{err}");
    assert_eq!(l[1], NOBODY.to_string(), "{out}");
    let map: Vec<&str> = l[2].split_whitespace().collect();
    assert_eq!(map, ["65534", "65534", "1"], "{out}");
    assert_eq!(l[3], "deny", "{out}");
    assert_eq!(l[4], "0::/", "{out}");
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// Lane 2 of the guest lane: SIGKILL of an unprivileged helper (no CAP_SYS_ADMIN) left the
/// module's processes alive, since it had no PID namespace. With the namespace made through a
/// user namespace, the init dies with the helper and the kernel empties the namespace: nothing
/// of the module is left within one second, a reparented grandchild and TERM-ignoring ones
/// included.
#[test]
fn sigkill_of_an_unprivileged_run_leaves_no_process_of_the_module() {
    if !needs_root("the root handed to nobody (chown)") {
        return;
    }
    let w = World::new();
    let errs = sigkill_of_run_rounds(&w, 5, |args| ck_as_nobody(&w, args));
    for (round, err) in errs.iter().enumerate() {
        assert!(!err.contains("no PID namespace"), "round {round}: {err}");
    }
}

/// `rounds` times: `run hung` (started by `start` with its arguments) of a CMD that ignores TERM
/// and leaves a reparented grandchild and a TERM-ignoring child, SIGKILLed; nothing of the module
/// may be left within one second. Returns each round's stderr of `run` (a file, not a pipe: a
/// module left alive would hold a pipe open).
fn sigkill_of_run_rounds(
    w: &World,
    rounds: usize,
    start: impl Fn(&[&str]) -> std::process::Command,
) -> Vec<String> {
    let mut errs = Vec::new();
    for round in 0..rounds {
        let (a, b, c) = (w.tmp("a"), w.tmp("b"), w.tmp("c"));
        for f in [&a, &b, &c] {
            let _ = std::fs::remove_file(f);
        }
        let script = format!(
            "trap '' TERM; (sh -c '{a}; exec sleep 601' &); \
             (sh -c 'trap \"\" TERM; {b}; exec sleep 602' &); {c}; exec sleep 603",
            a = host_pid_to(&a),
            b = host_pid_to(&b),
            c = host_pid_to(&c),
        );
        let err_file = w.tmp("stderr");
        let mut run = start(&["run", "hung", "--", "sh", "-c", &script])
            .stderr(std::fs::File::create(&err_file).unwrap())
            .spawn()
            .unwrap();
        w.track(run.id());
        let pids = [w.pid_from("a"), w.pid_from("b"), w.pid_from("c")];
        run.kill().unwrap();
        run.wait().unwrap();
        let err = std::fs::read_to_string(&err_file).unwrap();
        assert!(
            empty_within(w, "hung", Duration::from_secs(1)),
            "round {round}: the module still holds processes 1 s after SIGKILL of run: {err}"
        );
        // A SIGKILLed process leaves its cgroup (cgroup_exit) before it becomes a zombie
        // (exit_notify): for a moment after `populated 0` it can still read as running.
        let deadline = std::time::Instant::now() + scaled(Duration::from_secs(1));
        for p in pids {
            while alive(p) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(!alive(p), "round {round}: {p} survived SIGKILL of run");
        }
        errs.push(err);
    }
    errs
}

/// The helper's signals cross the user namespace its PID namespace came with: USR1 to an
/// unprivileged `run` reaches CMD once (the helper's tagged `pidfd_send_signal` to the init, same
/// uid, `SI_QUEUE`), and TERM stops the module, CMD's exit code returned.
#[test]
fn usr1_to_an_unprivileged_run_reaches_cmd_once_across_its_user_namespace() {
    if !needs_root("the root handed to nobody (chown)") {
        return;
    }
    let w = World::new();
    let got = w.tmp("got");
    let script = trapping_sh(
        &format!(
            "trap 'echo usr1 >> {}' USR1; trap 'exit 5' TERM",
            got.display()
        ),
        &w.tmp("ready"),
        600,
    );
    let err_file = w.tmp("stderr");
    let mut run = ck_as_nobody(&w, &["run", "usr", "--", "sh", "-c", &script])
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .expect("setpriv (util-linux)");
    w.track(run.id());
    assert_eq!(w.line_from("ready"), "2", "CMD in a PID namespace");
    signal(run.id(), rustix::process::Signal::USR1);
    eventually("CMD to get USR1", || got.exists());
    signal(run.id(), rustix::process::Signal::TERM);
    let code = run.wait().unwrap().code();
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert_eq!(code, Some(5), "{err}");
    let n = std::fs::read_to_string(&got).unwrap().lines().count();
    assert_eq!(n, 1, "CMD got USR1 {n} times");
    assert!(!err.contains("no PID namespace"), "{err}");
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// `prog` started in the root's `daemon/`, then in a user namespace whose
/// `user.max_user_namespaces` is 0, as its root without capabilities (`setpriv`): where neither
/// a PID namespace nor a user namespace for one can be made. Add `prog`'s arguments.
fn without_user_namespaces(w: &World, prog: &str) -> std::process::Command {
    let mut c = std::process::Command::new("sh");
    c.args([
        "-c",
        "echo $$ > \"$1/daemon/cgroup.procs\" && shift && exec unshare --user --map-root-user \
         sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"' sh \"$@\"",
        "sh",
    ])
    .arg(w.root())
    .args([
        "setpriv",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
        prog,
    ])
    .env_remove("CK_CGROUP_ROOT")
    .env("CK_CGROUP_POLICY", "/dev/null");
    c
}

/// The namespace fallbacks are the library's, not the CLI's. A daemon that calls
/// `Root::spawn_with_fallback` where no user namespace can be made (as above) gets its program
/// run without a PID namespace and the very line `run` prints for it
/// (`ModuleChild::fallbacks`, `Fallback::line`). The daemon here is this test binary, started
/// again in that environment (`CK_TEST_FALLBACK_ROOT` set).
#[test]
fn a_library_caller_gets_the_fallback_line_run_prints() {
    if let Some(root) = std::env::var_os("CK_TEST_FALLBACK_ROOT") {
        let root = ck_cgroup::Root::open(std::path::Path::new(&root)).unwrap();
        let id = ck_cgroup::ModuleId::new("nons").unwrap();
        let mut cmd = ck_cgroup::spawn::ModuleCommand::new("sh");
        cmd.args(["-c", "echo $$"]).pid_namespace(true);
        let mut child = root.spawn_with_fallback(&id, &mut cmd).unwrap();
        child.wait().unwrap();
        for f in child.fallbacks() {
            println!("FALLBACK {}", f.line("sh"));
        }
        let _gone = root.remove("nons").unwrap();
        return;
    }
    let w = World::new();
    let lib = without_user_namespaces(&w, &std::env::current_exe().unwrap().to_string_lossy())
        .args([
            "--exact",
            "a_library_caller_gets_the_fallback_line_run_prints",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CK_TEST_FALLBACK_ROOT", w.root())
        .output()
        .expect("unshare, setpriv (util-linux)");
    let out = stdout(&lib);
    assert!(lib.status.success(), "{out}{}", stderr(&lib));
    let lines: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("FALLBACK "))
        .collect();
    // Neither namespace can be made there: two fallbacks, the PID namespace's first.
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].contains("no PID namespace"), "{out}");
    assert!(lines[1].starts_with("no cgroup namespace here"), "{out}");
    let cli = without_user_namespaces(&w, bin())
        .arg("--root")
        .arg(w.root())
        .args(["run", "nons", "--", "sh", "-c", "echo $$"])
        .output()
        .unwrap();
    let err = stderr(&cli);
    let notes: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("ck-cgroup: run nons: "))
        .collect();
    assert_eq!(
        notes, lines,
        "the library's lines are not the ones run printed:\n{err}"
    );
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// Where no user namespace can be made either (here: a user namespace whose
/// `user.max_user_namespaces` is 0, so only this test's helper is affected, running as its root
/// without capabilities), `run` still runs CMD, without a PID namespace, and says so once, naming
/// both steps and the last one's errno (ENOSPC).
#[test]
fn run_where_user_namespaces_are_off_falls_back_visibly_naming_the_errno() {
    let w = World::new();
    let o = without_user_namespaces(&w, bin())
        .arg("--root")
        .arg(w.root())
        .args(["run", "nons", "--", "sh", "-c", "echo $$"])
        .env_remove("CK_CGROUP_ROOT")
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .expect("unshare, setpriv (util-linux)");
    let err = stderr(&o);
    let out = ok(o);
    assert_ne!(out.trim(), "2", "{err}");
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no PID namespace"))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("clone3 CLONE_NEWPID: EPERM")
            && notes[0].contains("then with a user namespace: ENOSPC"),
        "{err}"
    );
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// `run` (`c`, its stderr piped) ends within 30 s (scaled) of CMD's exit, as CMD did (`code`),
/// with a note that says `note`, and leaves nothing of its module.
fn ends_at_once_saying(w: &World, mut c: std::process::Child, code: i32, note: &str) {
    let status = wait_at_most(&mut c, Duration::from_secs(30));
    let mut err = String::new();
    std::io::Read::read_to_string(c.stderr.as_mut().unwrap(), &mut err).unwrap();
    let status = status.unwrap_or_else(|| panic!("run hung after CMD exited: {err}"));
    assert_eq!(status.code(), Some(code), "{err}");
    assert!(err.contains(note), "{err}");
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "module left");
}

/// `run` hung when a process of CMD's ptrace-stopped the PID namespace's init: CMD
/// exited, the init could neither reap it nor report its status, and `run` waited on the
/// report for ever. Here CMD starts a tracer of the init (`hostile ptrace 1`: `PTRACE_SEIZE`
/// and `PTRACE_INTERRUPT`, then it stays the tracer) and exits 7 once the init is in its
/// ptrace stop: `run` exits 7 at once, its note names the traced init, and nothing is left.
/// Mutation control: `init-held-blind`.
///
/// As a delegated user this cannot happen: the init holds every capability of its user
/// namespace and CMD none, so `ptrace(2)` refuses CMD (`EPERM`: a tracer's capabilities must
/// cover the tracee's); the stopped init below is that user's case.
#[test]
fn run_ends_when_cmd_exits_while_a_process_of_the_module_traces_the_init() {
    if !needs_root("as a user the init is in a user namespace that CMD may not trace (EPERM)") {
        return;
    }
    let w = World::new();
    let rdy = w.tmp("traced");
    let script = format!(
        "{h} ptrace 1 {r} >/dev/null 2>&1 & while [ ! -e {r} ]; do sleep 0.01; done; exit 7",
        h = hostile(),
        r = rdy.display()
    );
    let c = w
        .ck()
        .args(["run", "tr", "--grace", "1s", "--", "sh", "-c", &script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    w.track(c.id());
    ends_at_once_saying(
        &w,
        c,
        7,
        "exited while the PID namespace's init was traced by pid",
    );
}

/// The same with the init stopped from outside the namespace (a SIGSTOP of its host pid, the
/// only kind that stops a namespace's init): CMD exits 5 while the init is in that stop, and
/// `run` exits 5 at once, its note names the stopped init, and nothing is left.
#[test]
fn run_ends_when_cmd_exits_while_the_init_is_stopped() {
    run_ends_with_a_stopped_init(false);
}

/// The same as a delegated user (nobody, no capability: the PID namespace comes with a user
/// namespace; the init keeps the user's uid, so the user's own processes may stop it).
#[test]
fn run_ends_when_cmd_exits_while_the_init_is_stopped_as_a_delegated_user() {
    run_ends_with_a_stopped_init(true);
}

fn run_ends_with_a_stopped_init(nobody: bool) {
    if nobody && !needs_root("the root handed to nobody (chown)") {
        return;
    }
    let w = World::new();
    let init = w.tmp("init.pid");
    let go = w.tmp("go");
    let script = format!(
        "read -r _ _ _ pp _ < /proc/self/stat; echo $pp > {i}; \
         while [ ! -e {g} ]; do sleep 0.01; done; exit 5",
        i = init.display(),
        g = go.display()
    );
    let args = ["run", "st", "--grace", "1s", "--", "sh", "-c", &script];
    let mut cmd = if nobody {
        ck_as_nobody(&w, &args)
    } else {
        let mut c = w.ck();
        c.args(args);
        c
    };
    let c = cmd.stderr(std::process::Stdio::piped()).spawn().unwrap();
    w.track(c.id());
    eventually("CMD wrote the init's pid", || {
        std::fs::read_to_string(&init).is_ok_and(|s| s.ends_with('\n'))
    });
    let pid = w.pid_from("init.pid");
    assert_eq!(ppid(pid), c.id(), "the init is run's child");
    signal(pid, rustix::process::Signal::STOP);
    eventually("the init stopped", || state(pid) == Some('T'));
    std::fs::write(&go, "").unwrap();
    ends_at_once_saying(
        &w,
        c,
        5,
        "exited while the PID namespace's init was stopped",
    );
}

/// The CLI looked CMD up by the effective uid and `Root::spawn` by the real one, so
/// for a caller whose ids differ (`setpriv --ruid=65534 --euid=0`) `run` of a program found in
/// PATH that only root may execute passed the CLI's check and failed in the library (exit 1,
/// EACCES). One lookup, the library's, by `execve`'s rule (the effective ids): it runs. The
/// other way round (real root, effective nobody), `exec` and `run` both refuse it with 126
/// before anything is made.
///
/// Lane 2 (Debian 12's kernel 6.1, no `PR_GET_AUXV`) found the helper itself panicking there:
/// rustix read its aux vector from `/proc/self/auxv`, which a process whose real and effective
/// uids differ cannot open; the helper now takes it from libc (`getauxval`, rustix's
/// `use-libc-auxv`).
#[test]
fn run_and_exec_find_cmd_in_path_by_the_effective_uid_as_execve_does() {
    if !needs_root("the helper run as nobody (setpriv)") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let dir = w.tmp("bin");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prog = dir.join("root-only");
    std::fs::write(&prog, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o700)).unwrap();
    let path = format!("{}:/bin:/usr/bin", dir.display());
    let as_ids = |ids: [&str; 2], args: &[&str]| {
        std::process::Command::new("setpriv")
            .args(ids)
            .arg(bin())
            .arg("--root")
            .arg(w.root())
            .args(args)
            .env("PATH", &path)
            .output()
            .expect("setpriv (util-linux)")
    };
    let effective_root = ["--ruid=65534", "--euid=0"];
    let o = as_ids(effective_root, &["run", "eff", "--", "root-only"]);
    assert_eq!(stdout(&o), "ran\n", "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let effective_nobody = ["--ruid=0", "--euid=65534"];
    for cmd in ["run", "exec"] {
        let o = as_ids(effective_nobody, &[cmd, "noeff", "--", "root-only"]);
        assert_eq!(o.status.code(), Some(126), "{cmd}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("Permission denied"),
            "{cmd}: {}",
            stderr(&o)
        );
    }
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// `run --json`'s result carries CMD's death, parsed back into the library's own type: an exit
/// with a code is charged with what it left named; TERM sent to `run` is a stop of ck-cgroup's,
/// not charged; a bare SIGKILL where the memory controller is off is unknown, saying why.
#[test]
fn run_reports_whose_fault_the_death_was() {
    use ck_cgroup::cause::death_cause::Cause;
    use ck_cgroup::module::Death;
    fn death(o: &std::process::Output) -> Death {
        let line = stderr(o).lines().last().unwrap_or_default().to_string();
        let v: serde_json::Value = serde_json::from_str(&line).expect(&line);
        serde_json::from_value(v["death"].clone()).expect(&line)
    }
    let w = World::new();
    let o = w.run(&[
        "--json",
        "run",
        "crash",
        "--grace",
        "0s",
        "--",
        "sh",
        "-c",
        "sleep 600 & exit 3",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    // The module by the name run was given, as the daemon reads it (not its path: lane 2's
    // real-daemon-oomd looked for `module hog: killed by` and met `module subc-modules/hog`).
    let line = stderr(&o).lines().last().unwrap_or_default().to_string();
    let v: serde_json::Value = serde_json::from_str(&line).expect(&line);
    assert_eq!(v["module"], "crash", "{line}");
    let d = death(&o);
    assert_eq!(d.cause, Cause::Exited { code: 3 });
    assert_eq!(d.charged, Some(true));
    assert_eq!(d.survivors.as_ref().map(Vec::len), Some(1), "{d:?}");

    let script = trapping_sh("trap 'exit 4' TERM", &w.tmp("ready"), 600);
    let run = w
        .ck()
        .args(["--json", "run", "stopped", "--", "sh", "-c", &script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    w.track(run.id());
    w.line_from("ready");
    signal(run.id(), rustix::process::Signal::TERM);
    let o = run.wait_with_output().unwrap();
    let d = death(&o);
    assert_eq!(d.cause, Cause::Stopped, "{d:?}");
    assert_eq!((d.exit_code, d.charged), (Some(4), Some(false)));

    let memory = std::fs::read_to_string(w.root().join("subc-modules/cgroup.subtree_control"))
        .unwrap_or_default()
        .contains("memory");
    if !memory {
        let o = w.run(&["--json", "run", "bare", "--", "sh", "-c", "kill -KILL $$"]);
        let d = death(&o);
        assert!(
            matches!(&d.cause, Cause::Unknown { why } if why.contains("memory.events")),
            "{d:?}"
        );
        assert_eq!(d.charged, None);
    }
}
