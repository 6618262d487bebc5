//! Not a service root: every command that acts on or reports modules refuses a
//! root with neither daemon/ nor subc-modules/, with exit 2 and one line that names the root and
//! the ways to name the right one; nothing is made. Mutation control `no-service-root-check`.

use std::process::Command;

use crate::common::commands;
use crate::common::*;

/// The one line of a refusal of `root`, checked.
#[track_caller]
fn refused_as_no_service_root(o: &std::process::Output, root: &std::path::Path, what: &str) {
    assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
    let mut e = stderr(o);
    assert_eq!(e.lines().count(), 1, "{what}: one line: {e}");
    if what.contains("--json") {
        // With --json the line is the error object (docs/json.md): its message is the text's.
        let v: serde_json::Value = serde_json::from_str(&e).expect(&e);
        assert_eq!(v["version"], 1, "{what}: {e}");
        assert_eq!(v["error"]["kind"], "not_a_service_root", "{what}: {e}");
        assert_eq!(v["error"]["exit"], 2, "{what}: {e}");
        e = format!(
            "ck-cgroup: {}",
            v["error"]["message"].as_str().unwrap_or_default()
        );
    }
    assert!(
        e.starts_with(&format!("ck-cgroup: {}", root.display()))
            && e.contains("is not a service root")
            && e.contains("--root")
            && e.contains("CK_CGROUP_ROOT")
            && e.contains("--unit"),
        "{what}: {e}"
    );
}

#[test]
fn not_a_service_root_is_refused_by_every_module_command() {
    let w = World::new();
    // A cgroup like an operator's login shell's: a cgroup2 directory without the layout.
    let shell = w.root().join("shell");
    std::fs::create_dir(&shell).unwrap();
    let before = w.tree();
    let me = std::process::id().to_string();
    // Every command the CLI defines that works on a service root, with valid arguments (place:
    // a running process); --json and the variants that read the root another way too.
    let tmp = w.tmp("out").display().to_string();
    let mut cases: Vec<Vec<String>> = Vec::new();
    for c in commands::every() {
        if c.root != "service" {
            println!("not a service root: {} works on any ({})", c.name, c.root);
            continue;
        }
        println!("not a service root: {} refuses it", c.name);
        let mut args = commands::with_module(&commands::valid_args(&c.name, &tmp), "aft");
        if c.name == "place" {
            args[2] = me.clone();
        }
        if c.json != "refused" {
            let mut json = vec!["--json".to_string()];
            json.extend(args.iter().cloned());
            cases.push(json);
        }
        cases.push(args);
    }
    assert!(cases.len() >= 30, "{cases:?}");
    for extra in [
        &["status"][..],
        &["prune"],
        &["prune", "--kill"],
        &["prune", "--dry-run"],
        &["watch"],
        &["ps"],
        &["apply", "--policy", "/dev/null"],
    ] {
        cases.push(extra.iter().map(|a| a.to_string()).collect());
    }
    for args in &cases {
        let o = bare()
            .arg("--root")
            .arg(&shell)
            .args(args)
            .output()
            .unwrap();
        refused_as_no_service_root(&o, &shell, &format!("{args:?}"));
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
    assert_eq!(w.tree(), before, "a refused command changed the tree");
    // The library refuses it the same way.
    let e = ck_cgroup::Root::open_service(&shell).unwrap_err();
    assert_eq!(e.kind(), ck_cgroup::ErrorKind::NotAServiceRoot);
    assert_eq!(e.exit_code(), 2);
    // init lays it out; then it is a service root.
    ok(bare()
        .arg("--root")
        .arg(&shell)
        .arg("init")
        .output()
        .unwrap());
    ok(bare()
        .arg("--root")
        .arg(&shell)
        .arg("list")
        .output()
        .unwrap());
    // daemon/ alone (DelegateSubgroup=daemon before any module) is a service root too.
    let daemon_only = w.root().join("svc2");
    std::fs::create_dir_all(daemon_only.join("daemon")).unwrap();
    ok(bare()
        .arg("--root")
        .arg(&daemon_only)
        .arg("list")
        .output()
        .unwrap());
}

#[test]
fn kill_from_a_login_shell_is_refused_and_the_module_keeps_running() {
    let w = World::new();
    let mut aft = w.exec_sleep("aft");
    let module = v2_path(&w.module_dir("aft"));
    // The helper runs from a cgroup that is no service's (a login shell's session), with no
    // --root: discovery finds that cgroup, which must be refused, not read as "no modules".
    let shell = w.root().join("login");
    std::fs::create_dir(&shell).unwrap();
    let from_shell = |args: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {}/cgroup.procs && exec {} {args}",
                shell.display(),
                bin()
            ))
            .env_remove("CK_CGROUP_ROOT")
            .env_remove("CK_CGROUP_UNIT")
            .env("CK_CGROUP_POLICY", "/dev/null")
            .output()
            .unwrap()
    };
    for args in ["kill aft", "list", "status", "prune --kill", "freeze aft"] {
        let o = from_shell(args);
        refused_as_no_service_root(&o, &shell, args);
        assert!(
            stderr(&o).contains("discovered from this process's cgroup"),
            "{args}: {}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty(), "{args}: {}", stdout(&o));
    }
    assert!(alive(aft.id()), "aft was killed");
    assert_eq!(cgroup_of(aft.id()), module);
    ok(w.run(&["kill", "aft"]));
    aft.wait().unwrap();
}

#[test]
fn prune_if_laid_out_passes_a_root_not_laid_out_yet() {
    let w = World::new();
    let fresh = w.root().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let o = bare()
        .arg("--root")
        .arg(&fresh)
        .args(["prune", "--kill", "--if-laid-out"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not laid out yet") && stderr(&o).lines().count() == 1,
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "no modules\n");
    assert_eq!(
        std::fs::read_dir(&fresh)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir())
            .count(),
        0
    );
    // On a laid-out root it prunes as without the flag.
    ok(w.run(&["create", "empty"]));
    let out = ok(w.run(&["prune", "--kill", "--if-laid-out"]));
    assert_eq!(out, "empty: empty: removed\n");
}
