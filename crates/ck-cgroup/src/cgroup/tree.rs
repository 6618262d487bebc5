//! Walking a cgroup subtree of any depth the kernel allows, with directory fds.
//!
//! A module can make sub-cgroups of its own to any depth (`cgroup.max.depth` is unlimited by
//! default), with names up to 255 bytes, so the path of its deepest cgroup can be far longer
//! than `PATH_MAX`, and it can hold more directories than this process may hold fds. So a walk
//! never spells out a path: each child is opened relative to its parent's fd
//! ([`open_beneath_at`]: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, one component), and
//! only a bounded number of those fds is kept open. A directory whose fd was given up is opened
//! again from the nearest ancestor still held, by relative paths of at most [`CHUNK`] bytes.
//!
//! The walk is depth first. A [`Visitor`] is told when the walk enters a cgroup (parent first),
//! before it opens a child (so that it can restore the child's mode), and when a child's whole
//! subtree is done (children first: where removal happens, relative to the parent's fd).
//! A directory that disappears during the walk (removed by someone else) is skipped.

use std::collections::HashSet;
use std::os::unix::io::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::cgroup::root::{CgroupDir, open_beneath_at, read_fd};
use crate::error::{Error, Result};

/// At most this many directory fds are held besides checkpoints.
const HOLD: usize = 16;
/// At most this many checkpoints (fds kept for the whole walk, about one per [`CHUNK`] / 2 bytes
/// of path); deeper than that, directories are opened again from the last one, which is slower
/// but needs no more fds. With [`HOLD`], a walk holds at most about 40 fds, whatever the depth.
const MAX_CHECKPOINTS: usize = 24;
/// The longest relative path opened at once (well below `PATH_MAX`).
const CHUNK: usize = 2048;

/// What a walk calls back. Every method has a default that does nothing.
pub(crate) trait Visitor {
    /// The walk entered `at` (the top first, then each cgroup before its children).
    fn enter(&mut self, _at: &Cursor<'_>) -> Result<()> {
        Ok(())
    }

    /// The walk is about to open child `name` of `parent`.
    fn before_child(&mut self, _parent: &Cursor<'_>, _name: &str) -> Result<()> {
        Ok(())
    }

    /// The subtree of child `name` of `parent` is done (every cgroup below it was left).
    fn child_done(&mut self, _parent: &Cursor<'_>, _name: &str) -> Result<()> {
        Ok(())
    }
}

struct Frame {
    name: String,
    fd: Option<OwnedFd>,
    checkpoint: bool,
    /// Bytes of relative path from the nearest checkpoint below to here.
    since_checkpoint: usize,
    /// Children not visited yet (taken from the end).
    children: Vec<String>,
}

/// Where a walk is: the cgroup at the top of its stack.
pub(crate) struct Cursor<'w> {
    base: &'w CgroupDir,
    rel: &'w str,
    frames: &'w [Frame],
}

impl Cursor<'_> {
    /// The cgroup's directory fd.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        // The walk opens the top frame's fd before every callback.
        match self.frames.last().and_then(|f| f.fd.as_ref()) {
            Some(fd) => fd.as_fd(),
            None => self.base.fd(),
        }
    }

    /// The cgroup's path, for messages only (it may be longer than any syscall takes).
    pub(crate) fn path(&self) -> PathBuf {
        let mut p = self.base.display_path(self.rel);
        for f in self.frames.iter().skip(1) {
            p.push(&f.name);
        }
        p
    }

    /// The path of `name` in this cgroup, for messages only.
    pub(crate) fn path_of(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }

    /// The cgroup's path relative to the walk's top, for reports (`""` for the top).
    pub(crate) fn rel_path(&self) -> String {
        let names: Vec<&str> = self
            .frames
            .iter()
            .skip(1)
            .map(|f| f.name.as_str())
            .collect();
        names.join("/")
    }
}

/// Open directory `name` (one component) beneath the directory `at`.
pub(crate) fn open_child(at: BorrowedFd<'_>, name: &str) -> std::result::Result<OwnedFd, Errno> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(Errno::INVAL);
    }
    open_beneath_at(at, name, OFlags::RDONLY | OFlags::DIRECTORY)
}

/// Read the file `name` in the directory `at`.
pub(crate) fn read_at(at: BorrowedFd<'_>, name: &str) -> std::result::Result<String, Errno> {
    read_fd(&open_beneath_at(at, name, OFlags::RDONLY)?)
}

/// The names of the sub-directories of the directory `fd` (child cgroups), unsorted.
pub(crate) fn child_dirs(fd: BorrowedFd<'_>) -> std::result::Result<Vec<String>, Errno> {
    // cgroup.stat's nr_descendants 0 (a leaf, the usual module) needs no listing.
    if let Ok(stat) = read_at(fd, "cgroup.stat")
        && crate::cgroup::parse::flat_keyed(&stat).get("nr_descendants") == Some(&0)
    {
        return Ok(Vec::new());
    }
    let dir = Dir::read_from(fd)?;
    let mut out = Vec::new();
    for ent in dir {
        let ent = ent?;
        if ent.file_type() != FileType::Directory {
            continue;
        }
        let name = ent.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        // cgroupfs names are what mkdir(2) took; a name that is not UTF-8 cannot be ours to
        // spell, but it is still walked by its bytes' lossless form where possible.
        match std::str::from_utf8(name) {
            Ok(n) => out.push(n.to_string()),
            Err(_) => return Err(Errno::ILSEQ),
        }
    }
    Ok(out)
}

/// Walk `rel` beneath `base` and every cgroup below it, depth first. A missing `rel` is an
/// empty walk. Errors of the walk itself (a directory that cannot be opened or listed) carry
/// the directory's path; a visitor's errors are returned as they are.
pub(crate) fn walk(base: &CgroupDir, rel: &str, v: &mut dyn Visitor) -> Result<()> {
    walk_with(base, rel, v, false)
}

/// [`walk`] for the module paths (stop, remove, the member lists), which the mutation control
/// `CK_MUTATION=walk-by-path` switches to opening each sub-cgroup by its whole path; the sandbox's
/// teardown walks with [`walk`], so that a mutated build still leaves nothing behind.
pub(crate) fn walk_module(base: &CgroupDir, rel: &str, v: &mut dyn Visitor) -> Result<()> {
    walk_with(base, rel, v, cfg!(ck_mutation = "walk-by-path"))
}

fn walk_with(base: &CgroupDir, rel: &str, v: &mut dyn Visitor, by_path: bool) -> Result<()> {
    let top = match base.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(Error::io("open", base.display_path(rel), e)),
    };
    let mut frames = vec![Frame {
        name: String::new(),
        fd: Some(top),
        checkpoint: true,
        since_checkpoint: 0,
        children: Vec::new(),
    }];
    v.enter(&Cursor {
        base,
        rel,
        frames: &frames,
    })?;
    match child_dirs(frames[0].fd.as_ref().map_or(base.fd(), |f| f.as_fd())) {
        Ok(c) => frames[0].children = c,
        Err(Errno::NOENT) | Err(Errno::NODEV) => return Ok(()),
        Err(e) => return Err(Error::io("read directory", base.display_path(rel), e)),
    }
    let mut checkpoints = 1;
    loop {
        let i = frames.len() - 1;
        if !ensure_fd(base, rel, &mut frames, i)? {
            // This directory went away: its subtree is gone too.
            frames.truncate(i);
            if frames.is_empty() {
                return Ok(());
            }
            continue;
        }
        if let Some(child) = frames[i].children.pop() {
            v.before_child(
                &Cursor {
                    base,
                    rel,
                    frames: &frames,
                },
                &child,
            )?;
            let parent = frames[i].fd.as_ref().map_or(base.fd(), |f| f.as_fd());
            let opened = if by_path {
                // Mutation: spell out the whole path from the walk's base, as a walk by path
                // would (ENAMETOOLONG past PATH_MAX).
                let c = Cursor {
                    base,
                    rel,
                    frames: &frames,
                };
                let sub = [rel.to_string(), c.rel_path(), child.clone()]
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join("/");
                base.open_beneath(&sub, OFlags::RDONLY | OFlags::DIRECTORY)
            } else {
                open_child(parent, &child)
            };
            let fd = match opened {
                Ok(fd) => fd,
                Err(Errno::NOENT) => continue,
                Err(e) => {
                    let c = Cursor {
                        base,
                        rel,
                        frames: &frames,
                    };
                    return Err(Error::io("open", c.path_of(&child), e));
                }
            };
            let since = frames[i].since_checkpoint + child.len() + 1;
            let checkpoint = since > CHUNK / 2 && checkpoints < MAX_CHECKPOINTS;
            if checkpoint {
                checkpoints += 1;
            }
            frames.push(Frame {
                name: child,
                fd: Some(fd),
                checkpoint,
                since_checkpoint: if checkpoint { 0 } else { since },
                children: Vec::new(),
            });
            let c = Cursor {
                base,
                rel,
                frames: &frames,
            };
            v.enter(&c)?;
            let listed = match frames.last().and_then(|f| f.fd.as_ref()) {
                Some(fd) => child_dirs(fd.as_fd()),
                None => Ok(Vec::new()),
            };
            match listed {
                Ok(c) => {
                    if let Some(f) = frames.last_mut() {
                        f.children = c;
                    }
                }
                Err(Errno::NOENT) | Err(Errno::NODEV) => {}
                Err(e) => {
                    let c = Cursor {
                        base,
                        rel,
                        frames: &frames,
                    };
                    return Err(Error::io("read directory", c.path(), e));
                }
            }
            give_up_fds(&mut frames);
        } else {
            let done = frames.pop().map(|f| f.name).unwrap_or_default();
            if frames.is_empty() {
                return Ok(());
            }
            let j = frames.len() - 1;
            if !ensure_fd(base, rel, &mut frames, j)? {
                frames.truncate(j);
                if frames.is_empty() {
                    return Ok(());
                }
                continue;
            }
            v.child_done(
                &Cursor {
                    base,
                    rel,
                    frames: &frames,
                },
                &done,
            )?;
        }
    }
}

/// Keep at most [`HOLD`] fds besides the top frame's and the checkpoints': give up those of
/// the frames nearest the top of the walk first (the deepest ones are needed next).
fn give_up_fds(frames: &mut [Frame]) {
    let held = frames
        .iter()
        .filter(|f| f.fd.is_some() && !f.checkpoint)
        .count();
    let mut excess = held.saturating_sub(HOLD);
    let last = frames.len().saturating_sub(1);
    for f in frames.iter_mut().take(last).skip(1) {
        if excess == 0 {
            break;
        }
        if f.fd.is_some() && !f.checkpoint {
            f.fd = None;
            excess -= 1;
        }
    }
}

/// Make sure frame `i` has its fd, opening it again from the nearest ancestor that holds one.
/// `Ok(false)` when it no longer exists.
fn ensure_fd(base: &CgroupDir, rel: &str, frames: &mut [Frame], i: usize) -> Result<bool> {
    if frames[i].fd.is_some() {
        return Ok(true);
    }
    let Some(j) = (0..i).rev().find(|&j| frames[j].fd.is_some()) else {
        return Ok(false);
    };
    let mut cur: Option<OwnedFd> = None;
    let mut k = j + 1;
    while k <= i {
        // One chunk: as many components as fit in CHUNK bytes (at least one).
        let mut path = frames[k].name.clone();
        k += 1;
        while k <= i && path.len() + 1 + frames[k].name.len() <= CHUNK {
            path.push('/');
            path.push_str(&frames[k].name);
            k += 1;
        }
        let at = match &cur {
            Some(fd) => fd.as_fd(),
            None => frames[j].fd.as_ref().map_or(base.fd(), |f| f.as_fd()),
        };
        match open_beneath_at(at, &path, OFlags::RDONLY | OFlags::DIRECTORY) {
            Ok(fd) => cur = Some(fd),
            Err(Errno::NOENT) => return Ok(false),
            Err(e) => {
                let c = Cursor {
                    base,
                    rel,
                    frames: &frames[..=i],
                };
                return Err(Error::io("open", c.path(), e));
            }
        }
    }
    frames[i].fd = cur;
    Ok(frames[i].fd.is_some())
}

/// Write `data` to the file `name` in the directory `at`, in one `write(2)`.
pub(crate) fn write_at(
    at: BorrowedFd<'_>,
    name: &str,
    data: &str,
) -> std::result::Result<(), Errno> {
    let fd = open_beneath_at(at, name, OFlags::WRONLY)?;
    loop {
        match rustix::io::write(&fd, data.as_bytes()) {
            Ok(_) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The processes of a subtree: each cgroup's `cgroup.procs`; where that is `EOPNOTSUPP` (a
/// threaded cgroup, whose processes its threaded domain lists), the processes of the thread ids
/// in its `cgroup.threads`. Each pid once, in the order found.
#[derive(Default)]
pub(crate) struct Members {
    pub(crate) pids: Vec<u32>,
    seen: HashSet<u32>,
}

impl Members {
    fn add(&mut self, pid: u32) {
        if self.seen.insert(pid) {
            self.pids.push(pid);
        }
    }
}

impl Visitor for Members {
    fn enter(&mut self, at: &Cursor<'_>) -> Result<()> {
        match read_at(at.fd(), "cgroup.procs") {
            Ok(t) => crate::cgroup::parse::pids(&t)
                .into_iter()
                .for_each(|p| self.add(p)),
            // Removed while we walk: empty.
            Err(Errno::NOENT) | Err(Errno::NODEV) => {}
            Err(Errno::OPNOTSUPP) if !cfg!(ck_mutation = "no-threads-fallback") => {
                match read_at(at.fd(), "cgroup.threads") {
                    Ok(t) => {
                        for tid in crate::cgroup::parse::pids(&t) {
                            // A thread that exited meanwhile is gone with its process or alone.
                            if let Some(tgid) = tgid_of(tid) {
                                self.add(tgid);
                            }
                        }
                    }
                    Err(Errno::NOENT) | Err(Errno::NODEV) => {}
                    Err(e) => return Err(Error::io("read", at.path_of("cgroup.threads"), e)),
                }
            }
            Err(e) => return Err(Error::io("read", at.path_of("cgroup.procs"), e)),
        }
        Ok(())
    }
}

/// The process (thread group) of thread `tid`, from `/proc/<tid>/status`.
fn tgid_of(tid: u32) -> Option<u32> {
    crate::cgroup::parse::proc_status_tgid(
        &std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?,
    )
}

/// The pids in `rel` beneath `base` and every cgroup below it (see [`Members`]).
pub(crate) fn members(base: &CgroupDir, rel: &str) -> Result<Vec<u32>> {
    let mut m = Members::default();
    walk_module(base, rel, &mut m)?;
    Ok(m.pids)
}

/// Whether the cgroup `name` in the directory `at` is populated (`None`: could not be read).
fn populated_at(at: BorrowedFd<'_>, name: &str) -> Option<bool> {
    let fd = open_child(at, name).ok()?;
    crate::cgroup::parse::events(&read_at(fd.as_fd(), "cgroup.events").ok()?).populated
}

/// `rmdir` of the cgroup `name` in the directory `at`. `EBUSY` of a cgroup that holds no
/// process (its last one still exiting, or a child cgroup made meanwhile) is retried until
/// `deadline`; of a populated one it is returned at once (the caller decides: kill again, or
/// report). A cgroup already gone is fine.
pub(crate) fn rmdir_at(
    at: BorrowedFd<'_>,
    name: &str,
    deadline: Instant,
) -> std::result::Result<(), Errno> {
    loop {
        match rustix::fs::unlinkat(at, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => return Ok(()),
            Err(Errno::BUSY)
                if Instant::now() < deadline && populated_at(at, name) != Some(true) =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Removes every cgroup of a walk's subtree below its top, deepest first, each relative to its
/// parent's fd.
pub(crate) struct Remover {
    pub(crate) deadline: Instant,
}

impl Visitor for Remover {
    fn child_done(&mut self, parent: &Cursor<'_>, name: &str) -> Result<()> {
        rmdir_at(parent.fd(), name, self.deadline)
            .map_err(|e| Error::io("rmdir", parent.path_of(name), e))
    }
}

/// Thaws every cgroup of a subtree whose own `cgroup.freeze` is `1` (the module's, or one it
/// froze itself), and says which (relative to the walk's top; `.` for the top).
#[derive(Default)]
pub(crate) struct Thawer {
    pub(crate) thawed: Vec<String>,
}

impl Visitor for Thawer {
    fn enter(&mut self, at: &Cursor<'_>) -> Result<()> {
        if cfg!(ck_mutation = "no-thaw") {
            return Ok(());
        }
        if read_at(at.fd(), "cgroup.freeze").map(|t| t.trim() == "1") == Ok(true) {
            match write_at(at.fd(), "cgroup.freeze", "0") {
                Ok(()) => {
                    let r = at.rel_path();
                    self.thawed.push(if r.is_empty() { ".".into() } else { r });
                }
                Err(Errno::NOENT) | Err(Errno::NODEV) => {}
                Err(e) => return Err(Error::io("write \"0\" to", at.path_of("cgroup.freeze"), e)),
            }
        }
        Ok(())
    }
}

/// The kernel's modes of the control files a stop uses (`cgroup_file_mode()`: `0444` for a
/// file that is only read, `0644` read and written, `0200` only written; as `ls -l` shows them
/// in a new cgroup).
pub(crate) const CONTROL_MODES: [(&str, u32); 7] = [
    ("cgroup.procs", 0o644),
    ("cgroup.threads", 0o644),
    ("cgroup.kill", 0o200),
    ("cgroup.freeze", 0o644),
    ("cgroup.events", 0o444),
    ("cgroup.stat", 0o444),
    ("cgroup.type", 0o644),
];

/// Restore the mode of `name` in the directory `at` when this process's uid owns it: a
/// directory gets owner `rwx` added, a control file of [`CONTROL_MODES`] its kernel mode.
/// Returns what was changed (`<what> <old>-><new>`, octal); nothing when it is not ours, is as
/// it should be, or is gone. Never fails: what could not be restored shows in what fails next.
pub(crate) fn restore_mode_at(at: BorrowedFd<'_>, name: &str, shown: &str) -> Option<String> {
    if cfg!(ck_mutation = "no-mode-restore") {
        return None;
    }
    let st = rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if st.st_uid != rustix::process::geteuid().as_raw() {
        return None;
    }
    let old = st.st_mode & 0o7777;
    let new = if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
        old | 0o700
    } else {
        CONTROL_MODES.iter().find(|(n, _)| *n == name)?.1
    };
    if old == new {
        return None;
    }
    rustix::fs::chmodat(at, name, Mode::from_raw_mode(new), AtFlags::empty()).ok()?;
    Some(format!("{shown} {old:03o}->{new:03o}"))
}

/// Restores the modes of a subtree (see [`restore_mode_at`]): each cgroup's control files, and
/// each child directory before the walk opens it. The top directory itself is the caller's
/// ([`restore_path_modes`]).
pub(crate) struct ModeRestorer {
    /// The top's path as reports show it (relative to the root).
    pub(crate) shown: String,
    /// What was restored.
    pub(crate) restored: Vec<String>,
}

impl ModeRestorer {
    fn shown(&self, at: &Cursor<'_>, name: &str) -> String {
        let r = at.rel_path();
        [self.shown.as_str(), r.as_str(), name]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("/")
    }
}

impl Visitor for ModeRestorer {
    fn enter(&mut self, at: &Cursor<'_>) -> Result<()> {
        for (file, _) in CONTROL_MODES {
            if let Some(r) = restore_mode_at(at.fd(), file, &self.shown(at, file)) {
                self.restored.push(r);
            }
        }
        Ok(())
    }

    fn before_child(&mut self, parent: &Cursor<'_>, name: &str) -> Result<()> {
        if let Some(r) = restore_mode_at(parent.fd(), name, &self.shown(parent, name)) {
            self.restored.push(r);
        }
        Ok(())
    }
}

/// Restore the modes of every directory on the way from `base` to `rel` (`rel` included) that
/// this process's uid owns and cannot search or read, one component at a time through `O_PATH`
/// fds beneath `base`. Appends what was changed to `out`.
pub(crate) fn restore_path_modes(base: &CgroupDir, rel: &str, out: &mut Vec<String>) {
    let mut at: Option<OwnedFd> = None;
    let mut shown = String::new();
    for comp in rel.split('/').filter(|c| !c.is_empty()) {
        if !shown.is_empty() {
            shown.push('/');
        }
        shown.push_str(comp);
        let dir = at.as_ref().map_or(base.fd(), |f| f.as_fd());
        if let Some(r) = restore_mode_at(dir, comp, &shown) {
            out.push(r);
        }
        match open_beneath_at(dir, comp, OFlags::PATH | OFlags::DIRECTORY) {
            Ok(fd) => at = Some(fd),
            Err(_) => return,
        }
    }
}

/// Restore the modes of a module and everything below it before acting on it (a module that
/// shares this process's uid may have made them unusable): the directories on the way to it,
/// then each cgroup's control files and directories ([`ModeRestorer`]). Returns what was
/// changed; never fails.
pub(crate) fn restore_modes(base: &CgroupDir, rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    restore_path_modes(base, rel, &mut out);
    let mut r = ModeRestorer {
        shown: rel.to_string(),
        restored: out,
    };
    let _ = walk(base, rel, &mut r);
    r.restored
}

/// Remove `rel` under `dir` and every cgroup below it, deepest first, at any depth, each
/// directory relative to its parent's fd; `EBUSY` of a cgroup that holds no process is retried
/// for a bounded time. A cgroup that is already gone is fine.
pub(crate) fn remove_tree(dir: &CgroupDir, rel: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        walk(dir, rel, &mut Remover { deadline })?;
        match dir.rmdir_raw(rel) {
            Ok(()) | Err(Errno::NOENT) => return Ok(()),
            Err(Errno::BUSY)
                if Instant::now() < deadline && members(dir, rel).is_ok_and(|p| p.is_empty()) =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(Error::io("rmdir", dir.display_path(rel), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_child_refuses_anything_but_one_component() {
        let dir = rustix::fs::open(
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        for bad in ["", ".", "..", "a/b", "../x"] {
            assert_eq!(
                open_child(dir.as_fd(), bad).err(),
                Some(Errno::INVAL),
                "{bad:?}"
            );
        }
    }
}
