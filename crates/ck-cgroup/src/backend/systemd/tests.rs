//! The systemd backend's host tests: unit names, scope properties and their D-Bus types, and
//! the refusals a `Scopes` makes before it connects (nothing here needs systemd).

use super::*;
use crate::cgroup::parse::Limit;
use crate::layout::unit_escape;
use zbus::Variant;

#[test]
fn a_scopes_handle_refuses_bad_input_before_it_connects() {
    // Whatever the host (systemd or not), these never reach a bus: the handle stays
    // unconnected, as the CLI's "refused before systemd is asked" promises.
    let scopes = Scopes::new(Bus::System);
    let name = |s: &str| ModuleName::parse(s).unwrap();
    let forced = StopOptions {
        method: crate::stop::Method::Freeze,
        ..StopOptions::default()
    };
    for e in [
        scopes.stop(&name("a"), &forced).unwrap_err(),
        scopes.prune(false, true, &[], &forced).unwrap_err(),
    ] {
        assert!(
            e.message()
                .starts_with("--method cannot be chosen with --backend systemd"),
            "{e}"
        );
    }
    // A directory's name that is no module id: no scope is named so.
    let bad = [name("memory.evil")];
    for e in [
        scopes.stop(&bad[0], &StopOptions::default()).unwrap_err(),
        scopes.status(&bad).unwrap_err(),
        scopes
            .processes(&bad, &crate::gpu::GpuProbe::default())
            .unwrap_err(),
    ] {
        // Not "cannot reach the system manager": the id was refused first.
        assert_ne!(e.kind(), crate::error::ErrorKind::SystemdUnavailable, "{e}");
        assert!(e.message().contains("memory.evil"), "{e}");
    }
    // `init -- DAEMON`: the daemon stays in its unit's cgroup; nothing to ask systemd.
    let oomd = crate::backend::Backend::Systemd(Bus::System)
        .enter_daemon(crate::cgroup::oomd::OomdPreference::Omit);
    assert!(matches!(oomd, Ok(None)), "{oomd:?}");
    assert!(
        scopes.manager.get().is_none(),
        "a refusal connected to the manager"
    );
}

#[test]
fn names_round_trip() {
    for id in ["a", "web-1", "m_2", "A-b-C"] {
        let id = ModuleId::new(id).unwrap();
        let scope = scope_unit(&id);
        assert_eq!(
            module_of_scope(&scope).as_deref(),
            Some(id.as_str()),
            "{scope}"
        );
    }
    let id = ModuleId::new("web-1").unwrap();
    assert_eq!(scope_unit(&id), "subc-module-web\\x2d1.scope");
    assert_eq!(slice_unit(&id), "module-web\\x2d1.slice");
}

#[test]
fn escape_matches_systemd_escape() {
    // Values from `systemd-escape` (systemd 252).
    assert_eq!(unit_escape("a-b"), "a\\x2db");
    assert_eq!(unit_escape(".x"), "\\x2ex");
    assert_eq!(unit_escape("a/b c"), "a-b\\x20c");
    assert_eq!(unit_escape("ok_1:2.3"), "ok_1:2.3");
}

#[test]
fn other_names_are_not_modules() {
    for name in [
        "session-1.scope",
        "subc-module-.scope",
        "subc-module-a.service",
        "subc-module-..scope",
        "subc-module-\\x2fa.scope",
        "subc-module-\\xZZ.scope",
    ] {
        assert_eq!(module_of_scope(name), None, "{name}");
    }
}

#[test]
fn module_id_takes_an_id_or_a_scope_name() {
    assert_eq!(module_id("a").unwrap().as_str(), "a");
    assert_eq!(
        module_id("subc-module-x\\x2dy.scope").unwrap().as_str(),
        "x-y"
    );
    assert!(module_id("../x").is_err());
}

#[test]
fn scope_properties() {
    let id = ModuleId::new("a").unwrap();
    let limits = Limits {
        memory_max: Some(Limit::Value(64 << 20)),
        pids_max: Some(Limit::Max),
        cpu_weight: Some(50),
        oom_group: Some(false),
        ..Limits::default()
    };
    let mut spec = ScopeSpec::module(&id, 42, &limits);
    spec.part_of = Some("ck-subc.service".into());
    let p = spec.properties();
    let names: Vec<&str> = p.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "Description",
            "PIDs",
            "CollectMode",
            "Slice",
            "PartOf",
            "Before",
            "TimeoutStopUSec",
            "MemoryMax",
            "TasksMax",
            "CPUWeight",
            "OOMPolicy"
        ]
    );
    let get = |n: &str| &p.iter().find(|(k, _)| *k == n).unwrap().1;
    assert_eq!(get("MemoryMax"), &Variant::from(64u64 << 20));
    assert_eq!(get("TasksMax"), &Variant::from(u64::MAX));
    assert_eq!(get("Slice"), &Variant::from("module-a.slice"));
    assert_eq!(get("PIDs"), &Variant::from(vec![42u32]));
    assert_eq!(get("OOMPolicy"), &Variant::from("continue"));
}

#[test]
fn the_new_knobs_have_the_d_bus_types_systemd_takes() {
    let id = ModuleId::new("a").unwrap();
    let limits = Limits {
        memory_low: Some(Limit::Value(1 << 20)),
        cpu_max: Some(crate::limits::parse_cpu_max("50000").unwrap()),
        cpus: Some(crate::limits::parse_cpus("0-1").unwrap()),
        io_weight: Some(200),
        io_max: Some(crate::limits::parse_io_max("8:0:rbps=1K").unwrap()),
        ..Limits::default()
    };
    let spec = ScopeSpec::module(&id, 42, &limits);
    let p = spec.properties();
    let sig = |n: &str| {
        p.iter()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.value_signature().to_string())
            .unwrap_or_else(|| panic!("no {n}"))
    };
    assert_eq!(sig("MemoryLow"), "t");
    assert_eq!(sig("CPUQuotaPerSecUSec"), "t");
    assert_eq!(sig("CPUQuotaPeriodUSec"), "t");
    assert_eq!(sig("AllowedCPUs"), "ay");
    assert_eq!(sig("IOWeight"), "t");
    assert_eq!(sig("IOReadBandwidthMax"), "a(st)");
}
