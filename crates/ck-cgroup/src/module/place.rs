//! Listing and entering modules (finding one is `Root::find` in `mod.rs`); `place` (moving existing processes) and `spawn` (starting a program inside a module with no window between spawn and placement).

use std::os::unix::io::OwnedFd;
use std::path::PathBuf;

use rustix::io::Errno;

use super::{ModuleEntry, PlaceReport, Root};
use crate::cause::death_cause::DeathCounters;
use crate::cgroup::parse;
use crate::cgroup::tree::members;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::id::{DirName, ModuleId};
use crate::layout::{Layout, MODULES_DIR, ModuleRef};
use crate::mutation::{self, Control};
use crate::spawn::Fallback;

/// Check that `pid` may be placed in a module; return a pidfd on it, held until the move.
///
/// Refused (bad input, one line naming the problem and the fix): no such process, PID 1, this
/// process, a thread id that is not its thread group's leader (`Tgid:` in `/proc/<pid>/status`;
/// writing it to `cgroup.procs` would move its whole process), a kernel thread (`PF_KTHREAD` in
/// `/proc/<pid>/stat`), a zombie. The pidfd is opened first and checked to be running after
/// `/proc` was read, so what was read is about the process the pidfd names.
pub(crate) fn placeable(pid: u32) -> Result<OwnedFd> {
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let refuse = |why: String| Error::bad_input(format!("refusing to place pid {pid}: {why}"));
    let none = || {
        Error::bad_input(format!(
            "no process with pid {pid}: pass the pids of running processes"
        ))
        .with_kind(crate::error::ErrorKind::NoSuchProcess)
    };
    if pid == std::process::id() {
        return Err(refuse(
            "it is this ck-cgroup process; place the module's own processes, or start one in the module with `ck-cgroup exec`".into(),
        ));
    }
    if pid == 1 {
        return Err(refuse(
            "it is PID 1, the init of this PID namespace, which must stay where it is; place the module's own processes".into(),
        ));
    }
    let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return Err(none());
    };
    let pidfd = match pidfd_open(p, PidfdFlags::empty()) {
        Ok(fd) => Some(fd),
        Err(Errno::SRCH) => return Err(none()),
        // A thread id that is not its group's leader (EINVAL before Linux 6.9, ENOENT since):
        // found by its Tgid below.
        Err(Errno::INVAL) | Err(Errno::NOENT) => None,
        Err(e) => return Err(Error::io("pidfd_open", format!("/proc/{pid}"), e)),
    };
    let read = |file: &str| crate::cgroup::procfs::read_text(pid, file).ok();
    let (Some(status), Some(stat)) = (read("status"), read("stat")) else {
        return Err(none());
    };
    match parse::proc_status_tgid(&status) {
        Some(tgid) if tgid != pid => {
            return Err(refuse(format!(
                "it is a thread of process {tgid}, not a process; place {tgid} (its threads move with it)"
            )));
        }
        Some(_) => {}
        None => return Err(none()),
    }
    let Some(st) = parse::proc_stat(&stat) else {
        return Err(none());
    };
    let comm = stat
        .split_once('(')
        .and_then(|(_, r)| r.rsplit_once(')'))
        .map_or("?", |(c, _)| c);
    if st.kernel_thread() {
        return Err(refuse(format!(
            "it is a kernel thread ({comm}), which cannot be moved into a module; place user processes only"
        )));
    }
    if st.exited() {
        return Err(refuse(format!(
            "it is a zombie ({comm} has exited and waits for its parent {} to reap it); there is nothing left to move",
            st.ppid
        )));
    }
    match pidfd {
        Some(fd) if running(&fd) => Ok(fd),
        Some(_) => Err(none()),
        // pidfd_open refused a leader: it exited in between (or an older kernel's EINVAL).
        None => Err(none()),
    }
}

/// The pidfd's process has not exited (a pidfd polls readable once it has).
pub(super) fn running(pidfd: &OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&now)), Ok(0))
}

pub(super) fn exited_meanwhile(pid: u32) -> Error {
    Error::failed(format!(
        "pid {pid} exited while it was being placed: it is not in the module (run the command again with the pids that still run)"
    ))
    .with_kind(crate::error::ErrorKind::NoSuchProcess)
}

impl Root {
    /// Move existing processes into the module (made if needed). Every pid is checked before
    /// anything is made or moved (`placeable`): it must name a running process that is not
    /// PID 1, not this process, not a kernel thread, not a zombie, and not a thread that is not
    /// its process's leader; any other is refused as bad input (exit 2), nothing made, nothing
    /// moved. A pidfd is held for each from its check on, and the pid is moved only while the
    /// pidfd's process still runs; after the move it is checked again, so a pid that exited and
    /// was reused in between is reported, not counted as placed. The moves are then all or
    /// nothing as far as the kernel allows: a move that fails (exit 1) names the pids moved
    /// before it, and a module made now that received none is removed again.
    pub fn place(&self, id: &ModuleId, pids: &[u32]) -> Result<PlaceReport> {
        let mut checked: Vec<(u32, OwnedFd)> = Vec::with_capacity(pids.len());
        for &pid in pids {
            if !checked.iter().any(|(p, _)| *p == pid) {
                checked.push((pid, placeable(pid)?));
            }
        }
        let _lock = self.placement_lock(false)?;
        let created = self.create(id)?;
        let module = ModuleRef::ck(id).rel();
        let rel = join(&module, "cgroup.procs");
        let mut placed = Vec::with_capacity(checked.len());
        for (pid, pidfd) in &checked {
            let moved = if running(pidfd) {
                self.move_pid(&rel, *pid).and_then(|()| {
                    if running(pidfd) {
                        Ok(())
                    } else {
                        Err(exited_meanwhile(*pid))
                    }
                })
            } else {
                Err(exited_meanwhile(*pid))
            };
            if let Err(e) = moved {
                if placed.is_empty() {
                    if created.created {
                        // Nothing moved: leave nothing made.
                        let _ = self.dir.rmdir_raw(&module);
                    }
                    return Err(e);
                }
                let done: Vec<String> = placed.iter().map(u32::to_string).collect();
                return Err(Error::failed(format!(
                    "{e}; already placed in {}: {}",
                    created.path.display(),
                    done.join(" ")
                )));
            }
            placed.push(*pid);
        }
        Ok(PlaceReport {
            module: id.clone(),
            path: created.path,
            placed,
        })
    }

    pub(super) fn move_pid(&self, procs_rel: &str, pid: u32) -> Result<()> {
        if mutation::active(Control::NoPlacement) {
            return Ok(());
        }
        self.dir.write(procs_rel, &pid.to_string())
    }

    /// Move the calling process into the module (made if needed): what `exec` does before
    /// `execve(2)`, so the module's process is the pid the daemon spawned.
    pub fn enter(&self, id: &ModuleId) -> Result<PathBuf> {
        let rel = ModuleRef::ck(id).rel();
        self.refuse_frozen(id, &rel)?;
        let procs = join(&rel, "cgroup.procs");
        let _lock = self.placement_lock(false)?;
        match self.move_pid(&procs, 0) {
            Err(e) if e.errno() == Some(Errno::NOENT) => {
                let _created = self.create(id)?;
                self.move_pid(&procs, 0)?;
            }
            other => other?,
        }
        Ok(self.dir.display_path(&rel))
    }

    /// The module's `cgroup.procs` (made if needed), opened `O_WRONLY | O_CLOEXEC` beneath the
    /// root (no symlink, no `..`): for a daemon that builds its own [`std::process::Command`]
    /// and has the child place itself before exec with [`crate::spawn::place_before_exec`].
    /// A frozen module is refused, as by [`Root::spawn`].
    ///
    /// ```no_run
    /// use std::process::Command;
    /// use ck_cgroup::{ModuleId, Root};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let root = Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let id = ModuleId::new("worker-1")?;
    /// let mut cmd = Command::new("/usr/bin/worker");
    /// ck_cgroup::spawn::place_before_exec(&mut cmd, root.procs_fd(&id)?);
    /// // The child writes "0" to the module's cgroup.procs before it execs: it runs, and
    /// // every process it forks, in the module.
    /// let child = cmd.spawn()?;
    /// # drop(child);
    /// # Ok(())
    /// # }
    /// ```
    pub fn procs_fd(&self, id: &ModuleId) -> Result<OwnedFd> {
        let rel = ModuleRef::ck(id).rel();
        self.refuse_frozen(id, &rel)?;
        let procs = join(&rel, "cgroup.procs");
        let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC;
        let open = || {
            self.dir
                .open_beneath(&procs, flags)
                .map_err(|e| Error::io("open", self.dir.display_path(&procs), e))
        };
        match open() {
            Err(e) if e.errno() == Some(Errno::NOENT) => {
                let _created = self.create(id)?;
                open()
            }
            other => other,
        }
    }

    /// Every module, ours and the daemon's, with its populated state and process count.
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// for m in root.list()? {
    ///     println!("{} {:?} {:?} processes", m.name, m.layout, m.procs);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn list(&self) -> Result<Vec<ModuleEntry>> {
        self.entries(true)
    }

    /// The modules; `procs` is counted only when `count_procs` (status counts them itself).
    pub(crate) fn entries(&self, count_procs: bool) -> Result<Vec<ModuleEntry>> {
        self.entries_with(count_procs, true)
    }

    /// [`entries`](Self::entries), with `cgroup.events` read only when `events` (`status` reads
    /// it from each module's directory, which it opens once for all of the module's files;
    /// without, `populated` and `frozen` are `None`).
    pub(crate) fn entries_with(&self, count_procs: bool, events: bool) -> Result<Vec<ModuleEntry>> {
        let mut out = Vec::new();
        for layout in [Layout::Ck, Layout::Daemon] {
            for name in self.dir.subdirs(layout.dir())? {
                let Ok(name) = DirName::from_text(&name) else {
                    continue;
                };
                let m = ModuleRef { layout, name };
                let rel = m.rel();
                let events = if events { self.events(&rel).ok() } else { None };
                out.push(ModuleEntry {
                    module: m.module_name(),
                    populated: events.as_ref().and_then(|e| e.populated),
                    frozen: events.as_ref().and_then(|e| e.frozen),
                    procs: if count_procs {
                        self.procs(&rel).ok().map(|p| p.len())
                    } else {
                        None
                    },
                    path: m.shown_path(),
                    layout,
                    name: m.name,
                });
            }
        }
        Ok(out)
    }

    /// `cgroup.events` of `rel`.
    pub(crate) fn events(&self, rel: &str) -> Result<parse::Events> {
        Ok(parse::events(&self.dir.read(&join(rel, "cgroup.events"))?))
    }

    /// The pids in `rel` and every cgroup below it (`cgroup.procs` of each; of a threaded
    /// cgroup, the processes of the threads in its `cgroup.threads`), at any depth.
    pub(crate) fn procs(&self, rel: &str) -> Result<Vec<u32>> {
        members(&self.dir, rel)
    }

    /// A spawn into a frozen module would hang: the new process stops before its first
    /// instruction (a task that enters a frozen cgroup is frozen), and whoever waits for it
    /// waits forever. So it is refused (bad input, exit 2) with the two fixes. A module that
    /// does not exist is not frozen, but one made under a frozen `subc-modules/` or root (or an
    /// ancestor of the root, which the root's `cgroup.events` says) is frozen from birth: a
    /// frozen ancestor is refused too (exit 1, naming the frozen cgroup and how to thaw it).
    pub(super) fn refuse_frozen(&self, id: &ModuleId, rel: &str) -> Result<()> {
        if mutation::active(Control::SpawnIntoFrozen) {
            return Ok(());
        }
        let frozen = |rel: &str| {
            self.dir
                .read_raw(&join(rel, "cgroup.events"))
                .map(|t| parse::events(&t).frozen == Some(true))
                .unwrap_or(false)
                || self
                    .dir
                    .read_raw(&join(rel, "cgroup.freeze"))
                    .map(|t| t.trim() == "1")
                    .unwrap_or(false)
        };
        if frozen(rel) {
            let path = self.dir.display_path(rel);
            return Err(Error::bad_input(format!(
                "module {id} is frozen ({}: cgroup.freeze 1 or cgroup.events frozen 1): a process started in it would stop before its first instruction",
                path.display()
            ))
            .with_hint(format!(
                "thaw it with `ck-cgroup thaw {id}`, or stop it with `ck-cgroup kill {id}`"
            ))
            .with_kind(crate::error::ErrorKind::ModuleFrozen));
        }
        // The root, then the modules' directory: the one whose own `cgroup.freeze` is 1 first,
        // else the one whose `cgroup.events` says `frozen 1` (an ancestor of the root froze it).
        let own = |anc: &str| {
            self.dir
                .read_raw(&join(anc, "cgroup.freeze"))
                .is_ok_and(|t| t.trim() == "1")
        };
        let events_frozen = |anc: &str| {
            self.dir
                .read_raw(&join(anc, "cgroup.events"))
                .is_ok_and(|t| parse::events(&t).frozen == Some(true))
        };
        // A frozen root has every cgroup below it frozen (the kernel sets a cgroup's `frozen`
        // once all of its descendants are): where `subc-modules/` says it is not, the root is
        // not either, and its file is not read (exec's common case).
        let modules_events = self
            .dir
            .read_raw(&join(MODULES_DIR, "cgroup.events"))
            .map(|t| parse::events(&t).frozen == Some(true));
        let ancestors = ["", MODULES_DIR];
        let found = ancestors
            .iter()
            .find(|a| own(a))
            .map(|a| (*a, true))
            .or_else(|| match modules_events {
                Ok(false) => None,
                Ok(true) if !events_frozen("") => Some((MODULES_DIR, false)),
                _ => events_frozen("").then_some(("", false)),
            });
        if let Some((anc, own)) = found {
            let path = self.dir.display_path(anc);
            let fix = if own {
                format!("thaw it with `echo 0 > {}/cgroup.freeze`", path.display())
            } else {
                "thaw the ancestor that froze it (its cgroup.freeze)".to_string()
            };
            return Err(Error::failed(format!(
                "{} is frozen ({}), so module {id} in it would be too: a process started there would stop before its first instruction; {fix}",
                path.display(),
                if own { "cgroup.freeze 1" } else { "cgroup.events frozen 1: an ancestor froze it" },
            ))
            .with_kind(crate::error::ErrorKind::ModuleFrozen));
        }
        Ok(())
    }

    /// Start `cmd` inside the module (made if needed) with no window between spawn and
    /// placement: `clone3(CLONE_INTO_CGROUP)`, or on kernels before 5.7 a pre-exec write of `0`
    /// to the module's `cgroup.procs`. [`crate::spawn::ModuleChild::placement`] says which ran.
    /// By default the program starts in a cgroup namespace rooted at the module
    /// ([`crate::spawn::ModuleCommand::cgroup_namespace`]); when none can be made nothing is
    /// started and the error is of kind
    /// [`ErrorKind::NoCgroupNamespace`](crate::error::ErrorKind::NoCgroupNamespace).
    ///
    /// ```no_run
    /// use ck_cgroup::spawn::ModuleCommand;
    /// use ck_cgroup::{ErrorKind, ModuleId, Root};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let root = Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let id = ModuleId::new("worker-1")?;
    /// let mut cmd = ModuleCommand::new("/usr/bin/worker");
    /// let mut child = match root.spawn(&id, &cmd) {
    ///     Err(e) if e.kind() == ErrorKind::NoCgroupNamespace => {
    ///         root.spawn(&id, cmd.cgroup_namespace(false))?
    ///     }
    ///     r => r?,
    /// };
    /// // Or, as `ck-cgroup run` does, in one call: Root::spawn_with_fallback.
    /// println!("pid {} placed by {:?}", child.id(), child.placement());
    /// let status = child.wait()?;
    /// # drop(status);
    /// # Ok(())
    /// # }
    /// ```
    pub fn spawn(
        &self,
        id: &ModuleId,
        cmd: &crate::spawn::ModuleCommand,
    ) -> Result<crate::spawn::ModuleChild> {
        let rel = ModuleRef::ck(id).rel();
        self.refuse_frozen(id, &rel)?;
        let dir = match self.dir.open_dir(&rel) {
            Ok(d) => d,
            Err(Errno::NOENT) => {
                let _created = self.create(id)?;
                self.dir
                    .open_dir(&rel)
                    .map_err(|e| Error::io("open", self.dir.display_path(&rel), e))?
            }
            Err(e) => return Err(Error::io("open", self.dir.display_path(&rel), e)),
        };
        // What the death will be told against (`Root::death`): the counters now, before the
        // child runs.
        let counters = DeathCounters::read(&self.dir, &rel, &dir, self.mount().as_ref());
        let spawned_ticks = crate::cgroup::procfs::now_ticks();
        // The pre-exec placement (kernels before 5.7) has the child in this process's cgroup
        // until it moves itself: under the placement lock, as every placement.
        let _lock = self.placement_lock(false)?;
        let mut child = crate::spawn::spawn_into(dir.fd(), cmd).map_err(|e| {
            if let Some(errno) = crate::spawn::cgroup_namespace_refused(&e) {
                return Error::no_cgroup_namespace(self.dir.display_path(&rel), errno);
            }
            if let Some(r) = e
                .get_ref()
                .and_then(|r| r.downcast_ref::<crate::spawn::PidNamespaceRefused>())
            {
                return Error::no_pid_namespace(self.dir.display_path(&rel), r, r.errno);
            }
            let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
            Error::io(
                format_args!("spawn {:?} into", cmd.program()),
                self.dir.display_path(&rel),
                errno,
            )
        })?;
        crate::cause::stops_here::spawned();
        let stops_here = crate::cause::stops_here::cgroup_id(&dir)
            .map(|id| (id, crate::cause::stops_here::seq()));
        child.baseline = Some(Box::new(crate::spawn::Baseline {
            rel,
            dir,
            counters,
            stops_here,
            spawned_ticks,
        }));
        Ok(child)
    }

    /// [`spawn`](Self::spawn), going on without a namespace the host cannot make, as
    /// `ck-cgroup run` does: first the PID namespace (when `cmd` asks for one:
    /// [`ModuleCommand::pid_namespace`](crate::spawn::ModuleCommand::pid_namespace)), then the
    /// cgroup namespace, each dropped from `cmd` and recorded in
    /// [`ModuleChild::fallbacks`](crate::spawn::ModuleChild::fallbacks) with the one line that
    /// says so ([`Fallback::line`]: print it). Every other error is [`spawn`](Self::spawn)'s. A
    /// PID namespace made through a user namespace is no fallback (nothing is recorded).
    pub fn spawn_with_fallback(
        &self,
        id: &ModuleId,
        cmd: &mut crate::spawn::ModuleCommand,
    ) -> Result<crate::spawn::ModuleChild> {
        let mut fallbacks = Vec::new();
        loop {
            match self.spawn(id, cmd) {
                Ok(mut child) => {
                    child.fallbacks = fallbacks;
                    return Ok(child);
                }
                Err(e) if cmd.has_pid_namespace() && e.is_no_pid_namespace() => {
                    fallbacks.push(Fallback::NoPidNamespace {
                        reason: e.message().to_string(),
                    });
                    cmd.pid_namespace(false);
                }
                Err(e) if cmd.has_cgroup_namespace() && e.is_no_cgroup_namespace() => {
                    fallbacks.push(Fallback::NoCgroupNamespace {
                        reason: e
                            .errno()
                            .map_or_else(|| e.message().to_string(), crate::error::errno_text),
                    });
                    cmd.cgroup_namespace(false);
                }
                Err(e) => return Err(e),
            }
        }
    }
}
