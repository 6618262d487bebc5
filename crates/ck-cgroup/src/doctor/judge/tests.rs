//! The checks of [`super`], each judged on facts built by hand (and fixture text where `doctor`
//! reads a file): its pass, and its failure or warning with the fix.

use std::path::Path;

use super::*;
use crate::doctor::gather::UnitFacts;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name),
    )
    .unwrap()
}

pub(super) fn strings(s: &str) -> Option<Vec<String>> {
    Some(s.split_whitespace().map(str::to_string).collect())
}

/// A delegated root on a kernel with every file, `subc-modules/` made by `init`.
fn root() -> RootFacts {
    RootFacts {
        path: "/sys/fs/cgroup/system.slice/ck-subc.service".into(),
        writable: true,
        controllers: Some(parse::controllers(&fixture("cgroup.controllers"))),
        enabled: strings("memory pids cpu io"),
        layout: Some(true),
        cgroup_kill: true,
        cgroup_freeze: true,
        memory_peak: true,
    }
}

/// The packaged unit, on systemd 254.
pub(super) fn unit() -> UnitFacts {
    UnitFacts {
        version: "254.5-1".into(),
        unit: "ck-subc.service".into(),
        delegate: Some(true),
        delegate_controllers: strings("cpu io memory pids"),
        oom_policy: Some("continue".into()),
        kill_mode: Some("mixed".into()),
        timeout_stop_usec: Some(35_000_000),
        control_group: Some("/system.slice/ck-subc.service".into()),
    }
}

/// A ready host: unified cgroup2 with nsdelegate, the root above, the unit above.
pub(super) fn facts() -> Facts {
    Facts {
        mountinfo: Some(fixture("mountinfo.unified")),
        kernel_release: "6.1.0-26-amd64".into(),
        scopes: None,
        root: Some(ServiceRoot::Opened(root())),
        unit: Ok(unit()),
        oomd: None,
        cold: cold(),
    }
}

/// A host that can tell cold memory: MGLRU on, debugfs, root.
fn cold() -> super::super::gather::ColdFacts {
    super::super::gather::ColdFacts {
        enabled: Some("0x0007\n".into()),
        debugfs: true,
        lru_gen: Ok(()),
        is_root: true,
    }
}

#[test]
fn cold_memory_names_each_thing_this_host_lacks_and_its_fix() {
    let ok = cold_memory(&cold(), Some(true));
    assert_eq!(ok.outcome, Outcome::Ok, "{ok:?}");
    // This development host: no MGLRU, no memory controller on cgroup2.
    let host = super::super::gather::ColdFacts {
        enabled: None,
        ..cold()
    };
    let c = cold_memory(&host, Some(false));
    assert_eq!(c.outcome, Outcome::Warn);
    assert!(
        c.detail.contains("CONFIG_LRU_GEN is not set") && c.detail.contains("no memory controller"),
        "{}",
        c.detail
    );
    let off = super::super::gather::ColdFacts {
        enabled: Some("0x0000\n".into()),
        debugfs: false,
        lru_gen: Err("No such file or directory (os error 2)".into()),
        is_root: false,
    };
    let c = cold_memory(&off, None);
    let fix = c.fix.clone().unwrap_or_default();
    assert!(
        c.detail
            .contains("is off (/sys/kernel/mm/lru_gen/enabled is 0x0000)"),
        "{}",
        c.detail
    );
    assert!(
        fix.contains("echo y > /sys/kernel/mm/lru_gen/enabled")
            && fix.contains("lru_gen.enabled=y"),
        "{fix}"
    );
    assert!(
        fix.contains("mount -t debugfs") && fix.contains("as root"),
        "{fix}"
    );
    // Everything there but the file unreadable: said, without a made-up fix.
    let c = cold_memory(
        &super::super::gather::ColdFacts {
            lru_gen: Err("EIO".into()),
            ..cold()
        },
        Some(true),
    );
    assert_eq!((c.outcome, c.fix.is_none()), (Outcome::Warn, true));
    assert!(c.detail.contains("EIO"));
}

fn scopes(bus: Bus, controllers: &str) -> ScopeFacts {
    ScopeFacts {
        bus,
        manager: Ok(super::super::gather::ManagerFacts {
            via: "the system bus".into(),
            controllers: strings(controllers),
        }),
    }
}

fn failure(error: &str, hint: Option<&str>) -> Failure {
    Failure {
        error: error.into(),
        hint: hint.map(str::to_string),
    }
}

/// A check in one string: `<outcome>: <detail>`, then `\nfix: <fix>` where it has one.
pub(super) fn seen(c: &Check) -> String {
    let outcome = format!("{:?}", c.outcome).to_lowercase();
    let fix = c
        .fix
        .as_ref()
        .map_or(String::new(), |f| format!("\nfix: {f}"));
    format!("{outcome}: {}{fix}", c.detail)
}

pub(super) fn names(checks: &[Check]) -> Vec<&str> {
    checks.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn a_ready_host_passes_every_check_in_order() {
    let checks = judge(&facts());
    assert_eq!(
        names(&checks),
        [
            "cgroup2 mounted",
            "cgroup2 nsdelegate",
            "cgroup2 favordynmods",
            "service root",
            "controllers delegated",
            "controllers enabled for the modules",
            "kernel: cgroup.kill",
            "kernel: cgroup.freeze",
            "kernel: memory.peak",
            "kernel: CLONE_INTO_CGROUP",
            "cold memory (multi-gen LRU)",
            "systemd unit",
            "Delegate=",
            "OOMPolicy=",
            "KillMode=",
            "TimeoutStopSec=",
            "DelegateSubgroup=",
        ]
    );
    for c in &checks {
        // systemd mounts cgroup2 without favordynmods: a warning with its trade-off, not a failure.
        if c.name == "cgroup2 favordynmods" {
            assert_eq!(c.outcome, Outcome::Warn, "{c:?}");
            continue;
        }
        assert_eq!((c.outcome, c.fix.as_deref()), (Outcome::Ok, None), "{c:?}");
    }
    assert!(super::super::Report::new(checks).ready);
}

#[test]
fn favordynmods_is_a_warning_with_the_fix_and_its_cost_and_absent_before_6_0() {
    let off = fixture("mountinfo.unified");
    let c = favordynmods_check(&off, "6.1.0-26-amd64").unwrap();
    assert_eq!(c.outcome, Outcome::Warn);
    assert!(c.detail.contains("RCU grace period"), "{}", c.detail);
    let fix = c.fix.unwrap();
    assert!(
        fix.contains("favordynmods") && fix.contains("slower host-wide"),
        "{fix}"
    );
    let on = off.replace("nsdelegate", "nsdelegate,favordynmods");
    let c = favordynmods_check(&on, "6.1.0-26-amd64").unwrap();
    assert_eq!((c.outcome, c.fix), (Outcome::Ok, None));
    assert!(favordynmods_check(&off, "5.15.0-91-generic").is_none());
    assert!(favordynmods_check("", "6.1.0-26-amd64").is_none());
}

#[test]
fn cgroup2_mounted_names_the_mount_and_whether_v1_is_beside_it() {
    let unified = fixture("mountinfo.unified");
    let c = cgroup2_mounted(&unified);
    assert_eq!(seen(&c), "ok: at /sys/fs/cgroup (unified)");
    let c = cgroup2_mounted(&fixture("mountinfo.hybrid"));
    assert_eq!(
        seen(&c),
        "ok: at /sys/fs/cgroup/unified (hybrid: cgroup v1 hierarchies are mounted too and may hold controllers)"
    );
    let v1_only: String = fixture("mountinfo.hybrid")
        .lines()
        .filter(|l| !l.contains(" - cgroup2 "))
        .map(|l| format!("{l}\n"))
        .collect();
    for c in [cgroup2_mounted(&v1_only), cgroup2_mounted("")] {
        assert_eq!(
            seen(&c),
            "fail: no cgroup2 filesystem in /proc/self/mountinfo\nfix: boot with systemd.unified_cgroup_hierarchy=1 (or mount -t cgroup2 none /sys/fs/cgroup/unified)"
        );
    }
    // An unreadable mountinfo is judged as one without cgroup2: it fails, and nsdelegate is not
    // judged at all.
    let checks = judge(&Facts {
        mountinfo: None,
        ..facts()
    });
    assert_eq!(checks[0].outcome, Outcome::Fail);
    assert!(!names(&checks).contains(&"cgroup2 nsdelegate"));
}

#[test]
fn nsdelegate_is_one_line_warning_with_the_fix_when_off() {
    let on = nsdelegate_check(&fixture("mountinfo.unified")).unwrap();
    assert_eq!(
        (on.name.as_str(), on.outcome, on.fix.is_none()),
        ("cgroup2 nsdelegate", Outcome::Ok, true)
    );
    let off = nsdelegate_check(&fixture("mountinfo.hybrid")).unwrap();
    assert_eq!(off.outcome, Outcome::Warn, "{}", off.detail);
    assert!(
        off.fix
            .as_deref()
            .unwrap_or("")
            .contains("remount,nsdelegate")
    );
    assert!(nsdelegate_check("").is_none());
}

#[test]
fn kernel_versions() {
    assert!(kernel_at_least("6.1.0-26-amd64", 5, 7));
    assert!(kernel_at_least("5.7.0", 5, 7));
    assert!(!kernel_at_least("5.4.0-150-generic", 5, 7));
    assert!(kernel_at_least("6.18.44-fc-v769", 5, 14));
}

#[test]
fn the_systemd_backend_answers_or_fails_with_the_errors_hint() {
    let s = scopes(Bus::System, "cpu io memory pids");
    assert_eq!(
        seen(&systemd_backend(&s)),
        "ok: the system manager answers on the system bus; modules are scopes in module.slice"
    );
    let user = ScopeFacts {
        bus: Bus::User,
        ..scopes(Bus::User, "")
    };
    assert!(
        systemd_backend(&user)
            .detail
            .starts_with("the user manager")
    );
    let down = ScopeFacts {
        bus: Bus::System,
        manager: Err(failure(
            "cannot reach the system manager",
            Some("use cgroupfs"),
        )),
    };
    assert_eq!(
        seen(&systemd_backend(&down)),
        "fail: cannot reach the system manager\nfix: use cgroupfs"
    );
    // Without a manager, nothing about its controllers; with the backend, no root checks.
    assert!(scope_controllers(&down, false).is_none());
    let checks = judge(&Facts {
        scopes: Some(down),
        root: None,
        ..facts()
    });
    assert_eq!(
        names(&checks)[..4],
        [
            "cgroup2 mounted",
            "cgroup2 nsdelegate",
            "cgroup2 favordynmods",
            "systemd backend",
        ]
    );
}

#[test]
fn scope_controllers_fail_without_memory_or_pids_and_warn_without_the_others() {
    let ok = scope_controllers(&scopes(Bus::System, "cpu io memory pids"), false).unwrap();
    assert_eq!(seen(&ok), "ok: memory pids cpu io available");
    let user = scope_controllers(&scopes(Bus::User, "cpu memory pids"), false).unwrap();
    assert_eq!(user.name, "controllers for module scopes");
    assert_eq!(
        seen(&user),
        "warn: missing from cgroup.controllers: io (available: cpu memory pids)\nfix: limits on those controllers are unavailable to the modules (for a user manager: systemctl edit user@.service, [Service] Delegate=cpu cpuset io memory pids)"
    );
    let no_memory = scope_controllers(&scopes(Bus::System, "cpu io pids"), true).unwrap();
    assert_eq!(no_memory.outcome, Outcome::Fail);
    assert!(
        no_memory
            .fix
            .unwrap()
            .contains("keeps those controllers in cgroup v1")
    );
    // Unreadable is unknown, said as such: not "none available" (absent is not zero).
    let mut unread = scopes(Bus::System, "");
    if let Ok(m) = &mut unread.manager {
        m.controllers = None;
    }
    let c = scope_controllers(&unread, false).unwrap();
    assert_eq!(
        (c.outcome, c.detail.as_str()),
        (
            Outcome::Fail,
            "cgroup.controllers could not be read: which controllers are available is unknown"
        )
    );
}

#[test]
fn the_service_root_fails_with_the_fix_when_not_found_opened_or_writable() {
    let ok = service_root(&ServiceRoot::Opened(root()));
    assert_eq!(
        seen(&ok),
        "ok: /sys/fs/cgroup/system.slice/ck-subc.service is a cgroup2 directory, writable by this user"
    );
    let ro = service_root(&ServiceRoot::Opened(RootFacts {
        writable: false,
        ..root()
    }));
    assert_eq!(
        seen(&ro),
        "fail: /sys/fs/cgroup/system.slice/ck-subc.service is a cgroup2 directory, NOT writable by this user\nfix: delegate the service's cgroup to its user: Delegate=memory pids cpu io in the unit (systemctl edit ck-subc.service)"
    );
    let lost = service_root(&ServiceRoot::Undiscovered(failure("no root", None)));
    assert_eq!(
        seen(&lost),
        "fail: no root\nfix: pass --root with the service's cgroup"
    );
    let hinted = service_root(&ServiceRoot::Undiscovered(failure(
        "at the root",
        Some("use sandbox"),
    )));
    assert_eq!(hinted.fix.as_deref(), Some("use sandbox"));
    let tmp = service_root(&ServiceRoot::Unopenable(failure(
        "/tmp is not on a cgroup2 filesystem",
        Some("pass a directory under the cgroup2 mount"),
    )));
    assert_eq!(
        seen(&tmp),
        "fail: /tmp is not on a cgroup2 filesystem\nfix: pass a directory under the cgroup2 mount"
    );
    // An unusable root is one line: none of the checks of its files.
    let checks = judge(&Facts {
        root: Some(ServiceRoot::Unopenable(failure("gone", None))),
        ..facts()
    });
    assert!(!names(&checks).contains(&"controllers delegated"));
    assert!(!super::super::Report::new(checks).ready);
}

#[test]
fn controllers_delegated_fails_with_the_drop_in_or_the_hybrid_fix() {
    assert_eq!(
        seen(&controllers_delegated(&root(), false)),
        "ok: memory pids cpu io available"
    );
    let few = RootFacts {
        controllers: strings("cpuset cpu memory pids"),
        ..root()
    };
    assert_eq!(
        seen(&controllers_delegated(&few, false)),
        "fail: missing from cgroup.controllers: io (available: cpuset cpu memory pids)\nfix: add a drop-in (systemctl edit ck-subc.service):\n[Service]\nDelegate=memory pids cpu io"
    );
    let none = RootFacts {
        controllers: strings(""),
        ..root()
    };
    assert_eq!(
        seen(&controllers_delegated(&none, true)),
        "fail: missing from cgroup.controllers: memory pids cpu io (available: none)\nfix: this hybrid host keeps those controllers in cgroup v1: boot with systemd.unified_cgroup_hierarchy=1 (and cgroup_no_v1=all), then add Delegate=memory pids cpu io"
    );
    // Unreadable is unknown, not "none available".
    let unread = RootFacts {
        controllers: None,
        ..root()
    };
    assert_eq!(
        seen(&controllers_delegated(&unread, true)),
        "fail: cgroup.controllers could not be read: which controllers are available is unknown\nfix: run doctor as the service's user, or as root"
    );
}

#[test]
fn controllers_enabled_warns_until_init_made_the_layout_and_enabled_them() {
    let init = "\nfix: run `ck-cgroup init` (the daemon does, before its first spawn)";
    assert_eq!(
        seen(&controllers_enabled(&root())),
        "ok: subc-modules/cgroup.subtree_control: memory pids cpu io"
    );
    // Nothing available, nothing enabled: nothing to do.
    let bare = RootFacts {
        controllers: strings(""),
        enabled: strings(""),
        ..root()
    };
    assert_eq!(
        seen(&controllers_enabled(&bare)),
        "ok: subc-modules/cgroup.subtree_control: -"
    );
    let half = RootFacts {
        enabled: strings("memory pids"),
        ..root()
    };
    assert_eq!(
        seen(&controllers_enabled(&half)),
        format!("warn: available but not enabled: cpu io{init}")
    );
    let fresh = RootFacts {
        layout: Some(false),
        ..root()
    };
    assert_eq!(
        seen(&controllers_enabled(&fresh)),
        format!("warn: subc-modules/ does not exist yet{init}")
    );
    // What could not be read is unknown, never "does not exist" nor "nothing enabled".
    let unknown = "could not be read: whether the modules get their controllers is unknown\nfix: run doctor as the service's user, or as root";
    for (facts, what) in [
        (
            RootFacts {
                layout: None,
                ..root()
            },
            "subc-modules/",
        ),
        (
            RootFacts {
                enabled: None,
                ..root()
            },
            "subc-modules/cgroup.subtree_control",
        ),
        (
            RootFacts {
                controllers: None,
                ..root()
            },
            "cgroup.controllers",
        ),
    ] {
        assert_eq!(
            seen(&controllers_enabled(&facts)),
            format!("warn: {what} {unknown}")
        );
    }
}

#[test]
fn kernel_files_warn_with_the_version_that_brought_them() {
    assert_eq!(
        seen(&cgroup_kill(&root())),
        "ok: present (kill --method cgroup-kill)"
    );
    assert_eq!(
        seen(&cgroup_freeze(&root())),
        "ok: present (kill --method freeze)"
    );
    let old = RootFacts {
        cgroup_kill: false,
        cgroup_freeze: false,
        memory_peak: false,
        ..root()
    };
    let kill = cgroup_kill(&old);
    assert_eq!(kill.name, "kernel: cgroup.kill");
    assert_eq!(
        seen(&kill),
        "warn: absent (kernel before 5.14): kill falls through to the freezer\nfix: a kernel 5.14 or newer"
    );
    assert_eq!(
        seen(&cgroup_freeze(&old)),
        "warn: absent (kernel before 5.2): kill falls through to per-process SIGKILL\nfix: a kernel 5.2 or newer"
    );
    assert_eq!(seen(&memory_peak(&root())), "ok: present");
    assert_eq!(
        seen(&memory_peak(&old)),
        "warn: absent (kernel before 5.19): status shows the peak as unknown"
    );
    let no_memory = RootFacts {
        controllers: strings("cpu io pids"),
        ..old
    };
    assert_eq!(
        seen(&memory_peak(&no_memory)),
        "warn: not checked: no memory controller"
    );
}

#[test]
fn clone_into_cgroup_warns_before_5_7() {
    assert_eq!(
        seen(&clone_into_cgroup("6.1.0-26-amd64")),
        "ok: kernel 6.1.0-26-amd64: spawn places the child with clone3"
    );
    assert_eq!(
        seen(&clone_into_cgroup("5.4.0-150-generic")),
        "warn: kernel 5.4.0-150-generic: before 5.7: spawn falls back to a pre-exec write to cgroup.procs"
    );
}
