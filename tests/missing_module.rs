//! One rule for a module that is not there, the same in every command (docs/commands.md, "A
//! missing module"): a command that reports on or changes an existing module says `no module ID`
//! and exits 1 (`--json`: kind `no_such_module`, exit 1); a stop (`kill`, `remove`) finds it
//! already gone and exits 0; nothing is made on disk either way.

mod common;

use common::*;

#[test]
fn a_missing_module_is_exit_1_naming_it_with_the_list_as_hint_or_already_gone_in_every_command() {
    let w = World::new();
    ok(w.run(&["init"]));
    let before = w.tree();
    let tmp = w.tmp("out").display().to_string();
    let mut reported: Vec<Vec<String>> = Vec::new();
    let mut stops: Vec<Vec<String>> = Vec::new();
    for c in commands::every() {
        let args = commands::with_module(&commands::valid_args(&c.name, &tmp), "nosuch");
        println!("a missing module: {} ({})", c.name, c.missing);
        match c.missing.as_str() {
            "no_module" => reported.push(args),
            "already_gone" => stops.push(args),
            // Made (create, place, exec, run), awaited (watch), nothing to keep (prune --keep),
            // or no module given: not this rule.
            "made" | "awaited" | "ignored" | "not_given" => {}
            other => panic!("{}: missing {other}", c.name),
        }
    }
    assert!(
        reported.len() >= 5 && stops.len() >= 2,
        "{reported:?} {stops:?}"
    );
    reported.push(
        ["status", "--format", "prometheus", "nosuch"]
            .map(String::from)
            .to_vec(),
    );
    for args in &reported {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = w.run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("ck-cgroup: no module nosuch under "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(stdout(&o), "", "{args:?}");
        // The hint is the same too: the list to find the name in (`set` hinted at `create`).
        assert!(
            stderr(&o).contains("\nck-cgroup: hint: `ck-cgroup list` shows the modules"),
            "{args:?}: {}",
            stderr(&o)
        );
        let mut json = vec!["--json"];
        json.extend_from_slice(&args);
        let o = w.run(&json);
        let e: serde_json::Value = serde_json::from_str(stderr(&o).trim())
            .unwrap_or_else(|_| panic!("{args:?}: one JSON error: {}", stderr(&o)));
        assert_eq!(
            (e["error"]["kind"].as_str(), e["error"]["exit"].as_i64()),
            (Some("no_such_module"), Some(1)),
            "{args:?}: {e}"
        );
        assert_eq!(o.status.code(), Some(1), "{args:?} --json");
    }
    for args in &stops {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = w.run(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("already gone"),
            "{args:?}: {}",
            stdout(&o)
        );
    }
    assert_eq!(w.tree(), before, "nothing made or removed");
}
