//! The human lines of systemd-oomd: `init`'s mark of `daemon/` (or the one line saying it could
//! not be set) and who killed a module (`kill`, `run`).

use super::format::plural;
use ck_cgroup::ModuleName;

/// `init`'s line for `daemon/`'s systemd-oomd mark, as read back.
pub fn oomd_mark_line(m: &ck_cgroup::cgroup::oomd::OomdMark) -> String {
    use ck_cgroup::cgroup::oomd::OomdPreference;
    if let Some(line) = oomd_mark_failure(m) {
        return line;
    }
    let how = match m.value {
        Some(OomdPreference::Omit) => "user.oomd_omit set",
        Some(OomdPreference::Avoid) => "user.oomd_avoid set",
        _ => "neither user.oomd_omit nor user.oomd_avoid set: systemd-oomd ranks it as any module",
    };
    let v = m.value.map_or("unknown", OomdPreference::name);
    format!("daemon/: systemd-oomd preference {v} ({how}, read back)")
}

/// The one line for a `daemon/` that could not be marked (or read back), `None` when it was.
pub fn oomd_mark_failure(m: &ck_cgroup::cgroup::oomd::OomdMark) -> Option<String> {
    m.error.as_ref().map(|e| {
        format!(
            "daemon/: not marked for systemd-oomd: {e}; systemd-oomd may then pick the daemon's own leaf"
        )
    })
}

/// `module a: killed by systemd-oomd (3 processes)` when systemd-oomd or the kernel's OOM killer
/// killed in the module before it was removed; `None` when neither did (or neither could be read).
pub fn kills_line(
    module: &ModuleName,
    k: &ck_cgroup::cause::counters::KillCounters,
) -> Option<String> {
    let mut by = Vec::new();
    if k.by_oomd() {
        by.push(match k.oomd_kill {
            Some(n) => format!(
                "systemd-oomd ({})",
                plural(n as usize, "process", "processes")
            ),
            None => "systemd-oomd".to_string(),
        });
    }
    if k.by_kernel() {
        by.push(match k.oom_kill {
            Some(n) if n > 0 => format!(
                "the kernel's OOM killer ({})",
                plural(n as usize, "process", "processes")
            ),
            _ => "the kernel's OOM killer".to_string(),
        });
    }
    (!by.is_empty()).then(|| format!("module {module}: killed by {}", by.join(" and ")))
}

/// A stop's lines of who killed in the module ([`kills_line`]) and of each mark it did not
/// believe: `module a: user.oomd_ooms not taken for systemd-oomd's kill: it is raised, but ...`
/// (then no "killed by systemd-oomd").
pub fn stop_kills_lines(r: &ck_cgroup::module::StopReport) -> Vec<String> {
    let mut k = r.kills;
    let mut out = Vec::new();
    for m in &r.marks_unconfirmed {
        if m.mark == ck_cgroup::cgroup::oomd::OOMS {
            k.oomd_ooms = Some(0);
            k.oomd_kill = Some(0);
        }
        out.push(format!(
            "module {}: {} not taken for {}: {}",
            r.module,
            m.mark,
            if m.mark == ck_cgroup::cgroup::oomd::OOMS {
                "systemd-oomd's kill"
            } else {
                "a stop of ck-cgroup's"
            },
            m.why
        ));
    }
    out.splice(0..0, kills_line(&r.module, &k));
    out
}

/// The line of a stop that left shared memory charged (`memory.stat` `shmem` above 0 once the
/// module's processes were gone): a kill does not free it; `None` where none was left or it is
/// unknown.
pub fn memory_left_line(
    module: &ModuleName,
    left: &ck_cgroup::cause::memory_left::MemoryLeft,
) -> Option<String> {
    let shmem = left.shmem_left()?;
    Some(format!(
        "module {}: {} of shared memory stays charged after the kill (memory.stat shmem: tmpfs files such as /dev/shm, shared memory segments, memfds another process holds): delete the files it left to free it",
        module,
        crate::cli::format::size(Some(shmem))
    ))
}

#[cfg(test)]
mod oomd_line_tests {
    use super::*;

    fn a() -> ModuleName {
        ModuleName::parse("a").unwrap()
    }

    fn mark(json: &str) -> ck_cgroup::cgroup::oomd::OomdMark {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_daemon_leaf_that_could_not_be_marked_is_one_line_naming_the_xattr_and_errno() {
        let m = mark(
            r#"{"value":null,"source":"user.oomd_avoid, user.oomd_omit xattrs","error":"setxattr of user.oomd_omit failed: EOPNOTSUPP (Operation not supported)"}"#,
        );
        let line = oomd_mark_line(&m);
        assert_eq!(
            line,
            "daemon/: not marked for systemd-oomd: setxattr of user.oomd_omit failed: EOPNOTSUPP (Operation not supported); systemd-oomd may then pick the daemon's own leaf"
        );
        assert!(!line.contains('\n'));
        let ok = mark(r#"{"value":"omit","source":"s","error":null}"#);
        assert_eq!(
            oomd_mark_line(&ok),
            "daemon/: systemd-oomd preference omit (user.oomd_omit set, read back)"
        );
        assert!(oomd_mark_failure(&ok).is_none());
    }

    #[test]
    fn the_memory_left_line_is_there_only_for_shmem_left() {
        use ck_cgroup::cause::memory_left::MemoryLeft;
        let mut left = MemoryLeft::default();
        assert_eq!(memory_left_line(&a(), &left), None);
        left.shmem = Some(0);
        assert_eq!(memory_left_line(&a(), &left), None);
        left.shmem = Some(64 << 20);
        let l = memory_left_line(&a(), &left).unwrap();
        assert!(
            l.contains("64.0M") || l.contains("64M") || l.contains("MiB"),
            "{l}"
        );
    }

    #[test]
    fn the_kills_line_is_there_only_when_something_killed() {
        let k =
            |j: &str| serde_json::from_str::<ck_cgroup::cause::counters::KillCounters>(j).unwrap();
        let none = k(r#"{"oom_kill":0,"oom_group_kill":null,"oomd_ooms":0,"oomd_kill":0}"#);
        assert_eq!(kills_line(&a(), &none), None);
        let oomd = k(r#"{"oom_kill":null,"oom_group_kill":null,"oomd_ooms":1,"oomd_kill":3}"#);
        assert_eq!(
            kills_line(&a(), &oomd).as_deref(),
            Some("module a: killed by systemd-oomd (3 processes)")
        );
        let both = k(r#"{"oom_kill":1,"oom_group_kill":0,"oomd_ooms":1,"oomd_kill":null}"#);
        assert_eq!(
            kills_line(&a(), &both).as_deref(),
            Some("module a: killed by systemd-oomd and the kernel's OOM killer (1 process)")
        );
    }
}
