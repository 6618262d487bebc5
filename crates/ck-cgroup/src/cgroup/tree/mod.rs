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

use std::os::unix::io::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use rustix::fs::{Dir, FileType, OFlags};
use rustix::io::Errno;

use crate::cgroup::dir::{CgroupDir, open_beneath_at, read_cgroup_file};
use crate::cgroup::gone::is_gone;
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

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
    read_cgroup_file(&open_beneath_at(at, name, OFlags::RDONLY)?, name)
}

/// The names of the sub-directories of the directory `fd` (child cgroups), unsorted.
pub(crate) fn child_dirs(fd: BorrowedFd<'_>) -> std::result::Result<Vec<String>, Errno> {
    // cgroup.stat's nr_descendants 0 (a leaf, the usual module) needs no listing.
    if let Ok(stat) = read_at(fd, "cgroup.stat")
        && crate::cgroup::parse::flat_key(&stat, "nr_descendants") == Some(0)
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
        // cgroupfs names are what mkdir(2) took: one that is not UTF-8 is walked by its bytes
        // (id::name_bytes), never by a lossy spelling that names another directory.
        out.push(crate::id::name_bytes::text_of(name));
    }
    Ok(out)
}

/// Walk `rel` beneath `base` and every cgroup below it, depth first. A missing `rel` is an
/// empty walk. Errors of the walk itself (a directory that cannot be opened or listed) carry
/// the directory's path; a visitor's errors are returned as they are.
pub(crate) fn walk(base: &CgroupDir, rel: &str, v: &mut dyn Visitor) -> Result<()> {
    let top = match base.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => fd,
        Err(e) if is_gone(e) => return Ok(()),
        Err(e) => return Err(Error::io("open", base.display_path(rel), e)),
    };
    let mut w = Walk {
        base,
        rel,
        frames: vec![Frame {
            name: String::new(),
            fd: Some(top),
            checkpoint: true,
            since_checkpoint: 0,
            children: Vec::new(),
        }],
        checkpoints: 1,
    };
    v.enter(&w.cursor())?;
    if !w.list_children()? {
        return Ok(());
    }
    loop {
        let i = w.frames.len() - 1;
        if !ensure_fd(base, rel, &mut w.frames, i)? {
            // This directory went away: its subtree is gone too.
            w.frames.truncate(i);
            if w.frames.is_empty() {
                return Ok(());
            }
            continue;
        }
        if let Some(child) = w.frames[i].children.pop() {
            v.before_child(&w.cursor(), &child)?;
            let Some(fd) = w.open_child(i, &child)? else {
                continue;
            };
            w.push(i, child, fd);
            v.enter(&w.cursor())?;
            w.list_children()?;
            give_up_fds(&mut w.frames);
        } else {
            let done = w.frames.pop().map(|f| f.name).unwrap_or_default();
            if w.frames.is_empty() {
                return Ok(());
            }
            let j = w.frames.len() - 1;
            if !ensure_fd(base, rel, &mut w.frames, j)? {
                w.frames.truncate(j);
                if w.frames.is_empty() {
                    return Ok(());
                }
                continue;
            }
            v.child_done(&w.cursor(), &done)?;
        }
    }
}

/// A walk in progress: the stack of frames from the top down to the cgroup being visited.
struct Walk<'w> {
    base: &'w CgroupDir,
    rel: &'w str,
    frames: Vec<Frame>,
    checkpoints: usize,
}

impl Walk<'_> {
    fn cursor(&self) -> Cursor<'_> {
        Cursor {
            base: self.base,
            rel: self.rel,
            frames: &self.frames,
        }
    }

    /// Read the children of the top frame; `Ok(false)` when it went away meanwhile.
    fn list_children(&mut self) -> Result<bool> {
        let listed = match self.frames.last().and_then(|f| f.fd.as_ref()) {
            Some(fd) => child_dirs(fd.as_fd()),
            None => child_dirs(self.base.fd()),
        };
        match listed {
            Ok(c) => {
                if let Some(f) = self.frames.last_mut() {
                    f.children = c;
                }
                Ok(true)
            }
            Err(e) if is_gone(e) => Ok(false),
            Err(e) => Err(Error::io("read directory", self.cursor().path(), e)),
        }
    }

    /// Open `child` of frame `i` relative to that frame's fd; `None` when it went away.
    fn open_child(&self, i: usize, child: &str) -> Result<Option<OwnedFd>> {
        let opened = if mutation::active(Control::WalkByPath) {
            // Mutation: spell out the whole path from the walk's base, as a walk by path
            // would (ENAMETOOLONG past PATH_MAX).
            let sub = [
                self.rel.to_string(),
                self.cursor().rel_path(),
                child.to_string(),
            ]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("/");
            self.base
                .open_beneath(&sub, OFlags::RDONLY | OFlags::DIRECTORY)
        } else {
            let parent = self.frames[i]
                .fd
                .as_ref()
                .map_or(self.base.fd(), |f| f.as_fd());
            open_child(parent, child)
        };
        match opened {
            Ok(fd) => Ok(Some(fd)),
            Err(e) if is_gone(e) => Ok(None),
            Err(e) => Err(Error::io("open", self.cursor().path_of(child), e)),
        }
    }

    /// Push `child` (opened as `fd`) above frame `i`; a frame more than half a [`CHUNK`] of
    /// path from the last checkpoint becomes one (its fd is kept), up to [`MAX_CHECKPOINTS`].
    fn push(&mut self, i: usize, child: String, fd: OwnedFd) {
        let since = self.frames[i].since_checkpoint + child.len() + 1;
        let checkpoint = since > CHUNK / 2 && self.checkpoints < MAX_CHECKPOINTS;
        if checkpoint {
            self.checkpoints += 1;
        }
        self.frames.push(Frame {
            name: child,
            fd: Some(fd),
            checkpoint,
            since_checkpoint: if checkpoint { 0 } else { since },
            children: Vec::new(),
        });
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
            Err(e) if is_gone(e) => return Ok(false),
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

mod members;
mod modes;
mod remove_tree;

use members::populated_at;
pub(crate) use members::{members, members_of};
pub(crate) use modes::{Thawer, restore_modes, restore_path_modes};
pub(crate) use remove_tree::{Removal, remove_subtree_then, remove_tree, rmdir_at};

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
