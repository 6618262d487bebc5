//! The isolated root: a fresh, uniquely named cgroup that holds an `init`ed root (`root/`,
//! handed out as a [`Root`]) and a leaf for the command run in it (`cmd/`), emptied
//! (`cgroup.kill`) and removed (deepest first) when the guard is dropped.
//!
//! Tests and demos run in one so that they never touch a live service's subtree.
//!
//! A directory sandbox (`ck-sandbox-<pid>-<seq>-<nanos>-locked`) is held by its maker: an
//! exclusive `flock(2)` on the directory's fd, which the kernel releases when that process dies,
//! however it dies. [`sweep`] removes the sandboxes under a parent whose lock it can take (their
//! maker is gone), killing what is left in them, and leaves alone those still held and those
//! marked kept (a `kept/` leaf, [`Sandbox::keep`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::FlockOperation;
use rustix::io::Errno;
use serde::Serialize;

use crate::cgroup::dir::CgroupDir;
use crate::discover::cgroup2_mount;
use crate::error::{Error, Result};
use crate::module::Root;
use crate::mutation::{self, Control};
use crate::stop::{StopOptions, stop_tree};

/// Prefix of every sandbox directory name.
pub const PREFIX: &str = "ck-sandbox-";
/// Suffix of a directory sandbox held by its maker's lock: only such directories are swept (one
/// made by an older helper, which held no lock, is never taken for a leftover).
pub const LOCKED_SUFFIX: &str = "-locked";

static SEQ: AtomicU32 = AtomicU32::new(0);

/// An isolated root under a parent cgroup. Dropping it kills what is left and removes it.
#[derive(Debug)]
pub struct Sandbox {
    /// The directory that holds `root/` and `cmd/`: the sandbox's own directory (its fd holds
    /// the lock), or a scope's cgroup.
    outer: CgroupDir,
    /// A directory sandbox: its parent and its name there, to remove it.
    parent: Option<(CgroupDir, String)>,
    root: Root,
    keep: bool,
    /// In a systemd scope ([`Sandbox::create_in_scope`]): the scope's unit name.
    scope: Option<String>,
}

/// In a scope sandbox, the leaf that holds the helper itself.
pub const HELPER_LEAF: &str = "helper";
/// The leaf where the sandbox's command runs (emptied at teardown).
pub const CMD_LEAF: &str = "cmd";
/// The isolated root.
pub const ROOT_DIR: &str = "root";
/// In a kept directory sandbox: the empty leaf that marks it kept, so that [`sweep`] leaves it.
pub const KEPT_LEAF: &str = "kept";

impl Sandbox {
    /// The default parent: the cgroup2 mount's root, when the caller may make cgroups there (as
    /// root on a host with cgroup2 mounted). Otherwise an error that says what to pass.
    pub fn default_parent() -> Result<PathBuf> {
        let mount = cgroup2_mount()?;
        if rustix::fs::access(&mount, rustix::fs::Access::WRITE_OK).is_err() {
            return Err(Error::bad_input(format!(
                "no default parent for a sandbox: {} is not writable by this user",
                mount.display()
            ))
            .with_hint(
                "pass --parent PATH, a cgroup2 directory you may make cgroups in (for example one delegated by `systemd-run --user --scope -p Delegate=yes`)",
            ));
        }
        Ok(mount)
    }

    /// Make a fresh sandbox under `parent`: the directory
    /// `ck-sandbox-<pid>-<seq>-<nanos>-locked`, locked by this process for as long as the guard
    /// lives, with the controllers it has enabled for its children, the leaf `cmd/` and the
    /// `init`ed root `root/`.
    ///
    /// ```no_run
    /// use ck_cgroup::Sandbox;
    ///
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let sb = Sandbox::create(&Sandbox::default_parent()?)?;
    /// let root = sb.root();
    /// let _made = root.create(&ck_cgroup::ModuleId::new("t")?)?;
    /// // Dropping the guard kills what is left in it and removes it.
    /// drop(sb);
    /// # Ok(())
    /// # }
    /// ```
    pub fn create(parent: &Path) -> Result<Sandbox> {
        let parent = CgroupDir::open(parent)?;
        // A sweep that took the lock of a directory just made (before this process locked it)
        // removes it: make another.
        for _ in 0..3 {
            let name = format!("{}{LOCKED_SUFFIX}", unique_name());
            if let Some(outer) = claim(&parent, &name)? {
                return Sandbox::fill(outer, Some((parent, name)), None);
            }
        }
        Err(Error::failed(format!(
            "could not make a sandbox under {}: a concurrent `ck-cgroup sandbox --prune` removed each one made",
            parent.path().display()
        )))
    }

    /// On a systemd host: ask the manager on `bus` for a transient scope
    /// `ck-sandbox-<pid>-<seq>-<nanos>.scope` with `Delegate=yes` holding this process, so that
    /// the sandbox lives in a subtree systemd handed over instead of beside systemd's own
    /// cgroups. Inside the scope (no process in an inner node): this process moves to
    /// [`HELPER_LEAF`], the controllers the scope has are enabled for its children, and the
    /// isolated root is [`ROOT_DIR`]; a command meant to run in the sandbox goes to
    /// [`CMD_LEAF`] ([`Sandbox::cmd_procs`]). Teardown empties and removes `root/` and `cmd/`;
    /// when this process exits, the scope is empty and systemd removes it.
    #[cfg(feature = "systemd")]
    pub fn create_in_scope(bus: crate::backend::Bus) -> Result<Sandbox> {
        use crate::backend::systemd::manager::{Manager, ScopeSpec};
        let unit = format!("{}.scope", unique_name());
        let me = std::process::id();
        let spec = ScopeSpec {
            unit: unit.clone(),
            slice: None,
            description: "ck-cgroup sandbox (an isolated root for tests)".into(),
            pids: vec![me],
            delegate: true,
            part_of: None,
            limits: crate::limits::Limits::default(),
        };
        // The connection is closed before this process moves; its runtime's last thread ends
        // within milliseconds of that, possibly while the process moves (`fill` enables the
        // controllers once it has left: cgroup/own_threads.rs).
        let manager = Manager::connect(bus)?;
        manager.start_scope(&spec, crate::backend::systemd::START_TIMEOUT)?;
        drop(manager);
        let cg = crate::backend::systemd::placed_in(&unit, &format!("/{unit}"))?;
        let scope = CgroupDir::open(&cgroup2_mount()?.join(cg.trim_start_matches('/')))?;
        scope.mkdir(HELPER_LEAF)?;
        scope.write(&format!("{HELPER_LEAF}/cgroup.procs"), &me.to_string())?;
        Sandbox::fill(scope, None, Some(unit))
    }

    /// In `outer` (locked by this process, or a scope's cgroup whose processes sit in leaves):
    /// enable its controllers for its children, make `cmd/` and the root `root/`, and `init` the
    /// root. On failure what was made is removed again.
    fn fill(
        outer: CgroupDir,
        parent: Option<(CgroupDir, String)>,
        scope: Option<String>,
    ) -> Result<Sandbox> {
        let made = (|| {
            let available = crate::cgroup::parse::controllers(&outer.read("cgroup.controllers")?);
            let enable: Vec<String> = crate::layout::WANTED_CONTROLLERS
                .iter()
                .chain(crate::layout::OPTIONAL_CONTROLLERS.iter())
                .filter(|c| available.iter().any(|a| a == *c))
                .map(|c| format!("+{c}"))
                .collect();
            if !enable.is_empty() {
                crate::cgroup::own_threads::enable_controllers(&outer, "", &enable.join(" "))?;
            }
            outer.mkdir(CMD_LEAF)?;
            if !outer.mkdir(ROOT_DIR)? {
                return Err(Error::failed(format!(
                    "{} already exists",
                    outer.display_path(ROOT_DIR).display()
                )));
            }
            let dir = outer
                .open_dir(ROOT_DIR)
                .map_err(|e| Error::io("open", outer.display_path(ROOT_DIR), e))?;
            Root::from_dir(dir)
        })();
        let root = match made {
            Ok(r) => r,
            Err(e) => {
                let _ = teardown_dirs(&outer, parent.as_ref());
                return Err(e);
            }
        };
        let sandbox = Sandbox {
            outer,
            parent,
            root,
            keep: false,
            scope,
        };
        // On failure the guard's drop removes what was made.
        let _init = sandbox.root.init()?;
        Ok(sandbox)
    }

    /// The scope's unit name, for a sandbox made by `Sandbox::create_in_scope` (feature `systemd`).
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// `cmd/cgroup.procs`, opened for writing, to place the sandbox's command before it runs
    /// ([`crate::spawn::place_before_exec`]), so that the teardown (or a [`sweep`] after this
    /// process died) takes the command and everything it left. `Some` for every sandbox.
    pub fn cmd_procs(&self) -> Result<Option<rustix::fd::OwnedFd>> {
        let rel = format!("{CMD_LEAF}/cgroup.procs");
        self.outer
            .open_beneath(&rel, rustix::fs::OFlags::WRONLY)
            .map(Some)
            .map_err(|e| Error::io("open", self.outer.display_path(&rel), e))
    }

    /// The sandbox's root.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The sandbox's root's path (`…/root`).
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// The sandbox's own directory (`…/ck-sandbox-…-locked`, or the scope's cgroup).
    pub fn dir(&self) -> &Path {
        self.outer.path()
    }

    /// Disarm the guard: the sandbox stays, marked kept (the leaf `kept/`), so that [`sweep`]
    /// leaves it after this process exits. Returns its root's path. The guard is disarmed even
    /// when the mark cannot be made (then the error says so).
    pub fn keep(mut self) -> Result<PathBuf> {
        self.keep = true;
        self.outer.mkdir(KEPT_LEAF).map_err(|e| {
            Error::failed(format!(
                "the sandbox {} is kept but could not be marked kept ({e}): a later `ck-cgroup sandbox` under its parent may remove it",
                self.outer.path().display()
            ))
        })?;
        Ok(self.root.path().to_path_buf())
    }

    /// Kill every process left in the sandbox, wait until it is empty, and remove it.
    pub fn destroy(mut self) -> Result<()> {
        self.keep = true;
        teardown_dirs(&self.outer, self.parent.as_ref())
    }
}

/// Make `parent/name` and lock it: `Some` of its handle when this process holds it, `None` when
/// a concurrent sweep took it first (and removes it).
fn claim(parent: &CgroupDir, name: &str) -> Result<Option<CgroupDir>> {
    if !parent.mkdir(name)? {
        return Err(Error::failed(format!(
            "{} already exists",
            parent.display_path(name).display()
        )));
    }
    let dir = match parent.open_dir(name) {
        Ok(d) => d,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(Error::io("open", parent.display_path(name), e)),
    };
    // Mutation control (`CK_MUTATION=sandbox-no-lock`): the maker holds no lock, so a sweep takes
    // a live sandbox for a leftover.
    if !mutation::active(Control::SandboxNoLock) {
        match rustix::fs::flock(dir.fd(), FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => return Ok(None),
            Err(e) => {
                let _ = parent.rmdir_raw(name);
                return Err(Error::io("flock", dir.path(), e));
            }
        }
    }
    Ok(same_dir(parent, name, &dir).then_some(dir))
}

/// Whether `parent/name` is still the directory `dir` (same inode): a sweep may have removed it.
fn same_dir(parent: &CgroupDir, name: &str, dir: &CgroupDir) -> bool {
    let named = parent
        .open_beneath(
            name,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
        )
        .and_then(|fd| rustix::fs::fstat(&fd));
    match (named, rustix::fs::fstat(dir.fd())) {
        (Ok(a), Ok(b)) => a.st_ino == b.st_ino && a.st_dev == b.st_dev,
        _ => false,
    }
}

/// Remove a sandbox's directories: a directory sandbox whole (everything in it killed), a
/// scope's `root/` and `cmd/` (the helper's own leaf stays, and systemd removes the scope).
fn teardown_dirs(outer: &CgroupDir, parent: Option<&(CgroupDir, String)>) -> Result<()> {
    if let Some((parent, name)) = parent {
        return empty_and_remove(parent, name, outer);
    }
    for leaf in [ROOT_DIR, CMD_LEAF] {
        if outer.exists(leaf) {
            let dir = outer
                .open_dir(leaf)
                .map_err(|e| Error::io("open", outer.display_path(leaf), e))?;
            empty_and_remove(outer, leaf, &dir)?;
        }
    }
    Ok(())
}

/// What [`sweep`] found under a parent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct SweepReport {
    /// The parent swept.
    pub parent: PathBuf,
    /// Sandboxes whose maker was gone: their processes killed, their directories removed.
    pub removed: Vec<Swept>,
    /// Sandboxes whose maker was gone but which are marked kept (`kept/`): left alone.
    pub kept: Vec<PathBuf>,
    /// How many sandboxes are still held by a live maker (left alone).
    pub alive: usize,
    /// Sandboxes that could not be removed, with the reason.
    pub failed: Vec<SweepFailure>,
}

/// One sandbox [`sweep`] removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Swept {
    /// Its directory.
    pub sandbox: PathBuf,
    /// The processes that were in it (killed); `None` when its member list could not be read.
    pub killed: Option<usize>,
}

/// One sandbox [`sweep`] could not remove.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SweepFailure {
    /// Its directory.
    pub sandbox: PathBuf,
    /// What failed.
    pub error: String,
}

/// Remove the leftover sandboxes under `parent`: each `ck-sandbox-*-locked` directory whose lock
/// this process can take (the process that made it is gone: SIGKILLed, crashed) has every process
/// in it killed (`cgroup.kill`, a wait for `populated 0`) and is removed deepest first, while
/// this process holds its lock. A sandbox still held, one marked kept, and any other directory
/// are left alone. One that cannot be removed is reported in [`SweepReport::failed`], and the
/// others are still swept.
pub fn sweep(parent: &Path) -> Result<SweepReport> {
    let dir = CgroupDir::open(parent)?;
    let mut report = SweepReport {
        parent: parent.to_path_buf(),
        ..SweepReport::default()
    };
    // Mutation control (`CK_MUTATION=sandbox-no-sweep`): nothing is swept.
    if mutation::active(Control::SandboxNoSweep) {
        return Ok(report);
    }
    for name in dir.subdirs("")? {
        if !(name.starts_with(PREFIX) && name.ends_with(LOCKED_SUFFIX)) {
            continue;
        }
        let path = dir.display_path(&name);
        let fail = |report: &mut SweepReport, error: String| {
            report.failed.push(SweepFailure {
                sandbox: path.clone(),
                error,
            })
        };
        let sb = match dir.open_dir(&name) {
            Ok(d) => d,
            Err(Errno::NOENT) => continue,
            Err(e) => {
                fail(&mut report, Error::io("open", &path, e).to_string());
                continue;
            }
        };
        match lock_unless_held_by_the_living(&sb) {
            Ok(true) => {}
            Ok(false) => {
                report.alive += 1;
                continue;
            }
            Err(e) => {
                fail(&mut report, Error::io("flock", &path, e).to_string());
                continue;
            }
        }
        // Removed meanwhile (its maker's teardown, another sweep): nothing to do.
        if !same_dir(&dir, &name, &sb) {
            continue;
        }
        // Mutation control (`CK_MUTATION=sandbox-prune-kept`): a kept sandbox is swept too.
        if sb.exists(KEPT_LEAF) && !mutation::active(Control::SandboxPruneKept) {
            report.kept.push(path);
            continue;
        }
        let killed = crate::cgroup::tree::members(&sb, "").ok().map(|p| p.len());
        match empty_and_remove(&dir, &name, &sb) {
            Ok(()) => report.removed.push(Swept {
                sandbox: path,
                killed,
            }),
            Err(e) => fail(&mut report, e.to_string()),
        }
    }
    Ok(report)
}

/// Take the lock of sandbox `sb` unless a live process holds it: `Ok(false)` when one does.
///
/// A SIGKILLed helper holds its lock until the kernel has closed its files, which is after
/// `kill(2)` returned to whoever sent it: a sweep right after the SIGKILL must not take that
/// sandbox for a live one. So when the lock is held, its owner is looked up (`/proc/locks`, by the
/// directory's device and inode): one that is exiting (`PF_EXITING`, a zombie, or a SIGKILL
/// pending) is waited for on its pidfd; one that is gone leaves the lock with what it forked
/// before its CMD's `execve(2)` (the descriptor is close-on-exec), which is waited for in 10 ms
/// steps. Either wait ends within [`DYING_WAIT`], then the lock is asked for once more.
fn lock_unless_held_by_the_living(sb: &CgroupDir) -> std::result::Result<bool, Errno> {
    let deadline = std::time::Instant::now() + DYING_WAIT;
    loop {
        match rustix::fs::flock(sb.fd(), FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(true),
            Err(Errno::WOULDBLOCK) => {}
            Err(e) => return Err(e),
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        match lock_owner(sb).map(|pid| (pid, owner_state(pid))) {
            Some((_, Owner::Live)) => return Ok(false),
            Some((pid, Owner::Exiting)) => wait_exit(pid, left),
            Some((_, Owner::Gone)) | None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// How long a sweep waits for the holder of a sandbox's lock that is exiting or gone.
const DYING_WAIT: Duration = Duration::from_secs(5);

enum Owner {
    Live,
    Exiting,
    Gone,
}

/// The pid that took the `flock(2)` on `sb`, from `/proc/locks` (`N: FLOCK ADVISORY WRITE PID
/// MAJ:MIN:INODE 0 EOF`, the device numbers in hex).
fn lock_owner(sb: &CgroupDir) -> Option<i32> {
    let st = rustix::fs::fstat(sb.fd()).ok()?;
    let want = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(st.st_dev),
        rustix::fs::minor(st.st_dev),
        st.st_ino
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&want.as_str()))
            .then(|| f.get(4)?.parse().ok())
            .flatten()
    })
}

/// Whether `pid` lives on, is on its way out, or is gone (`/proc/<pid>/stat` and `status`).
fn owner_state(pid: i32) -> Owner {
    let Ok(stat) = u32::try_from(pid)
        .map_err(std::io::Error::other)
        .and_then(|p| crate::cgroup::procfs::read_text(p, "stat"))
    else {
        return Owner::Gone;
    };
    // After the command's `)`: state, ppid, pgrp, session, tty, tpgid, flags.
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, r)| r)
        .split_whitespace()
        .collect();
    if matches!(f.first(), Some(&"Z") | Some(&"X") | None) {
        return Owner::Gone;
    }
    const PF_EXITING: u64 = 0x4;
    let exiting = f.get(6).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) & PF_EXITING != 0;
    let sigkill_pending = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .is_some_and(|t| {
            t.lines()
                .filter(|l| l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
                .filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
                .any(|mask| mask & (1 << (9 - 1)) != 0)
        });
    if exiting || sigkill_pending {
        Owner::Exiting
    } else {
        Owner::Live
    }
}

/// Wait up to `limit` for `pid` to exit: its pidfd becomes readable then.
fn wait_exit(pid: i32, limit: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let Some(p) = rustix::process::Pid::from_raw(pid) else {
        return;
    };
    let Ok(fd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) else {
        return;
    };
    let ts = Timespec {
        tv_sec: limit.as_secs() as i64,
        tv_nsec: i64::from(limit.subsec_nanos()),
    };
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let _ = poll(&mut fds, Some(&ts));
}

fn unique_name() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{PREFIX}{}-{}-{nanos:08x}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// How long a sandbox's teardown waits for its tree to be empty, and for every process it listed
/// to have exited, after SIGKILL. A killed process needs the CPU to run its exit; on a loaded
/// 2-core host (a guest lane, a build and a mutation group at once) a mutation run's sandbox
/// was once reported not emptied within the 10 s this was. Only a teardown that fails waits
/// it out; its error says which it was (`crate::stop::not_ended`): still populated, with each
/// process's state, or processes that left the tree.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Kill everything in `dir` (= `parent/name`) by the one tree stop ([`crate::stop::stop_tree`]:
/// `cgroup.kill` or what it falls through to, then a wait on `populated 0`), and remove it
/// deepest first. Under a mutation control that switches the stop off, what a test's sandbox
/// held stays behind: `scripts/mutation-controls` runs each control's tests in a sandbox of the
/// plain helper (built without any control), whose teardown takes it all.
fn empty_and_remove(parent: &CgroupDir, name: &str, dir: &CgroupDir) -> Result<()> {
    let opts = StopOptions::kill(TEARDOWN_TIMEOUT);
    let stopped = stop_tree(dir, "", &opts)?;
    if !stopped.empty {
        // Still populated (each process's state named), or empty with processes it listed
        // still running outside it.
        return Err(Error::failed(format!(
            "sandbox teardown ({}, {} s after SIGKILL): {}",
            stopped.method.map_or("no kill method ran", |m| m.name()),
            TEARDOWN_TIMEOUT.as_secs(),
            crate::stop::not_ended(dir, "", &stopped)
        )));
    }
    for sub in dir.subdirs("")? {
        crate::cgroup::tree::remove_tree(dir, &sub)?;
    }
    parent
        .rmdir_raw(name)
        .or_else(|e| if e == Errno::NOENT { Ok(()) } else { Err(e) })
        .map_err(|e| Error::io("rmdir", dir.path(), e))
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.keep
            && let Err(e) = teardown_dirs(&self.outer, self.parent.as_ref())
        {
            // Not eprintln!: it panics on a stderr that cannot be written (full), in a drop.
            let line = format!("ck-cgroup: sandbox cleanup: {e}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        }
    }
}
