//! One rule for a module that is not there, the same in every command (docs/commands.md, "A
//! missing module"): a command that reports on or changes an existing module says `no module ID`
//! and exits 1 (`--json`: kind `no_such_module`, exit 1); a stop (`kill`, `remove`) finds it
//! already gone and exits 0; nothing is made on disk either way.

mod common;

use common::*;

#[test]
fn a_missing_module_is_exit_1_naming_it_or_already_gone_in_every_command() {
    let w = World::new();
    ok(w.run(&["init"]));
    let before = w.tree();
    let reported: [&[&str]; 6] = [
        &["status", "nosuch"],
        &["ps", "nosuch"],
        &["set", "nosuch", "--pids-max", "5", "--best-effort"],
        &["freeze", "nosuch"],
        &["thaw", "nosuch"],
        &["status", "--format", "prometheus", "nosuch"],
    ];
    for args in reported {
        let o = w.run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("ck-cgroup: no module nosuch under "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(stdout(&o), "", "{args:?}");
        let mut json = vec!["--json"];
        json.extend_from_slice(args);
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
    for args in [&["kill", "nosuch"][..], &["remove", "nosuch"]] {
        let o = w.run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("already gone"),
            "{args:?}: {}",
            stdout(&o)
        );
    }
    assert_eq!(w.tree(), before, "nothing made or removed");
}
