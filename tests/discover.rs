//! The library's `discover()` under the real binary's `sandbox`: it finds the sandbox's root
//! through `CK_CGROUP_ROOT`, as the CLI does, not the root of the process's own cgroup (under
//! `make test` that is a live-looking service; a daemon's tests would write into it).
//!
//! The library call runs in a copy of this test binary started by `ck-cgroup sandbox`: the test
//! `probe` does nothing unless `CK_CGROUP_DISCOVER_PROBE` names a file, where it writes what
//! `discover()` returned. It only reads.

mod common;

use common::*;

const PROBE: &str = "CK_CGROUP_DISCOVER_PROBE";

#[test]
fn probe() {
    let Some(out) = std::env::var_os(PROBE) else {
        return;
    };
    let line = match ck_cgroup::discover::discover() {
        Ok(p) => format!("ok {}\n", p.display()),
        Err(e) => format!("err {e}\n"),
    };
    std::fs::write(out, line).expect("write the probe's result");
}

#[test]
fn discover_under_sandbox_is_the_sandboxs_root() {
    let tmp = tempfile::tempdir().unwrap();
    let result = tmp.path().join("discovered");
    let seen = tmp.path().join("env");
    let exe = std::env::current_exe().unwrap();
    // CMD records the variable the sandbox set, then runs the probe.
    let script = format!(
        "echo \"$CK_CGROUP_ROOT\" > {seen} && exec {exe} --exact probe --test-threads=1 --quiet",
        seen = seen.display(),
        exe = exe.display()
    );
    let o = bare()
        .args(["sandbox", "--parent"])
        .arg(parent())
        .args(["--", "sh", "-c", &script])
        .env(PROBE, &result)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let root = std::fs::read_to_string(&seen).unwrap().trim().to_string();
    assert!(
        root.starts_with(&parent().display().to_string()) && root.contains("ck-sandbox-"),
        "CMD saw CK_CGROUP_ROOT={root:?}"
    );
    let got = std::fs::read_to_string(&result).expect("the probe ran");
    assert_eq!(
        got.trim(),
        format!("ok {root}"),
        "discover() under the sandbox"
    );
}

#[test]
fn discover_refuses_an_empty_variable_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let result = tmp.path().join("discovered");
    let o = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "probe", "--test-threads=1", "--quiet"])
        .env(PROBE, &result)
        .env("CK_CGROUP_ROOT", "")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let got = std::fs::read_to_string(&result).expect("the probe ran");
    assert!(
        got.starts_with("err ") && got.contains("CK_CGROUP_ROOT"),
        "discover() with CK_CGROUP_ROOT empty: {got}"
    );
}
