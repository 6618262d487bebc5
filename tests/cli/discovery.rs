//! The root discovered without `--root`: from the daemon's leaf and from a module's process in the
//! host's cgroup namespace; from inside a module's own cgroup namespace it is refused, never wrong.

use std::process::Command;

use crate::common::strict::{Listing, strictly};
use crate::common::*;

#[test]
fn discovery_from_the_daemon_leaf_and_from_a_module() {
    let w = World::new();
    let root = w.root().display().to_string();
    // A shell in <root>/daemon runs the binary without --root: the root is the leaf's parent.
    let script = format!(
        "echo $$ > {root}/daemon/cgroup.procs && exec {bin} --json list",
        bin = bin()
    );
    let o = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env_remove("CK_CGROUP_ROOT")
        .output()
        .unwrap();
    let list: Listing = strictly(&ok(o));
    assert_eq!(list.root, w.root());
    // A module's process in the host's cgroup namespace: the root is the part above
    // subc-modules/.
    let find = |extra: &[&str]| {
        let mut args = vec!["exec", "disc"];
        args.extend(extra);
        args.extend(["--", "env", "-u", "CK_CGROUP_ROOT", bin(), "--json", "list"]);
        w.run(&args)
    };
    let list: Listing = strictly(&ok(find(&["--no-cgroup-namespace"])));
    assert_eq!(list.root, w.root());
    // In its own cgroup namespace (the default) its cgroup is `/` and nothing above it is
    // visible: bad input naming the fix, never a wrong root.
    let o = find(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--root or CK_CGROUP_ROOT"),
        "{}",
        stderr(&o)
    );
}
