//! The helper's JSON parses into the library's own types without loss.

use crate::common::strict::{Listing, strictly};
use crate::common::*;

/// The helper's JSON parses into the library's own types, as a daemon in another process would
/// parse it, and nothing is lost (`common::strict::strictly`).
#[test]
fn json_output_parses_into_the_library_types_without_loss() {
    let w = World::new();
    let placed = ok(w.run(&["--json", "create", "lib"]));
    assert!(placed.contains("\"lib\""), "{placed}");
    let mut c = w.exec_sleep("lib");
    let list: Listing = strictly(&ok(w.run(&["--json", "list"])));
    assert_eq!(list.root, w.root());
    let m = &list.modules[0];
    assert_eq!(m.name, "lib");
    assert_eq!(m.layout, ck_cgroup::Layout::Ck);
    assert_eq!(m.procs, Some(1));
    let out = ok(w.run(&["--json", "kill", "--grace", "1s", "--timeout", "3s", "lib"]));
    let r: ck_cgroup::module::StopReport = strictly(out.trim_end());
    c.wait().unwrap();
    assert!(r.ok() && !r.already_gone, "{r:?}");
    assert_eq!(r.module, "lib");
    assert_eq!(r.layout, Some(ck_cgroup::Layout::Ck));
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(r.tree.signalled, 1);
    let gone: ck_cgroup::module::StopReport = strictly(&ok(w.run(&["--json", "kill", "lib"])));
    assert!(gone.already_gone && gone.ok());
}
