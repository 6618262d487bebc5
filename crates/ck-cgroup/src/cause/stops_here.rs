//! The stops this process made, known without reading any mark: a module's `user.ck_cgroup_stops`
//! can be raised by anyone who owns its directory (a module of the daemon's uid included), so a
//! death report of this process believes its own stops from here ([`death_cause`]).
//!
//! A stop is recorded by the directory's cgroup id (its inode number, `fstat(2)`; cgroup2 never
//! gives a removed cgroup's id to a new one on a 64-bit kernel) with the processes that were in
//! it when the stop began (`cgroup.procs`, and below): a process that had already exited by then
//! (a crash the supervisor then stopped the leftovers of) is not among them, so the stop is not
//! taken for its cause. Only a process that spawned modules records ([`spawned`]): the helper's
//! `kill` reads no extra file. At most [`KEPT`] stops are kept, the oldest dropped first.
//!
//! [`death_cause`]: super::death_cause

use std::collections::VecDeque;
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cgroup::dir::CgroupDir;

/// How many stops are remembered.
pub(crate) const KEPT: usize = 4096;

struct Stops {
    /// The number of stops recorded so far.
    seq: u64,
    /// `(seq, cgroup id, members at the stop's start)`, the oldest first.
    kept: VecDeque<(u64, u64, Vec<u32>)>,
}

static STOPS: Mutex<Stops> = Mutex::new(Stops {
    seq: 0,
    kept: VecDeque::new(),
});

static SPAWNED: AtomicBool = AtomicBool::new(false);

fn stops() -> std::sync::MutexGuard<'static, Stops> {
    // A poisoned lock (a panic elsewhere while it was held) still holds usable records.
    STOPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// This process spawned a module: its stops are recorded from now on.
pub(crate) fn spawned() {
    SPAWNED.store(true, Ordering::Relaxed);
}

/// Whether this process spawned a module: its stops may race its own reaps.
pub(crate) fn spawned_here() -> bool {
    SPAWNED.load(Ordering::Relaxed)
}

/// The cgroup id of the open cgroup directory `dir`: its inode number (`fstat(2)`); `None`
/// where it cannot be read.
pub(crate) fn cgroup_id(dir: &CgroupDir) -> Option<u64> {
    rustix::fs::fstat(dir.fd().as_fd()).ok().map(|st| st.st_ino)
}

/// The number of stops recorded so far: a spawn's mark, so that only later stops count.
pub(crate) fn seq() -> u64 {
    stops().seq
}

/// Record a stop of the module `dir` by this process, before it signals or kills: the
/// processes in it now (`cgroup.procs` of it and below).
pub(crate) fn record(dir: &CgroupDir) {
    if !SPAWNED.load(Ordering::Relaxed) {
        return;
    }
    let Some(id) = cgroup_id(dir) else {
        return;
    };
    let members = crate::cgroup::tree::members(dir, "").unwrap_or_default();
    let mut s = stops();
    s.seq += 1;
    let seq = s.seq;
    if s.kept.len() >= KEPT {
        s.kept.pop_front();
    }
    s.kept.push_back((seq, id, members));
}

/// Whether a stop of the cgroup `id` recorded after `since` (a [`seq`]) began while `pid` was in
/// it.
pub(crate) fn stopped_while_in(id: u64, since: u64, pid: u32) -> bool {
    stops()
        .kept
        .iter()
        .any(|(seq, i, members)| *seq > since && *i == id && members.contains(&pid))
}
