//! `--unit`. There is no systemd here: the flag is parsed, refused in one line
//! (exit 2: an unsupported environment, nothing changed), and no D-Bus is touched without it.

use crate::common::*;

/// A listening socket that stands in for a bus, and the variables that point zbus at it.
fn fake_bus(w: &World) -> (std::os::unix::net::UnixListener, String) {
    let path = w.tmp("bus");
    let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    (l, format!("unix:path={}", path.display()))
}

#[test]
fn unit_without_systemd_is_one_line_and_exit_2() {
    let w = World::new();
    let nobus = format!("unix:path={}", w.tmp("nobus").display());
    for (args, env) in [
        (vec!["--unit", "ck-subc.service", "kill", "aft"], None),
        (vec!["kill", "aft"], Some("ck-subc.service")),
        (vec!["--unit", "ck-subc.service", "--user", "list"], None),
        (vec!["list", "--unit", "ck-subc.service"], None),
    ] {
        let mut c = bare();
        c.args(&args)
            .env("DBUS_SYSTEM_BUS_ADDRESS", &nobus)
            .env("DBUS_SESSION_BUS_ADDRESS", &nobus);
        if let Some(u) = env {
            c.env("CK_CGROUP_UNIT", u);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.starts_with("ck-cgroup: --unit ck-subc.service: cannot reach the ")
                && e.contains("--root PATH or CK_CGROUP_ROOT"),
            "{args:?}: {e}"
        );
    }
    // Usage: --user needs a unit; --root and --unit both on the command line name two roots.
    for args in [
        vec!["--user", "list"],
        vec!["--root", "/x", "--unit", "a.service", "list"],
    ] {
        let o = bare().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    // A bad unit name is refused before any bus.
    let o = bare().args(["--unit", "a/b", "list"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn no_dbus_without_unit_and_dbus_with_it() {
    let w = World::new();
    let (l, addr) = fake_bus(&w);
    l.set_nonblocking(true).unwrap();
    for args in [
        vec!["list"],
        vec!["status"],
        vec!["kill", "nosuch"],
        vec!["prune"],
    ] {
        let o = w
            .ck()
            .args(&args)
            .env("DBUS_SYSTEM_BUS_ADDRESS", &addr)
            .env("DBUS_SESSION_BUS_ADDRESS", &addr)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(
            l.accept().map(|_| ()).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock,
            "{args:?} connected to the bus without --unit"
        );
    }
    // The probe can see a connection: --unit does connect (and fails when the bus hangs up).
    l.set_nonblocking(false).unwrap();
    let t = std::thread::spawn(move || l.accept().map(drop).is_ok());
    let o = bare()
        .args(["--unit", "ck-subc.service", "list"])
        .env("DBUS_SYSTEM_BUS_ADDRESS", &addr)
        .output()
        .unwrap();
    assert!(t.join().unwrap(), "--unit did not connect");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// `--root` with `--unit` names the root twice: a usage error for every command but the one
/// that checks the root (`doctor`, root `checks`), which takes both (the root to check, the
/// unit to ask systemd about). The choice is the command's promise, not its name.
#[test]
fn root_and_unit_together_are_refused_but_by_the_command_that_checks_the_root() {
    let w = World::new();
    let tmp = w.tmp("sandboxes");
    std::fs::create_dir_all(&tmp).unwrap();
    for c in crate::common::commands::every() {
        let args = crate::common::commands::valid_args(&c.name, &tmp.to_string_lossy());
        let o = bare()
            .args(["--root", "/tmp", "--unit", "u.service"])
            .args(&args)
            .output()
            .unwrap();
        let e = stderr(&o);
        let refused = e.contains("--root and --unit both name the root: pass one");
        if c.root == "checks" {
            assert!(!refused, "{}: {e}", c.name);
        } else {
            assert!(refused, "{}: {e}", c.name);
            assert_eq!(o.status.code(), Some(2), "{}: {e}", c.name);
        }
    }
}
