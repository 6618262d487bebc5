//! A module's death, for a supervisor's restart budget: [`Root::death`] waits for the main
//! process a [`Root::spawn`] started and tells why it died ([`Cause`]), counted from the spawn
//! on; [`Root::reap`] then stops what the process left behind and removes the module.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use rustix::io::Errno;
use rustix::process::Signal;
use serde::{Deserialize, Serialize};

use super::{Root, StopReport};
use crate::cause::death_cause::{self, Cause};
use crate::cgroup::dir::CgroupDir;
use crate::error::{Error, Result};
use crate::id::DirName;
use crate::layout::{Layout, ModuleName};
use crate::mutation::{self, Control};
use crate::spawn::ModuleChild;
use crate::stop::StopOptions;

/// How a module's main process died, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Death {
    /// The module's directory name (its id in our layout): the name type every call that takes
    /// a module accepts; in JSON its shown form, as every report's.
    pub module: DirName,
    /// The exit code, where it exited; `null` where a signal killed it.
    pub exit_code: Option<i32>,
    /// The signal that killed it (`SIGKILL`); `null` where it exited. As a [`Signal`]:
    /// [`signal_kind`](Self::signal_kind).
    pub signal: Option<String>,
    /// Why it died, from what rose on the module and above it since the spawn.
    pub cause: Cause,
    /// Whether a supervisor charges this death to the module's restart budget
    /// ([`Cause::charged`]): `None` where the cause is unknown.
    pub charged: Option<bool>,
    /// The processes still in the module when the death was read (children and orphans it left;
    /// the init of its PID namespace not counted: it lives on until the namespace is empty, and
    /// the stop that follows counts it in [`TreeStop::killed`](crate::stop::TreeStop::killed)); `null` where they could not be
    /// listed.
    pub survivors: Option<Vec<u32>>,
    /// The marks that rose but that the death does not agree with (a module of the daemon's uid
    /// can raise `user.ck_cgroup_stops` and `user.oomd_ooms` itself): not believed, the cause
    /// told as if they had not risen ([`death_cause::judge`]). Empty where every mark that rose
    /// was believed; absent in JSON written before it existed.
    #[serde(default)]
    pub marks_unconfirmed: Vec<death_cause::UnconfirmedMark>,
}

impl Death {
    /// The signal that killed it as the [`Signal`] the calls take (`signal` holds its name, as
    /// the JSON has it); `None` where it exited, or for a number that is no named signal.
    pub fn signal_kind(&self) -> Option<Signal> {
        let name = self.signal.as_deref()?;
        Signal::from_named_raw(signal_number(name))
    }

    /// The exit status as [`std::process::ExitStatus`].
    pub fn status(&self) -> ExitStatus {
        match (self.exit_code, &self.signal) {
            (Some(code), _) => ExitStatus::from_raw((code & 0xff) << 8),
            (None, Some(sig)) => ExitStatus::from_raw(signal_number(sig)),
            (None, None) => ExitStatus::from_raw(0),
        }
    }
}

/// The number of a signal as [`death_cause::signal_name`] names it.
fn signal_number(name: &str) -> i32 {
    name.strip_prefix("signal ")
        .and_then(|n| n.parse().ok())
        .or_else(|| (1..=31).find(|n| death_cause::signal_name(*n) == name))
        .unwrap_or(0)
}

/// A death and the stop that followed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Reaped {
    /// How the main process died, and why.
    pub death: Death,
    /// The stop of what it left and the module's removal (its `error` says what did not end).
    pub stop: StopReport,
}

impl Root {
    /// Wait for the main process of `child` (spawned by [`Root::spawn`] or
    /// [`Root::spawn_with_fallback`] of this root) to exit, and tell why it died: the
    /// [`Cause`] from what rose, between the spawn and now, on the module's directory and on
    /// every directory above it (the kernel's `memory.events` and `memory.events.local`,
    /// systemd-oomd's `user.oomd_ooms`, ck-cgroup's `user.ck_cgroup_stops`; see
    /// [`death_cause`] for the order), and the processes it left in the module. Nothing is
    /// stopped: [`reap`](Self::reap) does that too.
    ///
    /// The module's marks are read through the handle the spawn kept, so a death whose module a
    /// stop already removed (an operator's `kill`) is still told (`Stopped`). A child that was
    /// not spawned by a `Root` is bad input.
    pub fn death(&self, child: &mut ModuleChild) -> Result<Death> {
        let status = child
            .wait()
            .map_err(|e| Error::failed(format!("failed to wait for pid {}: {e}", child.id())))?;
        let Some(base) = child.baseline.as_deref() else {
            return Err(Error::bad_input(
                "the child was not spawned by Root::spawn: no baseline to tell its death against",
            ));
        };
        let now = crate::cause::death_cause::DeathCounters::read(
            &self.dir,
            &base.rel,
            &base.dir,
            self.mount().as_ref(),
        );
        let code = status.code();
        let signal = status.signal();
        let init = child.in_pid_namespace().then(|| child.id());
        let survivors = match crate::cgroup::tree::members(&base.dir, "") {
            Ok(pids) => Some(pids.into_iter().filter(|p| Some(*p) != init).collect()),
            // Removed already (a stop ended it): nothing is left in it.
            Err(e) if e.errno() == Some(Errno::NOENT) => Some(Vec::new()),
            Err(_) => None,
        };
        // A stop of this process's that began while the main process was in the module.
        let stopped_here = base.stops_here.is_some_and(|(id, since)| {
            crate::cause::stops_here::stopped_while_in(id, since, child.id())
        });
        let mount = self.mount();
        let mut survivor_under = |path: &str| self.survivor_under(mount.as_ref(), path, base);
        let verdict = death_cause::judge(
            code,
            signal,
            &base.counters,
            &now,
            stopped_here,
            &mut survivor_under,
        );
        let cause = verdict.cause;
        Ok(Death {
            module: DirName::from_text(base.rel.rsplit('/').next().unwrap_or(&base.rel))?,
            exit_code: code,
            signal: signal.map(death_cause::signal_name),
            charged: cause.charged(),
            cause,
            survivors,
            marks_unconfirmed: verdict.unconfirmed,
        })
    }

    /// A process under the ancestor `path` (this root, a directory above the module beneath it,
    /// or one above the root beneath the cgroup2 mount) that started before the spawn of `base`
    /// and still runs; `None` where there is none or the ancestor cannot be walked.
    fn survivor_under(
        &self,
        mount: Option<&CgroupDir>,
        path: &str,
        base: &crate::spawn::Baseline,
    ) -> Option<u32> {
        let path = std::path::Path::new(path);
        let (dir, rel) = if let Ok(rel) = path.strip_prefix(self.dir.path()) {
            (&self.dir, rel)
        } else {
            let m = mount?;
            (m, path.strip_prefix(m.path()).ok()?)
        };
        let pids = crate::cgroup::tree::members(dir, rel.to_str()?).ok()?;
        pids.into_iter().find(|&pid| {
            crate::cgroup::procfs::start_ticks(pid).is_some_and(|t| t < base.spawned_ticks)
        })
    }

    /// [`death`](Self::death), then the stop of what is left of the module by `opts` and its
    /// removal ([`Root::stop`]), then, with a PID namespace, the init reaped
    /// ([`ModuleChild::wait_init`]). A stop that did not end is not an `Err`: its report's
    /// `error` says so ([`StopReport::ok`]), beside the death.
    ///
    /// ```no_run
    /// use ck_cgroup::{ModuleId, Root, spawn::ModuleCommand, stop::StopOptions};
    ///
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let id = ModuleId::new("worker-1")?;
    /// let mut child = root.spawn(&id, &ModuleCommand::new("/usr/bin/worker"))?;
    /// let r = root.reap(&mut child, &StopOptions::default())?;
    /// match r.death.charged {
    ///     Some(true) => println!("{}: its own fault ({:?})", id, r.death.cause),
    ///     Some(false) => println!("{}: not its fault ({:?})", id, r.death.cause),
    ///     None => println!("{}: unknown ({:?})", id, r.death.cause),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn reap(&self, child: &mut ModuleChild, opts: &StopOptions) -> Result<Reaped> {
        let death = self.death(child)?;
        // The module the spawn made, ours by its path: a directory of the same name in the
        // daemon's layout is not it.
        let module = ModuleName {
            layout: Some(Layout::Ck),
            name: death.module.clone(),
        };
        let stop = match child.baseline.as_deref() {
            Some(base) if self.dir.is_dir(&base.rel)? => {
                self.stop(&module, opts).or_else(Error::into_stop_report)?
            }
            // Removed already: by a stop of this process (an operator thread's), whose report
            // is the whole stop; else by another process.
            Some(base) => match crate::cause::stops_here::cgroup_id(&base.dir)
                .filter(|_| !mutation::active(Control::StopsSplitReport))
                .and_then(super::stop_once::finished)
            {
                Some(mut r) => {
                    r.module = module;
                    r
                }
                None => StopReport::gone(&module, opts),
            },
            None => StopReport::gone(&module, opts),
        };
        if child.in_pid_namespace() && stop.ok() {
            let _ = child.wait_init();
        }
        Ok(Reaped { death, stop })
    }
}
