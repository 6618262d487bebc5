//! The systemd backend's contract on a host where it cannot run, and its bad input: one line
//! naming the problem and the fix, exit 2, and the command never runs. (Lane 2 of the guest
//! lane runs the backend for real: scripts/vm/systemd/checks/80-backend-systemd.sh.)

mod common;

use common::{bare, stderr};

/// systemd is PID 1 here (its private socket exists): the "cannot reach" tests do not apply.
fn has_systemd() -> bool {
    std::path::Path::new("/run/systemd/system").exists()
}

#[test]
fn exec_with_the_systemd_backend_and_no_systemd_is_bad_input_and_runs_nothing() {
    if has_systemd() {
        eprintln!("skipped: systemd runs here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let o = bare()
        .args([
            "exec",
            "--backend",
            "systemd",
            "--manager",
            "system",
            "a",
            "--",
        ])
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("ck-cgroup: cannot reach the system manager: the system bus: "),
        "{err}"
    );
    assert!(lines[1].starts_with("ck-cgroup: hint: "), "{err}");
    assert!(
        !marker.exists(),
        "CMD ran although the module was not placed"
    );
}

#[test]
fn the_backend_comes_from_the_environment_too() {
    if has_systemd() {
        eprintln!("skipped: systemd runs here");
        return;
    }
    for args in [&["list"][..], &["status"], &["kill", "a"]] {
        let o = bare()
            .args(args)
            .env("CK_CGROUP_BACKEND", "systemd")
            .env("XDG_RUNTIME_DIR", "/nonexistent")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .args(["--manager", "user"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("ck-cgroup: cannot reach the user manager: the session bus: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_kill_method_cannot_be_forced_on_a_scope() {
    // Refused before any connection: systemd kills a scope, not ck-cgroup.
    let o = bare()
        .args([
            "kill",
            "--backend",
            "systemd",
            "a",
            "--method",
            "cgroup-kill",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("ck-cgroup: --method cannot be chosen with --backend systemd"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_bad_module_id_is_refused_before_systemd_is_asked() {
    for args in [
        &["exec", "--backend", "systemd", "../x", "--", "true"][..],
        &["kill", "--backend", "systemd", "../x"],
        &["status", "--backend", "systemd", "../x"],
    ] {
        let o = bare().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).starts_with("ck-cgroup: invalid module id \"../x\""),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_scope_sandbox_without_systemd_is_bad_input_and_runs_nothing() {
    if has_systemd() {
        eprintln!("skipped: systemd runs here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let o = bare()
        .args([
            "sandbox",
            "--backend",
            "systemd",
            "--manager",
            "system",
            "--",
        ])
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("ck-cgroup: cannot reach the system manager: the system bus: "),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists(), "CMD ran without its sandbox");
}

#[test]
fn a_scope_sandbox_cannot_be_kept() {
    let o = bare()
        .args(["sandbox", "--backend", "systemd", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("ck-cgroup: --keep cannot keep a sandbox scope"),
        "{}",
        stderr(&o)
    );
}
