//! The limit loop of section 3: the least a `status` could do, opening and reading exactly the
//! files one `status --json` was seen opening; in the bench's process, and as a process of its
//! own (`vm limit-loop ...`, so that it pays a process start as `status` does).

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Dir, FileType, Mode, OFlags};

use crate::common::Res;
use crate::inotify::Inotify;

/// The files one `status --json` opened, seen through inotify `IN_OPEN`: in the root, in
/// `subc-modules/`, in a populated module and in an empty one.
pub struct Seen {
    pub root: Vec<String>,
    pub populated: Vec<String>,
    pub empty: Vec<String>,
}

/// The files one `status --json` (run by `run_status`) opens, seen through inotify `IN_OPEN`: in
/// `root`, in its `subc-modules/`, in the populated module `populated` and in the empty `empty`.
pub fn see_status_files(
    root: &Path,
    populated: &str,
    empty: &str,
    run_status: impl FnOnce() -> Res<()>,
) -> Res<Seen> {
    let ino = Inotify::new()?;
    let mods = root.join("subc-modules");
    let w_root = ino.add(root, libc::IN_OPEN)?;
    let w_mods = ino.add(&mods, libc::IN_OPEN)?;
    let w_pop = ino.add(&mods.join(populated), libc::IN_OPEN)?;
    let w_empty = ino.add(&mods.join(empty), libc::IN_OPEN)?;
    run_status()?;
    let mut seen = Seen {
        root: Vec::new(),
        populated: Vec::new(),
        empty: Vec::new(),
    };
    let mut in_root = BTreeSet::new();
    for (wd, mask, name) in ino.drain()? {
        if mask & libc::IN_ISDIR != 0 || name.is_empty() {
            continue;
        }
        if wd == w_root {
            in_root.insert(name);
        } else if wd == w_mods {
            in_root.insert(format!("subc-modules/{name}"));
        } else if wd == w_pop && !seen.populated.contains(&name) {
            seen.populated.push(name);
        } else if wd == w_empty && !seen.empty.contains(&name) {
            seen.empty.push(name);
        }
    }
    seen.root = in_root.into_iter().collect();
    Ok(seen)
}

/// What one pass of the limit loop did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Opens {
    pub modules: usize,
    pub opened: usize,
    pub failed: usize,
}

/// The limit loop: the root's files, one listing of `subc-modules/`, then per module an
/// openat + read (to a short read) + close of each file `status` opened in an empty module, and
/// where `cgroup.events` says populated, those it opened in a populated one as well.
pub fn limit(root: &Path, seen: &Seen) -> Res<Opens> {
    let rdir = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut opens = Opens::default();
    let mut buf = [0u8; 4096];
    for f in &seen.root {
        read_at(&rdir, f.as_bytes(), &mut buf, &mut opens, None)?;
    }
    let dir = rustix::fs::openat(
        &rdir,
        c"subc-modules",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut names: Vec<Vec<u8>> = Vec::new();
    for ent in Dir::read_from(&dir)? {
        let ent = ent?;
        let name = ent.file_name().to_bytes();
        if ent.file_type() == FileType::Directory && name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    opens.modules = names.len();
    let extra: Vec<&String> = seen
        .populated
        .iter()
        .filter(|f| !seen.empty.contains(f))
        .collect();
    let mut path: Vec<u8> = Vec::with_capacity(256);
    let mut events = Vec::with_capacity(64);
    for name in &names {
        let mut populated = false;
        for f in &seen.empty {
            path.clear();
            path.extend_from_slice(name);
            path.push(b'/');
            path.extend_from_slice(f.as_bytes());
            let keep = f == "cgroup.events";
            events.clear();
            read_at(
                &dir,
                &path,
                &mut buf,
                &mut opens,
                keep.then_some(&mut events),
            )?;
            if keep {
                populated = events.windows(11).any(|w| w == b"populated 1");
            }
        }
        if populated {
            for f in &extra {
                path.clear();
                path.extend_from_slice(name);
                path.push(b'/');
                path.extend_from_slice(f.as_bytes());
                read_at(&dir, &path, &mut buf, &mut opens, None)?;
            }
        }
    }
    Ok(opens)
}

fn read_at(
    dir: &OwnedFd,
    rel: &[u8],
    buf: &mut [u8],
    opens: &mut Opens,
    mut keep: Option<&mut Vec<u8>>,
) -> Res<()> {
    let c = CString::new(rel)?;
    match rustix::fs::openat(dir, &c, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => {
            opens.opened += 1;
            loop {
                let n = rustix::io::read(&fd, &mut *buf)?;
                if let Some(k) = keep.as_deref_mut() {
                    k.extend_from_slice(&buf[..n]);
                }
                if n < buf.len() {
                    return Ok(());
                }
            }
        }
        Err(_) => {
            opens.failed += 1;
            Ok(())
        }
    }
}

/// `vm limit-loop ROOT ROOTFILES EMPTYFILES POPULATEDFILES` (comma-separated): the limit loop
/// as a process of its own, so that it pays a process start as `status` does.
pub fn limit_main(args: &[String]) -> Res<()> {
    let list = |i: usize| -> Vec<String> {
        args.get(i)
            .map(|s| {
                s.split(',')
                    .filter(|w| !w.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let root = PathBuf::from(args.first().ok_or("usage: limit-loop ROOT ...")?);
    let seen = Seen {
        root: list(1),
        empty: list(2),
        populated: list(3),
    };
    let o = limit(&root, &seen)?;
    println!("{} {} {}", o.modules, o.opened, o.failed);
    Ok(())
}
