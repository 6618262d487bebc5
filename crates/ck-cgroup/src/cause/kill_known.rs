//! [`KillCounters`]' answers that say where a counter could not be read: `Some(true)` where one
//! rose, `Some(false)` where every one read 0, `None` where none rose and one could not be read
//! (no memory controller, an xattr refused). The `bool` answers of `counters.rs` (`by_kernel`,
//! `by_oomd`, `by_ck`) read an unreadable counter as "no".

use super::counters::KillCounters;

/// `Some(true)` where a counter is above 0; else `None` where one is unknown; else `Some(false)`.
fn known(counters: &[Option<u64>]) -> Option<bool> {
    if counters.iter().any(|c| c.is_some_and(|n| n > 0)) {
        return Some(true);
    }
    if counters.iter().any(Option::is_none) {
        return None;
    }
    Some(false)
}

impl KillCounters {
    /// Whether the kernel's OOM killer killed there (`oom_kill` or `oom_group_kill` above 0);
    /// `None` where neither rose and one could not be read (no memory controller): never "no"
    /// for a counter that was not read, as [`by_kernel`](Self::by_kernel) says.
    pub fn by_kernel_known(&self) -> Option<bool> {
        known(&[self.oom_kill, self.oom_group_kill])
    }

    /// Whether systemd-oomd killed there (`oomd_ooms` above 0); `None` where it could not be
    /// read.
    pub fn by_oomd_known(&self) -> Option<bool> {
        known(&[self.oomd_ooms])
    }

    /// Whether ck-cgroup's own stop ended it (`ck_stops` above 0); `None` where it could not be
    /// read.
    pub fn by_ck_known(&self) -> Option<bool> {
        known(&[self.ck_stops])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(oom_kill: Option<u64>, oom_group_kill: Option<u64>) -> KillCounters {
        KillCounters {
            oom_kill,
            oom_group_kill,
            ..KillCounters::default()
        }
    }

    /// An unread OOM counter was `false` ("not killed by the kernel"): it is unknown.
    #[test]
    fn an_unreadable_oom_counter_is_unknown_not_no() {
        assert_eq!(counters(None, None).by_kernel_known(), None);
        assert!(!counters(None, None).by_kernel());
        assert_eq!(counters(Some(0), None).by_kernel_known(), None);
        assert_eq!(counters(Some(0), Some(0)).by_kernel_known(), Some(false));
        assert_eq!(counters(None, Some(1)).by_kernel_known(), Some(true));
        assert_eq!(counters(Some(2), Some(0)).by_kernel_known(), Some(true));
        let c = KillCounters {
            oomd_ooms: None,
            ck_stops: Some(0),
            ..KillCounters::default()
        };
        assert_eq!(c.by_oomd_known(), None);
        assert_eq!(c.by_ck_known(), Some(false));
    }
}
