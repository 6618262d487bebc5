//! systemd-oomd, on this host (no systemd-oomd runs here; user.* xattrs on cgroup2
//! directories work, kernel 5.7+): `init` marks `daemon/` so that systemd-oomd never picks it,
//! a module takes a preference, and a module's kills are read from the xattrs systemd-oomd writes
//! (set here by hand, as systemd-oomd would) beside the kernel's `memory.events`. Absent is 0;
//! unreadable is `null`, never 0. Bad values are exit 2 in one line and change nothing.

mod common;

use std::path::Path;

use common::watch::Watch;
use common::*;
use serde_json::Value;

/// The xattr `name` of the directory `dir` (`None`: absent).
fn xattr(dir: &Path, name: &str) -> Option<String> {
    let mut buf = [0u8; 64];
    match rustix::fs::getxattr(dir, name, &mut buf[..]) {
        Ok(n) => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
        Err(rustix::io::Errno::NODATA) => None,
        Err(e) => panic!("getxattr {name} of {}: {e}", dir.display()),
    }
}

/// Write the xattr `name` as systemd-oomd does (decimal text).
fn set_xattr(dir: &Path, name: &str, value: &str) {
    rustix::fs::setxattr(dir, name, value.as_bytes(), rustix::fs::XattrFlags::empty())
        .unwrap_or_else(|e| panic!("setxattr {name} of {}: {e}", dir.display()));
}

fn json(out: String) -> Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The marks of `daemon/`: (`user.oomd_omit`, `user.oomd_avoid`).
fn marks(w: &World) -> (Option<String>, Option<String>) {
    let d = w.root().join("daemon");
    (xattr(&d, "user.oomd_omit"), xattr(&d, "user.oomd_avoid"))
}

#[test]
fn init_marks_the_daemon_leaf_omit_and_reads_it_back() {
    let w = World::new();
    let v = json(ok(w.run(&["--json", "init"])));
    assert_eq!(v["oomd_daemon"]["value"], "omit", "{v}");
    assert_eq!(v["oomd_daemon"]["error"], Value::Null, "{v}");
    assert_eq!(
        v["oomd_daemon"]["source"], "user.oomd_avoid, user.oomd_omit xattrs",
        "{v}"
    );
    assert_eq!(marks(&w), (Some("1".into()), None));
    let human = ok(w.run(&["init"]));
    assert!(
        human.contains("daemon/: systemd-oomd preference omit (user.oomd_omit set, read back)"),
        "{human}"
    );
    // avoid is the reverse; none removes both.
    let v = json(ok(w.run(&["--json", "init", "--oomd-daemon", "avoid"])));
    assert_eq!(v["oomd_daemon"]["value"], "avoid", "{v}");
    assert_eq!(marks(&w), (None, Some("1".into())));
    let v = json(ok(w.run(&["--json", "init", "--oomd-daemon", "none"])));
    assert_eq!(v["oomd_daemon"]["value"], "none", "{v}");
    assert_eq!(marks(&w), (None, None));
    // The policy's top-level oomd_daemon, and the flag over it.
    let policy = w.tmp("policy.toml");
    std::fs::write(&policy, "oomd_daemon = \"avoid\"\n").unwrap();
    let p = policy.to_str().unwrap();
    ok(w.run(&["--policy", p, "init"]));
    assert_eq!(marks(&w), (None, Some("1".into())));
    ok(w.run(&["--policy", p, "init", "--oomd-daemon", "omit"]));
    assert_eq!(marks(&w), (Some("1".into()), None));
}

#[test]
fn bad_oomd_values_exit_2_in_one_line_and_change_nothing() {
    let w = World::new();
    ok(w.run(&["init", "--oomd-daemon", "avoid"]));
    ok(w.run(&["create", "kept", "--oomd", "avoid"]));
    let kept = w.root().join("subc-modules/kept");
    let before = w.tree();
    let one_line = |o: &std::process::Output, what: &str| {
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
        let e = stderr(o);
        let lines: Vec<&str> = e
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"))
            .filter(|l| !l.starts_with("ck-cgroup: hint:"))
            .collect();
        assert_eq!(lines.len(), 1, "{what}: one line: {e}");
        assert!(
            lines[0].contains("avoid, omit, none"),
            "{what}: names the set: {e}"
        );
        lines[0].to_string()
    };
    for args in [
        &["create", "x", "--oomd", "bogus"][..],
        &["set", "kept", "--oomd", "bogus"],
        &["init", "--oomd-daemon", "bogus"],
        &["exec", "x", "--oomd", "bogus", "--", "true"],
        &["run", "x", "--oomd", "bogus", "--", "true"],
    ] {
        let line = one_line(&w.run(args), &args.join(" "));
        assert!(line.contains("bogus"), "{args:?}: names the value: {line}");
    }
    let policy = w.tmp("policy.toml");
    for (text, value) in [
        ("[defaults]\noomd = \"x\"\n", "\"x\""),
        ("[module.x]\noomd = \"sometimes\"\n", "\"sometimes\""),
        ("oomd_daemon = \"x\"\n", "\"x\""),
        ("[defaults]\noomd = 1\n", "integer"),
    ] {
        std::fs::write(&policy, text).unwrap();
        let p = policy.to_str().unwrap();
        for args in [
            &["--policy", p, "create", "x"][..],
            &["--policy", p, "init"],
        ] {
            let line = one_line(&w.run(args), text);
            assert!(line.contains(value), "{text}: names the value: {line}");
        }
    }
    assert_eq!(w.tree(), before, "nothing made");
    assert_eq!(marks(&w), (None, Some("1".into())), "daemon/ unchanged");
    assert_eq!(xattr(&kept, "user.oomd_avoid").as_deref(), Some("1"));
    assert_eq!(xattr(&kept, "user.oomd_omit"), None);
}

#[test]
fn a_modules_preference_is_set_shown_and_cleared() {
    let w = World::new();
    let m = w.root().join("subc-modules/a");
    let v = json(ok(w.run(&["--json", "create", "a", "--oomd", "omit"])));
    assert_eq!(xattr(&m, "user.oomd_omit").as_deref(), Some("1"), "{v}");
    assert!(
        v["applied"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["file"] == "user.oomd_omit"),
        "{v}"
    );
    let status = |w: &World| json(ok(w.run(&["--json", "status", "a"])))["modules"][0].clone();
    assert_eq!(status(&w)["oomd_preference"]["value"], "omit");
    ok(w.run(&["set", "a", "--oomd", "avoid"]));
    assert_eq!(xattr(&m, "user.oomd_omit"), None);
    assert_eq!(status(&w)["oomd_preference"]["value"], "avoid");
    ok(w.run(&["set", "a", "--oomd", "none"]));
    assert_eq!(
        (xattr(&m, "user.oomd_omit"), xattr(&m, "user.oomd_avoid")),
        (None, None)
    );
    let s = status(&w);
    assert_eq!(s["oomd_preference"]["value"], "none");
    assert_eq!(
        s["oomd_preference"]["source"],
        "user.oomd_avoid, user.oomd_omit xattrs"
    );
    // The policy's per-module key.
    let policy = w.tmp("policy.toml");
    std::fs::write(&policy, "[defaults]\noomd = \"avoid\"\n").unwrap();
    ok(w.run(&["--policy", policy.to_str().unwrap(), "create", "b"]));
    let b = w.root().join("subc-modules/b");
    assert_eq!(xattr(&b, "user.oomd_avoid").as_deref(), Some("1"));
}

#[test]
fn status_reports_oomd_kills_as_numbers_absent_is_zero() {
    let w = World::new();
    ok(w.run(&["create", "a"]));
    let s = json(ok(w.run(&["--json", "status", "a"])))["modules"][0].clone();
    // Never killed by systemd-oomd: the xattrs are absent, which is 0 (not unknown).
    assert_eq!(s["oomd_ooms"]["value"], 0, "{s}");
    assert_eq!(s["oomd_ooms"]["source"], "user.oomd_ooms xattr", "{s}");
    assert_eq!(s["oomd_kill"]["value"], 0, "{s}");
    assert_eq!(s["oomd_kill"]["source"], "user.oomd_kill xattr", "{s}");
    // systemd-oomd killed it once, 7 processes.
    let m = w.root().join("subc-modules/a");
    set_xattr(&m, "user.oomd_ooms", "1");
    set_xattr(&m, "user.oomd_kill", "7");
    let s = json(ok(w.run(&["--json", "status", "a"])))["modules"][0].clone();
    assert_eq!(s["oomd_ooms"]["value"], 1, "{s}");
    assert_eq!(s["oomd_kill"]["value"], 7, "{s}");
    let table = ok(w.run(&["status", "a"]));
    assert!(table.contains("+oomd:7"), "{table}");
    // The kernel's count beside it: read (`0+oomd:7`), or `?` said under the table (it was `-`).
    assert!(
        table.contains(" 0+oomd:7")
            || (table.contains(" ?+oomd:7") && table.contains("\n? in OOM_KILL: ")),
        "{table}"
    );
    let prom = ok(w.run(&["status", "--format", "prometheus"]));
    assert!(
        prom.lines()
            .any(|l| l.starts_with("ck_cgroup_oomd_kills_total{") && l.ends_with(" 1")),
        "{prom}"
    );
    assert!(
        prom.lines()
            .any(|l| l.starts_with("ck_cgroup_oomd_killed_processes_total{") && l.ends_with(" 7")),
        "{prom}"
    );
    // Text that is no number is unknown, never 0.
    set_xattr(&m, "user.oomd_kill", "many");
    let s = json(ok(w.run(&["--json", "status", "a"])))["modules"][0].clone();
    assert_eq!(s["oomd_kill"]["value"], Value::Null, "{s}");
    // And has no Prometheus series (never a made-up 0); the readable one keeps its own.
    let prom = ok(w.run(&["status", "--format", "prometheus"]));
    assert!(
        !prom.contains("ck_cgroup_oomd_killed_processes_total{"),
        "{prom}"
    );
    assert!(prom.contains("ck_cgroup_oomd_kills_total{"), "{prom}");
}

#[test]
fn kill_says_systemd_oomd_killed_the_module_read_before_the_rmdir() {
    let w = World::new();
    ok(w.run(&["create", "a"]));
    let m = w.root().join("subc-modules/a");
    set_xattr(&m, "user.oomd_ooms", "1");
    set_xattr(&m, "user.oomd_kill", "3");
    let v = json(ok(w.run(&["--json", "kill", "a"])));
    assert_eq!(v["removed"], true, "{v}");
    assert_eq!(v["kills"]["oomd_ooms"], 1, "{v}");
    assert_eq!(v["kills"]["oomd_kill"], 3, "{v}");
    assert!(!m.exists());
    ok(w.run(&["create", "b"]));
    let b = w.root().join("subc-modules/b");
    set_xattr(&b, "user.oomd_ooms", "2");
    set_xattr(&b, "user.oomd_kill", "3");
    let human = ok(w.run(&["kill", "b"]));
    assert!(
        human.contains("module b: killed by systemd-oomd (3 processes)"),
        "{human}"
    );
    // Nobody killed c: no such line, and 0 from the absent xattrs.
    ok(w.run(&["create", "c"]));
    let human = ok(w.run(&["kill", "c"]));
    assert!(!human.contains("killed by"), "{human}");
    // run's result is the last line on stderr.
    let o = w.run(&["--json", "run", "d", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(stderr(&o).lines().last().unwrap_or_default().to_string());
    assert_eq!(v["kills"]["oomd_ooms"], 0, "{v}");
}

/// A module that raised its own `user.oomd_ooms` and lives on: `kill` finds its processes
/// running with no kill pending, which no kill of systemd-oomd leaves, so it does not say
/// "killed by systemd-oomd" (a red team's shape: the line said so for a forged mark).
#[test]
fn kill_of_a_live_module_with_a_forged_oomd_mark_names_no_oomd_kill() {
    let w = World::new();
    let mut cmd = w.exec_sleep("forger");
    let m = w.root().join("subc-modules/forger");
    set_xattr(&m, "user.oomd_ooms", "1");
    set_xattr(&m, "user.oomd_kill", "3");
    let human = ok(w.run(&["kill", "forger"]));
    let _ = cmd.wait();
    assert!(!human.contains("killed by systemd-oomd"), "{human}");
    assert!(
        human.contains("module forger: user.oomd_ooms not taken for systemd-oomd's kill"),
        "{human}"
    );
    let mut cmd = w.exec_sleep("forger2");
    let m = w.root().join("subc-modules/forger2");
    set_xattr(&m, "user.oomd_ooms", "1");
    let v = json(ok(w.run(&["--json", "kill", "forger2"])));
    let _ = cmd.wait();
    assert_eq!(v["marks_unconfirmed"][0]["mark"], "user.oomd_ooms", "{v}");
    let report: ck_cgroup::module::StopReport = serde_json::from_value(v.clone()).expect("parses");
    assert_eq!(report.marks_unconfirmed.len(), 1, "{v}");
}

#[test]
fn watch_says_systemd_oomd_killed_a_module_and_who_emptied_it() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    ok(w.run(&["create", "victim"]));
    assert_eq!(watch.next("victim")["event"], "appeared");
    let mut cmd = w.exec_sleep("victim");
    assert_eq!(watch.next("victim")["event"], "populated");
    // What systemd-oomd does: user.oomd_ooms incremented, SIGKILL, user.oomd_kill.
    let m = w.root().join("subc-modules/victim");
    set_xattr(&m, "user.oomd_ooms", "1");
    let e = watch.next("victim");
    assert_eq!(e["event"], "oomd_kill", "{e}");
    assert_eq!(e["value"], 1, "{e}");
    assert_eq!(e["previous"], 0, "{e}");
    assert_eq!(e["source"], "user.oomd_ooms", "{e}");
    cmd.kill().unwrap();
    cmd.wait().unwrap();
    set_xattr(&m, "user.oomd_kill", "1");
    let e = watch.next("victim");
    assert_eq!(e["event"], "emptied", "{e}");
    assert_eq!(e["killed_by"], serde_json::json!(["systemd-oomd"]), "{e}");
    // Filled again and left by itself: nobody killed it this time.
    ok(w.run(&["exec", "victim", "--", "sleep", "0.2"]));
    assert_eq!(watch.next("victim")["event"], "populated");
    let e = watch.next("victim");
    assert_eq!(e["event"], "emptied", "{e}");
    assert_eq!(e["killed_by"], serde_json::json!([]), "{e}");
    // The kill took the processes the mark was for: past the check's time, no doubt is cast.
    let later = watch.during(std::time::Duration::from_secs(11));
    assert!(
        !later
            .iter()
            .any(|v| v["module"] == "victim" && v["event"] == "oomd_kill_unconfirmed"),
        "a kill that took its processes doubted: {later:?}"
    );
}

#[test]
fn a_forged_oomd_mark_whose_processes_live_on_is_unconfirmed_and_names_no_killer() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    ok(w.run(&["create", "forger"]));
    assert_eq!(watch.next("forger")["event"], "appeared");
    let mut cmd = w.exec_sleep("forger");
    assert_eq!(watch.next("forger")["event"], "populated");
    // What a process of the daemon's uid can do: raise systemd-oomd's counter, and kill nobody.
    let m = w.root().join("subc-modules/forger");
    set_xattr(&m, "user.oomd_ooms", "1");
    assert_eq!(watch.next("forger")["event"], "oomd_kill");
    // Its process lives on: when the kill would long have ended it, the mark is doubted.
    let e = watch.next("forger");
    assert_eq!(e["event"], "oomd_kill_unconfirmed", "{e}");
    assert_eq!(e["value"], 1, "the one process held still runs: {e}");
    // Then it goes by itself: the forged mark names no killer.
    cmd.kill().unwrap();
    cmd.wait().unwrap();
    let e = watch.next("forger");
    assert_eq!(e["event"], "emptied", "{e}");
    assert_eq!(e["killed_by"], serde_json::json!([]), "{e}");
}

/// Rises of `user.oomd_ooms` that keep coming faster than the check's 10 s, while the module's
/// process lives on: each rise is checked on its own time (a red team's shape: rises every few
/// seconds replaced the pending check, so none was ever flagged while they kept coming).
#[test]
fn rises_that_keep_coming_are_each_checked() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    let mut cmd = w.exec_sleep("riser");
    let m = w.root().join("subc-modules/riser");
    let start = std::time::Instant::now();
    let mut flagged = None;
    for n in 1..=10 {
        set_xattr(&m, "user.oomd_ooms", &n.to_string());
        // A rise every 3 s, for up to 30 s: without a check per rise, none is ever due.
        let seen = watch.during(std::time::Duration::from_secs(3));
        if let Some(e) = seen
            .iter()
            .find(|v| v["module"] == "riser" && v["event"] == "oomd_kill_unconfirmed")
        {
            flagged = Some((n, e.clone()));
            break;
        }
    }
    let _ = cmd.kill();
    let _ = cmd.wait();
    let (n, e) = flagged.unwrap_or_else(|| {
        panic!(
            "no oomd_kill_unconfirmed in {:.0?} of rises every 3 s",
            start.elapsed()
        )
    });
    assert_eq!(e["value"], 1, "{e}");
    assert!(n < 10, "flagged only after the rises stopped: {e}");
}

/// A module that leaves short-lived processes where `watch` looks first (the processes it holds
/// at a rise) and moves its real one to a sub-cgroup, then raises `user.oomd_ooms`: the decoys
/// exit, the real one runs on, and the check still finds it (any process of the module that is
/// older than the rise).
#[test]
fn a_decoy_for_the_held_processes_does_not_hide_the_real_ones() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    let mut real = w.exec_sleep("decoy");
    let m = w.root().join("subc-modules/decoy");
    std::fs::create_dir(m.join("inner")).unwrap();
    std::fs::write(m.join("inner/cgroup.procs"), real.id().to_string()).unwrap();
    let mut decoys = Vec::new();
    for _ in 0..8 {
        let mut c = w.ck();
        c.args(["exec", "decoy", "--", "sleep", "1"]);
        decoys.push(w.exec_placed(c, "decoy"));
    }
    set_xattr(&m, "user.oomd_ooms", "1");
    for mut d in decoys {
        let _ = d.wait();
    }
    let e = watch.wait_for("decoy", "oomd_kill_unconfirmed");
    let _ = real.kill();
    let _ = real.wait();
    assert_eq!(e.value, Some(1), "{e:?}");
}

#[test]
fn doctor_explains_oomd_here_without_a_bus_and_does_not_crash() {
    let w = World::new();
    let o = w.run(&["--json", "doctor"]);
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&o)
    );
    let v = json(stdout(&o));
    let checks = v["checks"].as_array().unwrap();
    let check = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {v}"))
            .clone()
    };
    let running = check("systemd-oomd");
    let bus = std::path::Path::new("/run/dbus/system_bus_socket").exists();
    if !bus {
        // Visible, not false: it cannot tell.
        assert_eq!(running["outcome"], "warn", "{running}");
        assert!(
            running["detail"]
                .as_str()
                .unwrap()
                .starts_with("unknown: no system bus"),
            "{running}"
        );
    }
    check("systemd-oomd monitors");
    check("systemd-oomd walk");
    // The sandbox was laid out by init: daemon/ is omitted.
    let c = check("systemd-oomd candidates");
    assert_eq!(c["outcome"], "ok", "{c}");
    assert!(
        c["detail"].as_str().unwrap().starts_with("daemon/ (omit)"),
        "{c}"
    );
}
