//! The systemd-oomd checks of [`super`], each judged on facts built by hand: the pass, and the
//! failure or warning with its fix.

use super::*;
use crate::backend::MonitorUnit;

fn unit(name: &str, swap: &str, pressure: &str) -> MonitorUnit {
    MonitorUnit {
        unit: name.into(),
        swap: Some(swap.into()),
        pressure: Some(pressure.into()),
        pressure_limit: None,
    }
}

fn candidate(path: &str, p: OomdPreference) -> Candidate {
    Candidate {
        path: path.into(),
        preference: Ok(p),
        set_by_ck: Some(p),
    }
}

/// Fedora's defaults: oomd active, `-.slice` with ManagedOOMSwap=kill; the packaged unit
/// (memory.oom.group 0), daemon/ marked by init, two modules.
fn fedora() -> OomdFacts {
    OomdFacts {
        units: Ok(OomdUnits {
            active: Ok(Some("active".into())),
            chain: Ok(vec![
                unit("ck-subc.service", "auto", "auto"),
                unit("system.slice", "auto", "auto"),
                unit("-.slice", "kill", "auto"),
            ]),
        }),
        service_oom_group: Some(false),
        candidates: Some(vec![
            candidate("daemon", OomdPreference::Omit),
            candidate("subc-modules/a", OomdPreference::None),
            candidate("subc-modules/b", OomdPreference::Avoid),
        ]),
        daemon_owner: Some(0),
        owners: vec![Some(0), Some(0), Some(0)],
    }
}

fn by_name<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks:?}"))
}

#[test]
fn a_monitored_service_with_the_daemon_leaf_omitted_is_ready() {
    let checks = judge(&fedora());
    assert!(
        checks.iter().all(|c| c.outcome == Outcome::Ok),
        "{checks:?}"
    );
    let m = by_name(&checks, "systemd-oomd monitors");
    assert!(
        m.detail.contains("-.slice (ManagedOOMSwap=kill)"),
        "{}",
        m.detail
    );
    let c = by_name(&checks, "systemd-oomd candidates");
    assert!(
        c.detail.starts_with(
            "daemon/ (omit), subc-modules/a/, subc-modules/b/ (avoid): daemon/ has user.oomd_omit"
        ),
        "{}",
        c.detail
    );
}

#[test]
fn an_unmarked_daemon_leaf_under_a_running_oomd_fails_with_the_fix() {
    for p in [OomdPreference::None, OomdPreference::Avoid] {
        let mut f = fedora();
        f.candidates = Some(vec![
            candidate("daemon", p),
            candidate("subc-modules/a", OomdPreference::None),
        ]);
        let checks = judge(&f);
        let c = by_name(&checks, "systemd-oomd candidates");
        assert_eq!(c.outcome, Outcome::Fail, "{p}: {}", c.detail);
        assert!(
            c.detail.contains("may pick the daemon's own leaf"),
            "{}",
            c.detail
        );
        assert!(
            c.fix.as_deref().unwrap().contains("ck-cgroup init"),
            "{c:?}"
        );
    }
    // An unreadable mark is as bad.
    let mut f = fedora();
    f.candidates = Some(vec![Candidate {
        path: "daemon".into(),
        preference: Err("getxattr of user.oomd_omit failed: EOPNOTSUPP".into()),
        set_by_ck: None,
    }]);
    let c = judge(&f)
        .into_iter()
        .find(|c| c.name == "systemd-oomd candidates")
        .unwrap();
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.detail.contains("EOPNOTSUPP"), "{}", c.detail);
}

#[test]
fn the_same_problem_is_a_warning_where_oomd_does_not_act() {
    // Not monitored: nothing at or above the service has a kill setting.
    let mut f = fedora();
    f.candidates = Some(vec![candidate("daemon", OomdPreference::None)]);
    f.units = Ok(OomdUnits {
        active: Ok(Some("active".into())),
        chain: Ok(vec![
            unit("ck-subc.service", "auto", "auto"),
            unit("-.slice", "auto", "auto"),
        ]),
    });
    let checks = judge(&f);
    assert!(
        by_name(&checks, "systemd-oomd monitors")
            .detail
            .contains("does not act")
    );
    assert_eq!(
        by_name(&checks, "systemd-oomd candidates").outcome,
        Outcome::Warn
    );
    // Not running.
    f.units = Ok(OomdUnits {
        active: Ok(None),
        chain: Ok(vec![unit("-.slice", "kill", "auto")]),
    });
    let checks = judge(&f);
    assert!(
        by_name(&checks, "systemd-oomd")
            .detail
            .contains("not loaded")
    );
    assert_eq!(
        by_name(&checks, "systemd-oomd candidates").outcome,
        Outcome::Warn
    );
}

#[test]
fn without_a_system_bus_it_says_unknown_and_judges_the_candidates_strictly() {
    let mut f = OomdFacts {
        units: Err("systemd is not on the bus".into()),
        service_oom_group: Some(false),
        candidates: Some(vec![candidate("daemon", OomdPreference::None)]),
        daemon_owner: Some(0),
        owners: vec![],
    };
    let checks = judge(&f);
    for name in ["systemd-oomd", "systemd-oomd monitors"] {
        let c = by_name(&checks, name);
        assert_eq!(c.outcome, Outcome::Warn, "{c:?}");
        assert!(
            c.detail.starts_with("unknown: no system bus"),
            "{}",
            c.detail
        );
    }
    assert_eq!(
        by_name(&checks, "systemd-oomd candidates").outcome,
        Outcome::Fail
    );
    // Without the memory controller (this host): oomd cannot act, a warning.
    f.service_oom_group = None;
    let checks = judge(&f);
    let w = by_name(&checks, "systemd-oomd walk");
    assert_eq!(w.outcome, Outcome::Warn);
    assert!(
        w.detail.contains("no readable memory.oom.group"),
        "{}",
        w.detail
    );
    assert_eq!(
        by_name(&checks, "systemd-oomd candidates").outcome,
        Outcome::Warn
    );
}

#[test]
fn a_service_with_memory_oom_group_1_is_one_candidate_and_fails_with_the_fix() {
    let mut f = fedora();
    f.service_oom_group = Some(true);
    let w = judge(&f)
        .into_iter()
        .find(|c| c.name == "systemd-oomd walk")
        .unwrap();
    assert_eq!(w.outcome, Outcome::Fail);
    assert!(
        w.detail.contains("takes the daemon and every module"),
        "{}",
        w.detail
    );
    assert!(w.fix.unwrap().contains("OOMPolicy=continue"));
}

#[test]
fn a_daemon_leaf_with_sub_cgroups_is_no_candidate() {
    let mut f = fedora();
    f.candidates = Some(vec![candidate(
        "daemon/subc-modules/m-a_5f1",
        OomdPreference::None,
    )]);
    let c = by_name(&judge(&f), "systemd-oomd candidates").clone();
    assert_eq!(c.outcome, Outcome::Ok);
    assert!(c.detail.contains("daemon/ is no candidate"), "{}", c.detail);
}

/// The owner rule itself (systemd PRs 18401 and 23764): root's marks always; on the pressure
/// path the monitored cgroup's owner's too; on the swap path no one else's.
#[test]
fn the_owner_rule_over_its_cases() {
    use OomdPath::{Pressure, Swap};
    for (owner, path, monitored, want) in [
        (0, Swap, Some(0), true),
        (0, Swap, Some(1000), true),
        (0, Pressure, Some(1000), true),
        (0, Pressure, None, true),
        (1000, Swap, Some(1000), false),
        (1000, Swap, Some(0), false),
        (1000, Pressure, Some(1000), true),
        (1000, Pressure, Some(0), false),
        (1000, Pressure, Some(1001), false),
        (1000, Pressure, None, false),
    ] {
        assert_eq!(
            mark_honoured(owner, path, monitored),
            want,
            "owner {owner}, {path:?}, monitored by {monitored:?}"
        );
    }
}

/// The incident's host: a user service (daemon/ owned by the user) under a user manager whose
/// user@.service has ManagedOOMMemoryPressure=kill, with the system's -.slice on the swap path.
fn user_service(swap_in_chain: bool) -> OomdFacts {
    let mut f = fedora();
    f.units = Ok(OomdUnits {
        active: Ok(Some("active".into())),
        chain: Ok(vec![
            unit("ck-subc.service", "auto", "auto"),
            unit("app.slice", "auto", "auto"),
            unit(
                "-.slice",
                if swap_in_chain { "kill" } else { "auto" },
                "kill",
            ),
        ]),
    });
    f.daemon_owner = Some(1000);
    f.owners = vec![Some(1000), Some(1000), Some(1000)];
    f
}

#[test]
fn a_users_daemon_mark_is_ignored_on_the_swap_path_and_doctor_says_so_with_the_fix() {
    let c = by_name(&judge(&user_service(true)), "systemd-oomd marks").clone();
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(
        c.detail.contains("daemon/ is owned by uid 1000, not root")
            && c.detail
                .contains("ignores its mark on the swap path (-.slice)")
            && c.detail
                .contains("honours it on the pressure path (-.slice, owned by uid 1000)"),
        "{}",
        c.detail
    );
    assert!(c.fix.unwrap().contains("root-owned"));
    // Seen from the user manager, the system's swap path is not in the chain: still a warning.
    let c = by_name(&judge(&user_service(false)), "systemd-oomd marks").clone();
    assert_eq!(c.outcome, Outcome::Warn, "{c:?}");
    assert!(c.detail.contains("would ignore it"), "{}", c.detail);
}

#[test]
fn a_user_services_mark_under_a_root_monitored_unit_is_ignored_on_the_pressure_path() {
    let mut f = user_service(false);
    f.owners = vec![Some(1000), Some(0), Some(0)];
    let c = by_name(&judge(&f), "systemd-oomd marks").clone();
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(
        c.detail
            .contains("the pressure path (-.slice, owned by uid 0): only root's marks"),
        "{}",
        c.detail
    );
}

#[test]
fn a_root_owned_daemon_leaf_is_honoured_everywhere() {
    let mut f = user_service(true);
    f.daemon_owner = Some(0);
    let c = by_name(&judge(&f), "systemd-oomd marks").clone();
    assert_eq!(c.outcome, Outcome::Ok, "{c:?}");
    // Without a mark there is nothing to honour: no such check.
    f.candidates = Some(vec![candidate("daemon", OomdPreference::None)]);
    assert!(judge(&f).iter().all(|c| c.name != "systemd-oomd marks"));
}

/// A module that marked itself omit (no `user.ck_cgroup_oomd`, or another value) is warned
/// about by name, with the fix; a mark ck-cgroup set is not.
#[test]
fn a_mark_ck_cgroup_did_not_set_is_flagged() {
    let mut f = fedora();
    let ours = candidate("daemon", OomdPreference::Omit);
    let mut theirs = candidate("subc-modules/sly", OomdPreference::Omit);
    theirs.set_by_ck = None;
    let mut changed = candidate("subc-modules/turned", OomdPreference::Avoid);
    changed.set_by_ck = Some(OomdPreference::None);
    f.candidates = Some(vec![ours.clone(), theirs, changed]);
    let c = judge(&f)
        .into_iter()
        .find(|c| c.name == "systemd-oomd foreign marks")
        .expect("the check");
    assert_eq!(c.outcome, Outcome::Warn, "{c:?}");
    assert!(
        c.detail.contains("subc-modules/sly/ (omit)")
            && c.detail.contains("subc-modules/turned/ (avoid)")
            && !c.detail.contains("daemon/"),
        "{}",
        c.detail
    );
    assert!(
        c.fix.as_deref().is_some_and(|x| x.contains("--oomd")),
        "{c:?}"
    );
    f.candidates = Some(vec![ours]);
    let c = judge(&f)
        .into_iter()
        .find(|c| c.name == "systemd-oomd foreign marks")
        .expect("the check");
    assert_eq!(c.outcome, Outcome::Ok, "{c:?}");
}
