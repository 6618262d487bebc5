//! `kill`, `stop` and `prune`: a module's whole tree stopped ([`crate::stop`]) and its directory removed, and what is left described.

use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::Signal;

use super::remove::{Removal, Rmdir, same_dir};
use super::{ModuleEntry, PruneAction, PruneEntry, Root, StopReport};
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::gone::is_gone;
use crate::error::{Error, Result};
use crate::id::DirName;
use crate::layout::{Layout, ModuleName, ModuleRef, ToModuleName};
use crate::mutation::{self, Control};
use crate::stop::{StopOptions, TreeStop, stop_tree};

/// What `prune`'s removal of a module it listed as empty did.
pub(crate) enum Removed {
    /// Removed, or gone already.
    Done,
    /// Not removed: it holds processes now (filled after the listing).
    Populated,
}

/// A stop whose module disappeared before this stop removed it (another stop did): already
/// gone, which is success.
pub(super) fn gone_meanwhile(mut report: StopReport) -> StopReport {
    report.already_gone = true;
    report.tree.empty = true;
    report.removed = false;
    report.error = None;
    report
}

/// `prune`'s decisions over `modules`, the same for every layout: `--keep` ones are kept;
/// populated ones are stopped with `stop` under `kill` and skipped otherwise; empty ones are
/// removed with `remove`; `dry_run` only says what would be done.
pub(crate) fn prune_entries(
    modules: Vec<ModuleEntry>,
    dry_run: bool,
    kill: bool,
    keep: &[ModuleName],
    stop: impl Fn(&ModuleRef) -> Result<StopReport>,
    remove: impl Fn(&ModuleRef) -> Result<Removed>,
) -> Vec<PruneEntry> {
    let mut out = Vec::new();
    for m in modules {
        let mut e = PruneEntry {
            name: m.name.clone(),
            layout: m.layout,
            procs: m.procs,
            action: PruneAction::Kept,
            stop: None,
            error: None,
        };
        let populated = m.procs != Some(0) || m.populated != Some(false);
        let this = ModuleRef {
            layout: m.layout,
            name: m.name.clone(),
        };
        if keep.iter().any(|k| k.names(&this, m.module.as_ref())) {
            e.action = PruneAction::Kept;
        } else if populated && !kill {
            e.action = PruneAction::SkippedPopulated;
        } else if dry_run {
            e.action = if populated {
                PruneAction::WouldKill
            } else {
                PruneAction::WouldRemove
            };
        } else if populated {
            stop_entry(&mut e, &this, &stop);
        } else {
            match remove(&this) {
                Ok(Removed::Done) => e.action = PruneAction::Removed,
                // Filled after the listing: a live module now, stopped only under --kill.
                Ok(Removed::Populated) if kill => stop_entry(&mut e, &this, &stop),
                Ok(Removed::Populated) => e.action = PruneAction::SkippedPopulated,
                Err(err) => {
                    e.action = PruneAction::Failed;
                    e.error = Some(err.to_string());
                }
            }
        }
        out.push(e);
    }
    out
}

pub(super) fn stop_entry(
    e: &mut PruneEntry,
    m: &ModuleRef,
    stop: &impl Fn(&ModuleRef) -> Result<StopReport>,
) {
    // A stop that did not end is an error that carries its report: the entry shows it.
    match stop(m).or_else(Error::into_stop_report) {
        Ok(r) => {
            e.action = if r.ok() {
                PruneAction::Killed
            } else {
                PruneAction::Failed
            };
            e.error = r.error.clone();
            e.stop = Some(r);
        }
        Err(err) => {
            e.action = PruneAction::Failed;
            e.error = Some(err.to_string());
        }
    }
}

/// No new sub-cgroup while the module is stopped: `0` to its `cgroup.max.descendants`, which
/// every `mkdir` below it checks (`EAGAIN`), so that neither its own processes nor a neighbour
/// of the same uid can make sub-directories faster than the removal takes them away (an
/// unprivileged `kill`, at nice 0, lost that race to a Python loop for its whole timeout).
/// The value it had, to put back when the stop fails (`None`: not sealed, as when the file is
/// another uid's).
fn seal(mdir: &CgroupDir) -> Option<String> {
    if mutation::active(Control::StopNoSeal) {
        return None;
    }
    let old = mdir.read_raw("cgroup.max.descendants").ok()?;
    mdir.write_raw("cgroup.max.descendants", "0").ok()?;
    Some(old.trim().to_string())
}

/// A stop that failed leaves the module as it was: its `cgroup.max.descendants` back.
fn unseal(mdir: &CgroupDir, old: Option<String>) {
    if let Some(v) = old {
        let _ = mdir.write_raw("cgroup.max.descendants", &v);
    }
}

/// Stop `mdir`'s tree again with no grace, in the time left before `deadline` (a process that
/// entered after the kill, a directory of the name made again), and add what it did to `report`.
fn restop(
    report: &mut StopReport,
    mdir: &CgroupDir,
    opts: &StopOptions,
    start: Instant,
    deadline: Instant,
) -> Result<()> {
    let again = stop_tree(
        mdir,
        "",
        &StopOptions {
            grace: Duration::ZERO,
            timeout: deadline.saturating_duration_since(Instant::now()),
            ..*opts
        },
    )?;
    merge_again(report, again, start);
    Ok(())
}

/// A further stop of the same module's tree (a late entrant, a directory made again) added to
/// `report`.
fn merge_again(report: &mut StopReport, again: TreeStop, start: Instant) {
    report.tree.killed += again.killed;
    report.tree.empty = again.empty;
    report.tree.outside = again.outside;
    report.tree.waited_ms = crate::stop::ms_since(start);
    if report.tree.method.is_none() {
        report.tree.method = again.method;
    }
    for f in again.fell_through {
        if !report.tree.fell_through.contains(&f) {
            report.tree.fell_through.push(f);
        }
    }
}

fn restored_into(report: &mut StopReport, more: Vec<String>) {
    for r in more {
        if !report.restored.contains(&r) {
            report.restored.push(r);
        }
    }
}

/// The signal [`signal_name`] names `name` (`SIGTERM`, `signal 34`); `None` for other text.
pub fn signal_from_name(name: &str) -> Option<Signal> {
    if let Some(n) = name.strip_prefix("signal ") {
        return n.parse().ok().and_then(Signal::from_named_raw);
    }
    [
        Signal::TERM,
        Signal::INT,
        Signal::HUP,
        Signal::QUIT,
        Signal::USR1,
        Signal::USR2,
        Signal::KILL,
    ]
    .into_iter()
    .find(|s| signal_name(*s) == name)
}

/// `SIGTERM` for [`Signal::TERM`].
pub fn signal_name(sig: Signal) -> String {
    let n = sig.as_raw();
    let name = match sig {
        Signal::TERM => "TERM",
        Signal::INT => "INT",
        Signal::HUP => "HUP",
        Signal::QUIT => "QUIT",
        Signal::USR1 => "USR1",
        Signal::USR2 => "USR2",
        Signal::KILL => "KILL",
        _ => return format!("signal {n}"),
    };
    format!("SIG{name}")
}

impl Root {
    /// SIGKILL the module's whole subtree (the first kill method the kernel supports), wait until
    /// it is empty (at most `timeout`), and remove its directory. See [`Root::stop`] for what is
    /// returned: a kill that did not end is an `Err` carrying its report.
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let report = root.kill("worker-1", std::time::Duration::from_secs(10))?;
    /// assert!(report.ok());
    /// # Ok(())
    /// # }
    /// ```
    pub fn kill(&self, name: impl ToModuleName, timeout: Duration) -> Result<StopReport> {
        self.stop(name, &StopOptions::kill(timeout))
    }

    /// Stop the module's whole tree (`stop_tree`: graceful signal and grace on the whole
    /// subtree, then SIGKILL by the method), then remove its directory depth first.
    ///
    /// Before anything, the modes of the directories on the way to the module, of its
    /// directory, its sub-cgroups and their control files are restored where this process's uid
    /// owns them (a module sharing that uid can `chmod 000` them). The module is then opened
    /// once, and every step goes through that handle, relative to it: each `rmdir` removes the
    /// directory that was stopped, never one made under the same name meanwhile. A process that
    /// enters the module after the kill (an `exec` racing it) keeps `rmdir` busy: it is killed
    /// again, until the timeout. Success is re-checked after the last write: every process the
    /// stop listed in the tree must have exited (not only left it: [`TreeStop::outside`](crate::stop::TreeStop::outside)), and
    /// no directory of the name may be there; one made again while the stop ran (a sibling's
    /// `mkdir -p` into the module, an `exec` racing the kill) is stopped and removed in turn,
    /// until none is there or the timeout, when the stop fails naming it.
    ///
    /// A module that does not exist, or that disappears while it is being stopped (another
    /// stop removed it), is reported as already gone (`Ok`, [`StopReport::already_gone`]). A
    /// module whose subtree holds the calling process is refused
    /// ([`ErrorKind::ModuleHoldsCaller`](crate::error::ErrorKind::ModuleHoldsCaller), exit 2). A stop
    /// that did not end with the tree empty and the directory removed is an `Err` of kind
    /// [`ErrorKind::StillPopulated`](crate::error::ErrorKind::StillPopulated) (or, for a removal that
    /// failed otherwise, the kind of its errno) whose message is the report's `error` and which
    /// carries the report: [`Error::stop_report`], [`Error::into_stop_report`]. So an `Ok`
    /// report is always [`StopReport::ok`].
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use ck_cgroup::{ErrorKind, Root};
    /// use ck_cgroup::stop::StopOptions;
    ///
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let opts = StopOptions {
    ///     grace: Duration::from_secs(2),
    ///     ..StopOptions::default()
    /// };
    /// match root.stop("worker-1", &opts) {
    ///     Ok(r) if r.already_gone => println!("nothing to stop"),
    ///     Ok(r) => println!("killed {} in {} ms", r.tree.killed, r.tree.waited_ms),
    ///     Err(e) if e.kind() == ErrorKind::StillPopulated => {
    ///         let left = e.stop_report().and_then(|r| r.path.clone());
    ///         eprintln!("{e} ({left:?} is left)");
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// In a process that spawned modules, a stop of a module that another thread is already
    /// stopping (a supervisor's [`reap`](Self::reap) beside an operator thread's stop) waits for
    /// that stop and returns its report: both say the whole stop, never a half of it each.
    pub fn stop(&self, name: impl ToModuleName, opts: &StopOptions) -> Result<StopReport> {
        let name = name.to_module_name()?;
        if !crate::cause::stops_here::spawned_here() || mutation::active(Control::StopsSplitReport)
        {
            return self.stop_alone(name, opts);
        }
        // Looked up once: the stop below takes what was found here.
        let restored = self.restore_layout_modes();
        let found = self.find(&name)?;
        let turn = found
            .as_ref()
            .and_then(|m| self.dir.open_dir(&m.rel()).ok())
            .and_then(|d| crate::cause::stops_here::cgroup_id(&d))
            .map(super::stop_once::take_turn);
        match turn {
            Some(super::stop_once::Turn::Joined(Some(r))) => {
                let mut r = *r;
                r.module = name;
                Ok(r)
            }
            Some(super::stop_once::Turn::Lead(leader)) => {
                let result = self.stop_found(name, opts, restored, found);
                leader.finish(match &result {
                    Ok(r) => Some(r.clone()),
                    Err(e) => e.stop_report().cloned(),
                });
                result
            }
            _ => self.stop_found(name, opts, restored, found),
        }
    }

    /// [`stop`](Self::stop) of this call alone.
    fn stop_alone(&self, name: ModuleName, opts: &StopOptions) -> Result<StopReport> {
        let restored = self.restore_layout_modes();
        let found = self.find(&name)?;
        self.stop_found(name, opts, restored, found)
    }

    /// The stop of `found` (`None`: `name` named no module), the layout's modes `restored`
    /// already.
    fn stop_found(
        &self,
        name: ModuleName,
        opts: &StopOptions,
        mut restored: Vec<String>,
        found: Option<ModuleRef>,
    ) -> Result<StopReport> {
        let start = Instant::now();
        let _boost = crate::stop::Boost::new();
        let mut report = StopReport::gone(&name, opts);
        let Some(m) = found else {
            return Ok(report);
        };
        // The directory found (a module id may have named a daemon's `m-<id>_<n>`): the re-check
        // below looks for that directory again (its layout and name), never for another
        // directory the id names.
        let found = m.clone();
        let rel = m.rel();
        let path = self.dir.display_path(&rel);
        restored.extend(crate::cgroup::tree::restore_modes(&self.dir, &rel));
        let mdir = match self.dir.open_dir(&rel) {
            Ok(d) => d,
            Err(e) if is_gone(e) => return Ok(report),
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        report.already_gone = false;
        report.layout = Some(m.layout);
        report.path = Some(path.clone());
        report.restored = restored;
        crate::cause::stops_here::record(&mdir);
        let unkilled = crate::cause::counters::unkilled_despite_oomd(&mdir);
        if !unkilled.is_empty() && !mutation::active(Control::MarksBelieved) {
            report.marks_unconfirmed.push(
                crate::cause::death_cause::UnconfirmedMark::oomd_unkilled(&unkilled),
            );
        }
        crate::cgroup::oomd::mark_stop(&mdir, "");
        let sealed = seal(&mdir);
        let deadline = start + opts.grace + opts.timeout;
        let first = stop_tree(&mdir, "", opts).and_then(|tree| {
            report.tree = tree;
            self.finish_stop(report, m, &mdir, opts, start, deadline)
        });
        let mut report = match first {
            Ok(r) => r,
            Err(e) => {
                unseal(&mdir, sealed);
                return Err(e);
            }
        };
        let (gone0, removed0, kills0, left0) = (
            report.already_gone,
            report.removed,
            report.kills,
            report.memory_left,
        );
        // Re-checked after the last write: a directory of the name made while this stop ran
        // (a sibling's `mkdir -p` into the module, an exec racing the kill) is stopped and
        // removed too, until none is there or the deadline; then the stop failed, naming it.
        loop {
            // Mutation: the re-check looks the name up again, as `find` does, so that a stop of
            // `subc-modules/web` goes on to stop the daemon's `m-web_5f2`.
            let m = if mutation::active(Control::RecheckById) {
                match self.find(&found.name)? {
                    Some(m) => m,
                    None => return Ok(report),
                }
            } else {
                found.clone()
            };
            let rel = m.rel();
            if !self.dir.is_dir(&rel)? {
                return Ok(report);
            }
            let again_path = self.dir.display_path(&rel);
            let mdir = match self.dir.open_dir(&rel) {
                Ok(d) => d,
                Err(e) if is_gone(e) => continue,
                Err(e) => return Err(Error::io("open", &again_path, e)),
            };
            if Instant::now() >= deadline {
                report.removed = false;
                report.error = Some(format!(
                    "{} was made again while it was being stopped and is still there after {} ms",
                    again_path.display(),
                    crate::stop::ms_since(start)
                ));
                return Err(Error::stop_failed(report, None));
            }
            restored_into(
                &mut report,
                crate::cgroup::tree::restore_modes(&self.dir, &rel),
            );
            let sealed = seal(&mdir);
            restop(&mut report, &mdir, opts, start, deadline)?;
            report = match self.finish_stop(report, m, &mdir, opts, start, deadline) {
                Ok(r) => r,
                Err(e) => {
                    unseal(&mdir, sealed);
                    return Err(e);
                }
            };
            // What this stop did to the module it found first stands, and who killed in it.
            report.already_gone = gone0;
            report.removed = removed0;
            report.kills = kills0;
            report.memory_left = left0;
        }
    }

    /// The rest of a stop whose tree was stopped (`report.tree`): the tree empty, remove the
    /// directory; a process that entered after the kill keeps `rmdir` busy: kill again, until
    /// `deadline`.
    fn finish_stop(
        &self,
        mut report: StopReport,
        m: ModuleRef,
        mdir: &CgroupDir,
        opts: &StopOptions,
        start: Instant,
        deadline: Instant,
    ) -> Result<StopReport> {
        loop {
            if !report.tree.empty {
                if report.tree.outside.is_empty() && self.vanished(&m, mdir) {
                    return Ok(gone_meanwhile(report));
                }
                report.error = Some(crate::stop::not_ended(mdir, "", &report.tree));
                return Err(Error::stop_failed(report, None));
            }
            // Before the rmdir takes them with the directory.
            report.kills = crate::cause::counters::kill_counters(mdir, "");
            report.memory_left = crate::cause::memory_left::MemoryLeft::read(mdir, "");
            match self.remove_dir(&m, mdir) {
                Ok(Rmdir::Removed) => {
                    report.removed = !mutation::active(Control::NoRmdir);
                    return Ok(report);
                }
                Ok(Rmdir::Vanished) => return Ok(gone_meanwhile(report)),
                // Populated again: a process entered after the kill. Kill again.
                Err(e)
                    if e.errno() == Some(Errno::BUSY)
                        && Instant::now() < deadline
                        && !mutation::active(Control::NoRekill) =>
                {
                    restop(&mut report, mdir, opts, start, deadline)?;
                }
                Err(e) => {
                    report.error = Some(e.to_string());
                    return Err(Error::stop_failed(report, e.errno()));
                }
            }
        }
    }

    /// Module `m` (open as `mdir`) is no longer in its place: removed by someone else.
    pub(super) fn vanished(&self, m: &ModuleRef, mdir: &CgroupDir) -> bool {
        match self.dir.open_beneath(
            m.layout.dir(),
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
        ) {
            Ok(parent) => !same_dir(&parent, m.name.text(), mdir),
            Err(_) => true,
        }
    }

    /// Remove every empty module that is not in `keep`; with `kill`, also stop and remove the
    /// populated ones (the orphans of a daemon that died). With `dry_run`, change nothing and say
    /// what would be done. Both layouts, ours and the daemon's, are pruned. Unless `dry_run`,
    /// the modes of the modules' directories and control files are restored first where this
    /// process's uid owns them, so that what a module did to them neither hides it from the
    /// listing nor defeats the stop. A module filled after the listing (a spawn racing the
    /// prune) is stopped under `kill`, left alone otherwise; one removed meanwhile is gone.
    pub fn prune(
        &self,
        dry_run: bool,
        kill: bool,
        keep: &[ModuleName],
        opts: &StopOptions,
    ) -> Result<Vec<PruneEntry>> {
        if !dry_run {
            self.restore_layout_modes();
            for layout in [Layout::Ck, Layout::Daemon] {
                for name in self.dir.subdirs(layout.dir())? {
                    if let Ok(name) = DirName::from_text(&name) {
                        let m = ModuleRef { layout, name };
                        crate::cgroup::tree::restore_modes(&self.dir, &m.rel());
                    }
                }
            }
        }
        Ok(prune_entries(
            self.list()?,
            dry_run,
            kill,
            keep,
            |m| self.stop(m, opts),
            |m| match self.remove_module(&ModuleName::from(m))? {
                Removal::Gone | Removal::Removed(_) => Ok(Removed::Done),
                Removal::Populated(..) => Ok(Removed::Populated),
            },
        ))
    }
}

#[cfg(test)]
mod signal_name_tests {
    use super::*;

    /// A report's signal text is read back into the signal it names, every one a stop sends.
    #[test]
    fn a_reports_signal_name_reads_back_as_its_signal() {
        for s in [
            Signal::TERM,
            Signal::INT,
            Signal::HUP,
            Signal::QUIT,
            Signal::USR1,
            Signal::USR2,
            Signal::KILL,
            Signal::WINCH,
        ] {
            assert_eq!(
                signal_from_name(&signal_name(s)),
                Some(s),
                "{}",
                signal_name(s)
            );
        }
        assert_eq!(signal_from_name("TERM"), None);
        assert_eq!(signal_from_name("signal x"), None);
    }
}
