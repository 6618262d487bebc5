//! `doctor`: one line per check, the fix for each failure, exit 0 when ready and 1 when not.

mod common;

use common::strict::{Doctor as Report, DoctorCheck as Check, strictly};
use common::*;

#[test]
fn doctor_names_each_check_and_the_fix_for_each_failure() {
    let w = World::new();
    let o = w.run(&["--json", "doctor"]);
    let r: Report = strictly(&stdout(&o));
    assert_eq!(o.status.code(), Some(if r.ready { 0 } else { 1 }));
    let names: Vec<&str> = r.checks.iter().map(|c| c.name.as_str()).collect();
    for n in [
        "cgroup2 mounted",
        "cgroup2 nsdelegate",
        "service root",
        "controllers delegated",
        "kernel: cgroup.kill",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    for c in &r.checks {
        if c.outcome == "fail" {
            assert!(c.fix.is_some(), "a failure without a fix: {}", c.name);
        }
    }
    let root = r.checks.iter().find(|c| c.name == "service root").unwrap();
    assert_eq!(root.outcome, "ok", "{}", root.detail);
    // Without systemd on the bus (this host, CI) the unit checks are skipped, visibly.
    if !std::path::Path::new("/run/dbus/system_bus_socket").exists() {
        let s = r.checks.iter().find(|c| c.name == "systemd").unwrap();
        assert_eq!(s.outcome, "warn");
        assert!(s.detail.contains("not on the bus"));
    }
    let text = stdout(&w.run(&["doctor"]));
    assert!(
        text.lines().all(|l| l.starts_with("ok  ")
            || l.starts_with("FAIL")
            || l.starts_with("warn")
            || l.starts_with("      ")
            || l == "ready"
            || l.starts_with("NOT ready")),
        "{text}"
    );
    // Not vacuous: one line per check at least, and the verdict last.
    assert!(text.lines().count() >= r.checks.len(), "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(last == "ready" || last.starts_with("NOT ready"), "{text}");
}

#[test]
fn doctor_on_a_root_that_is_not_cgroup2_fails_with_the_fix() {
    let o = bare().args(["doctor", "--root", "/tmp"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("FAIL  service root: /tmp is not on a cgroup2 filesystem"),
        "{text}"
    );
    assert!(text.contains("fix: "), "{text}");
}

#[test]
fn every_failure_has_its_fix() {
    // A root that fails for sure, so that the rule is exercised on every host.
    let o = bare()
        .args(["--json", "doctor", "--root", "/tmp"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let r: Report = strictly(&stdout(&o));
    assert!(!r.ready);
    let failed: Vec<&Check> = r.checks.iter().filter(|c| c.outcome == "fail").collect();
    assert!(!failed.is_empty());
    for c in failed {
        assert!(c.fix.is_some(), "a failure without a fix: {}", c.name);
        assert!(
            !c.detail.is_empty(),
            "a failure without a detail: {}",
            c.name
        );
    }
}

/// `doctor --json`'s check `name` on `w`'s root.
fn check_named(w: &World, name: &str) -> Check {
    let o = w.run(&["--json", "doctor"]);
    let r: Report = strictly(&stdout(&o));
    r.checks
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {}", stdout(&o)))
}

/// The owner rule on a real tree: doctor reads daemon/'s owner and says whose marks
/// systemd-oomd honours. Root's daemon/ is honoured everywhere; a daemon/ handed to another uid
/// (a user service's, or one with `User=`) is not on the swap path, which doctor names with the
/// fix, though no swap monitor is seen from here.
#[test]
fn doctor_names_whose_oomd_marks_count_by_the_owner_of_daemon() {
    if !needs_root("daemon/ root's, then handed to uid 1000 (chown)") {
        return;
    }
    let w = World::new();
    ok(w.run(&["init"]));
    let marks = |w: &World| check_named(w, "systemd-oomd marks");
    let c = marks(&w);
    assert_eq!(c.outcome, "ok", "{}", c.detail);
    assert!(c.detail.contains("daemon/ is root-owned"), "{}", c.detail);
    std::os::unix::fs::chown(w.root().join("daemon"), Some(1000), None).unwrap();
    let c = marks(&w);
    assert_ne!(c.outcome, "ok", "{}", c.detail);
    assert!(
        c.detail.contains("daemon/ is owned by uid 1000, not root"),
        "{}",
        c.detail
    );
    assert!(c.fix.unwrap_or_default().contains("root-owned"));
}

/// A mark systemd-oomd would not honour is no mark: `user.oomd_omit` = "1\n" (its
/// `parse_boolean` trims nothing) leaves daemon/ a candidate, and doctor says so, where it used
/// to say systemd-oomd never picks it.
#[test]
fn doctor_reads_daemons_mark_as_systemd_oomd_parses_it() {
    let w = World::new();
    ok(w.run(&["init"]));
    let daemon = w.root().join("daemon");
    let candidates = |w: &World| check_named(w, "systemd-oomd candidates");
    let c = candidates(&w);
    assert!(
        c.detail.contains("daemon/ has user.oomd_omit"),
        "{}",
        c.detail
    );
    rustix::fs::setxattr(
        &daemon,
        "user.oomd_omit",
        b"1\n",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    let c = candidates(&w);
    assert_ne!(c.outcome, "ok", "{}", c.detail);
    assert!(
        c.detail
            .contains("daemon/ is a candidate with preference none"),
        "{}",
        c.detail
    );
}

/// A module that marked itself (`user.oomd_omit` set by a process of the daemon's uid, not by
/// ck-cgroup) was shown only in `status --json` and doctor said ok; doctor now warns naming it,
/// with the fix, and a mark ck-cgroup set (`set --oomd`) is not flagged.
#[test]
fn doctor_flags_a_mark_a_module_set_on_itself() {
    let w = World::new();
    ok(w.run(&["init"]));
    ok(w.run(&["create", "sly"]));
    let foreign = |w: &World| check_named(w, "systemd-oomd foreign marks");
    assert_eq!(foreign(&w).outcome, "ok");
    rustix::fs::setxattr(
        w.root().join("subc-modules/sly"),
        "user.oomd_omit",
        b"1",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    let c = foreign(&w);
    assert_eq!(c.outcome, "warn", "{}", c.detail);
    assert!(
        c.detail.contains("subc-modules/sly/ (omit)"),
        "{}",
        c.detail
    );
    assert!(c.fix.unwrap_or_default().contains("--oomd"));
    ok(w.run(&["set", "sly", "--oomd", "omit"]));
    assert_eq!(foreign(&w).outcome, "ok");
}
