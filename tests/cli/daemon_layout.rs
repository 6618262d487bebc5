//! The daemon's own layout (`daemon/subc-modules/m-<encoded id>`): listed with its id decoded, and
//! killed and removed by its directory's name. Mutation control `no-rmdir`.

use std::process::Command;

use crate::common::*;
use crate::shapes::List;

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

    let list: List = serde_json::from_str(&ok(w.run(&["--json", "list"]))).unwrap();
    let m = list
        .modules
        .iter()
        .find(|m| m.name == "m-mcp_5f3ax_5f7")
        .expect("listed");
    assert_eq!(m.module.as_deref(), Some("mcp:x"));
    assert_eq!(m.layout, "daemon");
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
