//! `init` lays out a service root: it moves the root's processes into `daemon/` (again: nothing
//! to do), and `init -- DAEMON` executes the daemon there.

use std::process::Command;

use crate::common::*;
use ck_cgroup::module::InitReport;

use crate::common::strict::strictly;

#[test]
fn init_moves_the_roots_processes_into_the_daemon_leaf_and_is_idempotent() {
    let w = World::new();
    // A fresh child of the sandbox as the root, as systemd hands a service its cgroup: processes
    // and no controllers enabled below it yet. (The sandbox itself is already `init`ed; where
    // controllers are enabled there, it may hold no process: the no-internal-process rule.)
    let fresh = w.root().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let root = fresh.to_str().unwrap();
    let mut s = Command::new("sleep").arg("600").spawn().unwrap();
    w.track(s.id());
    std::fs::write(fresh.join("cgroup.procs"), s.id().to_string()).unwrap();
    let init = || {
        bare()
            .args(["--json", "--root", root, "init"])
            .output()
            .unwrap()
    };
    let r: InitReport = strictly(&ok(init()));
    assert_eq!(r.moved, vec![s.id()]);
    assert_eq!(cgroup_of(s.id()), v2_path(&fresh.join("daemon")));
    let again: InitReport = strictly(&ok(init()));
    assert!(again.moved.is_empty() && again.created.is_empty());
    s.kill().unwrap();
    s.wait().unwrap();
}

/// The unit's `ExecStart=` is `ck-cgroup init -- DAEMON`: a daemon that does not run `init`
/// itself starts in `daemon/`, with the layout made, and with its own pid (exec, not a child).
#[test]
fn init_with_a_command_executes_it_in_the_daemon_leaf() {
    let w = World::new();
    let o = w.run(&[
        "init",
        "--",
        "sh",
        "-c",
        "grep '^0::' /proc/self/cgroup; echo $$ $PPID",
    ]);
    let out = ok(o);
    let mut lines = out.lines();
    let cg = lines.next().unwrap_or_default();
    assert!(
        cg.ends_with(&format!("{}/daemon", v2_path(w.root()))),
        "{cg}"
    );
    assert_eq!(w.tree(), vec!["daemon", "subc-modules"]);
    let o = w.run(&["init", "--", "/nonexistent/daemon"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
}

/// Under `umask 0777` the delegated user's `init` left `daemon/` and `subc-modules/` mode 000
/// (cgroupfs takes the umask), so nothing could enter them after; every directory the helper
/// makes is mode 0755 whatever the umask.
#[test]
fn init_and_create_make_mode_0755_whatever_the_umask() {
    use crate::common::nobody::{as_nobody, delegate_root_to_nobody};
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    delegate_root_to_nobody(&w);
    let o = as_nobody(
        &w,
        "sh",
        &[
            "-c",
            "umask 0777 && \"$0\" --root \"$1\" init && exec \"$0\" --root \"$1\" create m",
            bin(),
            w.root().to_str().unwrap(),
        ],
        |_| {},
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for d in ["daemon", "subc-modules", "subc-modules/m"] {
        let mode = std::fs::metadata(w.root().join(d))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o755, "{d}: {mode:o}");
    }
}
