//! The daemon's service unit, `ck-subc.service`, for the system and the user manager: delegation of
//! exactly the four controllers, the stop contract, prune only before the daemon starts, the
//! hardening block free of what would break delegation, and the paths and `DelegateSubgroup=` the
//! make variables choose.

use std::collections::BTreeSet;

use crate::make_install::install;
use crate::{directives, one, read, values};

/// Every setting that would take the cgroup filesystem away from the daemon, or clone3() (and with
/// it CLONE_INTO_CGROUP) away from the helper.
fn breaks_delegation(key: &str, value: &str, all: &[(String, String, String)]) -> Option<String> {
    let sys = |v: &str| {
        v.split_whitespace()
            .map(|p| p.trim_start_matches(['-', '+']))
            .any(|p| p == "/" || p == "/sys" || p.starts_with("/sys/fs/cgroup") || p == "/sys/fs")
    };
    match key {
        "ProtectControlGroups" => Some("makes the cgroup filesystem read-only".into()),
        "ProtectKernelTunables" => {
            Some("makes /sys read-only, the cgroup2 mount below it too".into())
        }
        "RestrictNamespaces" => Some("systemd then fails clone3() with ENOSYS".into()),
        "ProtectSystem" if value == "strict" => {
            let rw = values(all, "Service", "ReadWritePaths");
            (!rw.iter().any(|v| v.contains("/sys/fs/cgroup")))
                .then(|| "ProtectSystem=strict without ReadWritePaths= for /sys/fs/cgroup".into())
        }
        "ReadOnlyPaths" | "InaccessiblePaths" | "TemporaryFileSystem" | "BindReadOnlyPaths"
            if sys(value) =>
        {
            Some(format!("{key}={value} covers the cgroup mount"))
        }
        "Delegate" if matches!(value, "no" | "false" | "0" | "off") => {
            Some("turns delegation off".into())
        }
        _ => None,
    }
}

fn check_service_unit(text: &str, manager: &str, helper: &str, daemon: &str) {
    let d = directives(text);
    // Delegation: exactly the controllers the helper uses.
    let delegated: BTreeSet<&str> = one(&d, "Service", "Delegate").split_whitespace().collect();
    assert_eq!(
        delegated,
        ["cpu", "io", "memory", "pids"].into_iter().collect(),
        "Delegate="
    );
    assert_eq!(one(&d, "Service", "OOMPolicy"), "continue");
    assert_eq!(one(&d, "Service", "KillMode"), "mixed");
    assert_eq!(one(&d, "Service", "TimeoutStopSec"), "35");
    assert_eq!(one(&d, "Service", "Restart"), "on-failure");
    let doc = one(&d, "Unit", "Documentation");
    assert!(doc.contains("man:ck-cgroup(1)"), "Documentation={doc}");
    assert!(
        doc.split_whitespace()
            .all(|u| u.starts_with("man:") || u.starts_with("https://")),
        "Documentation={doc}: man: pages and https URLs only"
    );
    assert_eq!(
        one(&d, "Service", "ExecStart"),
        format!("{helper} init -- {daemon}")
    );
    assert_eq!(
        one(&d, "Service", "Environment"),
        format!("CK_CGROUP_HELPER={helper}")
    );
    // prune --kill before the daemon starts, and never while it runs.
    assert_eq!(
        one(&d, "Service", "ExecStartPre"),
        format!("{helper} prune --kill --if-laid-out")
    );
    for (s, k, v) in &d {
        if k.starts_with("Exec") && k != "ExecStartPre" {
            assert!(
                !v.contains("prune"),
                "[{s}] {k}={v}: prune only before the daemon starts"
            );
        }
    }
    for (_, k, v) in &d {
        if let Some(why) = breaks_delegation(k, v, &d) {
            panic!("{k}={v} in the {manager} unit: {why}");
        }
    }
    // The hardening block: present, sorted, one setting per key.
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("# Hardening"))
        .expect("a # Hardening block");
    let block: Vec<&str> = lines[start..]
        .iter()
        .skip_while(|l| l.starts_with('#'))
        .take_while(|l| !l.trim().is_empty())
        .copied()
        .collect();
    assert!(block.len() >= 3, "hardening block: {block:?}");
    let keys: Vec<&str> = block
        .iter()
        .map(|l| l.split_once('=').expect("a directive").0)
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(keys, sorted, "the hardening block is sorted, each key once");
    match manager {
        "system" => assert_eq!(one(&d, "Install", "WantedBy"), "multi-user.target"),
        _ => {
            assert_eq!(one(&d, "Install", "WantedBy"), "default.target");
            assert!(
                values(&d, "Service", "User").is_empty(),
                "User= in a user unit"
            );
            assert!(
                values(&d, "Service", "Group").is_empty(),
                "Group= in a user unit"
            );
        }
    }
}

#[test]
fn service_units_keep_delegation_and_the_stop_contract() {
    let dest = install(&[]);
    let lib = dest.path().join("usr/local/lib/systemd");
    for manager in ["system", "user"] {
        let text = read(lib.join(manager).join("ck-subc.service"));
        check_service_unit(
            &text,
            manager,
            "/usr/local/bin/ck-cgroup",
            "/usr/local/bin/ck-subc",
        );
        assert!(
            !text.contains(&dest.path().display().to_string()),
            "DESTDIR in the unit"
        );
        assert!(!text.contains('@'), "an unfilled @VARIABLE@:\n{text}");
    }
}

#[test]
fn helper_and_daemon_paths_follow_the_variables() {
    let dest = install(&[
        "PREFIX=/usr",
        "HELPERDIR=/usr/libexec/ck-cgroup",
        "DAEMON=/opt/subc/bin/ck-subc",
        "SYSTEMDSYSTEMUNITDIR=/usr/lib/systemd/system",
        "SYSTEMDUSERUNITDIR=/usr/lib/systemd/user",
    ]);
    assert!(
        dest.path()
            .join("usr/libexec/ck-cgroup/ck-cgroup")
            .is_file()
    );
    assert!(!dest.path().join("usr/bin/ck-cgroup").exists());
    for manager in ["system", "user"] {
        let text = read(
            dest.path()
                .join(format!("usr/lib/systemd/{manager}/ck-subc.service")),
        );
        check_service_unit(
            &text,
            manager,
            "/usr/libexec/ck-cgroup/ck-cgroup",
            "/opt/subc/bin/ck-subc",
        );
        // Not file:/usr/share/doc/...: images without docs (path-exclude) would break the link.
        assert!(!text.contains("file:"), "a file: link in Documentation=");
    }
}

#[test]
fn delegate_subgroup_follows_the_systemd_version() {
    for (args, want) in [
        (&["DELEGATE_SUBGROUP=yes"][..], true),
        (&["DELEGATE_SUBGROUP=no"][..], false),
        (&["SYSTEMD_VERSION=254"][..], true),
        (&["SYSTEMD_VERSION=252"][..], false),
    ] {
        let dest = install(args);
        for manager in ["system", "user"] {
            let text = read(
                dest.path()
                    .join(format!("usr/local/lib/systemd/{manager}/ck-subc.service")),
            );
            let d = directives(&text);
            let got = values(&d, "Service", "DelegateSubgroup");
            if want {
                assert_eq!(got, ["daemon"], "{args:?} {manager}");
            } else {
                assert!(got.is_empty(), "{args:?} {manager}: {got:?}");
                assert!(text.contains("#DelegateSubgroup=daemon (off"), "{args:?}");
            }
        }
    }
}
