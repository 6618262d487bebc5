//! What `watch` reports besides a module's lifetime: its PSI triggers (set when it is followed,
//! reported when `poll(2)` finds them ready) and its memory against a report threshold.

use std::os::unix::io::AsRawFd;

use rustix::event::PollFlags;
use rustix::fs::{AtFlags, OFlags};

use super::modules::{Key, Watcher, inode};
use super::{Armed, WatchEvent, event, pressure_event};
use crate::cgroup::gone::{is_gone, removed};
use crate::cgroup::parse;
use crate::cgroup::wait::join;
use crate::error::{Result, errno_text};
use crate::mutation::{self, Control};
use crate::telemetry::memory_current;
use crate::telemetry::pressure::PsiKind;

impl Watcher<'_> {
    /// Set every PSI trigger on module `k` at `rel` (its directory's inode `ino`). A module that
    /// has gone meanwhile, or is being removed (its file `ENOENT` or `ENODEV`:
    /// `crate::cgroup::gone`), gets none (its directory event reports it); a pressure file that
    /// is not there is a `pressure_unavailable` event; any other refusal is the error: the file
    /// and the kernel's errno.
    pub(super) fn arm(
        &self,
        k: &Key,
        rel: &str,
        ino: Option<u64>,
        out: &mut Vec<WatchEvent>,
    ) -> Result<Vec<Armed>> {
        let mut armed = Vec::new();
        for (idx, t) in self.opts.pressure.iter().enumerate() {
            let errno = match t.arm(self.root.dir(), rel) {
                Ok(fd) => {
                    armed.push(Armed { idx, fd });
                    continue;
                }
                Err(errno) => errno,
            };
            if !self.stays(rel, ino) {
                // The module went (or is going, or was made again) while its triggers were set.
                return Ok(Vec::new());
            }
            // A module being removed loses its files before its directory: `ENOENT`, or
            // `ENODEV` for a file opened as it went. It gets no trigger either.
            if is_gone(errno) && removed(self.root.dir(), rel) {
                return Ok(Vec::new());
            }
            let file = t.resource().file();
            // No such file in a module that stays (`ENODEV`: hidden as it was opened).
            if is_gone(errno) {
                let mut e = pressure_event(k, "pressure_unavailable", t);
                e.error = Some(format!(
                    "{}: the kernel has no {file} for this module (PSI is off for it: \
                     cgroup.pressure 0, or a kernel without PSI); the trigger {t} is not set",
                    errno_text(errno)
                ));
                out.push(e);
                continue;
            }
            return Err(t.refused(&self.root.dir().display_path(&join(rel, file)), errno));
        }
        Ok(armed)
    }

    /// Whether module `rel` stays: its directory is the one followed (inode `ino`) and the kernel
    /// is not removing it. A removal takes the cgroup's files first, `cgroup.events` before the
    /// pressure files (`css_clear_dir`), then the directory, and each pressure file it takes ends
    /// its trigger (`POLLERR`; a trigger set meanwhile finds no file, `ENOENT`): while the
    /// directory is still there, `cgroup.events` gone says the trigger ended with its module.
    fn stays(&self, rel: &str, ino: Option<u64>) -> bool {
        let Ok(dir) = self
            .root
            .dir()
            .open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY)
        else {
            return false;
        };
        if inode(&dir).is_none() || inode(&dir) != ino {
            return false;
        }
        // Mutation: a module whose directory is there stays, its removal under way too.
        mutation::active(Control::PressureEndOfModuleReported)
            || rustix::fs::statat(&dir, "cgroup.events", AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// Triggers that `poll(2)` found ready: `POLLPRI` is a `pressure` event; `POLLERR` (the
    /// cgroup went, or there is no trigger on the descriptor) drops the descriptor, in silence
    /// where its module went or is going ([`Self::stays`]).
    pub(super) fn pressure(
        &mut self,
        ready: Vec<((Key, i32), PollFlags)>,
        out: &mut Vec<WatchEvent>,
    ) {
        for ((k, raw), revents) in ready {
            let Some(st) = self.modules.get_mut(&k) else {
                continue;
            };
            if revents.intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL) {
                let idx = st
                    .triggers
                    .iter()
                    .find(|a| a.fd.as_raw_fd() == raw)
                    .map(|a| a.idx);
                st.triggers.retain(|a| a.fd.as_raw_fd() != raw);
                // Gone with its module (its directory event says so), or taken while the module
                // stays (`cgroup.pressure` 0 hides the files): that is said, not left silent.
                let (rel, ino) = (st.rel.clone(), st.ino);
                if let Some(t) = idx.and_then(|i| self.opts.pressure.get(i))
                    && self.stays(&rel, ino)
                {
                    let mut e = pressure_event(&k, "pressure_unavailable", t);
                    e.error = Some(format!(
                        "the kernel ended the trigger {t} (POLLERR): the module's {} went \
                         (cgroup.pressure 0?)",
                        t.resource().file()
                    ));
                    out.push(e);
                }
                continue;
            }
            if !revents.contains(PollFlags::PRI) {
                continue;
            }
            let Some(t) = st
                .triggers
                .iter()
                .find(|a| a.fd.as_raw_fd() == raw)
                .and_then(|a| self.opts.pressure.get(a.idx))
            else {
                continue;
            };
            // Read once, now: what the kernel's running average says as the trigger fires.
            let figures = self
                .root
                .dir()
                .read_raw(&join(&st.rel, t.resource().file()))
                .ok()
                .map(|text| parse::pressure(&text));
            let mut e = pressure_event(&k, "pressure", t);
            e.avg10 = figures.and_then(|p| match t.kind() {
                PsiKind::Some => p.some_avg10,
                PsiKind::Full => p.full_avg10,
            });
            out.push(e);
        }
    }

    /// The mutation `pressure-sampling`: read every pressure file (instead of waiting for the
    /// kernel to report).
    pub(super) fn sample(&self) {
        for st in self.modules.values() {
            for a in &st.triggers {
                if let Some(t) = self.opts.pressure.get(a.idx) {
                    let _ = self
                        .root
                        .dir()
                        .read_raw(&join(&st.rel, t.resource().file()));
                }
            }
        }
    }

    /// `memory.current` (or the /proc sum) against the threshold; report crossings only.
    pub(super) fn thresholds(&mut self, out: &mut Vec<WatchEvent>) {
        let Ok(list) = self.root.list() else {
            return;
        };
        for m in list {
            let per = m
                .module
                .as_ref()
                .and_then(|id| self.opts.per_module.get(id));
            let Some(&limit) = per.or(self.opts.report_above.as_ref()) else {
                continue;
            };
            let k = (m.layout, m.name.clone());
            let Some(st) = self.modules.get_mut(&k) else {
                continue;
            };
            let mem = memory_current(self.root.dir(), &m.rel());
            let Some(v) = mem.value else {
                continue;
            };
            let above = v > limit;
            if above != st.above {
                st.above = above;
                let name = if above {
                    "memory_above"
                } else {
                    "memory_below"
                };
                let mut e = event(&k, name, Some(v), None, Some(mem.source.clone()));
                e.threshold = Some(limit);
                out.push(e);
            }
        }
    }
}
