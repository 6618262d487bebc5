//! The systemd backend's contract on a host where it cannot run, and its bad input: one line
//! naming the problem and the fix, exit 2, and the command never runs. (Lane 2 of the guest
//! lane runs the backend for real: scripts/vm/systemd/checks/80-backend-systemd.sh.)

mod common;

use std::process::Output;

use common::{bare, stderr};

/// Exit 2, and the first line of stderr starts with `prefix`.
fn assert_bad_input(o: &Output, prefix: &str, what: &str) {
    assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
    assert!(stderr(o).starts_with(prefix), "{what}: {}", stderr(o));
}

/// systemd is PID 1 here (its private socket exists): the "cannot reach" tests do not apply.
fn has_systemd() -> bool {
    std::path::Path::new("/run/systemd/system").exists()
}

#[test]
fn exec_and_sandbox_without_systemd_are_bad_input_and_run_nothing() {
    if has_systemd() {
        common::skip("systemd runs here (these tests are for a host without it)");
        return;
    }
    for args in [
        &["exec", "--backend", "systemd", "--manager", "system", "a"][..],
        &["sandbox", "--backend", "systemd", "--manager", "system"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let o = bare()
            .args(args)
            .args(["--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        let what = format!("{args:?}");
        assert_bad_input(
            &o,
            "ck-cgroup: cannot reach the system manager: the system bus: ",
            &what,
        );
        let err = stderr(&o);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{what}: {err}");
        assert!(lines[1].starts_with("ck-cgroup: hint: "), "{what}: {err}");
        assert!(!marker.exists(), "{what}: CMD ran, unplaced");
    }
}

#[test]
fn the_backend_comes_from_the_environment_too() {
    if has_systemd() {
        common::skip("systemd runs here (these tests are for a host without it)");
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
        assert_bad_input(
            &o,
            "ck-cgroup: cannot reach the user manager: the session bus: ",
            &format!("{args:?}"),
        );
    }
}

#[test]
fn a_kill_method_cannot_be_forced_on_a_scope() {
    // Refused before any connection: systemd kills a scope, not ck-cgroup.
    for args in [
        &["kill", "a"][..],
        &["prune", "--kill"],
        &["prune", "--dry-run"],
    ] {
        let o = bare()
            .args(args)
            .args(["--backend", "systemd", "--method", "cgroup-kill"])
            .output()
            .unwrap();
        assert_bad_input(
            &o,
            "ck-cgroup: --method cannot be chosen with --backend systemd",
            &format!("{args:?}"),
        );
    }
}

#[test]
fn a_bad_module_id_is_refused_before_systemd_is_asked() {
    // exec takes a module id; kill and status a module name (an id or a directory name).
    for (args, what) in [
        (
            &["exec", "--backend", "systemd", "../x", "--", "true"][..],
            "id",
        ),
        (&["kill", "--backend", "systemd", "../x"], "name"),
        (&["status", "--backend", "systemd", "../x"], "name"),
    ] {
        let o = bare().args(args).output().unwrap();
        assert_bad_input(
            &o,
            &format!("ck-cgroup: invalid module {what} \"../x\""),
            &format!("{args:?}"),
        );
    }
}

#[test]
fn a_scope_sandbox_cannot_be_kept() {
    let o = bare()
        .args(["sandbox", "--backend", "systemd", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_bad_input(&o, "ck-cgroup: --keep cannot keep a sandbox scope", "");
}

#[test]
fn doctor_for_the_systemd_backend_says_the_manager_is_missing() {
    if has_systemd() {
        common::skip("systemd runs here (these tests are for a host without it)");
        return;
    }
    let o = bare()
        .args(["doctor", "--backend", "systemd", "--manager", "system"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.starts_with("FAIL  systemd backend: cannot reach the system manager")),
        "{out}"
    );
    assert!(!out.contains("service root"), "{out}");
}

#[test]
fn commands_without_a_systemd_backend_refuse_the_variable() {
    // CK_CGROUP_BACKEND=systemd marks a service whose cgroup is not delegated: a command that
    // would write into a service root refuses, before it looks for one.
    for args in [
        &["init"][..],
        &["create", "a"],
        &["set", "a", "--pids-max", "10"],
        &["place", "a", "1"],
        &["remove", "a"],
        &["run", "a", "--", "true"],
        &["apply"],
        &["watch"],
    ] {
        let o = bare()
            .args(args)
            .env("CK_CGROUP_BACKEND", "systemd")
            .output()
            .unwrap();
        assert_bad_input(
            &o,
            &format!("ck-cgroup: {} has no systemd backend", args[0]),
            &format!("{args:?}"),
        );
    }
}

#[test]
fn a_sandbox_hides_the_backend_variable_from_its_command() {
    // CMD's modules go to the sandbox's root even where the caller's environment names systemd.
    let o = bare()
        .args(["sandbox", "--backend", "cgroupfs", "--parent"])
        .arg(common::parent())
        .args(["--", "sh", "-c", "echo ${CK_CGROUP_BACKEND:-unset}"])
        .env("CK_CGROUP_BACKEND", "systemd")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("unset\n"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
