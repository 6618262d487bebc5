//! Every command checks all of its input (ids, module names, the policy file) before it looks at
//! a module or the root: each kind of bad input is exit 2 and one line naming it (with a hint
//! line), even where a module is missing too (which alone would be exit 1 or "already gone");
//! nothing is changed. Also: a closed stdout is the failure (exit 1) of the commands whose output
//! is their result.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::commands::{self, Cmd};
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

/// Every command the CLI defines (`generate promises`), with valid arguments for a root that is
/// laid out and has no module `p`.
fn every_command(w: &World) -> Vec<(Cmd, Vec<String>)> {
    let tmp = w.tmp("out").display().to_string();
    commands::every()
        .into_iter()
        .map(|c| {
            let args = commands::valid_args(&c.name, &tmp);
            (c, args)
        })
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
    for (c, args) in every_command(&w) {
        println!("a bad policy: {} refuses it", c.name);
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
    // Each command the CLI defines with the module it takes (`p` in its valid arguments), and a
    // second one after a good one where it takes several.
    let tmp = w.tmp("out").display().to_string();
    let mut cases: Vec<(String, Vec<String>, String)> = Vec::new();
    for c in commands::every() {
        let args = commands::valid_args(&c.name, &tmp);
        let says = match c.modules.as_str() {
            "ids" => "invalid module id",
            "names" => "invalid module name",
            "none" => {
                println!("bad ids: {} takes no module", c.name);
                continue;
            }
            other => panic!("{}: modules {other}", c.name),
        };
        assert!(
            args.iter().any(|a| a == "p"),
            "{}: takes {} but its valid arguments name no module p: {args:?}",
            c.name,
            c.modules
        );
        println!("bad ids: {} refuses them ({says})", c.name);
        cases.push((c.name.clone(), args.clone(), says.to_string()));
        if matches!(c.name.as_str(), "status" | "ps" | "watch") {
            let mut two = args.clone();
            let at = args.iter().position(|a| a == "p").unwrap_or(args.len());
            two.insert(at, "ok".to_string());
            cases.push((c.name.clone(), two, says.to_string()));
        }
    }
    let bad_names = [
        ("", "it is empty"),
        ("..", "not a directory name"),
        ("/", "not a single path component"),
        ("a/b", "not a single path component"),
        ("../daemon", "not a single path component"),
        ("a\nb", "newline"),
        ("a\\b", "a backslash starts"),
        ("a\\x2fb", "not a single path component"),
    ];
    // Not ids, but names the kernel takes (a module's directory may be named so).
    let not_ids = [
        ("cgroup.procs", "invalid module id"),
        ("memory.max", "invalid module id"),
        (long.as_str(), "longer than 64"),
    ];
    let before = w.tree();
    // Each on the laid-out root, and on a root that is not there: the bad name is what is
    // wrong first, so it is the one line said (an operator who mistyped both is told of the
    // name, not of the root).
    let nowhere = w.tmp("no-such-root").display().to_string();
    for (name, args, says) in &cases {
        let extra = if *says == "invalid module id" {
            &not_ids[..]
        } else {
            &[]
        };
        for (bad, why) in bad_names.iter().chain(extra) {
            let args = commands::with_module(args, bad);
            let mut on_root = w.ck();
            on_root.args(&args);
            let mut rootless = common::bare();
            rootless.arg("--root").arg(&nowhere).args(&args);
            for (c, root) in [(on_root, "its root"), (rootless, "no root")] {
                let o = bounded(c, &format!("{args:?} on {root}"));
                let what = format!("{name}: {args:?} on {root}");
                refused(&o, &format!("{says} {bad:?}"), &what);
                if *says == "invalid module name" {
                    refused(&o, why, &what);
                }
            }
        }
    }
    assert_eq!(w.tree(), before, "a refused command changed the tree");
}

#[test]
fn json_where_a_command_has_none_is_refused_before_the_root_is_looked_at() {
    let w = World::new();
    let tmp = w.tmp("out").display().to_string();
    let nowhere = w.tmp("no-such-root").display().to_string();
    let mut refused_by = Vec::new();
    for c in commands::every() {
        if c.json != "refused" {
            continue;
        }
        let mut args = vec!["--root".to_string(), nowhere.clone(), "--json".to_string()];
        args.extend(commands::valid_args(&c.name, &tmp));
        let mut cmd = common::bare();
        cmd.args(&args);
        let o = bounded(cmd, &format!("{args:?}"));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e: serde_json::Value = serde_json::from_str(stderr(&o).trim())
            .unwrap_or_else(|_| panic!("{args:?}: one JSON error: {}", stderr(&o)));
        assert_eq!(e["error"]["kind"], "bad_input", "{args:?}: {e}");
        assert_eq!(
            e["error"]["message"],
            format!("{} has no --json", c.name),
            "{args:?}: {e}"
        );
        println!("--json: {} refuses it before the root", c.name);
        refused_by.push(c.name);
    }
    assert!(refused_by.contains(&"top".to_string()), "{refused_by:?}");
}

/// `args` on `w`'s root with stdout as `redirect` (`>&-`, `>/dev/null`), ended after 10 s.
fn with_stdout(w: &World, args: &[String], redirect: &str) -> Output {
    let root = w.root().display().to_string();
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!(
            "r=$1; shift; exec timeout -s KILL 10 \"$0\" --root \"$r\" \"$@\" {redirect}"
        ))
        .arg(common::bin())
        .arg(&root)
        .args(args)
        .env("CK_CGROUP_POLICY", "/dev/null");
    bounded(c, &format!("{args:?} {redirect}"))
}

#[test]
fn a_closed_stdout_fails_the_commands_whose_output_is_their_result() {
    let w = World::new();
    ok(w.run(&["init"]));
    let tmp = w.tmp("out").display().to_string();
    for c in commands::every() {
        let args = commands::valid_args(&c.name, &tmp);
        let o = with_stdout(&w, &args, ">&-");
        let closed = stderr(&o).contains("stdout is closed");
        if c.stdout == "result" {
            println!("closed stdout: {} fails (its output is its result)", c.name);
            assert_eq!(o.status.code(), Some(1), "{args:?} >&-: {}", stderr(&o));
            assert!(closed, "{args:?} >&-: {}", stderr(&o));
            // Discarded on purpose is not closed.
            let o = with_stdout(&w, &args, ">/dev/null");
            assert!(
                !stderr(&o).contains("stdout is closed"),
                "{args:?} >/dev/null: {}",
                stderr(&o)
            );
        } else {
            println!(
                "closed stdout: {} keeps its own code ({})",
                c.name, c.stdout
            );
            assert!(!closed, "{args:?} >&-: {}", stderr(&o));
        }
    }
    // A command whose output is not its result keeps its own code.
    let o = with_stdout(&w, &["kill".to_string(), "gone".to_string()], ">&-");
    assert_eq!(o.status.code(), Some(0), "kill >&-: {}", stderr(&o));
    // Where the result goes elsewhere, a closed stdout is not its failure.
    let prom = w.tmp("ck.prom").display().to_string();
    let args: Vec<String> = ["status", "--format", "prometheus", "--output", &prom]
        .into_iter()
        .map(String::from)
        .collect();
    let o = with_stdout(&w, &args, ">&-");
    assert_eq!(
        o.status.code(),
        Some(0),
        "status --output >&-: {}",
        stderr(&o)
    );
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
