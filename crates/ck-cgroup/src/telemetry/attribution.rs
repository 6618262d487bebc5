//! Who killed a module, for `watch`: the kill counters of its directory
//! ([`crate::cgroup::oomd::kill_counters`]: the kernel's `oom_kill` and `oom_group_kill`,
//! systemd-oomd's `user.oomd_ooms`) followed from one read to the next. An `oomd_kill` event when
//! `user.oomd_ooms` grows (systemd-oomd increments it before it kills; the `setxattr` fires
//! `IN_ATTRIB` on the directory, which `watch` watches), and the `killed_by` of `emptied`: the
//! killers whose counters grew since the module was last populated.
//!
//! A process of the daemon's uid can raise `user.oomd_ooms` itself (docs/operations.md, "What
//! such a module can forge"). What can be told is checked: systemd-oomd kills every process of
//! the cgroup it picks, so at each rise `watch` holds a pidfd on some of the module's processes
//! ([`Kills::expect_kill`]), and [`OOMD_CONFIRM`] later ([`Kills::confirm`]) a process of those
//! that still runs makes an `oomd_kill_unconfirmed` event, and the rise no longer names
//! systemd-oomd in `emptied`'s `killed_by`.
//!
//! Kept apart from watch/ so that its event loop calls in at a few points only:
//! [`Kills::observe`] on each re-read, [`Kills::expect_kill`] at a rise, [`Kills::confirm`] when
//! due, and [`Kills::killed_by`] on `emptied`.

use std::time::{Duration, Instant};

use crate::cgroup::oomd::{self, KillCounters};
use crate::mutation::{self, Control};
use crate::stop::witness::Witness;

/// How long after a rise of `user.oomd_ooms` every process that was in the module then must
/// have exited for the kill it claims to be taken as systemd-oomd's: its `SIGKILL` to the whole
/// cgroup ends them in milliseconds; the rest is room for a loaded host.
pub const OOMD_CONFIRM: Duration = Duration::from_secs(10);

/// How many of the module's processes are held to check a rise (one that lives on is enough).
pub(super) const CONFIRM_HOLD: usize = 8;

/// The name of `watch`'s event for a rise that was not followed by the kill it claims.
pub(super) const OOMD_KILL_UNCONFIRMED: &str = "oomd_kill_unconfirmed";

/// The source of that event.
pub(super) const OOMD_UNCONFIRMED_SOURCE: &str =
    "user.oomd_ooms rose, and processes that were in the module then still run";

/// A rise whose kill is to be checked: when, and the processes held.
struct Pending {
    due: Instant,
    witness: Witness,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("due", &self.due).finish()
    }
}

/// A module's kill counters: as last read, and as they were when it was last populated.
#[derive(Debug, Default)]
pub(super) struct Kills {
    last: Option<KillCounters>,
    since: Option<KillCounters>,
    pending: Option<Pending>,
}

/// The growth of `user.oomd_ooms` from one read to the next: `(value, previous)`.
pub(super) type OomdRise = (u64, Option<u64>);

/// The name of `watch`'s event for a rise of `user.oomd_ooms`.
pub(super) const OOMD_KILL: &str = "oomd_kill";

/// The source of that event.
pub(super) const OOMD_KILL_SOURCE: &str = oomd::OOMS;

impl Kills {
    /// The counters read now (`now`, [`oomd::kill_counters`] of the module's directory);
    /// `populated_now` says the module just became populated (the baseline of
    /// [`Kills::killed_by`] starts here). Returns the rise of `user.oomd_ooms` since the last
    /// read, if it grew.
    pub(super) fn observe(&mut self, now: KillCounters, populated_now: bool) -> Option<OomdRise> {
        let prev = self.last.and_then(|l| l.oomd_ooms);
        let rise = match now.oomd_ooms {
            Some(v) if v > prev.unwrap_or(0) => Some((v, prev)),
            _ => None,
        };
        if populated_now || self.since.is_none() {
            // The counters as this population began.
            self.since = Some(now);
        }
        self.last = Some(now);
        rise
    }

    /// The counters read through the fd of a directory already removed: its files are gone
    /// (`memory.events`: `None`), its xattrs are not; what could not be read now keeps its last
    /// reading.
    pub(super) fn observe_removed(&mut self, now: KillCounters) {
        let last = self.last.unwrap_or_default();
        let or = |a: Option<u64>, b: Option<u64>| a.or(b);
        let mut merged = now;
        merged.oom_kill = or(now.oom_kill, last.oom_kill);
        merged.oom_group_kill = or(now.oom_group_kill, last.oom_group_kill);
        merged.oomd_ooms = or(now.oomd_ooms, last.oomd_ooms);
        merged.oomd_kill = or(now.oomd_kill, last.oomd_kill);
        merged.ck_stops = or(now.ck_stops, last.ck_stops);
        self.observe(merged, false);
    }

    /// A rise of `user.oomd_ooms` was just reported while `pids` were the module's processes:
    /// hold some of them, to check at [`Kills::confirm`] that they were killed.
    pub(super) fn expect_kill(&mut self, pids: &[u32]) {
        let mut witness = Witness::default();
        witness.saw(&pids[..pids.len().min(CONFIRM_HOLD)]);
        self.pending = Some(Pending {
            due: Instant::now() + OOMD_CONFIRM,
            witness,
        });
    }

    /// How many pidfds the pending check holds (`watch`'s descriptor budget counts them).
    pub(super) fn held(&self) -> usize {
        self.pending.as_ref().map_or(0, |p| p.witness.len())
    }

    /// When the pending check is due, if there is one.
    pub(super) fn due(&self) -> Option<Instant> {
        self.pending.as_ref().map(|p| p.due)
    }

    /// At or after the pending check's time: the pids of the processes held that still run,
    /// when any does (the mark was not followed by systemd-oomd's kill; that rise then no
    /// longer counts for `killed_by`); `None` when all were killed or nothing is due.
    pub(super) fn confirm(&mut self, now: Instant) -> Option<Vec<u32>> {
        if self.pending.as_ref().is_none_or(|p| p.due > now) {
            return None;
        }
        let p = self.pending.take()?;
        // Mutation: every mark is taken at its word.
        if mutation::active(Control::OomdMarkTrusted) {
            return None;
        }
        let running = p.witness.running_now();
        if running.is_empty() {
            return None;
        }
        if let (Some(since), Some(last)) = (self.since.as_mut(), self.last) {
            since.oomd_ooms = last.oomd_ooms;
        }
        Some(running)
    }

    /// The killers whose counters grew since the module was last populated: `systemd-oomd`
    /// (`user.oomd_ooms`), `kernel` (`oom_kill` or `oom_group_kill`) and `ck-cgroup` (its own
    /// stop: `user.ck_cgroup_stops`). Empty when none did (or a counter could not be read).
    pub(super) fn killed_by(&self) -> Vec<String> {
        let (Some(now), Some(then)) = (self.last, self.since) else {
            return Vec::new();
        };
        let grew =
            |a: Option<u64>, b: Option<u64>| matches!((a, b), (Some(a), b) if a > b.unwrap_or(0));
        let mut out = Vec::new();
        if grew(now.oomd_ooms, then.oomd_ooms) {
            out.push("systemd-oomd".to_string());
        }
        if grew(now.oom_kill, then.oom_kill) || grew(now.oom_group_kill, then.oom_group_kill) {
            out.push("kernel".to_string());
        }
        if grew(now.ck_stops, then.ck_stops) {
            out.push("ck-cgroup".to_string());
        }
        out
    }
}
