//! A stop succeeds only when the module is empty and its directory gone, re-checked after the
//! last write: `kill` never exits 0 with a process of the module alive or its
//! directory there, with every method, as root and as a delegated unprivileged user.
//! Mutation control: `stop-trusts-populated` (success on `populated 0` alone).

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use common::nobody::{NOBODY, as_nobody, ck_as_nobody, delegate_root_to_nobody};
use common::*;
use serde_json::Value;

const METHODS: [&str; 4] = ["auto", "cgroup-kill", "freeze", "signal"];

/// The system's Python, by path: nobody may not read a user's shims (pyenv) earlier in PATH.
const PYTHON: &str = "/usr/bin/python3";

/// Who runs the helper, the module and its neighbour.
#[derive(Clone, Copy, Debug)]
enum As {
    Root,
    Nobody,
}

impl As {
    fn ck(self, w: &World, args: &[&str]) -> Command {
        match self {
            As::Root => {
                let mut c = w.ck();
                c.args(args);
                c
            }
            As::Nobody => ck_as_nobody(w, args),
        }
    }

    fn prog(self, w: &World, prog: &str, args: &[&str]) -> Command {
        match self {
            As::Root => {
                let mut c = Command::new(prog);
                c.args(args);
                c
            }
            As::Nobody => {
                delegate_root_to_nobody(w);
                as_nobody(w, prog, args, |_| {})
            }
        }
    }
}

/// Alive and not exiting: not a zombie, and without `PF_EXITING` (0x4) in the flags of
/// `/proc/<pid>/stat`. A process killed with the module leaves it (`populated 0`) a little
/// before it has exited, and on a loaded host it can be scheduled out in between: it never runs
/// its own code again, so it is not one of the module's processes left alive.
fn alive_not_exiting(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, r)| r)
        .split_whitespace()
        .collect();
    // After the comm: state is field 3, flags field 9 (proc_pid_stat(5)).
    let exiting = fields
        .get(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_none_or(|f| f & 0x4 != 0);
    alive(pid) && !exiting
}

/// The pids of live processes (not zombies, not exiting) whose command line holds `marker`.
fn live_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmd).contains(marker) && alive_not_exiting(pid) {
            out.push(pid);
        }
    }
    out
}

fn kill_with_marker(marker: &str) {
    for pid in live_with(marker) {
        if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
    }
}

fn procs_of(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// Each TERM makes more: the handler double-forks (the grandchild, reparented away, carries on
/// with the same handler) and the process itself goes on.
const DOUBLE_FORKER: &str = r#"
import os, signal, sys, time
def h(s, f):
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            return
        os._exit(0)
    os.waitpid(pid, 0)
signal.signal(signal.SIGTERM, h)
open(sys.argv[1], "w").write("ready\n")
while True:
    time.sleep(0.01)
"#;

/// A module whose processes answer TERM by double-forking, stopped with
/// `kill --grace D --method auto`, exited 0 with one process of the module still alive (one of
/// two full runs). Over many trials no `kill` exits 0 while a process of the module lives.
fn double_forker_rounds(who: As) {
    let w = World::new();
    let script = w.tmp("forker.py");
    std::fs::write(&script, DOUBLE_FORKER).unwrap();
    let dir = w.root().join("subc-modules/df");
    let runs = race_runs(50);
    let mut clean = 0;
    for round in 0..runs {
        // Unique on the machine: the root and the delegated-user tests run at once.
        let marker = format!("df-{}-{who:?}-{round}", std::process::id());
        let ready = format!("{marker}.ready");
        let ready_path = w.tmp(&ready).display().to_string();
        let mut exec = who
            .ck(
                &w,
                &[
                    "exec",
                    "df",
                    "--",
                    PYTHON,
                    &script.display().to_string(),
                    &ready_path,
                    &marker,
                ],
            )
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        w.line_from(&ready);
        let o = who
            .ck(
                &w,
                &[
                    "--json",
                    "kill",
                    "df",
                    "--grace",
                    "100ms",
                    "--method",
                    "auto",
                    "--timeout",
                    "10s",
                ],
            )
            .output()
            .unwrap();
        let left = live_with(&marker);
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("round {round}: {e}: {}", stderr(&o)));
        if o.status.success() {
            assert!(
                left.is_empty(),
                "round {round} ({who:?}): kill exited 0 with processes of the module alive: {}\n{v}",
                left.iter()
                    .map(|p| format!(
                        "{p} in {}: {}",
                        cgroup_of(*p),
                        std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default()
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            assert!(!dir.exists(), "round {round}: exit 0 and {dir:?} is there");
            clean += 1;
        } else {
            // Allowed only when it says what is left (never here on a quiet host).
            assert_eq!(o.status.code(), Some(1), "round {round}: {}", stderr(&o));
            assert!(v["error"].is_string(), "round {round}: {v}");
        }
        kill_with_marker(&marker);
        let _ = exec.kill();
        exec.wait().unwrap();
        let _ = who.ck(&w, &["kill", "df"]).output();
    }
    eprintln!("{clean} of {runs} kills exited 0, none with a process left");
    assert!(clean > 0, "no kill succeeded in {runs} rounds");
}

#[test]
fn kill_of_a_module_that_double_forks_on_term_never_exits_0_with_a_process_alive() {
    double_forker_rounds(As::Root);
}

#[test]
fn kill_of_a_module_that_double_forks_on_term_never_exits_0_with_a_process_alive_as_a_delegated_user()
 {
    double_forker_rounds(As::Nobody);
}

/// The neighbour: makes sub-directories (two deep) inside the module as fast as it can, until
/// the module is gone; never the module's own directory (a `mkdir -p` would make it again: a new
/// directory, after the kill's last look, which no kill can tell from an `exec` of the same id).
const SUBDIR_MAKER: &str = r#"
import os, sys
m = sys.argv[1]
open(sys.argv[2], "w").write("ready\n")
j = 0
while True:
    j += 1
    try:
        os.mkdir(f"{m}/s{j}")
        os.mkdir(f"{m}/s{j}/t")
    except OSError:
        if not os.path.isdir(m):
            break
"#;

/// While a sibling process of the same uid made sub-directories inside the module
/// being killed, `kill` reported the module removed and its directory was still there (one of
/// two runs), and as an unprivileged user (at nice 0) it lost the race to the neighbour for its
/// whole timeout. Over many trials `kill` removes the module (exit 0) and the directory is gone.
/// Mutation control: `stop-no-seal`.
fn subdir_maker_rounds(who: As) {
    let w = World::new();
    let script = w.tmp("subdirs.py");
    std::fs::write(&script, SUBDIR_MAKER).unwrap();
    let dir = w.root().join("subc-modules/sd");
    let runs = race_runs(50);
    let mut removed = 0;
    for round in 0..runs {
        let mut exec = who
            .ck(&w, &["exec", "sd", "--", "sleep", "600"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        eventually("the module's process", || procs_of(&dir) == 1);
        if matches!(who, As::Nobody) {
            // The module's directory is nobody's (the helper made it as nobody).
            assert_eq!(
                std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&dir).unwrap()),
                NOBODY
            );
        }
        let ready = format!("sd-{round}.ready");
        let mut maker: Child = who
            .prog(
                &w,
                PYTHON,
                &[
                    &script.display().to_string(),
                    &dir.display().to_string(),
                    &w.tmp(&ready).display().to_string(),
                ],
            )
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        w.line_from(&ready);
        let o: Output = who
            .ck(&w, &["--json", "kill", "sd", "--timeout", "10s"])
            .output()
            .unwrap();
        let there = dir.exists();
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("round {round}: {e}: {}", stderr(&o)));
        // The stop wins: no sub-directory can be made below the module while it is stopped
        // (its cgroup.max.descendants is 0), so it removes the module within its timeout.
        assert!(
            o.status.success(),
            "round {round} ({who:?}): {}\n{v}",
            stderr(&o)
        );
        assert!(
            !there,
            "round {round} ({who:?}): kill exited 0 and {dir:?} is there: {v}"
        );
        assert_eq!(v["removed"], true, "round {round}: {v}");
        removed += 1;
        let _ = maker.kill();
        maker.wait().unwrap();
        exec.wait().unwrap();
        let _ = who.ck(&w, &["kill", "sd", "--timeout", "10s"]).output();
        assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "round {round}");
    }
    eprintln!("{removed} of {runs} kills removed the module, none said so falsely");
}

#[test]
fn kill_while_a_sibling_makes_sub_directories_never_reports_the_module_removed_with_its_directory_there()
 {
    subdir_maker_rounds(As::Root);
}

#[test]
fn kill_while_a_sibling_makes_sub_directories_never_reports_the_module_removed_with_its_directory_there_as_a_delegated_user()
 {
    subdir_maker_rounds(As::Nobody);
}

/// `populated 0` is not "every process of the module is dead": a module's process that can
/// write another cgroup's `cgroup.procs` (root, no `nsdelegate`) moves itself out on TERM, and
/// the module reads empty at once. The stop held a pidfd on it: with every method, `kill` exits 1
/// naming the pid and where it is now, and never 0.
#[test]
fn kill_of_a_module_whose_process_leaves_it_on_term_fails_naming_the_process() {
    // With nsdelegate (systemd's mount) the module's process, in its own cgroup namespace,
    // cannot leave its module: the case this test makes cannot happen there.
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    if ck_cgroup::cgroup::parse::cgroup2_nsdelegate(&mountinfo) == Some(true) {
        common::skip(
            "cgroup2 is mounted with nsdelegate: a module's process cannot leave its module",
        );
        return;
    }
    let w = World::new();
    let daemon = w.root().join("daemon/cgroup.procs");
    for method in METHODS {
        let marker = format!("leaver-{}-{method}", std::process::id());
        let script = format!(
            "trap 'echo $$ > {}' TERM; while :; do sleep 0.05; done # {marker}",
            daemon.display()
        );
        let mut exec = w
            .ck()
            .args(["exec", "lv", "--", "sh", "-c", &script])
            .spawn()
            .unwrap();
        w.track(exec.id());
        // Its loop's sleep in the module too: the shell has set its trap (placed alone, it
        // may still be `ck-cgroup exec` before its execve, which TERM kills outright).
        eventually("the module's shell and its sleep", || {
            procs_of(&w.root().join("subc-modules/lv")) >= 2
        });
        let o = w.run(&[
            "--json",
            "kill",
            "lv",
            "--grace",
            "5s",
            "--method",
            method,
            "--timeout",
            "1s",
        ]);
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{method}: {e}: {}", stderr(&o)));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{method}: exit 0 with {} alive: {v}",
            exec.id()
        );
        assert_eq!(v["empty"], false, "{method}: {v}");
        assert_eq!(
            v["outside"],
            serde_json::json!([exec.id()]),
            "{method}: {v}"
        );
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{method}: {err}");
        assert!(
            err.contains(&format!("{} (now in ", exec.id())) && err.contains("/daemon)"),
            "{method}: {err}"
        );
        kill_with_marker(&marker);
        exec.wait().unwrap();
        // Nothing of it is in the module: the next kill removes the directory.
        ok(w.run(&["kill", "lv"]));
        assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "{method}");
    }
}
