//! `kill` and `stop`: a module's whole tree stopped ([`crate::stop`]) and its directory removed,
//! and what is left described. One stop is a [`Stop`] value that owns its report.

use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::Signal;

use super::remove::same_dir;
use super::{Root, StopReport};
use crate::cause::counters::kill_counters;
use crate::cause::memory_left::MemoryLeft;
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::gone::is_gone;
use crate::cgroup::tree::{Removal, restore_modes};
use crate::error::{Error, Result};
use crate::layout::{ModuleName, ModuleRef, ToModuleName};
use crate::mutation::{self, Control};
use crate::stop::{StopOptions, stop_tree};

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
        restored: Vec<String>,
        found: Option<ModuleRef>,
    ) -> Result<StopReport> {
        let start = Instant::now();
        let _boost = crate::stop::Boost::new();
        let report = StopReport::gone(&name, opts);
        let Some(m) = found else {
            return Ok(report);
        };
        let stop = Stop {
            root: self,
            opts,
            start,
            deadline: start + opts.grace + opts.timeout,
            report,
        };
        stop.run(m, restored)
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
}

/// One stop of a module: it owns the report it fills as it goes. The directory found first is
/// stopped and removed ([`Stop::first`]); then each directory of that name made again while the
/// stop ran is ([`Stop::again`]), until none is there or the deadline. What the stop did to the
/// directory it found first stands in the report (gone or removed, the kill counters and the
/// memory left read before its removal); a directory made again adds its kills, and its
/// failure.
struct Stop<'a> {
    root: &'a Root,
    opts: &'a StopOptions,
    start: Instant,
    /// The end of the grace and the timeout, for every directory of the stop.
    deadline: Instant,
    report: StopReport,
}

/// Why a stop did not end: an error of its own (a file that could not be opened, a walk that
/// failed), or a failure that the report says (its `error` set), which [`Stop::run`] returns as
/// [`Error::stop_failed`] carrying the report, with the errno of the removal that failed if any.
enum Failed {
    Error(Error),
    Reported(Option<Errno>),
}

/// A step of a stop: done, or [`Failed`].
type Step<T = ()> = std::result::Result<T, Failed>;

impl From<Error> for Failed {
    fn from(e: Error) -> Failed {
        Failed::Error(e)
    }
}

impl Stop<'_> {
    /// Stop the module found as `found` and every directory of its name made again meanwhile.
    fn run(mut self, found: ModuleRef, restored: Vec<String>) -> Result<StopReport> {
        // A module gone before it was opened is gone: nothing is looked for again.
        let ended = match self.first(&found, restored) {
            Ok(true) => self.again(&found),
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        };
        match ended {
            Ok(()) => Ok(self.report),
            Err(Failed::Error(e)) => Err(e),
            Err(Failed::Reported(errno)) => Err(Error::stop_failed(self.report, errno)),
        }
    }

    /// The directory found (a module id may have named a daemon's `m-<id>_<n>`): opened once,
    /// marked, sealed, its tree stopped and the directory removed. `false` where it was gone
    /// before it could be opened.
    fn first(&mut self, m: &ModuleRef, mut restored: Vec<String>) -> Step<bool> {
        let rel = m.rel();
        let path = self.root.dir.display_path(&rel);
        restored.extend(restore_modes(&self.root.dir, &rel));
        let mdir = match self.root.dir.open_dir(&rel) {
            Ok(d) => d,
            Err(e) if is_gone(e) => return Ok(false),
            Err(e) => return Err(Error::io("open", &path, e).into()),
        };
        self.report.already_gone = false;
        self.report.layout = Some(m.layout);
        self.report.path = Some(path);
        self.report.restored = restored;
        crate::cause::stops_here::record(&mdir);
        let unkilled = crate::cause::counters::unkilled_despite_oomd(&mdir);
        if !unkilled.is_empty() && !mutation::active(Control::MarksBelieved) {
            self.report.marks_unconfirmed.push(
                crate::cause::death_cause::UnconfirmedMark::oomd_unkilled(&unkilled),
            );
        }
        crate::cgroup::oomd::mark_stop(&mdir, "");
        self.sealed(&mdir, |stop| {
            stop.report.tree = stop_tree(&mdir, "", stop.opts)?;
            stop.remove(m, &mdir, true)
        })?;
        Ok(true)
    }

    /// Re-checked after the last write: a directory of the name made while this stop ran (a
    /// sibling's `mkdir -p` into the module, an exec racing the kill) is stopped and removed
    /// too, until none is there or the deadline; then the stop failed, naming it. The re-check
    /// looks for the directory found first again (its layout and name), never for another
    /// directory the id names.
    fn again(&mut self, found: &ModuleRef) -> Step {
        loop {
            // Mutation: the re-check looks the name up again, as `find` does, so that a stop of
            // `subc-modules/web` goes on to stop the daemon's `m-web_5f2`.
            let m = if mutation::active(Control::RecheckById) {
                match self.root.find(&found.name)? {
                    Some(m) => m,
                    None => return Ok(()),
                }
            } else {
                found.clone()
            };
            let rel = m.rel();
            if !self.root.dir.is_dir(&rel)? {
                return Ok(());
            }
            let path = self.root.dir.display_path(&rel);
            let mdir = match self.root.dir.open_dir(&rel) {
                Ok(d) => d,
                Err(e) if is_gone(e) => continue,
                Err(e) => return Err(Error::io("open", &path, e).into()),
            };
            if Instant::now() >= self.deadline {
                self.report.removed = false;
                self.report.error = Some(format!(
                    "{} was made again while it was being stopped and is still there after {} ms",
                    path.display(),
                    crate::stop::ms_since(self.start)
                ));
                return Err(Failed::Reported(None));
            }
            for r in restore_modes(&self.root.dir, &rel) {
                if !self.report.restored.contains(&r) {
                    self.report.restored.push(r);
                }
            }
            self.sealed(&mdir, |stop| {
                stop.restop(&mdir)?;
                stop.remove(&m, &mdir, false)
            })?;
        }
    }

    /// `step` with `mdir` sealed ([`seal`]), unsealed again if it fails: a stop that failed
    /// leaves the module as it was.
    fn sealed(&mut self, mdir: &CgroupDir, step: impl FnOnce(&mut Self) -> Step) -> Step {
        let old = seal(mdir);
        let done = step(self);
        if done.is_err() {
            unseal(mdir, old);
        }
        done
    }

    /// The rest of the stop of `m`, open as `mdir`, whose tree was stopped (`report.tree`): the
    /// tree empty, remove the directory; a process that entered after the kill keeps `rmdir`
    /// busy: kill again, until the deadline. Only the directory found `first` sets what the
    /// report says of the module's end: gone or removed, and the counters read before its
    /// removal.
    fn remove(&mut self, m: &ModuleRef, mdir: &CgroupDir, first: bool) -> Step {
        loop {
            if !self.report.tree.empty {
                if self.report.tree.outside.is_empty() && self.root.vanished(m, mdir) {
                    self.gone_meanwhile(first);
                    return Ok(());
                }
                self.report.error = Some(crate::stop::not_ended(mdir, "", &self.report.tree));
                return Err(Failed::Reported(None));
            }
            if first {
                // Before the rmdir takes them with the directory.
                self.report.kills = kill_counters(mdir, "");
                self.report.memory_left = MemoryLeft::read(mdir, "");
            }
            match self.root.remove_dir(m, mdir) {
                Ok(Removal::Removed) => {
                    if first {
                        self.report.removed = !mutation::active(Control::NoRmdir);
                    }
                    return Ok(());
                }
                Ok(_) => {
                    self.gone_meanwhile(first);
                    return Ok(());
                }
                // Populated again: a process entered after the kill. Kill again.
                Err(e)
                    if e.errno() == Some(Errno::BUSY)
                        && Instant::now() < self.deadline
                        && !mutation::active(Control::NoRekill) =>
                {
                    self.restop(mdir)?;
                }
                Err(e) => {
                    self.report.error = Some(e.to_string());
                    return Err(Failed::Reported(e.errno()));
                }
            }
        }
    }

    /// The directory disappeared before this stop removed it (another stop did): already gone,
    /// which is success; said of the module only for the directory found `first`.
    fn gone_meanwhile(&mut self, first: bool) {
        if first {
            self.report.already_gone = true;
            self.report.removed = false;
        }
        self.report.tree.empty = true;
        self.report.error = None;
    }

    /// Stop `mdir`'s tree again with no grace, in the time left before the deadline (a process
    /// that entered after the kill, a directory of the name made again), and add what it did to
    /// the report.
    fn restop(&mut self, mdir: &CgroupDir) -> Result<()> {
        let again = stop_tree(
            mdir,
            "",
            &StopOptions {
                grace: Duration::ZERO,
                timeout: self.deadline.saturating_duration_since(Instant::now()),
                ..*self.opts
            },
        )?;
        let tree = &mut self.report.tree;
        tree.killed += again.killed;
        tree.empty = again.empty;
        tree.outside = again.outside;
        tree.waited_ms = crate::stop::ms_since(self.start);
        if tree.method.is_none() {
            tree.method = again.method;
        }
        for f in again.fell_through {
            if !tree.fell_through.contains(&f) {
                tree.fell_through.push(f);
            }
        }
        Ok(())
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
