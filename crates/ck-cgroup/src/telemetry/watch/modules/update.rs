//! What a read of a module's lifetime reports: its `cgroup.events` and counters read through
//! its own directory, the events for what changed since the last read (populated, emptied, a
//! counter's rise, an OOM kill's cause, a kill mark's rise and its check), and the checks of
//! `user.oomd_ooms` rises when they are due.

use std::collections::BTreeMap;

use super::{Key, Watcher, say, why_errno};
use crate::cgroup::gone::is_gone;
use crate::cgroup::parse;
use crate::mutation::{self, Control};
use crate::telemetry::watch::{WatchEvent, event};

impl Watcher<'_> {
    /// Re-read a module's event files through its own directory; report what changed. A read
    /// that fails (the directory went) changes nothing: its `removed` comes from the queue.
    pub(super) fn update(&mut self, k: &Key, report: bool, out: &mut Vec<WatchEvent>) {
        let Some(st) = self.modules.get(k) else {
            return;
        };
        // The mutation `watch-coalesce` reads by name, whatever directory holds it now.
        let by_name;
        let dir = match (&st.dir, mutation::active(Control::WatchCoalesce)) {
            (Some(d), false) => d,
            // A lifetime whose directory was gone before it was handled: nothing to read.
            (None, false) => return,
            (_, true) => match self.root.dir().open_dir(&st.rel) {
                Ok(d) => {
                    by_name = d;
                    &by_name
                }
                Err(_) => return,
            },
        };
        let text = match dir.read_raw("cgroup.events") {
            Ok(t) => t,
            // Removed, or being removed: its removed is queued.
            Err(errno) if is_gone(errno) => return,
            Err(errno) => {
                // Said once, until a read succeeds again.
                if let Some(st) = self.modules.get_mut(k)
                    && st.unreadable != Some(errno)
                {
                    st.unreadable = Some(errno);
                    let mut e = event(k, "events_lost", None, None, None);
                    e.error = Some(format!(
                        "its cgroup.events could not be read: {}{}: its populated and emptied \
                         are not reported until a read succeeds",
                        crate::error::errno_text(errno),
                        why_errno(errno)
                    ));
                    say(out, e);
                }
                return;
            }
        };
        let Some(populated) = parse::events(&text).populated else {
            return;
        };
        let mut counters = BTreeMap::new();
        for (file, prefix, keys) in [
            (
                "memory.events",
                "memory_",
                &["low", "high", "max", "oom", "oom_kill", "oom_group_kill"][..],
            ),
            ("pids.events", "pids_", &["max"][..]),
        ] {
            if let Ok(t) = dir.read_raw(file) {
                let kv = parse::flat_keyed(&t);
                for key in keys {
                    if let Some(v) = kv.get(*key) {
                        counters.insert(format!("{prefix}{key}"), *v);
                    }
                }
            }
        }
        let kills = crate::cause::counters::kill_counters(dir, "");
        // The pidfds other modules' checks hold: this one's rise may take what is left of the
        // budget (its own check's, replaced by a new rise, included).
        let held_by_others: usize = self
            .modules
            .iter()
            .filter(|(key, _)| *key != k)
            .map(|(_, s)| s.kills.held())
            .sum();
        let room = self.pidfd_budget.saturating_sub(held_by_others);
        // An OOM kill's cause, from the counters now against those of the last read.
        let oom_kill_rose = self.modules.get(k).is_some_and(|st| {
            counters.get("memory_oom_kill").copied().unwrap_or(0)
                > st.counters.get("memory_oom_kill").copied().unwrap_or(0)
        });
        let oom_now = oom_kill_rose.then(|| {
            let rel = self
                .modules
                .get(k)
                .map(|st| st.rel.clone())
                .unwrap_or_default();
            self.oom_counters(&rel)
        });
        let Some(st) = self.modules.get_mut(k) else {
            return;
        };
        let oom_cause = oom_now.map(|now| {
            let c = crate::cause::oom_cause::cause(&st.oom.clone().unwrap_or_default(), &now);
            st.oom = Some(now);
            c
        });
        let populated_now = populated && st.populated != Some(true);
        let rise = st.kills.observe(kills, populated_now);
        // Its processes now, for the process events connector to tell their ends by.
        if let (true, Some(x), Some(d)) = (populated, self.exits.as_mut(), st.dir.as_ref())
            && let Ok(pids) = crate::cgroup::tree::members(d, "")
        {
            x.remember(&pids, &x.cgroup_path(&st.rel));
        }
        if report {
            if let Some((v, prev)) = rise {
                let source = crate::cause::attribution::OOMD_KILL_SOURCE;
                let name = crate::cause::attribution::OOMD_KILL;
                out.push(event(k, name, Some(v), prev, Some(source.into())));
                // The processes the kill must end, held to check that it did.
                let pids = st
                    .dir
                    .as_ref()
                    .and_then(|d| crate::cgroup::tree::members(d, "").ok())
                    .unwrap_or_default();
                // The descriptor budget: the checks never take the descriptors the directories
                // need (a module that appears meanwhile must be opened).
                let budgeted = if mutation::active(Control::WatchPidfdsUnbudgeted) {
                    pids.len()
                } else {
                    pids.len().min(room)
                };
                st.kills.expect_kill(&pids[..budgeted]);
                let wanted = pids.len().min(crate::cause::attribution::CONFIRM_HOLD);
                let held = st.kills.held();
                if held < wanted {
                    let mut e = event(k, "events_lost", None, None, None);
                    e.error = Some(format!(
                        "the check of this rise of user.oomd_ooms holds {held} of the {wanted} \
                         processes it would hold: this watch holds at most {} descriptors for \
                         those checks (a quarter of its RLIMIT_NOFILE), or no descriptor was \
                         left; an oomd_kill_unconfirmed of this rise may be missing{}",
                        self.pidfd_budget,
                        if held == 0 {
                            " (none held: the rise is taken at its word)"
                        } else {
                            ""
                        }
                    ));
                    say(out, e);
                }
            }
            if Some(populated) != st.populated {
                let name = if populated { "populated" } else { "emptied" };
                let mut e = event(k, name, None, None, None);
                if !populated {
                    if let Some(why) = st.kills.stop_doubt() {
                        let name = crate::cause::attribution::STOP_UNCONFIRMED;
                        let source = format!(
                            "user.ck_cgroup_stops rose, and {why}: no stop of ck-cgroup's ends a \
                             process so"
                        );
                        out.push(event(k, name, None, None, Some(source)));
                    }
                    e.killed_by = Some(st.kills.killed_by());
                }
                out.push(e);
            }
            for (name, v) in &counters {
                let prev = st.counters.get(name).copied();
                if *v > prev.unwrap_or(0) {
                    let file = if name.starts_with("pids_") {
                        "pids.events"
                    } else {
                        "memory.events"
                    };
                    let mut e = event(k, name, Some(*v), prev, Some(file.into()));
                    if name == "memory_oom_kill" {
                        match &oom_cause {
                            Some(Ok(Some(c))) => e.oom_cause = Some(c.clone()),
                            Some(Ok(None)) | None => {}
                            Some(Err(why)) => e.oom_cause_unknown = Some(why.clone()),
                        }
                    }
                    out.push(e);
                }
            }
        }
        st.populated = Some(populated);
        st.unreadable = None;
        st.counters.extend(counters);
    }
}

impl Watcher<'_> {
    /// When the next check of a rise of `user.oomd_ooms` is due, if any is pending.
    pub fn next_due(&self) -> Option<std::time::Instant> {
        self.modules.values().filter_map(|st| st.kills.due()).min()
    }

    /// The checks that are due: an `oomd_kill_unconfirmed` event for each module whose
    /// processes outlived the kill its mark claimed (value: how many of those held still run).
    pub fn confirm_oomd(&mut self, out: &mut Vec<WatchEvent>) {
        use crate::cause::attribution::{OOMD_KILL_UNCONFIRMED, OOMD_UNCONFIRMED_SOURCE};
        let now = std::time::Instant::now();
        let mut keys: Vec<&Key> = self.modules.keys().collect();
        keys.sort();
        let keys: Vec<Key> = keys.into_iter().cloned().collect();
        for k in keys {
            let Some(st) = self.modules.get_mut(&k) else {
                continue;
            };
            let dir = st.dir.as_ref();
            let members = || dir.and_then(|d| crate::cgroup::tree::members(d, "").ok());
            if let Some(running) = st.kills.confirm(now, members) {
                out.push(event(
                    &k,
                    OOMD_KILL_UNCONFIRMED,
                    Some(running.len() as u64),
                    None,
                    Some(OOMD_UNCONFIRMED_SOURCE.into()),
                ));
            }
        }
    }
}
