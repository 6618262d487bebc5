//! Every type the CLI prints as JSON parses back into itself: serialize, deserialize, compare.

use std::borrow::Cow;
use std::fmt::Debug;
use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cgroup::parse::Limit;
use crate::id::{DaemonName, DirName, ModuleId};
use crate::layout::{Layout, ModuleRef};
use crate::limits::{Applied, LimitReport, Skipped};
use crate::module::{
    CreateReport, InitReport, ModuleEntry, PlaceReport, PruneAction, PruneEntry, RemoveReport,
    StopReport,
};
use crate::policy::Difference;
use crate::sandbox::{SweepFailure, SweepReport, Swept};
use crate::stop::{FellThrough, KillMethod, Method, TreeStop};
use crate::telemetry::watch::WatchEvent;
use crate::telemetry::{Figure, LimitFigures, MemoryEvents, ModuleStatus};

/// `v` to JSON and back is `v`, and the JSON of the copy is the same text.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(v: &T) {
    let text = serde_json::to_string(v).unwrap();
    let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(&back, v, "{text}");
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
}

use crate::layout::ModuleName;

fn id(s: &str) -> ModuleId {
    ModuleId::new(s).unwrap()
}

fn name(s: &str) -> DirName {
    DirName::new(s).unwrap()
}

fn stop_report() -> StopReport {
    StopReport {
        module: ModuleName::parse("web-1").unwrap(),
        layout: Some(Layout::Ck),
        path: Some(PathBuf::from("/sys/fs/cgroup/x.service/subc-modules/web-1")),
        already_gone: false,
        signal: Some("SIGTERM".into()),
        grace_ms: 250.0,
        tree: TreeStop {
            signalled: 3,
            thawed: vec![".".into()],
            left_after_grace: Some(1),
            method: Some(KillMethod::Freeze),
            fell_through: vec![FellThrough {
                method: KillMethod::CgroupKill,
                reason: "cgroup.kill: ENOENT (No such file or directory)".into(),
            }],
            killed: 1,
            waited_ms: 12.5,
            empty: false,
            outside: vec![4711],
        },
        removed: false,
        restored: vec!["subc-modules/web-1 0->755".into()],
        error: Some("still holds 1 process".into()),
        kills: crate::cause::counters::KillCounters {
            oom_kill: Some(0),
            oom_group_kill: None,
            oomd_ooms: Some(1),
            oomd_kill: Some(3),
            ck_stops: Some(1),
        },
        memory_left: crate::cause::memory_left::MemoryLeft {
            shmem: Some(1 << 20),
            file: None,
        },
        marks_unconfirmed: vec![crate::cause::death_cause::UnconfirmedMark::oomd_unkilled(
            &[4711],
        )],
    }
}

#[test]
fn names_and_limits_round_trip() {
    round_trip(&id("web-1"));
    round_trip(&name("m-web_2d1_3"));
    round_trip(&Limit::Max);
    round_trip(&Limit::Value(1 << 30));
    round_trip(&ModuleRef::ck(&id("a")));
    round_trip(&DaemonName {
        module: name("web"),
        swap: true,
        launch: "7".into(),
    });
    for l in [Layout::Ck, Layout::Daemon, Layout::Systemd] {
        round_trip(&l);
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            format!("\"{}\"", l.name())
        );
    }
    for m in [
        Method::Auto,
        Method::CgroupKill,
        Method::Freeze,
        Method::Signal,
    ] {
        round_trip(&m);
    }
}

#[test]
fn invalid_names_do_not_deserialize() {
    for bad in ["\"../x\"", "\"\"", "\"-a\"", "\"cgroup.procs\""] {
        assert!(serde_json::from_str::<ModuleId>(bad).is_err(), "{bad}");
    }
    for bad in ["\"..\"", "\"a/b\"", "\"\""] {
        assert!(serde_json::from_str::<DirName>(bad).is_err(), "{bad}");
    }
    assert!(serde_json::from_str::<Limit>("\"min\"").is_err());
    assert!(serde_json::from_str::<Limit>("-1").is_err());
}

#[test]
fn module_reports_round_trip() {
    round_trip(&InitReport {
        root: "/sys/fs/cgroup/x.service".into(),
        created: vec!["daemon".into(), "subc-modules".into()],
        moved: vec![12, 13],
        available: vec!["memory".into(), "pids".into()],
        enabled: vec!["memory".into()],
        missing: vec!["io".into()],
        missing_held_by_v1: vec!["io".into()],
        oomd_daemon: crate::cgroup::oomd::OomdMark {
            value: Some(crate::cgroup::oomd::OomdPreference::Omit),
            source: crate::cgroup::oomd::PREFERENCE_SOURCE.into(),
            error: None,
        },
    });
    round_trip(&crate::cause::counters::KillCounters {
        oom_kill: Some(0),
        oom_group_kill: None,
        oomd_ooms: Some(2),
        oomd_kill: Some(5),
        ck_stops: None,
    });
    round_trip(&CreateReport {
        module: id("a"),
        path: "/r/subc-modules/a".into(),
        created: true,
    });
    round_trip(&PlaceReport {
        module: id("a"),
        path: "/r/subc-modules/a".into(),
        placed: vec![1234],
    });
    round_trip(&ModuleEntry {
        name: name("a"),
        module: None,
        layout: Layout::Daemon,
        path: "daemon/subc-modules/a".into(),
        populated: Some(true),
        frozen: None,
        procs: Some(2),
    });
    round_trip(&RemoveReport {
        module: ModuleName::parse("a").unwrap(),
        path: None,
        removed: false,
        already_gone: true,
    });
    round_trip(&stop_report());
    for action in [
        PruneAction::Kept,
        PruneAction::Removed,
        PruneAction::Killed,
        PruneAction::SkippedPopulated,
        PruneAction::WouldRemove,
        PruneAction::WouldKill,
        PruneAction::Failed,
    ] {
        round_trip(&PruneEntry {
            name: name("web-1"),
            layout: Layout::Ck,
            procs: None,
            action,
            stop: Some(stop_report()),
            error: Some("x".into()),
        });
    }
}

#[test]
fn limit_and_policy_reports_round_trip() {
    round_trip(&LimitReport {
        module: id("a"),
        applied: vec![Applied {
            file: Cow::Borrowed("memory.max"),
            value: "max".into(),
        }],
        skipped: vec![Skipped {
            file: "pids.max".into(),
            controller: "pids".into(),
            reason: "not enabled".into(),
        }],
    });
    round_trip(&Difference {
        module: "a".into(),
        file: "memory.high".into(),
        was: None,
        now: "1073741824".into(),
        written: false,
        skipped: Some("dry run".into()),
    });
    round_trip(&Difference {
        module: "a".into(),
        file: "memory.high".into(),
        was: Some("max".into()),
        now: "1".into(),
        written: true,
        skipped: None,
    });
}

#[test]
fn telemetry_round_trips() {
    let u = |v: Option<u64>| Figure {
        value: v,
        source: "memory.current".to_string(),
    };
    let l = |v: Option<Limit>| Figure {
        value: v,
        source: "memory.max".to_string(),
    };
    round_trip(&ModuleStatus {
        name: name("a"),
        module: Some(name("a")),
        layout: Layout::Ck,
        path: "subc-modules/a".into(),
        populated: Figure {
            value: Some(true),
            source: "cgroup.events".into(),
        },
        frozen: Figure {
            value: None,
            source: "cgroup.events".into(),
        },
        procs: Figure {
            value: Some(3),
            source: "cgroup.procs".into(),
        },
        memory_current: u(Some(4096)),
        memory_peak: u(None),
        memory_swap_current: u(Some(0)),
        memory_anon: u(Some(2048)),
        memory_file: u(None),
        memory_shmem: u(Some(0)),
        memory_zswapped: u(Some(8192)),
        memory_zswap: u(None),
        memory_events: Figure {
            value: Some(MemoryEvents {
                oom_kill: Some(1),
                ..MemoryEvents::default()
            }),
            source: "memory.events".into(),
        },
        pids_current: u(Some(3)),
        cpu_usage_usec: u(Some(123_456)),
        memory_pressure_avg10: Figure {
            value: Some(0.5),
            source: "memory.pressure".into(),
        },
        cpu_pressure_avg10: Figure {
            value: Some(12.25),
            source: "cpu.pressure".into(),
        },
        io_pressure_avg10: Figure {
            value: None,
            source: "io.pressure".into(),
        },
        memory_pressure_stalled_usec: Figure {
            value: Some(crate::telemetry::Stalled {
                some: Some(123_456),
                full: Some(4_567),
            }),
            source: "memory.pressure total".into(),
        },
        cpu_pressure_stalled_usec: Figure {
            value: Some(crate::telemetry::Stalled {
                some: Some(9),
                full: None,
            }),
            source: "cpu.pressure total".into(),
        },
        io_pressure_stalled_usec: Figure {
            value: None,
            source: "io.pressure total".into(),
        },
        limits: LimitFigures {
            memory_high: l(Some(Limit::Max)),
            memory_max: l(Some(Limit::Value(1 << 30))),
            memory_swap_max: l(None),
            pids_max: l(Some(Limit::Value(100))),
            cpu_weight: l(Some(Limit::Value(100))),
            memory_oom_group: l(Some(Limit::Value(1))),
        },
        oomd_preference: Figure {
            value: Some(crate::cgroup::oomd::OomdPreference::Avoid),
            source: crate::cgroup::oomd::PREFERENCE_SOURCE.into(),
        },
        oomd_ooms: Figure {
            value: Some(1),
            source: "user.oomd_ooms xattr".into(),
        },
        oomd_kill: Figure {
            value: None,
            source: "user.oomd_kill xattr".into(),
        },
        ck_stops: Figure {
            value: Some(2),
            source: "user.ck_cgroup_stops xattr".into(),
        },
        gpu_memory: crate::gpu::GpuMemory {
            value: Some(2 << 30),
            source: crate::gpu::nvidia_smi::SOURCE.into(),
            reason: None,
            devices: vec![crate::gpu::GpuDevice {
                device: "0000:3b:00.0".into(),
                driver: "nvidia".into(),
                bytes: 2 << 30,
                source: crate::gpu::nvidia_smi::SOURCE.into(),
            }],
        },
        cold_memory: crate::telemetry::cold::ColdMemory {
            value: Some(200 << 20),
            file: Some(4096),
            source: crate::telemetry::cold::SOURCE.into(),
            window_ms: 20_000,
            untouched_ms: Some(21_000),
            aged_ms_ago: Some(1_000),
            aging_us: Some(40_000),
            reason: None,
        },
    });
    // An events_lost of all modules: no one directory.
    round_trip(&WatchEvent {
        ts: "2026-01-01T00:00:00.000Z".into(),
        module: None,
        layout: None,
        scope: Some("all modules".into()),
        event: "events_lost".into(),
        value: None,
        previous: None,
        threshold: None,
        source: None,
        resource: None,
        kind: None,
        threshold_us: None,
        window_us: None,
        avg10: None,
        error: Some("the inotify queue overflowed".into()),
        killed_by: None,
        inferred: None,
        oom_cause: None,
        oom_cause_unknown: None,
    });
    round_trip(&WatchEvent {
        ts: "2026-01-01T00:00:00.000Z".into(),
        module: Some(name("a")),
        layout: Some(Layout::Ck),
        scope: None,
        event: "memory_oom_kill".into(),
        value: Some(2),
        previous: Some(1),
        threshold: None,
        source: Some("memory.events".into()),
        resource: None,
        kind: None,
        threshold_us: None,
        window_us: None,
        avg10: None,
        error: None,
        killed_by: None,
        inferred: None,
        oom_cause: Some(crate::cause::oom_cause::OomCause::Ancestor {
            cgroup: "/sys/fs/cgroup/x.service/subc-modules".into(),
        }),
        oom_cause_unknown: None,
    });
    round_trip(&WatchEvent {
        ts: "2026-01-01T00:00:00.000Z".into(),
        module: Some(name("a")),
        layout: Some(Layout::Daemon),
        scope: None,
        event: "emptied".into(),
        value: None,
        previous: None,
        threshold: None,
        source: None,
        resource: None,
        kind: None,
        threshold_us: None,
        window_us: None,
        avg10: None,
        error: None,
        killed_by: Some(vec!["systemd-oomd".into()]),
        inferred: None,
        oom_cause: None,
        oom_cause_unknown: Some(
            "the module's memory.events could not be read (no memory controller)".into(),
        ),
    });
    round_trip(&WatchEvent {
        ts: "2026-01-01T00:00:00.000Z".into(),
        module: Some(name("a")),
        layout: Some(Layout::Ck),
        scope: None,
        event: "emptied".into(),
        value: None,
        previous: None,
        threshold: None,
        source: None,
        resource: None,
        kind: None,
        threshold_us: None,
        window_us: None,
        avg10: None,
        error: None,
        killed_by: Some(Vec::new()),
        inferred: Some(true),
        oom_cause: None,
        oom_cause_unknown: None,
    });
    round_trip(&WatchEvent {
        ts: "2026-01-01T00:00:00.000Z".into(),
        module: Some(name("a")),
        layout: Some(Layout::Ck),
        scope: None,
        event: "pressure".into(),
        value: None,
        previous: None,
        threshold: None,
        source: Some("cpu.pressure".into()),
        resource: Some("cpu".into()),
        kind: Some("some".into()),
        threshold_us: Some(100_000),
        window_us: Some(1_000_000),
        avg10: Some(42.5),
        error: None,
        killed_by: None,
        inferred: None,
        oom_cause: None,
        oom_cause_unknown: None,
    });
}

#[test]
fn sandbox_reports_round_trip() {
    round_trip(&SweepReport {
        parent: "/sys/fs/cgroup/user.slice".into(),
        removed: vec![Swept {
            sandbox: "/p/ck-sandbox-1-locked".into(),
            killed: None,
        }],
        kept: vec!["/p/ck-sandbox-2-locked".into()],
        alive: 1,
        failed: vec![SweepFailure {
            sandbox: "/p/ck-sandbox-3-locked".into(),
            error: "EBUSY".into(),
        }],
    });
}

#[cfg(feature = "systemd")]
#[test]
fn systemd_reports_round_trip() {
    use crate::backend::UnitFacts;
    use crate::backend::systemd::Entered;
    round_trip(&Entered {
        unit: "subc-module-a.scope".into(),
        slice: "module-a.slice".into(),
        cgroup: "/module.slice/module-a.slice/subc-module-a.scope".into(),
    });
    round_trip(&UnitFacts {
        version: "252".into(),
        unit: "x.service".into(),
        delegate: Some(true),
        delegate_controllers: Some(vec!["memory".into()]),
        oom_policy: None,
        kill_mode: Some("control-group".into()),
        timeout_stop_usec: Some(90_000_000),
        control_group: None,
    });
}
