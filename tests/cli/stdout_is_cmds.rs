//! `run --json` and `sandbox --json`: stdout is CMD's alone, and the helper's result is the last
//! line on stderr.

use crate::common::*;
use crate::sandbox::SandboxResult;

#[test]
fn run_json_leaves_stdout_to_cmd_and_puts_its_result_last_on_stderr() {
    let w = World::new();
    let o = w.run(&[
        "--json",
        "run",
        "j",
        "--",
        "sh",
        "-c",
        "echo out; echo '{\"not\": \"ours\"}'; echo err >&2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "out\n{\"not\": \"ours\"}\n",
        "stdout is CMD's alone"
    );
    let e = stderr(&o);
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.first(), Some(&"err"), "{e}");
    // The library's own types: the stop, and CMD's death beside it.
    let k: ck_cgroup::module::StopReport = serde_json::from_str(lines.last().unwrap()).expect(&e);
    assert!(k.tree.empty && k.removed && !k.already_gone, "{e}");
    let v: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let d: ck_cgroup::module::Death = serde_json::from_value(v["death"].clone()).expect(&e);
    assert_eq!(d.exit_code, Some(0), "{e}");
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
}

#[test]
fn sandbox_json_leaves_stdout_to_cmd_and_puts_its_result_last_on_stderr() {
    let o = bare()
        .args(["--json", "sandbox", "--parent"])
        .arg(parent())
        .args(["--", "sh", "-c", "echo out; echo err >&2; exit 3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(stdout(&o), "out\n");
    let e = stderr(&o);
    let sb: SandboxResult = serde_json::from_str(e.lines().last().unwrap_or_default()).expect(&e);
    assert_eq!((sb.status, sb.removed, sb.kept), (3, true, false));
    assert_eq!(e.lines().next(), Some("err"));
}
