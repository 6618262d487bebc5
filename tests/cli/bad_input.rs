//! Bad input (a module name that can never be one, a bad pid, duration or root, a policy that is
//! not a regular file) is refused with exit 2 at once, and nothing is changed.

use std::process::{Command, Stdio};

use crate::common::*;

#[test]
fn bad_input_is_refused_with_exit_2_and_changes_nothing() {
    let w = World::new();
    let marker = w.tmp("ran");
    let touch = format!("touch {}", marker.display());
    let mount = ck_cgroup::discover::cgroup2_mount().unwrap();
    let mount = mount.display().to_string();
    let long = "x".repeat(65);
    let cases: Vec<Vec<&str>> = vec![
        vec!["create", "../x"],
        vec!["create", ""],
        vec!["create", "a/b"],
        vec!["create", "cgroup.procs"],
        vec!["create", &long],
        vec!["exec", "../x", "--", "sh", "-c", &touch],
        vec!["place", "../x", "1"],
        vec!["place", "p", "0"],
        vec!["place", "p", "4194304000"],
        vec!["kill", "../x"],
        vec!["kill", ".."],
        vec!["remove", "a/../../b"],
        vec!["kill", "--timeout", "soon", "k"],
        vec!["frobnicate"],
    ];
    let before = w.tree();
    for args in &cases {
        let o = w.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("ck-cgroup: ") || stderr(&o).starts_with("error: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    for args in [
        vec!["--root", "/tmp", "init"],
        vec!["--root", "/nonexistent/cgroup", "init"],
        vec!["--root", mount.as_str(), "init"],
    ] {
        let o = bare().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let first = stderr(&o).lines().next().unwrap_or("").to_string();
        assert!(first.starts_with("ck-cgroup: "), "{first}");
    }
    assert_eq!(w.tree(), before, "a refused command changed the tree");
    assert!(!marker.exists(), "exec ran CMD although it was refused");
    assert!(!std::path::Path::new(&mount).join("daemon").exists());
}

/// Run `args` with a deadline: a command that hangs is killed and the test fails.
fn run_bounded(mut c: Command, within: std::time::Duration) -> std::process::Output {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + within;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{c:?} did not answer within {within:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_policy_that_is_not_a_regular_file_is_refused_at_once() {
    let w = World::new();
    let fifo = w.tmp("policy.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let big = w.tmp("big.toml");
    std::fs::write(&big, vec![b'#'; (1 << 20) + 1]).unwrap();
    let fifo = fifo.display().to_string();
    let big = big.display().to_string();
    for (policy, says) in [
        ("/dev/zero", "character device"),
        (fifo.as_str(), "FIFO"),
        (big.as_str(), "larger than"),
    ] {
        for args in [
            vec!["create", "m"],
            vec!["exec", "m", "--", "true"],
            vec!["run", "m", "--", "true"],
            vec!["apply"],
        ] {
            let mut c = w.ck();
            c.arg("--policy").arg(policy).args(&args);
            let o = run_bounded(c, std::time::Duration::from_secs(5));
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{policy} {args:?}: {e}");
            assert!(e.contains(says), "{e}");
            assert_eq!(w.tree(), vec!["daemon", "subc-modules"], "{args:?}");
        }
    }
}

/// A usage error (clap's: a typo'd command, an unknown flag, a bad value, a missing argument) is
/// said as every error is: `ck-cgroup: <problem>` and one `ck-cgroup: hint:` line, exit 2; not
/// clap's `error:`, `tip:` and `Usage:` lines. Clap's suggestion is the hint's. Help and version
/// stay clap's, on stdout, exit 0.
#[test]
fn usage_errors_are_one_problem_line_and_one_hint_line_not_clap_text() {
    for (args, problem, hint) in [
        (
            &["kil", "x"][..],
            "unrecognized subcommand 'kil'",
            "a similar subcommand exists: 'kill'",
        ),
        (&["list", "--frob"], "'--frob'", "ck-cgroup list --help"),
        (
            &["create", "a", "--memory-max", "12X"],
            "invalid value '12X' for '--memory-max <SIZE>'",
            "ck-cgroup create --help",
        ),
        (
            &["create"],
            "the following required arguments were not provided: <ID>",
            "usage: ck-cgroup create ",
        ),
        (
            &["status", "--sort", "bogus"],
            "invalid value 'bogus'",
            "possible values: mem,",
        ),
        (
            &["--root", "/x", "--unit", "u.service", "list"],
            "--root and --unit both name the root",
            "ck-cgroup list --help",
        ),
    ] {
        let o = bare().args(args).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: two lines: {e}");
        let first = lines[0]
            .strip_prefix("ck-cgroup: ")
            .unwrap_or_else(|| panic!("{e}"));
        assert!(
            !first.starts_with("hint:") && first.contains(problem),
            "{args:?}: {e}"
        );
        assert!(
            lines[1].starts_with("ck-cgroup: hint: ") && lines[1].contains(hint),
            "{args:?}: {e}"
        );
        for clap in ["error:", "tip:", "Usage:", "For more information"] {
            assert!(!e.contains(clap), "{args:?}: clap's {clap:?}: {e}");
        }
    }
    // With --json the same problem and hint, in the error object.
    let o = bare().args(["--json", "kil", "x"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    let v: serde_json::Value = serde_json::from_str(&e).expect(&e);
    assert_eq!(v["error"]["message"], "unrecognized subcommand 'kil'");
    assert_eq!(
        v["error"]["hint"],
        "a similar subcommand exists: 'kill'; see `ck-cgroup --help`"
    );
    for args in [&["--help"][..], &["kill", "--help"], &["--version"]] {
        let o = bare().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).starts_with("ck-cgroup ") || stdout(&o).contains("Usage:"));
        assert!(stderr(&o).is_empty(), "{args:?}: {}", stderr(&o));
    }
}

/// `CK_CGROUP_ROOT=` (set but empty) is refused by the variable's name with its fix, not as a
/// `--root` without a value; `--root` on the command line comes before it (it was refused too).
#[test]
fn an_empty_ck_cgroup_root_is_named_not_called_a_missing_root_value() {
    let o = bare()
        .env("CK_CGROUP_ROOT", "")
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "ck-cgroup: CK_CGROUP_ROOT is set but empty\nck-cgroup: hint: set CK_CGROUP_ROOT to the \
         service's cgroup directory, or unset it to discover the root\n"
    );
    let o = bare()
        .env("CK_CGROUP_POLICY", "")
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("ck-cgroup: CK_CGROUP_POLICY is set but empty\n"),
        "{}",
        stderr(&o)
    );
    // `--root=` is the command line's: a value is missing.
    let o = bare().args(["--root=", "list"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'--root <PATH>'"), "{}", stderr(&o));
    let w = World::new();
    ok(w.run(&["init"]));
    let o = w
        .ck()
        .env("CK_CGROUP_ROOT", "")
        .arg("list")
        .output()
        .unwrap();
    ok(o);
}
