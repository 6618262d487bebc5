//! `init` (the daemon's leaf, the modules' directory, their controllers) and `create`.

use std::os::unix::io::OwnedFd;
use std::time::{Duration, Instant};

use rustix::io::Errno;

use super::{CreateReport, InitReport, Root};
use crate::cgroup::oomd::{self, OomdMark, OomdPreference};
use crate::cgroup::parse;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::id::ModuleId;
use crate::layout::{DAEMON_LEAF, MODULES_DIR, ModuleRef, WANTED_CONTROLLERS};
use crate::mutation::{self, Control};

/// The error of a layout directory `d` that still holds `what`.
fn busy_layout(root: &Root, d: &str, what: &str) -> Error {
    Error::failed(format!(
        "{} still holds {what}: the layout is removed only when empty",
        root.dir.display_path(d).display()
    ))
    .with_hint(
        "stop the modules (`ck-cgroup prune --kill`) and move the daemon out of daemon/ first",
    )
    .with_kind(crate::error::ErrorKind::Busy)
}

/// Wait until one of `pids` has exited (its pidfd polls readable), at most until `deadline`;
/// `false` when none could be waited for (no pidfd: each is gone already, which is an exit too).
fn wait_exiting(pids: &[u32], deadline: Instant) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let fds: Vec<OwnedFd> = pids
        .iter()
        .filter_map(|&p| i32::try_from(p).ok().and_then(Pid::from_raw))
        .filter_map(|p| pidfd_open(p, PidfdFlags::empty()).ok())
        .collect();
    if fds.is_empty() {
        return true;
    }
    let left = deadline.saturating_duration_since(Instant::now());
    let ts = Timespec {
        tv_sec: left.as_secs() as _,
        tv_nsec: left.subsec_nanos() as _,
    };
    let mut polls: Vec<PollFd<'_>> = fds.iter().map(|f| PollFd::new(f, PollFlags::IN)).collect();
    matches!(poll(&mut polls, Some(&ts)), Ok(n) if n > 0) || Instant::now() < deadline
}

/// The directories [`Root::init`] lays out, deepest first: the order [`Root::remove_layout`]
/// removes them in.
const LAYOUT_DIRS: [&str; 3] = ["daemon/subc-modules", MODULES_DIR, DAEMON_LEAF];

impl Root {
    /// Undo [`Root::init`]'s layout: remove `daemon/subc-modules/`, `subc-modules/` and
    /// `daemon/`, each where it is there, deepest first; the directories removed, by their path
    /// relative to the root (none where the root was not laid out). Nothing is removed where
    /// one of them holds a module's directory (a sub-directory) or a process (`populated 1`):
    /// that is an error of kind [`ErrorKind::Busy`](crate::error::ErrorKind::Busy) (exit 1)
    /// naming the first found, with the fix (stop the modules, `Root::prune`, and move the
    /// daemon out of `daemon/`). What `init` enabled in the root's `cgroup.subtree_control` and
    /// the processes it moved into `daemon/` stay as they are.
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let removed = root.remove_layout()?;
    /// println!("removed {removed:?}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn remove_layout(&self) -> Result<Vec<String>> {
        let mut there = Vec::new();
        for d in LAYOUT_DIRS {
            if !self.dir.is_dir(d)? {
                continue;
            }
            let inside: Vec<String> = self
                .dir
                .subdirs(d)?
                .into_iter()
                .filter(|s| !LAYOUT_DIRS.contains(&join(d, s).as_str()))
                .collect();
            let populated = self
                .dir
                .read(&join(d, "cgroup.events"))
                .map(|t| parse::events(&t).populated == Some(true))?;
            if let Some(first) = inside.first() {
                return Err(busy_layout(self, d, &format!("the module {first:?}")));
            }
            if populated {
                return Err(busy_layout(self, d, "processes"));
            }
            there.push(d);
        }
        let mut removed = Vec::new();
        for d in there {
            match self.dir.rmdir_raw(d) {
                Ok(()) => removed.push(d.to_string()),
                Err(Errno::NOENT) => {}
                Err(e) => return Err(Error::io("rmdir", self.dir.display_path(d), e)),
            }
        }
        Ok(removed)
    }

    /// Make `daemon/` and `subc-modules/`, move every process of the root into `daemon/`, and
    /// enable every available controller in the root's and `subc-modules/`'s
    /// `cgroup.subtree_control`, and mark `daemon/` so that systemd-oomd never picks it
    /// (`user.oomd_omit`, [`Root::mark_daemon_leaf`]). Idempotent.
    pub fn init(&self) -> Result<InitReport> {
        self.init_with(OomdPreference::Omit)
    }

    /// [`Root::init`] with the daemon leaf's systemd-oomd preference `oomd_daemon` (`init
    /// --oomd-daemon`, the policy's `oomd_daemon`).
    pub fn init_with(&self, oomd_daemon: OomdPreference) -> Result<InitReport> {
        let mut created = Vec::new();
        for d in [DAEMON_LEAF, MODULES_DIR] {
            if self.dir.mkdir(d)? {
                created.push(d.to_string());
            }
        }
        let oomd_daemon = self.mark_daemon_leaf(oomd_daemon);
        let moved = self.evacuate_root()?;
        let available = parse::controllers(&self.dir.read("cgroup.controllers")?);
        let enabled = self.enable_controllers(&available)?;
        let missing: Vec<String> = WANTED_CONTROLLERS
            .iter()
            .filter(|c| !available.iter().any(|a| a == *c))
            .map(|c| c.to_string())
            .collect();
        let v1 = if missing.is_empty() {
            Vec::new()
        } else {
            std::fs::read_to_string("/proc/self/mountinfo")
                .map(|t| parse::cgroup1_controllers(&t))
                .unwrap_or_default()
        };
        let missing_held_by_v1 = missing.iter().filter(|c| v1.contains(c)).cloned().collect();
        Ok(InitReport {
            root: self.path().to_path_buf(),
            created,
            moved,
            available,
            enabled,
            missing,
            missing_held_by_v1,
            oomd_daemon,
        })
    }

    /// Mark `daemon/` with `pref` for systemd-oomd and read it back: the one place the daemon's
    /// leaf is marked, whichever path makes it (`init`, `init -- DAEMON`, a sandbox, the
    /// library's [`Root::init`]). systemd-oomd takes every leaf under a monitored unit for a
    /// candidate, the daemon's own included; `omit` keeps it from ever being picked. Never
    /// fails: a filesystem that refuses the attribute is reported in [`OomdMark::error`].
    pub fn mark_daemon_leaf(&self, pref: OomdPreference) -> OomdMark {
        // Mutation: the leaf is not marked (what it has is read back as it is).
        if mutation::active(Control::NoOomdOmit) {
            return oomd::read_back(&self.dir, DAEMON_LEAF, None);
        }
        oomd::mark(&self.dir, DAEMON_LEAF, pref)
    }

    /// Move the calling process into `daemon/` (`"0"` written to `daemon/cgroup.procs`), for a
    /// daemon started by `init -- CMD` from outside the root.
    pub fn enter_daemon_leaf(&self) -> Result<()> {
        let file = format!("{DAEMON_LEAF}/cgroup.procs");
        self.dir.write(&file, "0")
    }

    /// `init -- DAEMON`: the daemon's place before it is executed. The root laid out with
    /// `oomd_daemon` for `daemon/` ([`Root::init_with`]), then this process moved into
    /// `daemon/` (from inside the root, init has moved it already; from elsewhere, now). Returns
    /// the mark read back; always `Some` here (`None` is the answer of the systemd backend's
    /// `Scopes::enter_daemon`, which has no daemon leaf).
    pub fn enter_daemon(&self, oomd_daemon: OomdPreference) -> Result<Option<OomdMark>> {
        let init = self.init_with(oomd_daemon)?;
        self.enter_daemon_leaf()?;
        Ok(Some(init.oomd_daemon))
    }

    /// Move every process in the root's own `cgroup.procs` into `daemon/` (no internal processes).
    /// Under the placement lock, taken exclusive (lock.rs): a helper placing itself or others
    /// meanwhile is never read here and moved on into `daemon/`.
    ///
    /// A process that is exiting stays listed after its move was written (the kernel skips an
    /// exiting task, and the write succeeds) until it has left its cgroup: one listed again after
    /// it was moved is waited for by pidfd (at most a second), never counted as a new arrival.
    pub(super) fn evacuate_root(&self) -> Result<Vec<u32>> {
        let _lock = self.placement_lock(true)?;
        let mut moved = Vec::new();
        let mut rounds = 0;
        let deadline = Instant::now() + Duration::from_secs(1);
        // Processes may fork while we move them; each round moves what is there now.
        loop {
            let pids = parse::pids(&self.dir.read("cgroup.procs")?);
            let (again, new): (Vec<u32>, Vec<u32>) =
                pids.into_iter().partition(|p| moved.contains(p));
            if new.is_empty() {
                if again.is_empty() {
                    return Ok(moved);
                }
                if Instant::now() >= deadline || !wait_exiting(&again, deadline) {
                    return Err(Error::failed(format!(
                        "processes {again:?} stay in {}/cgroup.procs after they were moved into daemon/",
                        self.path().display()
                    )));
                }
                continue;
            }
            rounds += 1;
            if rounds > 64 {
                return Err(Error::failed(format!(
                    "processes keep appearing in {}/cgroup.procs faster than they can be moved into daemon/",
                    self.path().display()
                )));
            }
            for pid in new {
                match self.dir.write_raw("daemon/cgroup.procs", &pid.to_string()) {
                    Ok(()) => moved.push(pid),
                    Err(Errno::SRCH) => {}
                    Err(e) => {
                        return Err(Error::io(
                            format_args!("write \"{pid}\" to"),
                            self.dir.display_path("daemon/cgroup.procs"),
                            e,
                        ));
                    }
                }
            }
        }
    }

    /// Enable `controllers` in the root's and `subc-modules/`'s `cgroup.subtree_control`;
    /// return what `subc-modules/` has enabled afterwards.
    pub(super) fn enable_controllers(&self, controllers: &[String]) -> Result<Vec<String>> {
        if !controllers.is_empty() {
            let line = controllers
                .iter()
                .map(|c| format!("+{c}"))
                .collect::<Vec<_>>()
                .join(" ");
            // A thread of this process that was exiting when `init` moved it into daemon/
            // stays counted in the root until it has left: waited for (cgroup/own_threads.rs).
            for sub in ["", MODULES_DIR] {
                crate::cgroup::own_threads::enable_controllers(&self.dir, sub, &line).map_err(
                    |e| match e.hint() {
                        Some(_) => e,
                        None => e.with_hint(
                            "a cgroup with processes in it cannot enable controllers for its children: run `ck-cgroup init` to move them into daemon/",
                        ),
                    },
                )?;
            }
        }
        Ok(parse::controllers(
            &self.dir.read("subc-modules/cgroup.subtree_control")?,
        ))
    }

    /// Make the module's cgroup `subc-modules/<id>` (idempotent), without limits: a module made
    /// now gets `memory.oom.group` 1 where the memory controller is enabled for the modules, an
    /// existing one is left as it is ([`Root::create_module`], the one way a module is made).
    /// Makes `subc-modules/` and enables controllers first when the root has not been
    /// initialised (as with `DelegateSubgroup=daemon`, where the daemon already sits in
    /// `daemon/`).
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let made = root.create(&ck_cgroup::ModuleId::new("worker-1")?)?;
    /// println!("{} at {} (new: {})", made.module, made.path.display(), made.created);
    /// # Ok(())
    /// # }
    /// ```
    pub fn create(&self, id: &ModuleId) -> Result<CreateReport> {
        self.create_module(id, &crate::limits::Limits::default(), false)
            .map(|(made, _)| made)
    }

    /// The directory part of [`Root::create_module`]: `mkdir` of `subc-modules/<id>`
    /// (`created` says whether it was made now), `subc-modules/` first when it is missing.
    pub(crate) fn make_module_dir(&self, id: &ModuleId) -> Result<CreateReport> {
        let m = ModuleRef::ck(id);
        let rel = m.rel();
        let created = match self.dir.mkdir(&rel) {
            Ok(c) => c,
            Err(e) if e.errno() == Some(Errno::NOENT) => {
                self.ensure_modules_dir()?;
                self.dir.mkdir(&rel)?
            }
            Err(e) => return Err(e),
        };
        Ok(CreateReport {
            module: id.clone(),
            path: self.dir.display_path(&rel),
            created,
        })
    }

    pub(super) fn ensure_modules_dir(&self) -> Result<()> {
        let made = self.dir.mkdir(MODULES_DIR)?;
        let available = parse::controllers(&self.dir.read("cgroup.controllers")?);
        if let Err(e) = self.enable_controllers(&available) {
            if made {
                // Leave nothing half-made.
                let _ = self.dir.rmdir_raw(MODULES_DIR);
            }
            return Err(e);
        }
        Ok(())
    }
}
