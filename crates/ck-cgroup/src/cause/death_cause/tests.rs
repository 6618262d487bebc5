//! The death cause's tests: each cause from what rose, and each mark believed only where the
//! death agrees with it.

use super::*;

const KILL: Option<i32> = Some(9);

/// Counters where everything could be read and nothing has happened yet.
fn quiet() -> DeathCounters {
    DeathCounters {
        kills: KillCounters {
            oom_kill: Some(0),
            oom_group_kill: Some(0),
            oomd_ooms: Some(0),
            oomd_kill: Some(0),
            ck_stops: Some(0),
        },
        oom: OomCounters {
            module_oom: Some(0),
            module_oom_kill: Some(0),
            ancestors: vec![("/r/subc-modules".into(), Some(0)), ("/r".into(), Some(0))],
        },
        oomd_above: vec![("/r/subc-modules".into(), Some(0)), ("/r".into(), Some(0))],
    }
}

#[test]
fn each_cause_from_what_rose() {
    let b = quiet();
    assert_eq!(cause(Some(3), None, &b, &b), Cause::Exited { code: 3 });
    assert_eq!(
        cause(None, Some(11), &b, &b),
        Cause::Signal {
            signal: "SIGSEGV".into()
        }
    );
    assert_eq!(
        cause(None, KILL, &b, &b),
        Cause::Signal {
            signal: "SIGKILL".into()
        }
    );
    let mut n = quiet();
    n.kills.ck_stops = Some(1);
    // A stop of another process's, where the death agrees: the stop's signal, SIGKILL, or
    // a clean exit of a process that caught the signal.
    assert_eq!(cause(None, Some(15), &b, &n), Cause::Stopped);
    assert_eq!(cause(None, KILL, &b, &n), Cause::Stopped);
    assert_eq!(cause(Some(0), None, &b, &n), Cause::Stopped);
    let mut n = quiet();
    n.oom.module_oom_kill = Some(1);
    n.oom.ancestors[1].1 = Some(1);
    assert_eq!(
        cause(None, KILL, &b, &n),
        Cause::KernelOom {
            limit: OomCause::Ancestor {
                cgroup: "/r".into()
            }
        }
    );
    let mut n = quiet();
    n.kills.oomd_ooms = Some(1);
    assert_eq!(cause(None, KILL, &b, &n), Cause::Oomd { ancestor: None });
    let mut n = quiet();
    n.oomd_above[1].1 = Some(2);
    assert_eq!(
        cause(None, KILL, &b, &n),
        Cause::Oomd {
            ancestor: Some("/r".into())
        }
    );
}

#[test]
fn a_mark_the_death_disagrees_with_is_unconfirmed() {
    let b = quiet();
    let none = &mut |_: &str| None;
    // The module raised its own stop mark, then crashed or exited with a code: its fault.
    let mut n = quiet();
    n.kills.ck_stops = Some(1);
    for (code, sig, want) in [
        (Some(3), None, Cause::Exited { code: 3 }),
        (Some(143), None, Cause::Exited { code: 143 }),
        (
            None,
            Some(11),
            Cause::Signal {
                signal: "SIGSEGV".into(),
            },
        ),
        (
            None,
            Some(6),
            Cause::Signal {
                signal: "SIGABRT".into(),
            },
        ),
    ] {
        let v = judge(code, sig, &b, &n, false, none);
        assert_eq!(v.cause, want);
        assert_eq!(v.cause.charged(), Some(true));
        assert_eq!(v.unconfirmed.len(), 1, "{v:?}");
        assert_eq!(v.unconfirmed[0].mark, "user.ck_cgroup_stops");
        assert_eq!(v.unconfirmed[0].on, None);
    }
    // A stop of this process's own is known, however the process then ended.
    let v = judge(Some(4), None, &b, &b.clone(), true, none);
    assert_eq!((v.cause, v.unconfirmed), (Cause::Stopped, vec![]));
    // An ancestor's oomd mark while a process under it that is older than the spawn lives
    // on: no kill of the whole happened, so a SIGKILL is the module's own.
    let mut n = quiet();
    n.oomd_above[0].1 = Some(1);
    let mut asked = Vec::new();
    let mut survivor = |p: &str| {
        asked.push(p.to_string());
        Some(4242)
    };
    let v = judge(None, KILL, &b, &n, false, &mut survivor);
    assert_eq!(
        v.cause,
        Cause::Signal {
            signal: "SIGKILL".into()
        }
    );
    assert_eq!(asked, ["/r/subc-modules"]);
    assert_eq!(v.unconfirmed.len(), 1, "{v:?}");
    assert_eq!(v.unconfirmed[0].on.as_deref(), Some("/r/subc-modules"));
    assert!(v.unconfirmed[0].why.contains("4242"), "{v:?}");
    // With no survivor it is believed.
    let v = judge(None, KILL, &b, &n, false, none);
    assert_eq!(
        v.cause,
        Cause::Oomd {
            ancestor: Some("/r/subc-modules".into())
        }
    );
    // The module's own oomd mark with a death systemd-oomd never causes.
    let mut n = quiet();
    n.kills.oomd_ooms = Some(1);
    let v = judge(Some(1), None, &b, &n, false, none);
    assert_eq!(v.cause, Cause::Exited { code: 1 });
    assert_eq!(v.unconfirmed[0].mark, "user.oomd_ooms");
}

#[test]
fn an_earlier_death_in_a_reused_directory_is_not_this_ones() {
    // The directory's counters already show a kill and a stop from before this spawn.
    let mut b = quiet();
    b.kills.ck_stops = Some(4);
    b.kills.oomd_ooms = Some(1);
    b.oom.module_oom_kill = Some(2);
    b.oom.module_oom = Some(2);
    assert_eq!(
        cause(None, KILL, &b, &b.clone()),
        Cause::Signal {
            signal: "SIGKILL".into()
        }
    );
}

#[test]
fn unknown_is_never_read_as_not_oom() {
    // This host: no memory controller, so no memory.events; the marks read.
    let mut b = quiet();
    b.oom = OomCounters::default();
    let c = cause(None, KILL, &b, &b.clone());
    let Cause::Unknown { why } = &c else {
        panic!("{c:?}");
    };
    assert!(why.contains("memory.events"), "{why}");
    assert_eq!(c.charged(), None);
    // An ancestor's mark that could not be read.
    let mut b = quiet();
    b.oomd_above[0].1 = None;
    let c = cause(None, KILL, &b, &b.clone());
    assert!(
        matches!(&c, Cause::Unknown { why } if why.contains("/r/subc-modules")),
        "{c:?}"
    );
    // What is known still decides: a mark that rose where the memory files are absent.
    let mut b = quiet();
    b.oom = OomCounters::default();
    let mut n = b.clone();
    n.oomd_above[0].1 = Some(1);
    assert_eq!(
        cause(None, KILL, &b, &n),
        Cause::Oomd {
            ancestor: Some("/r/subc-modules".into())
        }
    );
}

#[test]
fn charged_only_for_the_modules_own_fault() {
    let yes = [
        Cause::Exited { code: 1 },
        Cause::Signal {
            signal: "SIGSEGV".into(),
        },
        Cause::KernelOom {
            limit: OomCause::Module,
        },
        Cause::Oomd { ancestor: None },
    ];
    let no = [
        Cause::Exited { code: 0 },
        Cause::KernelOom {
            limit: OomCause::Machine,
        },
        Cause::KernelOom {
            limit: OomCause::Ancestor {
                cgroup: "/r".into(),
            },
        },
        Cause::Oomd {
            ancestor: Some("/r".into()),
        },
        Cause::Stopped,
    ];
    for c in yes {
        assert_eq!(c.charged(), Some(true), "{c:?}");
    }
    for c in no {
        assert_eq!(c.charged(), Some(false), "{c:?}");
    }
}

#[test]
fn signal_names() {
    assert_eq!(signal_name(9), "SIGKILL");
    assert_eq!(signal_name(1), "SIGHUP");
    assert_eq!(signal_name(31), "SIGSYS");
    assert_eq!(signal_name(0), "signal 0");
    assert_eq!(signal_name(40), "signal 40");
}
