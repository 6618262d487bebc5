//! A CMD that cannot run (missing, not executable, a directory): `exec`, `run` and `sandbox` exit
//! 127 or 126 as a shell does, say so in one line, and leave no module behind.

use crate::common::*;

#[test]
fn exec_of_a_missing_command_exits_127() {
    let w = World::new();
    let o = w.run(&["exec", "m", "--", "/nonexistent/cmd"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("ck-cgroup: "));
}

#[test]
fn exec_and_run_of_a_command_that_cannot_run_leave_no_module() {
    let w = World::new();
    let noexec = w.tmp("noexec");
    std::fs::write(&noexec, "#!/bin/sh\n").unwrap();
    let noexec = noexec.display().to_string();
    for (cmd, code) in [
        ("", 127),
        ("/nonexistent/cmd", 127),
        ("no-such-command-ck", 127),
        (noexec.as_str(), 126),
        ("/etc", 126),
    ] {
        for verb in ["exec", "run"] {
            let o = w.run(&[verb, "m", "--", cmd, "arg"]);
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(code), "{verb} {cmd:?}: {e}");
            assert!(e.starts_with("ck-cgroup: failed to execute "), "{e}");
            assert_eq!(
                w.tree(),
                vec!["daemon", "subc-modules"],
                "{verb} {cmd:?} left a module"
            );
        }
    }
    // A module that exists is kept as it was.
    ok(w.run(&["create", "kept"]));
    let o = w.run(&["run", "kept", "--", "/nonexistent/cmd"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(w.root().join("subc-modules/kept").is_dir());
    // sandbox too refuses before it makes anything.
    let o = bare()
        .args(["sandbox", "--parent"])
        .arg(parent())
        .args(["--", "/nonexistent/cmd"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
}

/// `run` finds a bare CMD in PATH once, before the module is made, and hands the spawn the path
/// it found: CMD's `argv[0]` stays the name it was given (as `execvp` leaves it), for `exec` too.
#[test]
fn run_and_exec_of_a_bare_cmd_keep_its_name_as_argv0() {
    let w = World::new();
    for verb in ["run", "exec"] {
        let out = ok(w.run(&[verb, "m", "--", "cat", "/proc/self/cmdline"]));
        assert_eq!(out, "cat\0/proc/self/cmdline\0", "{verb}");
    }
}

/// docs/json.md said a `sandbox` whose CMD could not be executed prints the error object and then
/// its result line; a CMD the lookup refuses is refused before the sandbox is made: the error
/// object is stderr's one line, and there is no result line.
#[test]
fn sandbox_json_of_a_missing_cmd_prints_the_error_object_alone() {
    let o = bare()
        .args(["--json", "sandbox", "--parent"])
        .arg(parent())
        .args(["--", "/nonexistent/cmd"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    let v = serde_json::from_str::<serde_json::Value>(&e).expect(&e);
    assert_eq!(
        (v["error"]["kind"].as_str(), v["error"]["exit"].as_i64()),
        (Some("cmd_not_found"), Some(127)),
        "{e}"
    );
    assert!(stdout(&o).is_empty());
}
