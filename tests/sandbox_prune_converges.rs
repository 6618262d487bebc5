//! `sandbox --prune` converges after a SIGKILL of `sandbox` at any moment: run right after the
//! SIGKILL (before the kernel has finished the helper, and without reaping it), it removes the
//! sandbox, reports none alive, and leaves no `ck-sandbox-*` directory and no process of it.
//! The moments are spread over the helper's whole life: its own sweep, the sandbox being made,
//! CMD starting, CMD running.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// The `ck-sandbox-*` directories under `parent`.
fn sandboxes(parent: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("ck-sandbox-"))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

fn prune(parent: &Path) -> Value {
    let o = bare()
        .args(["--json", "sandbox", "--prune", "--parent"])
        .arg(parent)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "prune: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn sandbox_prune_right_after_a_sigkill_of_sandbox_at_any_moment_removes_it_30_of_30() {
    let w = World::new();
    let parent = w.root();
    let mut removed = 0;
    // Always 30: the rounds' moments span the start-up, and fewer may all fall before the
    // sandbox is made (the test then says so and fails).
    for round in 0..30u64 {
        let mut helper = bare()
            .args(["sandbox", "--parent"])
            .arg(parent)
            .args(["--", "sh", "-c", "sleep 600 & exec sleep 600"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        w.track(helper.id());
        // The moment: 0 to 87 ms into its life, a different one each round (where in its work
        // that falls depends on the host; 30 rounds cover start-up to a running CMD).
        std::thread::sleep(Duration::from_millis(round * 3));
        signal(helper.id(), rustix::process::Signal::KILL);
        // Not reaped yet, and maybe not yet dead: the prune must not take it for a live one.
        let r = prune(parent);
        assert_eq!(
            r["alive"], 0,
            "round {round}: a SIGKILLed sandbox counted alive: {r}"
        );
        assert_eq!(r["failed"], Value::Array(vec![]), "round {round}: {r}");
        removed += r["removed"].as_array().unwrap().len();
        assert_eq!(
            sandboxes(parent),
            Vec::<PathBuf>::new(),
            "round {round}: {r}"
        );
        helper.wait().unwrap();
        // And the next prune finds nothing left.
        let again = prune(parent);
        assert_eq!(
            again["removed"],
            Value::Array(vec![]),
            "round {round}: {again}"
        );
    }
    // Most rounds made a sandbox before the SIGKILL (the earliest may not have got that far).
    assert!(
        removed > 0,
        "no round made a sandbox: the moments are all too early"
    );
}
