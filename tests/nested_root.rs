//! A root is never inside another root's `subc-modules/` or `daemon/`:
//! `--root <root>/subc-modules`, `<root>/daemon`, `<root>/subc-modules/<id>` were accepted by
//! `init`, which made a new layout inside a module or the daemon's leaf. Every command refuses
//! such a root with exit 2 and one line that names the root it is inside, and changes nothing.
//! Mutation control: `root-in-root`.

mod common;

use common::*;

#[test]
fn a_root_inside_another_roots_modules_or_daemon_leaf_is_refused_and_nothing_is_made() {
    let w = World::new();
    ok(w.run(&["create", "x"]));
    std::fs::create_dir(w.root().join("daemon/subc-modules")).unwrap();
    std::fs::create_dir(w.root().join("daemon/subc-modules/m-x")).unwrap();
    let before = w.tree();
    for inner in [
        "subc-modules",
        "daemon",
        "subc-modules/x",
        "daemon/subc-modules",
        "daemon/subc-modules/m-x",
    ] {
        let path = w.root().join(inner);
        for args in [
            &["init"][..],
            &["create", "y"],
            &["list"],
            &["exec", "y", "--", "true"],
            &["kill", "y"],
        ] {
            let o = bare().arg("--root").arg(&path).args(args).output().unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{inner} {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{inner} {args:?}: {err}");
            assert!(
                err.contains(&format!("inside the service root {}'s", w.root().display())),
                "{inner} {args:?}: {err}"
            );
            assert_eq!(w.tree(), before, "{inner} {args:?} changed the tree");
        }
    }
    // A symlink to a module's cgroup does not hide the names: the path checked is that of the
    // directory opened.
    let link = w.tmp("a-link-to-a-module");
    std::os::unix::fs::symlink(w.root().join("subc-modules/x"), &link).unwrap();
    for args in [&["list"][..], &["exec", "y", "--", "true"]] {
        let o = bare().arg("--root").arg(&link).args(args).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "a symlink {args:?}: {err}");
        assert!(
            err.contains(&format!("inside the service root {}'s", w.root().display())),
            "a symlink {args:?}: {err}"
        );
        assert_eq!(w.tree(), before, "a symlink {args:?} changed the tree");
    }
    std::fs::remove_dir(w.root().join("daemon/subc-modules/m-x")).unwrap();
    std::fs::remove_dir(w.root().join("daemon/subc-modules")).unwrap();
    ok(w.run(&["remove", "x"]));
    // The root itself is still a root.
    ok(w.run(&["init"]));
}
