//! Limits on this host, where the modules have no memory, pids or cpu controller: refused with
//! exit 2 and nothing made, or skipped and listed with --best-effort. Real limits, OOM and
//! pids.max are exercised in the guest lane (scripts/vm-test).

mod common;

use common::*;
use serde_json::Value;

fn controllers(w: &World) -> String {
    std::fs::read_to_string(w.root().join("subc-modules/cgroup.subtree_control")).unwrap()
}

#[test]
fn a_limit_without_its_controller_is_refused_and_nothing_is_made() {
    let w = World::new();
    if controllers(&w).contains("memory") {
        common::skip("the memory controller is enabled here: this is the host without it");
        return;
    }
    let before = w.tree();
    let o = w.run(&["create", "capped", "--memory-max", "10M"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.starts_with("ck-cgroup: memory.max needs the memory controller"),
        "{e}"
    );
    let fix = if v1_holds("memory") {
        "boot with systemd.unified_cgroup_hierarchy=1"
    } else {
        "Delegate="
    };
    assert!(e.contains(fix), "the fix is named ({fix}): {e}");
    let marker = w.tmp("ran");
    let touch = format!("touch {}", marker.display());
    let o = w.run(&[
        "exec",
        "capped",
        "--pids-max",
        "5",
        "--",
        "sh",
        "-c",
        &touch,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        !marker.exists(),
        "exec ran CMD although its limit was refused"
    );
    assert_eq!(w.tree(), before, "a refused limit made something");
}

#[test]
fn best_effort_applies_what_it_can_and_lists_the_rest() {
    let w = World::new();
    if controllers(&w).contains("memory") {
        common::skip("the memory controller is enabled here: this is the host without it");
        return;
    }
    let v: Value = serde_json::from_str(&ok(w.run(&[
        "--json",
        "create",
        "soft",
        "--memory-max",
        "10M",
        "--pids-max",
        "max",
        "--best-effort",
    ])))
    .unwrap();
    let skipped: Vec<&str> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["file"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, vec!["memory.max", "pids.max"], "{v}");
    assert!(w.root().join("subc-modules/soft").is_dir());
}

#[test]
fn set_needs_an_existing_module_and_sizes_are_checked() {
    let w = World::new();
    let o = w.run(&["set", "ghost", "--cpu-weight", "100"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    for bad in [
        vec!["create", "x", "--memory-max", "10X"],
        vec!["create", "x", "--cpu-weight", "0"],
        vec!["create", "x", "--pids-max", "-1"],
    ] {
        let o = w.run(&bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
    assert!(!w.root().join("subc-modules/x").exists());
}

#[test]
fn the_policy_is_applied_on_create_and_by_apply_and_mistakes_are_loud() {
    let w = World::new();
    if controllers(&w).contains("memory") {
        common::skip("the memory controller is enabled here: this is the host without it");
        return;
    }
    let policy = w.tmp("policy.toml");
    std::fs::write(
        &policy,
        "[defaults]\npids_max = 64\n\n[module.big]\nmemory_max = \"8G\"\n",
    )
    .unwrap();
    let p = policy.to_str().unwrap();
    // The policy's limits need controllers this host does not give the modules.
    let o = w.run(&["--policy", p, "create", "big"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("memory.max needs the memory controller"));
    let v: Value = serde_json::from_str(&ok(w.run(&[
        "--policy",
        p,
        "--json",
        "create",
        "big",
        "--best-effort",
    ])))
    .unwrap();
    assert_eq!(v["skipped"].as_array().unwrap().len(), 2, "{v}");
    let v: Value = serde_json::from_str(&ok(w.run(&[
        "--policy",
        p,
        "--json",
        "apply",
        "--dry-run",
        "--best-effort",
    ])))
    .unwrap();
    let d = v["differences"].as_array().unwrap();
    assert!(
        d.iter()
            .any(|x| x["file"] == "memory.max" && x["skipped"].is_string()),
        "{v}"
    );
    std::fs::write(&policy, "[defaults]\nmemory_maxx = \"1G\"\n").unwrap();
    let o = w.run(&["--policy", p, "create", "typo"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("ck-cgroup: invalid policy"),
        "{}",
        stderr(&o)
    );
    assert!(!w.root().join("subc-modules/typo").exists());
}

#[test]
fn every_path_makes_its_module_where_memory_is_off_and_writes_no_oom_group() {
    let w = World::new();
    if controllers(&w).contains("memory") {
        common::skip("the memory controller is enabled here: this is the host without it");
        return;
    }
    // The memory.oom.group default of a module made now: without the memory controller there is
    // nothing to write, and no path fails for it (the guest lane's 25-oom-group.sh checks the 1).
    ok(w.run(&["create", "c"]));
    ok(w.run(&["exec", "e", "--", "true"]));
    let mut sleeper = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn sleep");
    // Not tracked: it is reaped below, and its pid must not be SIGKILLed again after that. Once
    // placed it is in the sandbox, whose teardown kills it if the test fails.
    ok(w.run(&["place", "p", &sleeper.id().to_string()]));
    let r = w.tmp("run-saw");
    let o = w.run(&[
        "run",
        "r",
        "--",
        "sh",
        "-c",
        &format!(
            "grep -cx $$ {} > {}",
            w.root().join("subc-modules/r/cgroup.procs").display(),
            r.display()
        ),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let saw = std::fs::read_to_string(&r).unwrap();
    assert_eq!(saw.trim(), "1", "run's CMD is in the module's cgroup.procs");
    for id in ["c", "e", "p"] {
        let dir = w.root().join("subc-modules").join(id);
        assert!(dir.is_dir(), "{id} was not made");
        assert!(!dir.join("memory.oom.group").exists(), "{id}");
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// The knobs peers have (`--memory-low`, `--memory-min`, `--cpu-max`, `--io-weight`,
/// `--io-max`, `--cpus`): each refused where its controller is not enabled for the modules, in
/// one line naming the controller, with the fix, and nothing made; skipped and listed with
/// `--best-effort`.
#[test]
fn each_new_knob_without_its_controller_is_refused_and_nothing_is_made() {
    let w = World::new();
    let on = controllers(&w);
    let before = w.tree();
    for (flag, value, file, controller) in [
        ("--memory-low", "64M", "memory.low", "memory"),
        ("--memory-min", "16M", "memory.min", "memory"),
        ("--cpu-max", "50000/100000", "cpu.max", "cpu"),
        ("--io-weight", "200", "io.weight", "io"),
        ("--io-max", "8:0:rbps=10M,wiops=100", "io.max", "io"),
        ("--cpus", "0", "cpuset.cpus", "cpuset"),
    ] {
        if on.split_whitespace().any(|c| c == controller) {
            continue;
        }
        let o = w.run(&["create", "knob", flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", stderr(&o));
        let e = stderr(&o);
        // One line naming the file and the controller, then the fix.
        assert!(
            e.starts_with(&format!(
                "ck-cgroup: {file} needs the {controller} controller, which is not enabled for the modules"
            )),
            "{flag}: {e}"
        );
        // The fix for this host: where cgroup v1 holds the controller (a hybrid host), no
        // Delegate= can give it; else delegate it.
        let fix = if v1_holds(controller) {
            format!("cgroup v1 holds the {controller} controller")
        } else {
            format!("add {controller} to Delegate=")
        };
        assert!(e.contains(&fix), "{flag}: the fix is named ({fix}): {e}");
        assert_eq!(w.tree(), before, "{flag}: a refused limit made something");
        let v: Value = serde_json::from_str(&ok(w.run(&[
            "--json",
            "create",
            "knob",
            flag,
            value,
            "--best-effort",
        ])))
        .unwrap();
        let skipped = v["skipped"].as_array().unwrap();
        assert_eq!(skipped.len(), 1, "{flag}: {v}");
        assert_eq!(skipped[0]["file"], file, "{flag}: {v}");
        assert_eq!(skipped[0]["controller"], controller, "{flag}: {v}");
        ok(w.run(&["remove", "knob"]));
    }
}

#[test]
fn bad_values_of_the_new_knobs_are_refused_in_one_line_before_anything_is_made() {
    let w = World::new();
    for (flag, bad, says) in [
        ("--cpu-max", "500", "the quota 500 is outside"),
        ("--cpu-max", "50000/10", "the period 10 is outside"),
        ("--io-weight", "0", "weight 0 is outside 1 to 10000"),
        ("--io-max", "8:0", "no KEY=VALUE"),
        ("--io-max", "8:0:xbps=1", "unknown key \"xbps\""),
        (
            "--io-max",
            "/dev/null:rbps=1M",
            "\"/dev/null\" is not a block device",
        ),
        ("--cpus", "3-1", "the range 3-1 runs backwards"),
        ("--memory-low", "1Q", "invalid size"),
        ("--memory-min", "1.5G", "invalid size"),
    ] {
        let o = w.run(&["create", "x", flag, bad]);
        assert_eq!(o.status.code(), Some(2), "{flag} {bad}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(says), "{flag} {bad}: {e}");
    }
    assert!(!w.root().join("subc-modules/x").exists());
    // In the policy too, naming the key.
    let policy = w.tmp("policy.toml");
    std::fs::write(&policy, "[defaults]\ncpu_max = \"1/2/3\"\n").unwrap();
    let o = w.run(&["--policy", policy.to_str().unwrap(), "create", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("ck-cgroup: invalid policy") && stderr(&o).contains("cpu_max: "),
        "{}",
        stderr(&o)
    );
    assert!(!w.root().join("subc-modules/x").exists());
}

/// Whether a cgroup v1 hierarchy of this host holds `controller` (a v1 mount's super options in
/// /proc/self/mountinfo name it; v1's `blkio` is `io`).
fn v1_holds(controller: &str) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines().any(|l| {
        let Some((_, post)) = l.split_once(" - ") else {
            return false;
        };
        let mut f = post.split(' ');
        f.next() == Some("cgroup")
            && f.nth(1).is_some_and(|opts| {
                opts.split(',')
                    .any(|o| o == controller || (controller == "io" && o == "blkio"))
            })
    })
}
