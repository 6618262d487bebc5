use super::*;

#[test]
fn sizes() {
    assert_eq!(parse_size("max").unwrap(), Limit::Max);
    assert_eq!(parse_size("512").unwrap(), Limit::Value(512));
    assert_eq!(parse_size("4K").unwrap(), Limit::Value(4096));
    assert_eq!(parse_size("100M").unwrap(), Limit::Value(100 << 20));
    assert_eq!(parse_size("2g").unwrap(), Limit::Value(2 << 30));
    assert_eq!(parse_size("1T").unwrap(), Limit::Value(1 << 40));
    for bad in ["", "M", "1.5G", "10X", "-1", "99999999999999999999T"] {
        assert_eq!(parse_size(bad).unwrap_err().exit_code(), 2, "{bad}");
    }
    assert_eq!(parse_count("64").unwrap(), Limit::Value(64));
    assert!(parse_count("6x").is_err());
}

#[test]
fn every_controller_is_one_init_enables() {
    use crate::layout::{OPTIONAL_CONTROLLERS, WANTED_CONTROLLERS};
    for s in LIMITS {
        assert!(
            WANTED_CONTROLLERS.contains(&s.controller)
                || OPTIONAL_CONTROLLERS.contains(&s.controller),
            "{}: {}",
            s.key,
            s.controller
        );
        assert!(
            s.file.starts_with(&format!("{}.", s.controller)),
            "{}",
            s.key
        );
    }
}

#[test]
fn the_new_knobs_write_what_the_kernel_takes() {
    let l = Limits {
        memory_low: Some(Limit::Value(256 << 20)),
        memory_min: Some(Limit::Max),
        cpu_max: Some(parse_cpu_max("50000").unwrap()),
        cpus: Some(parse_cpus("3,0-1,2").unwrap()),
        io_weight: Some(parse_weight("200").unwrap()),
        io_max: Some(parse_io_max("8:16:wbps=1M,riops=max").unwrap()),
        ..Limits::default()
    };
    assert_eq!(
        l.writes(),
        vec![
            ("memory.low", "memory", "268435456".to_string()),
            ("memory.min", "memory", "max".to_string()),
            ("cpu.max", "cpu", "50000 100000".to_string()),
            ("cpuset.cpus", "cpuset", "0-3".to_string()),
            ("io.weight", "io", "default 200".to_string()),
            ("io.max", "io", "8:16 wbps=1048576 riops=max".to_string()),
        ]
    );
    let io = spec("io_max").unwrap();
    let v = l.get("io_max").unwrap();
    // The kernel shows every key of the device; the ones asked for decide.
    assert!((io.same)(
        "8:0 rbps=max wbps=max riops=max wiops=max\n8:16 rbps=5 wbps=1048576 riops=max wiops=max\n",
        &v
    ));
    assert!(!(io.same)(
        "8:16 rbps=max wbps=max riops=max wiops=max\n",
        &v
    ));
    assert!(!(io.same)("", &v));
    let w = spec("io_weight").unwrap();
    assert!((w.same)("default 200\n8:0 50\n", &Value::Number(200)));
    assert!(!(w.same)("default 100\n", &Value::Number(200)));
    let c = spec("cpu_max").unwrap();
    assert!((c.same)("50000 100000\n", &l.get("cpu_max").unwrap()));
}

#[test]
fn the_new_knobs_become_systemd_properties() {
    let props = |key: &str, text: &str| {
        let s = spec(key).unwrap();
        (s.properties)(&(s.parse)(text).unwrap())
    };
    // CPUQuota=50% is 500000 µs per second.
    assert_eq!(
        props("cpu_max", "50000/100000"),
        vec![
            ("CPUQuotaPerSecUSec", Property::U64(500_000)),
            ("CPUQuotaPeriodUSec", Property::U64(100_000)),
        ]
    );
    assert_eq!(
        props("cpu_max", "20000/10000")[0],
        ("CPUQuotaPerSecUSec", Property::U64(2_000_000))
    );
    assert_eq!(
        props("cpu_max", "max")[0],
        ("CPUQuotaPerSecUSec", Property::U64(u64::MAX))
    );
    assert_eq!(parse_cpu_max("25000").unwrap().percent(), Some(25.0));
    assert_eq!(
        props("cpus", "0-1,9"),
        vec![("AllowedCPUs", Property::Bytes(vec![0b11, 0b10]))]
    );
    assert_eq!(
        props("io_weight", "300"),
        vec![("IOWeight", Property::U64(300))]
    );
    assert_eq!(
        props("memory_low", "1K"),
        vec![("MemoryLow", Property::U64(1024))]
    );
    assert_eq!(
        props("memory_min", "max"),
        vec![("MemoryMin", Property::U64(u64::MAX))]
    );
    assert_eq!(
        props("io_max", "8:0:rbps=1K,wiops=max"),
        vec![
            (
                "IOReadBandwidthMax",
                Property::Devices(vec![("/dev/block/8:0".into(), 1024)])
            ),
            (
                "IOWriteIOPSMax",
                Property::Devices(vec![("/dev/block/8:0".into(), u64::MAX)])
            ),
        ]
    );
    for s in LIMITS {
        let names: Vec<&str> = (s.properties)(&(s.parse)(s.example).unwrap())
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert!(!names.is_empty(), "{}", s.key);
        assert!(
            names.iter().all(|n| s.systemd.contains(n)),
            "{}: {names:?}",
            s.key
        );
    }
}

#[test]
fn the_new_parsers_refuse_bad_input_in_one_line_with_the_fix() {
    let line = |e: Error| {
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(!e.to_string().contains('\n'), "{e}");
        assert!(e.hint().is_some(), "{e}: no fix");
        e.to_string()
    };
    for bad in ["", "0", "10001", "x", "-5", "1.5"] {
        line(parse_weight(bad).unwrap_err());
    }
    for bad in [
        "",
        "999",
        "x",
        "50000/999",
        "50000/1000001",
        "max/x",
        "1/2/3",
        "50000/",
    ] {
        line(parse_cpu_max(bad).unwrap_err());
    }
    assert_eq!(parse_cpu_max("max").unwrap().to_string(), "max 100000");
    assert_eq!(parse_cpu_max("max/50000").unwrap().to_string(), "max 50000");
    assert_eq!(parse_cpu_max("1000/1000").unwrap().to_string(), "1000 1000");
    for bad in ["", ",", "1-", "-1", "3-1", "8192", "a", "1,,2", "0-99999"] {
        line(parse_cpus(bad).unwrap_err());
    }
    assert_eq!(parse_cpus("5,4, 0").unwrap().to_string(), "0,4-5");
    assert_eq!(parse_cpus("8191").unwrap().mask().len(), 1024);
    let refuse = |_: &str| Err::<(u32, u32), _>("no stat here".to_string());
    for bad in [
        "",
        "8:0",
        "8:0:",
        "8:0:rbps",
        "8:0:xbps=1",
        "8:0:rbps=1X",
        "8:0:rbps=1,rbps=2",
        "sda:rbps=1",
        "8:x:rbps=1",
        "8:0:riops=1K",
        "/dev/nope:rbps=1",
        ":rbps=1",
    ] {
        let e = line(parse_io_max_with(bad, refuse).unwrap_err());
        assert!(e.starts_with("invalid io max"), "{e}");
    }
    let m = parse_io_max_with("/dev/disk/by-path/pci-0:1:wbps=2K", |p| {
        assert_eq!(p, "/dev/disk/by-path/pci-0:1");
        Ok((259, 1))
    })
    .unwrap();
    assert_eq!(m.to_string(), "259:1 wbps=2048");
    assert_eq!(m.device_path(), "/dev/disk/by-path/pci-0:1");
    // A path that is not a block device, resolved for real.
    let e = line(parse_io_max("/dev/null:rbps=1").unwrap_err());
    assert!(e.contains("\"/dev/null\" is not a block device"), "{e}");
    let e = line(parse_io_max("/nonexistent/sdz:rbps=1").unwrap_err());
    assert!(e.contains("/nonexistent/sdz"), "{e}");
    line(parse_bool("yes").unwrap_err());
}

#[test]
fn writes_in_order() {
    let l = Limits {
        memory_max: Some(Limit::Value(1 << 20)),
        pids_max: Some(Limit::Max),
        oom_group: Some(false),
        ..Limits::default()
    };
    assert_eq!(
        l.writes(),
        vec![
            ("memory.max", "memory", "1048576".to_string()),
            ("pids.max", "pids", "max".to_string()),
            ("memory.oom.group", "memory", "0".to_string()),
        ]
    );
    assert!(Limits::default().is_empty());
}

fn on(controllers: &[&str]) -> Vec<String> {
    controllers.iter().map(|c| c.to_string()).collect()
}

#[test]
fn a_module_made_where_memory_is_on_gets_oom_group_1() {
    let all = on(&["cpu", "io", "memory", "pids"]);
    // No limits (create, exec and run without flags, Root::spawn, place).
    assert_eq!(
        creation_limits(&all, &Limits::default()).writes(),
        vec![("memory.oom.group", "memory", "1".to_string())]
    );
    // Limits without an oom_group: the default comes last, after them.
    let asked = Limits {
        memory_max: Some(Limit::Value(32 << 20)),
        ..Limits::default()
    };
    assert_eq!(
        creation_limits(&all, &asked).writes(),
        vec![
            ("memory.max", "memory", "33554432".to_string()),
            ("memory.oom.group", "memory", "1".to_string()),
        ]
    );
    // Memory alone is enough.
    assert_eq!(
        creation_limits(&on(&["memory"]), &Limits::default()).oom_group,
        Some(true)
    );
}

#[test]
fn no_oom_group_and_the_policy_win_over_the_default() {
    let all = on(&["cpu", "io", "memory", "pids"]);
    for asked in [Some(false), Some(true)] {
        let l = Limits {
            oom_group: asked,
            ..Limits::default()
        };
        assert_eq!(creation_limits(&all, &l), l.clone(), "{asked:?}");
    }
}

#[test]
fn without_the_memory_controller_nothing_is_added() {
    for enabled in [on(&[]), on(&["pids", "cpu", "io"])] {
        assert_eq!(
            creation_limits(&enabled, &Limits::default()),
            Limits::default(),
            "{enabled:?}"
        );
        // Nothing to write, so nothing to check and nothing that can fail.
        let (ok, skipped) = sort_writes(
            &enabled,
            std::path::Path::new("/r"),
            &Limits::default(),
            false,
        )
        .unwrap();
        assert!(ok.is_empty() && skipped.is_empty());
    }
}

/// Found by the `sizes` fuzz target: a device path with a newline made `--io-max`'s refusal
/// two lines (the resolver's message held the path as it was).
#[test]
fn io_max_refusal_of_a_device_path_with_a_newline_is_one_line() {
    let e = parse_io_max_with("/m\n5:\n5:rbps=1", |p| Err(format!("{p}: not here"))).unwrap_err();
    assert!(!e.to_string().contains('\n'), "{e}");
    let e = parse_io_max("/no\nsuch:rbps=1").unwrap_err();
    assert!(!e.to_string().contains('\n'), "{e}");
}
