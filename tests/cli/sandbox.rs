//! `sandbox -- CMD`: CMD runs with the sandbox as its `CK_CGROUP_ROOT`, TERM reaches it, its
//! status is returned, and the sandbox is removed with everything in it. Mutation control
//! `no-relay`.

use std::process::Command;

use crate::common::*;
use serde::Deserialize;

#[test]
fn sandbox_runs_cmd_with_its_root_and_removes_everything() {
    let parent = parent();
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("left.pid");
    let script = format!(
        "test -d \"$CK_CGROUP_ROOT/subc-modules\" || exit 9
         {bin} exec left -- sh -c 'echo $$ > {pf}; exec sleep 600' >/dev/null 2>&1 &
         while [ ! -s {pf} ]; do sleep 0.01; done
         exit 7",
        bin = bin(),
        pf = pidfile.display()
    );
    let o = bare()
        .args(["--json", "sandbox", "--parent"])
        .arg(&parent)
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    let left: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let survived = alive(left);
    if survived {
        let _ = Command::new("kill")
            .args(["-9", &left.to_string()])
            .status();
    }
    assert!(!survived, "a process left in the sandbox survived it");
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    // stdout is CMD's: the result is the last line on stderr.
    assert_eq!(stdout(&o), "", "CMD printed nothing");
    let e = stderr(&o);
    let sb: SandboxResult = serde_json::from_str(e.lines().last().unwrap_or_default()).expect(&e);
    assert!(sb.removed && !sb.kept && sb.status == 7);
    assert!(
        !std::path::Path::new(&sb.sandbox).exists(),
        "sandbox directory left"
    );
    // Other sandboxes may come and go under the same parent (tests run in parallel); the whole
    // tree is compared before and after the suite by scripts/test.
}

#[test]
fn sandbox_passes_term_to_cmd_and_still_removes_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let ready = tmp.path().join("ready");
    let root_file = tmp.path().join("root");
    let script = trapping_sh(
        &format!(
            "trap 'exit 3' TERM; echo \"$CK_CGROUP_ROOT\" > {}",
            root_file.display()
        ),
        &ready,
        5,
    );
    let mut sb = bare()
        .args(["sandbox", "--parent"])
        .arg(parent())
        .args(["--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    eventually("CMD to start", || ready.exists());
    signal(sb.id(), rustix::process::Signal::TERM);
    let status = sb.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(3),
        "CMD got the TERM and its status came back"
    );
    let root = std::fs::read_to_string(&root_file).unwrap();
    assert!(root.starts_with('/'), "CMD saw no CK_CGROUP_ROOT: {root:?}");
    assert!(
        !std::path::Path::new(root.trim()).exists(),
        "the sandbox was left behind"
    );
}

#[test]
fn sandbox_and_run_start_cmd_with_no_signal_blocked() {
    let w = World::new();
    let sigblk = |out: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let o = bare()
        .args(["sandbox", "--parent"])
        .arg(parent())
        .args(["--", "cat", "/proc/self/status"])
        .output()
        .unwrap();
    assert_eq!(sigblk(&stdout(&o)), "0000000000000000", "sandbox's CMD");
    let o = w.run(&["run", "mask", "--", "cat", "/proc/self/status"]);
    assert_eq!(sigblk(&stdout(&o)), "0000000000000000", "run's CMD");
}

/// `sandbox --json`'s result (the CLI's own: the library has no type of it), the last line on stderr (stdout is CMD's).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SandboxResult {
    #[serde(deserialize_with = "crate::common::version_1")]
    pub version: u32,
    pub sandbox: String,
    pub kept: bool,
    pub removed: bool,
    pub status: i32,
}
