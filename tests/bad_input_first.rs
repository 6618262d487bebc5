//! Every command checks all of its input (ids, module names, the policy file) before it looks at
//! a module or the root: each kind of bad input is exit 2 and one line naming it (with a hint
//! line), even where a module is missing too (which alone would be exit 1 or "already gone");
//! nothing is changed. Also: a closed stdout is the failure (exit 1) of the commands whose output
//! is their result.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{World, ok, scaled, stderr};

/// `c`'s output; a command that has not ended in 60 s is killed and the test fails naming it (a
/// refusal is immediate: `watch` with a bad id used to wait for it forever).
fn bounded(mut c: Command, what: &str) -> Output {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + scaled(Duration::from_secs(60));
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after 60 s (a hang, not a refusal)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Every command, with valid arguments for a root that is laid out and has no module `p`.
fn every_command(w: &World) -> Vec<Vec<String>> {
    let tmp = w.tmp("out").display().to_string();
    [
        vec!["init"],
        vec!["create", "p"],
        vec!["set", "p", "--cpu-weight", "5"],
        vec!["place", "p", "999999999"],
        vec!["remove", "p"],
        vec!["apply"],
        vec!["kill", "p"],
        vec!["prune", "--keep", "p"],
        vec!["list"],
        vec!["status", "p"],
        vec!["doctor"],
        vec!["freeze", "p"],
        vec!["thaw", "p"],
        vec!["watch", "p"],
        vec!["top", "-n", "1"],
        vec!["exec", "p", "--", "true"],
        vec!["run", "p", "--", "true"],
        vec!["sandbox", "--prune", "--parent", &tmp],
        vec!["generate", "bash"],
    ]
    .into_iter()
    .map(|a| a.into_iter().map(String::from).collect())
    .collect()
}

/// `args` on `w`'s root with `--policy policy`, as the last global flag.
fn run_with_policy(w: &World, policy: &str, args: &[String]) -> Output {
    let mut c = w.ck();
    c.arg("--policy").arg(policy).args(args);
    bounded(c, &format!("{args:?} --policy {policy}"))
}

/// The refusal names `says`, in one error line (and at most a hint line).
#[track_caller]
fn refused(o: &Output, says: &str, what: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{what}: {e}");
    let lines: Vec<&str> = e.lines().collect();
    assert!(
        !lines.is_empty()
            && lines.len() <= 2
            && lines[0].starts_with("ck-cgroup: ")
            && lines[1..]
                .iter()
                .all(|l| l.starts_with("ck-cgroup: hint: ")),
        "{what}: not one line (and a hint): {e}"
    );
    assert!(
        lines[0].contains(says),
        "{what}: does not name {says:?}: {e}"
    );
}

#[test]
fn a_bad_policy_is_named_before_any_module_is_looked_at_by_every_command() {
    let w = World::new();
    ok(w.run(&["init"]));
    let nul = w.tmp("nul.toml");
    std::fs::write(&nul, "[defaults]\npids_max = 5\0\n").unwrap();
    let binary = w.tmp("binary.toml");
    std::fs::write(&binary, [0x7f, b'E', b'L', b'F', 2, 1, 1, 0]).unwrap();
    let not_utf8 = w.tmp("latin1.toml");
    std::fs::write(&not_utf8, b"# caf\xe9\n").unwrap();
    let arrays = w.tmp("arrays.toml");
    std::fs::write(&arrays, format!("a = {}", "[".repeat(200_000))).unwrap();
    let tables = w.tmp("tables.toml");
    std::fs::write(&tables, format!("a = {}1", "{b = ".repeat(100_000))).unwrap();
    let long = w.tmp("long.toml");
    std::fs::write(&long, format!("# {}\n", "x".repeat(100_000))).unwrap();
    let unknown = w.tmp("unknown.toml");
    std::fs::write(&unknown, "[defaults]\nmemory_maxx = \"1G\"\n").unwrap();
    let cases = [
        ("/dev/zero".to_string(), "a character device"),
        (w.tmp("missing.toml").display().to_string(), "missing.toml"),
        (nul.display().to_string(), "NUL byte (line 2)"),
        (binary.display().to_string(), "control character"),
        (not_utf8.display().to_string(), "not UTF-8"),
        (arrays.display().to_string(), "nest deeper than"),
        (tables.display().to_string(), "nest deeper than"),
        (long.display().to_string(), "line 1 is longer than"),
        (unknown.display().to_string(), "memory_maxx"),
    ];
    let before = w.tree();
    for args in every_command(&w) {
        for (policy, says) in &cases {
            let o = run_with_policy(&w, policy, &args);
            refused(&o, says, &format!("{args:?} --policy {policy}"));
            let first = stderr(&o).lines().next().unwrap_or("").to_string();
            assert!(first.contains(policy.as_str()), "names the file: {first}");
            // No line of the file is quoted back (a NUL or a megabyte on the terminal).
            assert!(first.len() < 400, "{args:?}: {} bytes", first.len());
        }
    }
    assert_eq!(w.tree(), before, "a refused command changed the tree");
}

#[test]
fn bad_ids_and_names_are_exit_2_before_any_module_is_looked_at() {
    let w = World::new();
    ok(w.run(&["init"]));
    let long = "a".repeat(65);
    // A module to make or change takes an id; one to act on or show, an id or a directory name.
    let id_commands: [&[&str]; 5] = [
        &["create", "ID"],
        &["set", "ID", "--cpu-weight", "5"],
        &["place", "ID", "999999999"],
        &["exec", "ID", "--", "true"],
        &["run", "ID", "--", "true"],
    ];
    let name_commands: [&[&str]; 8] = [
        &["kill", "ID"],
        &["remove", "ID"],
        &["freeze", "ID"],
        &["thaw", "ID"],
        &["status", "ID"],
        &["watch", "ID"],
        &["watch", "ok", "ID"],
        &["prune", "--keep", "ID"],
    ];
    let bad_names = [
        ("", "it is empty"),
        ("..", "not a directory name"),
        ("/", "not a single path component"),
        ("a/b", "not a single path component"),
        ("../daemon", "not a single path component"),
        ("cgroup.procs", "interface file"),
        ("memory.max", "interface file"),
        (long.as_str(), "longer than 64"),
    ];
    let before = w.tree();
    let fill = |args: &[&str], name: &str| -> Vec<String> {
        args.iter()
            .map(|a| if *a == "ID" { name } else { a }.to_string())
            .collect()
    };
    for args in id_commands {
        for (name, _) in &bad_names {
            let args = fill(args, name);
            let mut c = w.ck();
            c.args(&args);
            let o = bounded(c, &format!("{args:?}"));
            refused(
                &o,
                &format!("invalid module id {name:?}"),
                &format!("{args:?}"),
            );
        }
    }
    for args in name_commands {
        for (name, says) in &bad_names {
            let args = fill(args, name);
            let mut c = w.ck();
            c.args(&args);
            let o = bounded(c, &format!("{args:?}"));
            refused(
                &o,
                &format!("invalid module name {name:?}"),
                &format!("{args:?}"),
            );
            refused(&o, says, &format!("{args:?}"));
        }
    }
    assert_eq!(w.tree(), before, "a refused command changed the tree");
}

#[test]
fn a_closed_stdout_fails_the_commands_whose_output_is_their_result() {
    let w = World::new();
    ok(w.run(&["init"]));
    let root = w.root().display().to_string();
    for cmd in [
        "list",
        "status",
        "doctor",
        "watch",
        "top -n 1",
        "generate bash",
    ] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("exec \"$0\" --root {root} {cmd} >&-"))
            .arg(common::bin())
            .env("CK_CGROUP_POLICY", "/dev/null")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{cmd} >&-: {}", stderr(&o));
        assert!(
            stderr(&o).contains("stdout is closed"),
            "{cmd}: {}",
            stderr(&o)
        );
        // Discarded on purpose is not closed (`watch` would run on).
        if cmd == "watch" {
            continue;
        }
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("exec \"$0\" --root {root} {cmd} >/dev/null"))
            .arg(common::bin())
            .env("CK_CGROUP_POLICY", "/dev/null")
            .output()
            .unwrap();
        // doctor's code is the host's readiness; not a closed stdout's 1 by its words.
        assert!(
            !stderr(&o).contains("stdout is closed"),
            "{cmd} >/dev/null: {}",
            stderr(&o)
        );
    }
    // A command whose output is not its result keeps its own code.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" --root {root} kill gone >&-"))
        .arg(common::bin())
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "kill >&-: {}", stderr(&o));
}

#[test]
fn a_bad_sandbox_parent_is_refused_once_in_one_line() {
    let w = World::new();
    let file = w.tmp("file");
    std::fs::write(&file, "").unwrap();
    let missing = w.tmp("missing");
    for parent in [missing.as_path(), w.tmp.path(), file.as_path()] {
        for args in [&["--", "true"][..], &["--prune"][..]] {
            let mut c = common::bare();
            c.arg("sandbox").arg("--parent").arg(parent).args(args);
            let o = bounded(
                c,
                &format!("sandbox --parent {} {args:?}", parent.display()),
            );
            let what = format!("sandbox --parent {} {args:?}", parent.display());
            refused(&o, &parent.display().to_string(), &what);
            assert!(
                stderr(&o).contains("--parent"),
                "{what}: the hint names --parent: {}",
                stderr(&o)
            );
        }
    }
}
