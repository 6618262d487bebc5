//! `watch`: module events as they happen, one JSON object per line. It reports and never kills.
//!
//! Event-driven: `inotify(7)` on each module's `cgroup.events`, `memory.events` and `pids.events`
//! (the kernel generates a modify event when their values change) and on the directories that
//! hold modules (a module appeared or was removed). The process sleeps in `poll(2)` until the
//! kernel reports something; the one exception is `memory.current`, which generates no event:
//! with a report threshold it is read once a second. PSI triggers (`--pressure`,
//! [`PressureTrigger`]) are descriptors of each module's `<res>.pressure` in the same `poll(2)`,
//! which the kernel wakes with `POLLPRI` (at most once per window). Watches are added through
//! `/proc/self/fd/<fd>` of directories opened beneath the root, so no path outside it is used.
//!
//! A module is followed by identity, not by name, one lifetime per directory made under its
//! name (`modules/`): the inotify queue is read whole and handled one event at a time in the
//! kernel's order, so every `appeared`, `populated`, `emptied` and `removed` of every module comes
//! in the order it happened, a module removed and made again between two reads included; what
//! the kernel guarantees fills in what could not be read (a module removed while last seen
//! populated was `emptied` first, `inferred`). A full rescan (at the start, after a queue
//! overflow, or when a directory that holds modules appears) compares each module's directory
//! inode with the one it watches, and reports a replaced module as `removed` then `appeared`.
//! `triggers.rs` holds the PSI triggers and the memory thresholds.

mod exits;
mod modules;
mod triggers;

use std::collections::BTreeMap;
use std::os::unix::io::{AsRawFd, OwnedFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::inotify;
use rustix::io::Errno;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::id::DirName;
use crate::layout::{Layout, ModuleName};
use crate::module::Root;
use crate::mutation::{self, Control};
use crate::telemetry::pressure::PressureTrigger;
use modules::{Key, Watcher};

/// One event line.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct WatchEvent {
    /// When it was seen, RFC 3339 UTC with milliseconds.
    pub ts: String,
    /// The module's directory name, in its shown form; `None` only in an `events_lost` that is
    /// not of one module's directory ([`WatchEvent::scope`] says what it covers).
    pub module: Option<DirName>,
    /// Which placement made it; `None` only in an `events_lost` of all modules, or of a name
    /// given without its layout.
    pub layout: Option<Layout>,
    /// `events_lost` of more than one module's directory: `all modules` (events of any module,
    /// lifetimes that began and ended unseen included, may be lost; `module` and `layout` are
    /// `None`), `named` (of every module the name `module` names: a lifetime not followed may be
    /// lost), or the directory as found, `subc-modules/NAME` in its shown form (a name that
    /// cannot be a module's). Absent in every other event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `appeared`, `populated`, `emptied`, `removed`, `memory_low`, `memory_high`, `memory_max`,
    /// `memory_oom`, `memory_oom_kill`, `memory_oom_group_kill`, `pids_max`, `memory_above`,
    /// `memory_below`, `oomd_kill` (systemd-oomd killed it: `user.oomd_ooms` grew),
    /// `oomd_kill_unconfirmed` (that rise was not followed by the kill: processes that were in
    /// the module then still ran 10 s later: the mark may be forged), `stop_unconfirmed` (a
    /// process of the module exited with a code or crashed after `user.ck_cgroup_stops` rose:
    /// no stop of ck-cgroup's does that, so the mark may be forged; said before the `emptied`,
    /// which then names no `ck-cgroup`; as root only, `exits`), `pressure`
    /// (a PSI trigger fired), `pressure_unavailable` (the module has
    /// no pressure file for a trigger, or the kernel ended the trigger while the module stays:
    /// it is not set; `error` says why), `events_lost` (events may be missing: of the module
    /// named, or of those `scope` says; `error` says why, with the errno, and what was lost).
    pub event: String,
    /// The counter or figure now (counters: the file's value; thresholds: memory in bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// The counter before the rise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<u64>,
    /// The report threshold that was crossed, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<u64>,
    /// The file the value came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `pressure`: the trigger's resource, `memory`, `cpu` or `io`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// `pressure`: the trigger's kind, `some` or `full`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `pressure`: the trigger's stall time, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_us: Option<u64>,
    /// `pressure`: the trigger's window, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_us: Option<u64>,
    /// `pressure`: the file's `avg10` of the trigger's kind (percent) when it fired, read once
    /// then; absent when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg10: Option<f64>,
    /// `pressure_unavailable`: why the trigger could not be set (the errno and what it means);
    /// `events_lost`: why events were lost (the errno where a call failed) and which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `emptied`: the killers whose counters grew since the module was last populated,
    /// `systemd-oomd` (`user.oomd_ooms`) and/or `kernel` (`oom_kill`); empty when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed_by: Option<Vec<String>>,
    /// `emptied`: `true` when it was not read but follows from the kernel's rules (a module last
    /// read populated was removed, and only an empty cgroup can be); absent when it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inferred: Option<bool>,
    /// `memory_oom_kill`: which limit made the kernel kill
    /// ([`OomCause`](crate::cause::oom_cause::OomCause): the module's own, an ancestor's,
    /// the machine's); absent where it could not be told (`oom_cause_unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_cause: Option<crate::cause::oom_cause::OomCause>,
    /// `memory_oom_kill`: why its cause could not be told (a counter that could not be read);
    /// absent where it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_cause_unknown: Option<String>,
}

/// What to watch.
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Only these modules (ids, directory names or paths, as `list` shows them); all when
    /// empty.
    pub ids: Vec<ModuleName>,
    /// Report when a module's memory crosses this many bytes (up: `memory_above`, down:
    /// `memory_below`).
    pub report_above: Option<u64>,
    /// Per-module thresholds (module id to bytes), over `report_above`.
    pub per_module: BTreeMap<DirName, u64>,
    /// PSI triggers set on every module watched (`pressure` events).
    pub pressure: Vec<PressureTrigger>,
}

/// A PSI trigger set on a module: the index of its spec in [`WatchOptions::pressure`], and the
/// descriptor that holds it.
pub(super) struct Armed {
    pub idx: usize,
    pub fd: OwnedFd,
}

/// Watch until `emit` fails (a closed pipe ends it) or a system call fails.
pub fn watch(
    root: &Root,
    opts: &WatchOptions,
    mut emit: impl FnMut(&WatchEvent) -> std::io::Result<()>,
) -> Result<()> {
    let ino = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
        .map_err(|e| Error::io("set up inotify for", root.path(), e))?;
    let mut w = Watcher::new(root, opts, ino);
    let mut out = Vec::new();
    let said = |r: Result<()>,
                out: &mut Vec<WatchEvent>,
                emit: &mut dyn FnMut(&WatchEvent) -> std::io::Result<()>| {
        // What was found before a failure (an events_lost saying what it lost) comes first.
        if r.is_err() {
            for e in out.drain(..) {
                let _ = emit(&e);
            }
        }
        r
    };
    let r = w.rescan(false, &mut out);
    said(r, &mut out, &mut emit)?;
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
    loop {
        for e in out.drain(..) {
            if emit(&e).is_err() {
                return Ok(());
            }
        }
        let thresholds = opts.report_above.is_some() || !opts.per_module.is_empty();
        // Mutation: a 10 ms loop that reads the pressure files instead of sleeping until the
        // kernel reports.
        let sampling = mutation::active(Control::PressureSampling) && !opts.pressure.is_empty();
        // The thresholds are read every second; a rise of user.oomd_ooms to check
        // (cause/attribution.rs) wakes the loop when it is due; otherwise no timeout.
        let due = w
            .next_due()
            .map(|d| d.saturating_duration_since(std::time::Instant::now()));
        let wait = if sampling {
            Some(Duration::from_millis(10))
        } else {
            // The process events connector (root) is read once a second, and at each wake.
            let exits = w.exits.is_some();
            [(thresholds || exits).then_some(Duration::from_secs(1)), due]
                .into_iter()
                .flatten()
                .min()
        };
        let timeout = wait.map(|d| Timespec {
            tv_sec: d.as_secs() as _,
            tv_nsec: d.subsec_nanos() as _,
        });
        let timeout = timeout.as_ref();
        // The inotify descriptor, then every module's PSI triggers.
        let (inotify_ready, triggers) = {
            let mut keys = Vec::new();
            let mut fds = vec![PollFd::new(&w.ino, PollFlags::IN)];
            let first = fds.len();
            for (k, st) in &w.modules {
                for a in &st.triggers {
                    fds.push(PollFd::new(&a.fd, PollFlags::PRI));
                    keys.push((k.clone(), a.fd.as_raw_fd()));
                }
            }
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(e) => return Err(Error::io("poll inotify for", root.path(), e)),
            }
            let ready: Vec<_> = keys
                .into_iter()
                .zip(fds[first..].iter().map(PollFd::revents))
                .filter(|(_, r)| !r.is_empty())
                .collect();
            (!fds[0].revents().is_empty(), ready)
        };
        // Before the inotify queue: a process's end is known when its module's emptying is read.
        w.read_exits();
        // A trigger's report comes before what inotify says of its module (a `removed`).
        w.pressure(triggers, &mut out);
        w.confirm_oomd(&mut out);
        if !inotify_ready {
            if sampling {
                w.sample();
            }
            if thresholds {
                w.thresholds(&mut out);
            }
            continue;
        }
        let r = w.drain(&mut buf, &mut out);
        said(r, &mut out, &mut emit)?;
        if thresholds {
            w.thresholds(&mut out);
        }
    }
}

pub(super) fn event(
    k: &Key,
    name: &str,
    value: Option<u64>,
    previous: Option<u64>,
    source: Option<String>,
) -> WatchEvent {
    let mut e = blank(name);
    e.module = Some(k.1.clone());
    e.layout = Some(k.0);
    e.value = value;
    e.previous = previous;
    e.source = source;
    e
}

/// Event `name` of no module, every other field absent.
fn blank(name: &str) -> WatchEvent {
    WatchEvent {
        ts: now_rfc3339(),
        module: None,
        layout: None,
        scope: None,
        event: name.to_string(),
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
        killed_by: None,
        inferred: None,
        oom_cause: None,
        oom_cause_unknown: None,
    }
}

/// An `events_lost` event of `module` in `layout` (where known) or of `scope`, saying `why`.
pub(super) fn lost_event(
    module: Option<DirName>,
    layout: Option<Layout>,
    scope: Option<String>,
    why: String,
) -> WatchEvent {
    let mut e = blank("events_lost");
    e.module = module;
    e.layout = layout;
    e.scope = scope;
    e.error = Some(why);
    e
}

/// A `pressure` or `pressure_unavailable` event of trigger `t` on module `k`.
pub(super) fn pressure_event(k: &Key, name: &str, t: &PressureTrigger) -> WatchEvent {
    let mut e = event(k, name, None, None, Some(t.resource().file().into()));
    e.resource = Some(t.resource().as_str().into());
    e.kind = Some(t.kind().as_str().into());
    e.threshold_us = Some(t.threshold_us());
    e.window_us = Some(t.window_us());
    e
}

/// The time now, `2026-11-30T05:10:00.123Z`.
pub(crate) fn now_rfc3339() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    rfc3339(d)
}

/// `d` since the Unix epoch as RFC 3339 UTC with milliseconds, `2026-11-30T05:10:00.123Z` (the
/// civil date by H. Hinnant's `civil_from_days`): `watch`'s `ts`, and the clock of `top`.
pub fn rfc3339(d: Duration) -> String {
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(Duration::ZERO), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(Duration::from_millis(1_796_016_600_123)),
            "2026-11-30T05:30:00.123Z"
        );
        assert_eq!(
            rfc3339(Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
    }
}
