//! The daemon's own layout (`daemon/subc-modules/m-<encoded id>`): listed with its id decoded, and
//! killed and removed by its directory's name. Mutation control `no-rmdir`.

use std::process::Command;

use crate::common::*;
use ck_cgroup::Layout;

use crate::common::strict::{Listing, strictly};

#[test]
fn daemon_layout_is_listed_decoded_and_killed_by_its_name() {
    let w = World::new();
    // subc-daemon 0.39 places module "mcp:x" (launch 7) at daemon/subc-modules/m-mcp_5f3ax_5f7.
    let dir = w.root().join("daemon/subc-modules/m-mcp_5f3ax_5f7");
    std::fs::create_dir_all(&dir).unwrap();
    let odd = w.root().join("daemon/subc-modules/not.encoded");
    std::fs::create_dir_all(&odd).unwrap();
    let mut s = Command::new("sleep").arg("600").spawn().unwrap();
    w.track(s.id());
    std::fs::write(dir.join("cgroup.procs"), s.id().to_string()).unwrap();

    let list: Listing = strictly(&ok(w.run(&["--json", "list"])));
    let m = list
        .modules
        .iter()
        .find(|m| m.name == "m-mcp_5f3ax_5f7")
        .expect("listed");
    assert!(m.module.as_ref().is_some_and(|n| *n == "mcp:x"), "{m:?}");
    assert_eq!(m.layout, Layout::Daemon);
    assert_eq!(m.procs, Some(1));
    let o = list
        .modules
        .iter()
        .find(|m| m.name == "not.encoded")
        .unwrap();
    assert_eq!(o.module, None);

    ok(w.run(&["kill", "--timeout", "3s", "m-mcp_5f3ax_5f7"]));
    s.wait().unwrap();
    assert!(!dir.exists(), "directory left");
    ok(w.run(&["remove", "not.encoded"]));
    assert!(!odd.exists(), "directory left");
}

/// A module's process in one of the daemon's directories `m-<escaped id>_<launch>`, kept alive
/// (`sleep 600`); its pid.
fn daemon_module(w: &World, dir: &str) -> std::process::Child {
    sleep_in_dir(w, &w.root().join("daemon/subc-modules").join(dir))
}

/// The operator's 3 a.m. path: `kill web` where the daemon placed web itself
/// (`daemon/subc-modules/m-web_5f2` holding a process) said `web: already gone`, exit 0, and the
/// process ran on; `status web` and `ps web` said "no module web". A module id now finds the
/// daemon's directories of that id.
#[test]
fn kill_status_and_ps_by_module_id_find_the_daemons_own_directory() {
    let w = World::new();
    ok(w.run(&["init"]));
    let mut web = daemon_module(&w, "m-web_5f2");
    let status: serde_json::Value =
        serde_json::from_str(&ok(w.run(&["--json", "status", "web"]))).expect("status --json");
    let names: Vec<&str> = status["modules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(names, ["m-web_5f2"], "{status}");
    let ps = ok(w.run(&["ps", "web"]));
    assert!(ps.contains(&web.id().to_string()), "{ps}");
    let out = ok(w.run(&["kill", "--timeout", "3s", "web"]));
    assert!(!out.contains("already gone"), "{out}");
    web.wait().unwrap();
    assert!(
        !w.root().join("daemon/subc-modules/m-web_5f2").exists(),
        "directory left"
    );
    // Now it is gone: the same command says so, exit 0.
    assert!(ok(w.run(&["kill", "web"])).contains("already gone"));
}

/// An id that names several of the daemon's directories (two launches and a swap slot) is shown
/// whole by `status` and `ps`, and refused by the commands that act on one module (exit 2,
/// naming each directory, nothing stopped): never "already gone" with a process left.
#[test]
fn an_id_with_several_daemon_directories_is_shown_whole_and_refused_by_a_stop() {
    let w = World::new();
    ok(w.run(&["init"]));
    let dirs = ["m-web_5f1", "m-web_5f2", "m-web_5fswap_5f2"];
    let mut kids: Vec<_> = dirs.iter().map(|d| daemon_module(&w, d)).collect();
    let before = w.tree();
    for args in [
        &["kill", "web"][..],
        &["remove", "web"],
        &["freeze", "web"],
        &["thaw", "web"],
    ] {
        let o = w.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("web names 3 module directories") && dirs.iter().all(|d| e.contains(d)),
            "{args:?}: {e}"
        );
        assert!(!stdout(&o).contains("already gone"), "{args:?}");
    }
    assert_eq!(w.tree(), before, "a refused command changed the tree");
    for k in &kids {
        assert!(alive(k.id()), "a refused stop killed {}", k.id());
    }
    let status: serde_json::Value =
        serde_json::from_str(&ok(w.run(&["--json", "status", "web"]))).unwrap();
    let mut names: Vec<&str> = status["modules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, dirs, "{status}");
    let ps = ok(w.run(&["ps", "web"]));
    for k in &kids {
        assert!(ps.contains(&k.id().to_string()), "{ps}");
    }
    // Each by its own name.
    for d in dirs {
        ok(w.run(&["kill", "--timeout", "3s", d]));
    }
    for k in &mut kids {
        k.wait().unwrap();
    }
}

/// The default `status` table tells rows of one module id apart: NAME beside MODULE.
#[test]
fn the_default_status_table_names_the_directories_of_a_repeated_id() {
    let w = World::new();
    ok(w.run(&["init"]));
    let mut a = daemon_module(&w, "m-web_5f1");
    let mut b = daemon_module(&w, "m-web_5f2");
    let t = ok(w.run(&["status"]));
    let head = t.lines().next().unwrap_or_default();
    assert!(head.starts_with("MODULE") && head.contains("NAME"), "{t}");
    assert!(t.contains("m-web_5f1") && t.contains("m-web_5f2"), "{t}");
    // One row a module id: no NAME.
    ok(w.run(&["kill", "m-web_5f1"]));
    a.wait().unwrap();
    let t = ok(w.run(&["status"]));
    assert!(
        !t.lines().next().unwrap_or_default().contains("NAME"),
        "{t}"
    );
    ok(w.run(&["kill", "m-web_5f2"]));
    b.wait().unwrap();
}

/// Where both `subc-modules/web` and the daemon's `m-web_5f2` hold a process, `kill web` picks
/// neither (exit 2, naming both), and `kill subc-modules/web` (its path, as `list` shows it)
/// stops ours and only ours: the stop's re-check after the removal looked the id up again,
/// found the daemon's directory and stopped it as one "made again".
#[test]
fn a_stop_of_our_module_leaves_the_daemons_directory_of_the_same_id() {
    let w = World::new();
    ok(w.run(&["init"]));
    let mut ours = sleep_in_dir(&w, &w.root().join("subc-modules/web"));
    let mut theirs = daemon_module(&w, "m-web_5f2");
    let o = w.run(&["kill", "web"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("subc-modules/web, daemon/subc-modules/m-web_5f2"),
        "{}",
        stderr(&o)
    );
    ok(w.run(&["kill", "--timeout", "3s", "subc-modules/web"]));
    ours.wait().unwrap();
    assert!(!w.root().join("subc-modules/web").exists(), "ours left");
    assert!(alive(theirs.id()), "the daemon's m-web_5f2 was stopped too");
    assert!(w.root().join("daemon/subc-modules/m-web_5f2").exists());
    ok(w.run(&["kill", "--timeout", "3s", "m-web_5f2"]));
    theirs.wait().unwrap();
}
