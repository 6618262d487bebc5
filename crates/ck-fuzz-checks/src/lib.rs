//! What each fuzz target checks, on any input: no panic, and the properties below. Shared by the
//! cargo-fuzz targets (`fuzz/fuzz_targets/`, a workspace of its own that depends on this crate)
//! and by `tests/parsers_random.rs`, which runs the same checks over seeded random inputs under a
//! plain `cargo test` (stable, no libFuzzer). Test machinery: never published, in no build that
//! ships.

use std::path::Path;
use std::time::Duration;

use ck_cgroup::cgroup::parse::{self, Limit};
use ck_cgroup::id::{DirName, ModuleId, decode_daemon_name};
use ck_cgroup::limits::{
    LIMITS, parse_count, parse_cpu_max, parse_cpus, parse_io_max_with, parse_size, parse_weight,
};
use ck_cgroup::policy::Policy;
use ck_duration::parse_duration;

/// Kernel files (crates/ck-cgroup/src/cgroup/parse/mod.rs): every parser takes any text.
pub fn kernel_files(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let t = text.as_ref();
    let e = parse::events(t);
    let kv = parse::flat_keyed(t);
    assert_eq!(e.populated, kv.get("populated").map(|v| *v != 0));
    // At most one pid a line (linear: a quadratic check would make the fuzzer crawl).
    assert!(parse::pids(t).len() <= t.lines().count());
    for c in parse::controllers(t) {
        assert!(!c.is_empty() && !c.contains(char::is_whitespace));
    }
    let _ = parse::proc_cgroup_v2(t);
    let mounts = parse::mountinfo(t);
    assert!(parse::cgroup2_mounts(t).len() <= mounts.len());
    let _ = parse::pressure(t);
    if let Some(Limit::Value(v)) = parse::limit(t) {
        assert_eq!(parse::limit(&v.to_string()), Some(Limit::Value(v)));
    }
    let _ = parse::number(t);
    let _ = parse::proc_status_memory(t);
    let _ = parse::proc_status_tgid(t);
    if let Some(st) = parse::proc_stat(t) {
        let _ = (st.kernel_thread(), st.exited());
    }
}

/// The policy (TOML): parsed or refused as bad input (exit 2); a module table's name is an id.
pub fn policy(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Policy::parse(text, Path::new("fuzz.toml")) {
        Ok(p) => {
            for id in p.modules.keys() {
                assert!(ModuleId::new(id.as_str()).is_ok());
                let _ = p.for_module(id);
            }
        }
        Err(e) => assert_eq!(e.exit_code(), 2, "{e}"),
    }
}

/// Durations (`--grace`, `--timeout`): 0 to 24 h or an error.
pub fn durations(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(d) = parse_duration(s) {
        assert!(d <= Duration::from_secs(86_400), "{s:?}: {d:?}");
    }
}

/// Sizes and counts (limit flags and policy values): a value, `max`, or bad input.
pub fn sizes(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    for r in [parse_size(s), parse_count(s)] {
        match r {
            Ok(Limit::Max) => assert_eq!(s, "max"),
            Ok(Limit::Value(_)) => {}
            Err(e) => assert_eq!(e.exit_code(), 2, "{e}"),
        }
    }
    if let Ok(Limit::Value(v)) = parse_count(s) {
        // A count is a size in bytes too.
        assert_eq!(parse_size(&v.to_string()).ok(), Some(Limit::Value(v)));
    }
    knobs(s);
}

/// The other limits' parsers (weights, `cpu.max`, CPU lists, `io.max`): a value that reads back
/// as itself, or bad input in one line with a fix; never a panic. `io.max` device paths are not
/// resolved (no I/O in a fuzz target).
fn knobs(s: &str) {
    let refused = |e: ck_cgroup::Error| {
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(!e.to_string().contains('\n'), "{e}");
        assert!(e.hint().is_some(), "{e}");
    };
    match parse_weight(s) {
        Ok(w) => assert!((1..=10_000).contains(&w)),
        Err(e) => refused(e),
    }
    match parse_cpu_max(s) {
        Ok(c) => {
            assert!((1_000..=1_000_000).contains(&c.period));
            let again = c.to_string().replace(' ', "/");
            assert_eq!(parse_cpu_max(&again).ok(), Some(c), "{again}");
        }
        Err(e) => refused(e),
    }
    match parse_cpus(s) {
        Ok(c) => {
            assert!(!c.ranges().is_empty());
            assert_eq!(parse_cpus(&c.to_string()).ok(), Some(c.clone()));
            assert!(c.mask().len() <= 1024);
        }
        Err(e) => refused(e),
    }
    match parse_io_max_with(s, |p| Err(format!("{p}: not resolved here"))) {
        Ok(m) => {
            assert!(m.path.is_none());
            let line = m.to_string();
            let (dev, keys) = line.split_once(' ').expect("a key");
            let again = format!("{dev}:{}", keys.replace(' ', ","));
            assert_eq!(
                parse_io_max_with(&again, |_| Err(String::new())).ok(),
                Some(m),
                "{again}"
            );
        }
        Err(e) => refused(e),
    }
    // Every row's parser takes any text.
    for spec in LIMITS {
        if spec.key != "io_max" {
            let _ = (spec.parse)(s);
        }
    }
}

/// Module ids, directory names and the daemon's `m-<escaped>_<n>` names.
pub fn ids(data: &[u8]) {
    // Any bytes the kernel could hold as a name: shown, then read back as themselves.
    if let Ok(d) = DirName::from_bytes(data) {
        assert_eq!(d.to_bytes(), data);
        assert_eq!(DirName::new(&d.to_string()).ok(), Some(d));
    }
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match ModuleId::new(s) {
        Ok(id) => {
            assert!(!s.is_empty() && s.len() <= 64);
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
            // Every id is a single path component.
            assert!(DirName::new(id.as_str()).is_ok());
        }
        Err(e) => assert_eq!(e.exit_code(), 2),
    }
    if let Ok(d) = DirName::new(s) {
        let n = d.to_bytes();
        assert!(!n.contains(&b'/') && n != b"." && n != b".." && !n.is_empty());
        // The shown form is read back as the name (one rule both ways).
        assert_eq!(DirName::new(&d.to_string()).ok(), Some(d.clone()));
        if let Some(dn) = decode_daemon_name(&d) {
            assert!(dn.launch.bytes().all(|b| b.is_ascii_digit()));
        }
    }
}

/// Unit-escaped names of the systemd backend: a scope name decodes to an id or to nothing, and
/// an id's scope name decodes back to it.
pub fn unit_names(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(id) = ck_cgroup::layout::module_of_scope(s) {
        // Only the name systemd-escape gives an id is that id's scope: `kill <id>` stops the
        // scope named so, and another spelling of it would be reported as already gone.
        let id = ModuleId::new(&id).expect("an id");
        assert_eq!(ck_cgroup::layout::scope_unit(&id), s);
    }
    let _ = ck_cgroup::layout::module_id(s);
    let escaped = ck_cgroup::layout::unit_escape(s);
    assert!(
        escaped
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":_.\\-".contains(&b))
    );
    if let Ok(id) = ModuleId::new(s) {
        let scope = ck_cgroup::layout::scope_unit(&id);
        assert_eq!(
            ck_cgroup::layout::module_of_scope(&scope).as_deref(),
            Some(s),
            "{scope}"
        );
    }
}
