//! Exit codes stay what README's "Exit codes" says when stdout or stderr cannot be written (full
//! or closed): never a panic, and only the commands whose output is the result fail for it.

use std::process::Command;

use crate::common::*;

/// stderr (or stdout) that cannot be written: /dev/full, or closed.
fn with_output(mut c: Command, stdout_full: bool, stderr_full: bool) -> std::process::Output {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    if stdout_full {
        c.stdout(full());
    }
    if stderr_full {
        c.stderr(full());
    }
    c.output().unwrap()
}

/// Every command's error path with stderr on /dev/full, and with stdout and stderr closed: the
/// documented exit code, never a panic (101).
#[test]
fn exit_codes_stay_true_when_stderr_is_full_or_closed() {
    let w = World::new();
    let noexec = w.tmp("noexec");
    std::fs::write(&noexec, "").unwrap();
    let noexec = noexec.display().to_string();
    let sb_parent = parent().display().to_string();
    // doctor's verdict on the sandbox depends on the host (1 where the controllers it wants are
    // missing, 0 where they are all there, as in lane 2's guest): a full or closed stderr must not
    // change it.
    let doctor = cmd(&w, &["doctor", "--unit", ""])
        .output()
        .unwrap()
        .status
        .code()
        .unwrap();
    assert!(doctor == 0 || doctor == 1, "doctor exited {doctor}");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["frobnicate"], 2),
        (vec!["create", "../x"], 2),
        (vec!["create", "m", "--pids-max", "x"], 2),
        (vec!["set", "nosuch", "--cpu-weight", "5"], 1),
        (vec!["place", "p", "0"], 2),
        (vec!["exec", "../x", "--", "true"], 2),
        (vec!["exec", "m", "--", "/nonexistent"], 127),
        (vec!["exec", "m", "--", &noexec], 126),
        (vec!["run", "m", "--", "/nonexistent"], 127),
        (vec!["run", "m", "--", "sh", "-c", "exit 5"], 5),
        (vec!["--json", "run", "m", "--", "sh", "-c", "exit 5"], 5),
        (vec!["kill", "../x"], 2),
        (vec!["kill", "--timeout", "soon", "k"], 2),
        (vec!["kill", "nosuch"], 0),
        (vec!["--json", "kill", "nosuch"], 0),
        (vec!["remove", "a/../../b"], 2),
        // A name that can never be a module is bad input, --keep's too.
        (vec!["prune", "--keep", "../x"], 2),
        (vec!["list"], 0),
        (vec!["status", "--format", "yaml"], 2),
        (vec!["apply", "--policy", "/dev/zero"], 2),
        (vec!["watch", "--report-above", "x"], 2),
        (vec!["watch", "--policy", "/dev/zero"], 2),
        (vec!["doctor", "--unit", ""], doctor),
        (vec!["--root", "/tmp", "init"], 2),
        (vec!["--root", "/tmp", "doctor"], 1),
        (
            vec!["sandbox", "--parent", &sb_parent, "--", "/nonexistent"],
            127,
        ),
        (
            vec![
                "--json", "sandbox", "--parent", &sb_parent, "--", "sh", "-c", "exit 4",
            ],
            4,
        ),
    ];
    for (args, code) in &cases {
        let o = with_output(cmd(&w, args), false, true);
        assert_eq!(o.status.code(), Some(*code), "2>/dev/full {args:?}");
        let mut c = Command::new("sh");
        c.arg("-c").arg("\"$0\" \"$@\" >&- 2>&-").arg(bin());
        if args.first() != Some(&"--root") {
            c.arg("--root").arg(w.root());
        }
        c.args(args)
            .env_remove("CK_CGROUP_ROOT")
            .env("CK_CGROUP_POLICY", "/dev/null");
        let o = c.output().unwrap();
        // A closed stdout fails the commands whose output is the result (README, "Exit codes").
        let result = matches!(args.first(), Some(&"list") | Some(&"doctor"));
        let code = if result && *code == 0 { 1 } else { *code };
        assert_eq!(o.status.code(), Some(code), ">&- 2>&- {args:?}");
    }
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// A result that cannot be written to stdout: the commands that changed something keep the
/// operation's exit code; those whose output is the result (list, status, doctor, generate) fail
/// with 1; nothing panics, even with stderr full too.
#[test]
fn a_full_stdout_fails_only_the_commands_whose_output_is_the_result() {
    let w = World::new();
    for (args, code) in [
        (vec!["create", "m"], 0),
        (vec!["--json", "create", "m"], 0),
        (vec!["kill", "m"], 0),
        (vec!["kill", "nosuch"], 0),
        (vec!["prune"], 0),
        (vec!["list"], 1),
        (vec!["--json", "status"], 1),
        (vec!["generate", "bash"], 1),
        (vec!["--root", "/tmp", "doctor"], 1),
    ] {
        for stderr_full in [false, true] {
            let o = with_output(cmd(&w, &args), true, stderr_full);
            assert_eq!(o.status.code(), Some(code), ">/dev/full {args:?}");
            if !stderr_full && code == 0 {
                assert!(
                    stderr(&o).contains("could not be written to stdout"),
                    "{args:?}: {}",
                    stderr(&o)
                );
            }
        }
    }
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

/// The binary with `args`, on the world's root unless `args` name a root of their own.
fn cmd(w: &World, args: &[&str]) -> Command {
    let mut c = if args.first() == Some(&"--root") {
        bare()
    } else {
        w.ck()
    };
    c.args(args);
    c
}
