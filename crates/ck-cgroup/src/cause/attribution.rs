//! Who killed a module, for `watch`: the kill counters of its directory
//! ([`crate::cause::counters::kill_counters`]: the kernel's `oom_kill` and `oom_group_kill`,
//! systemd-oomd's `user.oomd_ooms`) followed from one read to the next. An `oomd_kill` event when
//! `user.oomd_ooms` grows (systemd-oomd increments it before it kills; the `setxattr` fires
//! `IN_ATTRIB` on the directory, which `watch` watches), and the `killed_by` of `emptied`: the
//! killers whose counters grew since the module was last populated.
//!
//! A process of the daemon's uid can raise `user.oomd_ooms` itself (docs/operations.md, "What
//! such a module can forge"). What can be told is checked: systemd-oomd kills every process of
//! the cgroup it picks, so at each rise `watch` holds a pidfd on some of the module's processes
//! ([`Kills::expect_kill`]), and [`OOMD_CONFIRM`] later ([`Kills::confirm`]) a process that
//! still runs makes an `oomd_kill_unconfirmed` event, and the rise no longer names systemd-oomd
//! in `emptied`'s `killed_by`. A process that still runs is one of those held, or any process
//! of the module and its sub-cgroups then (listed again at the check) that started before the
//! rise: a module that leaves short-lived processes for the pidfds and moves its real ones to a
//! sub-cgroup is caught by the second. Every rise is checked: a new rise queues its own check
//! and never replaces a pending one.
//!
//! `user.ck_cgroup_stops` can be raised the same way. A stop of ck-cgroup's ends processes with
//! its signal or `SIGKILL`; where `watch` reads how the module's processes ended (as root: the
//! process events connector, `watch/exits.rs`), an exit with a code or a crash after the rise
//! ([`Kills::against_stop`]) makes a `stop_unconfirmed` event and the rise no longer names
//! `ck-cgroup` in `emptied` ([`Kills::stop_doubt`]), as the death report's rule
//! (`cause::death_cause`).
//!
//! Kept apart from watch/ so that its event loop calls in at a few points only:
//! [`Kills::observe`] on each re-read, [`Kills::expect_kill`] at a rise, [`Kills::confirm`] when
//! due, and [`Kills::killed_by`] on `emptied`.

use std::time::{Duration, Instant};

use super::counters::KillCounters;
use super::witness::Witness;
use crate::cgroup::oomd;
use crate::mutation::{self, Control};

/// How long after a rise of `user.oomd_ooms` every process that was in the module then must
/// have exited for the kill it claims to be taken as systemd-oomd's: its `SIGKILL` to the whole
/// cgroup ends them in milliseconds; the rest is room for a loaded host.
pub const OOMD_CONFIRM: Duration = Duration::from_secs(10);

/// How many of the module's processes are held to check a rise (one that lives on is enough).
pub(crate) const CONFIRM_HOLD: usize = 8;

/// The name of `watch`'s event for a rise that was not followed by the kill it claims.
pub(crate) const OOMD_KILL_UNCONFIRMED: &str = "oomd_kill_unconfirmed";

/// The source of that event.
pub(crate) const OOMD_UNCONFIRMED_SOURCE: &str =
    "user.oomd_ooms rose, and processes that were in the module then still run";

/// A rise whose kill is to be checked: when, the processes held, and the rise's moment in the
/// clock ticks of a process's start time (`/proc/<pid>/stat`).
struct Pending {
    due: Instant,
    witness: Witness,
    rise_ticks: u64,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("due", &self.due).finish()
    }
}

/// A module's kill counters: as last read, and as they were when it was last populated.
#[derive(Debug, Default)]
pub(crate) struct Kills {
    last: Option<KillCounters>,
    since: Option<KillCounters>,
    pending: Vec<Pending>,
    /// How many reads of the counters [`Kills::observe`] took so far.
    reads: u64,
    /// The number of reads before the one that saw `user.ck_cgroup_stops` rise in this
    /// population: the rise came after that read.
    stop_rose_after: Option<u64>,
    /// Ends of the module's processes that no stop of ck-cgroup's causes (an exit with a code,
    /// a crash: `watch::exits`), each with the number of reads before it was told.
    against_stop: Vec<(u64, String)>,
}

/// The growth of `user.oomd_ooms` from one read to the next: `(value, previous)`.
pub(crate) type OomdRise = (u64, Option<u64>);

/// The name of `watch`'s event for a rise of `user.ck_cgroup_stops` that a process's end
/// contradicts (said before the `emptied` that then names no `ck-cgroup`).
pub(crate) const STOP_UNCONFIRMED: &str = "stop_unconfirmed";

/// The name of `watch`'s event for a rise of `user.oomd_ooms`.
pub(crate) const OOMD_KILL: &str = "oomd_kill";

/// The source of that event.
pub(crate) const OOMD_KILL_SOURCE: &str = oomd::OOMS;

impl Kills {
    /// The counters read now (`now`, [`kill_counters`](super::counters::kill_counters) of the module's directory);
    /// `populated_now` says the module just became populated (the baseline of
    /// [`Kills::killed_by`] starts here). Returns the rise of `user.oomd_ooms` since the last
    /// read, if it grew.
    pub(crate) fn observe(&mut self, now: KillCounters, populated_now: bool) -> Option<OomdRise> {
        if populated_now {
            self.against_stop.clear();
            self.stop_rose_after = None;
        }
        let stops_before = self.last.and_then(|l| l.ck_stops);
        if matches!(now.ck_stops, Some(n) if n > stops_before.unwrap_or(0)) {
            self.stop_rose_after = Some(self.reads);
        } else if self.stop_rose_after.is_none() {
            // No rise yet, and this read saw none: every end told so far came before any later
            // rise, and counts for none (a module whose children crash all day keeps none).
            self.against_stop.clear();
        }
        self.reads += 1;
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
    pub(crate) fn observe_removed(&mut self, now: KillCounters) {
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
    /// hold some of them, to check at [`Kills::confirm`] that they were killed. Queued behind
    /// any check still pending (mutation `oomd-rise-replaces`: it replaces it).
    pub(crate) fn expect_kill(&mut self, pids: &[u32]) {
        let mut witness = Witness::default();
        witness.saw(&pids[..pids.len().min(CONFIRM_HOLD)]);
        if mutation::active(Control::OomdRiseReplaces) {
            self.pending.clear();
        }
        self.pending.push(Pending {
            due: Instant::now() + OOMD_CONFIRM,
            witness,
            rise_ticks: crate::cgroup::procfs::now_ticks(),
        });
    }

    /// How many pidfds the pending checks hold (`watch`'s descriptor budget counts them).
    pub(crate) fn held(&self) -> usize {
        self.pending.iter().map(|p| p.witness.len()).sum()
    }

    /// When the next pending check is due, if there is one.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.pending.iter().map(|p| p.due).min()
    }

    /// At or after a pending check's time: the pids of the processes that outlived the kill its
    /// rise claimed, when any did: one of those held that still runs, or one of `members` (the
    /// module's processes now, from its directory and below; `None` where it is gone) that
    /// started before the rise (the mark was not followed by systemd-oomd's kill; that rise then
    /// no longer counts for `killed_by`); `None` when all were killed or nothing is due.
    pub(crate) fn confirm(
        &mut self,
        now: Instant,
        members: impl FnOnce() -> Option<Vec<u32>>,
    ) -> Option<Vec<u32>> {
        let due: Vec<Pending> = {
            let (due, later) = std::mem::take(&mut self.pending)
                .into_iter()
                .partition(|p| p.due <= now);
            self.pending = later;
            due
        };
        // Mutation: every mark is taken at its word.
        if due.is_empty() || mutation::active(Control::OomdMarkTrusted) {
            return None;
        }
        let members = members().unwrap_or_default();
        let mut running = Vec::new();
        for p in &due {
            for pid in p.witness.running_now() {
                if !running.contains(&pid) {
                    running.push(pid);
                }
            }
            if mutation::active(Control::OomdWitnessHeldOnly) {
                continue;
            }
            for &pid in &members {
                let older =
                    crate::cgroup::procfs::start_ticks(pid).is_some_and(|t| t < p.rise_ticks);
                if older && !running.contains(&pid) {
                    running.push(pid);
                }
            }
        }
        if running.is_empty() {
            return None;
        }
        if let (Some(since), Some(last)) = (self.since.as_mut(), self.last) {
            since.oomd_ooms = last.oomd_ooms;
        }
        Some(running)
    }

    /// A process of the module ended in a way no stop of ck-cgroup's causes (`why`: `pid 7
    /// exited with code 1`), as the process events connector told it (`watch::exits`).
    pub(crate) fn against_stop(&mut self, why: String) {
        self.against_stop.push((self.reads, why));
    }

    /// Why the rise of `user.ck_cgroup_stops` in this population is not believed: a process of
    /// the module ended after it (after the read before the one that saw it) with an exit code
    /// or a crash, which no stop of ck-cgroup's causes. `None`: it is believed (or no end was
    /// told: without the connector every rise is taken at its word).
    pub(crate) fn stop_doubt(&self) -> Option<&str> {
        // Mutation: every stop mark is taken at its word.
        if mutation::active(Control::WatchStopMarkTrusted) {
            return None;
        }
        let after = self.stop_rose_after?;
        self.against_stop
            .iter()
            .find(|(r, _)| *r >= after)
            .map(|(_, why)| why.as_str())
    }

    /// The killers whose counters grew since the module was last populated: `systemd-oomd`
    /// (`user.oomd_ooms`), `kernel` (`oom_kill` or `oom_group_kill`) and `ck-cgroup` (its own
    /// stop: `user.ck_cgroup_stops`). Empty when none did (or a counter could not be read).
    pub(crate) fn killed_by(&self) -> Vec<String> {
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
        if grew(now.ck_stops, then.ck_stops) && self.stop_doubt().is_none() {
            out.push("ck-cgroup".to_string());
        }
        out
    }
}
