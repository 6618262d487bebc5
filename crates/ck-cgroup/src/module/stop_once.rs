//! One stop of a module at a time in this process: a [`Root::stop`](super::Root::stop) of a
//! module that another thread of this process is already stopping (a supervisor's reap beside an
//! operator thread's stop) waits for that stop and returns its report, so that both say the
//! whole stop (what was signalled, killed, removed) instead of each a half of it ("killed 3"
//! and "killed 0"). Keyed by the module directory's cgroup id; only in a process that spawned
//! modules (`cause::stops_here`), where the library's threads can race a stop and a reap. A
//! reap that comes when the other stop has already removed the module takes that stop's report
//! ([`finished`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};

use super::report::StopReport;

/// A stop in flight: `done` is `Some` once it ended (with its report, `None` where it failed
/// without one).
#[derive(Default)]
struct Flight {
    done: Mutex<Option<Option<StopReport>>>,
    ended: Condvar,
}

static FLIGHTS: Mutex<BTreeMap<u64, Arc<Flight>>> = Mutex::new(BTreeMap::new());

/// The reports of the last [`KEPT`] stops that ended, by cgroup id, the newest last: a reap that
/// finds its module already removed by a stop of this process takes that stop's report.
static FINISHED: Mutex<std::collections::VecDeque<(u64, StopReport)>> =
    Mutex::new(std::collections::VecDeque::new());

/// How many ended stops' reports are kept.
const KEPT: usize = 256;

/// The report of the last stop of this process that ended of the module with cgroup id `id`.
pub(super) fn finished(id: u64) -> Option<StopReport> {
    let kept = FINISHED.lock().unwrap_or_else(|e| e.into_inner());
    kept.iter()
        .rev()
        .find(|(i, _)| *i == id)
        .map(|(_, r)| r.clone())
}

fn flights() -> std::sync::MutexGuard<'static, BTreeMap<u64, Arc<Flight>>> {
    // A poisoned lock (a panic elsewhere while it was held) still holds a usable map.
    FLIGHTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whose turn a stop of the module with cgroup id `id` is.
pub(super) enum Turn {
    /// This stop runs; [`Leader::finish`] hands its report to those that waited.
    Lead(Leader),
    /// Another stop ran meanwhile and ended with this report (`None`: it failed without one,
    /// so this stop runs by itself).
    Joined(Option<Box<StopReport>>),
}

/// The stop that runs.
pub(super) struct Leader {
    id: u64,
    flight: Arc<Flight>,
    finished: bool,
}

/// Take a turn at stopping the module with cgroup id `id`: lead it, or wait for the stop in
/// flight and take its report.
pub(super) fn take_turn(id: u64) -> Turn {
    let mut map = flights();
    if let Some(f) = map.get(&id).cloned() {
        drop(map);
        let mut done = f.done.lock().unwrap_or_else(|e| e.into_inner());
        while done.is_none() {
            done = f.ended.wait(done).unwrap_or_else(|e| e.into_inner());
        }
        return Turn::Joined(done.clone().flatten().map(Box::new));
    }
    let flight = Arc::new(Flight::default());
    map.insert(id, flight.clone());
    Turn::Lead(Leader {
        id,
        flight,
        finished: false,
    })
}

impl Leader {
    /// The stop ended with `report` (`None`: failed without one): hand it to those waiting.
    pub(super) fn finish(mut self, report: Option<StopReport>) {
        self.end(report);
    }

    fn end(&mut self, report: Option<StopReport>) {
        if self.finished {
            return;
        }
        self.finished = true;
        {
            let mut map = flights();
            if map
                .get(&self.id)
                .is_some_and(|f| Arc::ptr_eq(f, &self.flight))
            {
                map.remove(&self.id);
            }
        }
        if let Some(r) = &report {
            let mut kept = FINISHED.lock().unwrap_or_else(|e| e.into_inner());
            if kept.len() >= KEPT {
                kept.pop_front();
            }
            kept.push_back((self.id, r.clone()));
        }
        let mut done = self.flight.done.lock().unwrap_or_else(|e| e.into_inner());
        *done = Some(report);
        self.flight.ended.notify_all();
    }
}

impl Drop for Leader {
    /// A stop that returned early (`?`) still lets those waiting go, to stop by themselves.
    fn drop(&mut self) {
        self.end(None);
    }
}
