//! The checks of the service's unit: its settings as systemd reports them (`Delegate=`,
//! `OOMPolicy=`, `KillMode=`, `TimeoutStopSec=`, `DelegateSubgroup=`), each with its drop-in,
//! or why they could not be read.

use super::check;
use crate::doctor::gather::{Unavailable, UnitFacts, WANTED_CONTROLLERS};
use crate::doctor::{Check, Outcome};

/// `systemd`: why the unit's settings were not checked, as a warning.
pub(super) fn systemd_unavailable(u: &Unavailable) -> Check {
    match u {
        Unavailable::NoBus(e) => check(
            "systemd",
            Outcome::Warn,
            format!("systemd is not on the bus ({e}); the unit's settings were not checked"),
            None,
        ),
        Unavailable::Failed(e) => check(
            "systemd",
            Outcome::Warn,
            format!("systemd did not answer: {e}"),
            Some("name the unit with --unit ck-subc.service".into()),
        ),
        Unavailable::NotBuilt => check(
            "systemd",
            Outcome::Warn,
            "this build of the ck-cgroup library has no systemd support; the unit's settings were not checked".into(),
            Some("build the ck-cgroup crate with its `systemd` feature (the ck-cgroup binary has it)".into()),
        ),
    }
}

/// The checks of the unit's settings; `scopes`: the systemd backend, where `Delegate=` does not
/// matter.
pub(super) fn unit_checks(f: &UnitFacts, scopes: bool) -> Vec<Check> {
    vec![
        systemd_unit(f),
        if scopes {
            delegate_for_scopes(f)
        } else {
            delegate(f)
        },
        setting(f, "OOMPolicy=", f.oom_policy.as_deref(), "continue"),
        setting(f, "KillMode=", f.kill_mode.as_deref(), "mixed"),
        timeout_stop(f),
        delegate_subgroup(f),
    ]
}

/// The fix for a unit setting: a drop-in with `line`.
fn edit(f: &UnitFacts, line: &str) -> String {
    format!(
        "add a drop-in (systemctl edit {}):\n[Service]\n{line}",
        f.unit
    )
}

/// `systemd unit`: which unit, which systemd, which cgroup; always ok.
fn systemd_unit(f: &UnitFacts) -> Check {
    check(
        "systemd unit",
        Outcome::Ok,
        format!(
            "{} (systemd {}), cgroup {}",
            f.unit,
            f.version,
            f.control_group.as_deref().unwrap_or("-")
        ),
        None,
    )
}

/// `Delegate=` with the systemd backend: ok whatever it is.
fn delegate_for_scopes(f: &UnitFacts) -> Check {
    check(
        "Delegate=",
        Outcome::Ok,
        format!(
            "{}: not needed, the modules are systemd's scopes (--backend systemd)",
            match f.delegate {
                Some(true) => "yes",
                Some(false) => "no",
                None => "unknown",
            }
        ),
        None,
    )
}

/// `Delegate=`: yes, with every controller the helper uses. Where it is `no` the fix also names
/// the way out for a service that must stay undelegated: the systemd backend.
fn delegate(f: &UnitFacts) -> Check {
    let ctl = f.delegate_controllers.as_deref().unwrap_or_default();
    let ok = f.delegate == Some(true)
        && WANTED_CONTROLLERS
            .iter()
            .all(|c| ctl.iter().any(|x| x == c));
    check(
        "Delegate=",
        if ok { Outcome::Ok } else { Outcome::Fail },
        match f.delegate {
            Some(true) => format!(
                "yes, controllers: {}",
                if ctl.is_empty() {
                    "-".into()
                } else {
                    ctl.join(" ")
                }
            ),
            Some(false) => {
                "no: the service's cgroup is systemd's; modules cannot get cgroups of their own"
                    .into()
            }
            None => "unknown".into(),
        },
        (!ok).then(|| {
            let fix = edit(f, "Delegate=memory pids cpu io");
            if f.delegate == Some(false) {
                // The incident's host: delegation may be forbidden by local policy.
                format!(
                    "{fix}\n(where the service must stay undelegated: run its modules as systemd scopes, `ck-cgroup exec --backend systemd`, e.g. Environment=CK_CGROUP_BACKEND=systemd in the same drop-in instead)"
                )
            } else {
                fix
            }
        }),
    )
}

/// A string setting (`OOMPolicy=`, `KillMode=`) that must be `wanted`.
fn setting(f: &UnitFacts, name: &str, value: Option<&str>, wanted: &str) -> Check {
    let ok = value == Some(wanted);
    check(
        name,
        if ok { Outcome::Ok } else { Outcome::Fail },
        value.unwrap_or("unknown").to_string(),
        (!ok).then(|| edit(f, &format!("{name}{wanted}"))),
    )
}

/// `TimeoutStopSec=`: 35 s, as the packaged unit sets it.
fn timeout_stop(f: &UnitFacts) -> Check {
    let ok = f.timeout_stop_usec == Some(35_000_000);
    check(
        "TimeoutStopSec=",
        if ok { Outcome::Ok } else { Outcome::Fail },
        f.timeout_stop_usec
            .map_or("unknown".into(), |u| format!("{} s", u as f64 / 1e6)),
        (!ok).then(|| edit(f, "TimeoutStopSec=35")),
    )
}

/// `DelegateSubgroup=`: informational; systemd 254 has it, older ones need `init` first.
fn delegate_subgroup(f: &UnitFacts) -> Check {
    let sub = f.major().is_some_and(|v| v >= 254);
    check(
        "DelegateSubgroup=",
        Outcome::Ok,
        if sub {
            format!(
                "systemd {} has it: DelegateSubgroup=daemon puts the daemon in its leaf",
                f.version
            )
        } else {
            format!(
                "systemd {} is older than 254: the daemon runs `ck-cgroup init` before its first spawn",
                f.version
            )
        },
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::gather::Facts;
    use crate::doctor::judge::judge;
    use crate::doctor::judge::tests::{facts, names, seen, strings, unit};

    #[test]
    fn delegate_no_fails_with_both_ways_out_but_is_fine_for_the_systemd_backend() {
        // The incident's unit: systemd 252, nothing as packaged.
        let f = UnitFacts {
            version: "252.38-1~deb12u1".into(),
            delegate: Some(false),
            delegate_controllers: strings(""),
            oom_policy: Some("stop".into()),
            kill_mode: Some("control-group".into()),
            timeout_stop_usec: Some(90_000_000),
            ..unit()
        };
        let failed = |c: &[Check]| -> Vec<String> {
            let fail = c.iter().filter(|c| c.outcome == Outcome::Fail);
            fail.map(|c| format!("{} {}", c.name, c.detail)).collect()
        };
        let c = unit_checks(&f, false);
        assert_eq!(
            failed(&c),
            [
                "Delegate= no: the service's cgroup is systemd's; modules cannot get cgroups of their own",
                "OOMPolicy= stop",
                "KillMode= control-group",
                "TimeoutStopSec= 90 s"
            ]
        );
        let fix = c[1].fix.as_deref().unwrap();
        assert!(fix.starts_with("add a drop-in (systemctl edit ck-subc.service):\n[Service]\nDelegate=memory pids cpu io\n(where"));
        assert!(fix.contains("`ck-cgroup exec --backend systemd`"), "{fix}");
        assert!(
            c[5].detail
                .contains("is older than 254: the daemon runs `ck-cgroup init`")
        );
        // With the systemd backend, Delegate=no is fine; the rest still fails.
        let c = unit_checks(&f, true);
        assert_eq!(failed(&c)[..], failed(&unit_checks(&f, false))[1..]);
        assert_eq!(
            seen(&c[1]),
            "ok: no: not needed, the modules are systemd's scopes (--backend systemd)"
        );
    }

    #[test]
    fn without_systemd_the_unit_is_one_visible_warning() {
        let checks = judge(&Facts {
            unit: Err(Unavailable::NoBus("no socket".into())),
            ..facts()
        });
        let last = checks.last().unwrap();
        assert_eq!(last.name, "systemd");
        assert_eq!(
            seen(last),
            "warn: systemd is not on the bus (no socket); the unit's settings were not checked"
        );
        assert!(!names(&checks).contains(&"OOMPolicy="));
        assert_eq!(
            seen(&systemd_unavailable(&Unavailable::Failed(
                "no unit x is loaded".into()
            ))),
            "warn: systemd did not answer: no unit x is loaded\nfix: name the unit with --unit ck-subc.service"
        );
    }

    #[test]
    fn each_unit_setting_passes_as_packaged_and_fails_with_its_drop_in() {
        let c = unit_checks(&unit(), false);
        assert_eq!(
            seen(&c[0]),
            "ok: ck-subc.service (systemd 254.5-1), cgroup /system.slice/ck-subc.service"
        );
        assert_eq!(seen(&c[1]), "ok: yes, controllers: cpu io memory pids");
        assert_eq!(seen(&c[2]), "ok: continue");
        assert_eq!(seen(&c[3]), "ok: mixed");
        assert_eq!(seen(&c[4]), "ok: 35 s");
        assert_eq!(
            seen(&c[5]),
            "ok: systemd 254.5-1 has it: DelegateSubgroup=daemon puts the daemon in its leaf"
        );
        let drop_in = |line: &str| {
            format!("add a drop-in (systemctl edit ck-subc.service):\n[Service]\n{line}")
        };
        let unknown = UnitFacts {
            delegate: None,
            delegate_controllers: None,
            oom_policy: None,
            kill_mode: None,
            timeout_stop_usec: None,
            control_group: None,
            ..unit()
        };
        let c = unit_checks(&unknown, false);
        assert!(c[0].detail.ends_with("cgroup -"), "{}", c[0].detail);
        let want = [
            ("Delegate=", drop_in("Delegate=memory pids cpu io")),
            ("OOMPolicy=", drop_in("OOMPolicy=continue")),
            ("KillMode=", drop_in("KillMode=mixed")),
            ("TimeoutStopSec=", drop_in("TimeoutStopSec=35")),
        ];
        for (c, (name, fix)) in c[1..5].iter().zip(want) {
            assert_eq!(c.name, name);
            assert_eq!(seen(c), format!("fail: unknown\nfix: {fix}"));
        }
        // Delegated, but not every controller: the fix is the drop-in alone.
        let short = UnitFacts {
            delegate_controllers: strings("memory pids"),
            ..unit()
        };
        let d = delegate(&short);
        assert_eq!(
            seen(&d),
            format!(
                "fail: yes, controllers: memory pids\nfix: {}",
                drop_in("Delegate=memory pids cpu io")
            )
        );
        assert_eq!(
            delegate(&UnitFacts {
                delegate_controllers: strings(""),
                ..unit()
            })
            .detail,
            "yes, controllers: -"
        );
        assert_eq!(
            delegate_for_scopes(&unknown).detail,
            "unknown: not needed, the modules are systemd's scopes (--backend systemd)"
        );
    }
}
