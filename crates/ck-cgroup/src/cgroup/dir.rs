//! The root handle: an open directory on a cgroup2 filesystem, and every file access beneath it.
//!
//! Nothing else in the crate opens a cgroup path. Every open goes through `openat2(2)` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` relative to the root's
//! directory fd, so no symlink is followed and no `..` escapes; on a kernel without `openat2`
//! (before 5.6) the path is walked one component at a time with `O_NOFOLLOW`, refusing `..`.
//!
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html>.

use std::os::unix::io::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::error::{Error, Result};
use crate::id::name_bytes::{self, bytes_of};
use crate::mutation::{self, Control};

/// `CGROUP2_SUPER_MAGIC` from `linux/magic.h` (rustix has no constant for it).
pub const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// An open directory on a cgroup2 filesystem.
///
/// All reads, writes, `mkdir`s and `rmdir`s beneath it take a path relative to it.
#[derive(Debug)]
pub struct CgroupDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl CgroupDir {
    /// Open `path` as a directory and check with `fstatfs(2)` that it is on cgroup2.
    ///
    /// A missing path, a file, or a directory on another filesystem is bad input (exit 2).
    pub fn open(path: &Path) -> Result<CgroupDir> {
        let fd = rfs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            let hint = match e {
                Errno::NOENT => "pass an existing cgroup2 directory with --root or CK_CGROUP_ROOT",
                Errno::NOTDIR => "a root is a cgroup directory, not a file",
                _ => "check the path and your permissions",
            };
            Error::io("open cgroup root", path, e)
                .with_class(crate::error::Class::BadInput)
                .with_hint(hint)
        })?;
        let st = rfs::fstatfs(&fd).map_err(|e| Error::io("statfs", path, e))?;
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        let magic = st.f_type as i64;
        if magic != CGROUP2_SUPER_MAGIC {
            return Err(Error::bad_input(format!(
                "{} is not on a cgroup2 filesystem (statfs type {magic:#x})",
                path.display()
            ))
            .with_hint(
                "pass a directory under the cgroup2 mount (see `grep cgroup2 /proc/self/mountinfo`)",
            )
            .with_kind(crate::error::ErrorKind::NoCgroup2));
        }
        Ok(CgroupDir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The path this handle was opened at (for messages only; no access goes through it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory fd.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The absolute path of `rel` (for messages: each component of `rel` in the names' shown
    /// form, `\xff`, `tab\x09x`; the root's own path as it was given).
    pub fn display_path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.path.clone()
        } else {
            let shown: Vec<_> = rel
                .split('/')
                .map(|c| crate::id::shown(c).into_owned())
                .collect();
            self.path.join(shown.join("/"))
        }
    }

    /// Open `rel` beneath this directory with `flags`; no symlink, no `..`, no escape.
    pub fn open_beneath(&self, rel: &str, flags: OFlags) -> std::result::Result<OwnedFd, Errno> {
        open_beneath_at(self.fd.as_fd(), rel, flags)
    }

    /// Open the directory `rel` beneath this one as a handle of its own (checked to be on
    /// cgroup2), so that what is done through it stays with that directory even if another
    /// one of the same name is made after it was removed. `EXDEV` when it is not on cgroup2.
    ///
    /// The check costs no `fstatfs(2)` where `openat2` resolves it with `RESOLVE_NO_XDEV`: a
    /// path that crosses no mount is on this directory's filesystem, cgroup2 (`status` opens
    /// one directory per module). Where it crosses one, or on a kernel without `openat2`, the
    /// directory's filesystem is asked.
    pub fn open_dir(&self, rel: &str) -> std::result::Result<CgroupDir, Errno> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let same_mount = rfs::openat2(
            self.fd.as_fd(),
            &*bytes_of(if rel.is_empty() { "." } else { rel }),
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH
                | ResolveFlags::NO_SYMLINKS
                | ResolveFlags::NO_MAGICLINKS
                | ResolveFlags::NO_XDEV,
        );
        let fd = match same_mount {
            Ok(fd) => fd,
            Err(Errno::XDEV | Errno::NOSYS) => {
                let fd = self.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY)?;
                let st = rfs::fstatfs(&fd)?;
                #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
                if st.f_type as i64 != CGROUP2_SUPER_MAGIC {
                    return Err(Errno::XDEV);
                }
                fd
            }
            Err(e) => return Err(e),
        };
        Ok(CgroupDir {
            fd,
            path: self.display_path(rel),
        })
    }

    /// Read a whole kernel file beneath this directory.
    pub fn read(&self, rel: &str) -> Result<String> {
        self.read_raw(rel)
            .map_err(|e| Error::io("read", self.display_path(rel), e))
    }

    /// Read a whole kernel file, returning the bare errno (callers map `ENOENT` to "absent").
    pub fn read_raw(&self, rel: &str) -> std::result::Result<String, Errno> {
        let fd = self.open_beneath(rel, OFlags::RDONLY)?;
        read_cgroup_file(&fd, rel)
    }

    /// A flat-keyed kernel file beneath this directory (`memory.events`, `memory.stat`: a
    /// `key value` per line, [`crate::cgroup::parse::flat_keyed`]); `None` where it cannot be
    /// read (no such controller), never an empty map taken for zeros.
    pub fn read_flat_keyed(&self, rel: &str) -> Option<std::collections::BTreeMap<String, u64>> {
        self.read_raw(rel)
            .ok()
            .map(|t| crate::cgroup::parse::flat_keyed(&t))
    }

    /// Write `data` to a kernel file beneath this directory in one `write(2)`.
    pub fn write(&self, rel: &str, data: &str) -> Result<()> {
        self.write_raw(rel, data)
            .map_err(|e| Error::io(format_args!("write {data:?} to"), self.display_path(rel), e))
    }

    /// Write in one `write(2)`, returning the bare errno.
    pub fn write_raw(&self, rel: &str, data: &str) -> std::result::Result<(), Errno> {
        let fd = self.open_beneath(rel, OFlags::WRONLY)?;
        write_all(&fd, data.as_bytes())
    }

    /// `mkdir(2)` beneath this directory, mode 0755 whatever the umask (`fchmod(2)` after it:
    /// under `umask 0777` the directory would be made 000, and nothing could enter it).
    /// `Ok(false)` when it already existed as a directory.
    pub fn mkdir(&self, rel: &str) -> Result<bool> {
        let (parent, name) = split_parent(rel);
        let mode = Mode::from_raw_mode(0o755);
        let made = self
            .open_beneath(parent, OFlags::RDONLY | OFlags::DIRECTORY)
            .and_then(|p| rfs::mkdirat(&p, &*bytes_of(name), mode).map(|()| p));
        match made {
            Ok(p) => {
                // Through the parent: a directory made 000 cannot be opened to be changed.
                rfs::chmodat(&p, &*bytes_of(name), mode, AtFlags::empty())
                    .map_err(|e| Error::io("chmod 0755", self.display_path(rel), e))?;
                Ok(true)
            }
            Err(Errno::EXIST) => match self.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY) {
                Ok(_) => Ok(false),
                Err(e) => Err(Error::io("open", self.display_path(rel), e)),
            },
            Err(e) => Err(Error::io("mkdir", self.display_path(rel), e)),
        }
    }

    /// `rmdir(2)` beneath this directory, returning the bare errno.
    pub fn rmdir_raw(&self, rel: &str) -> std::result::Result<(), Errno> {
        let (parent, name) = split_parent(rel);
        let p = self.open_beneath(parent, OFlags::RDONLY | OFlags::DIRECTORY)?;
        rfs::unlinkat(&p, &*bytes_of(name), AtFlags::REMOVEDIR)
    }

    /// Whether `rel` exists as a directory beneath this one (an `O_PATH` open: a directory whose
    /// mode denies reading it is still there).
    pub fn is_dir(&self, rel: &str) -> Result<bool> {
        match self.open_beneath(rel, OFlags::PATH | OFlags::DIRECTORY) {
            Ok(_) => Ok(true),
            Err(Errno::NOENT) | Err(Errno::NOTDIR) => Ok(false),
            Err(e) => Err(Error::io("open", self.display_path(rel), e)),
        }
    }

    /// Whether the file `rel` exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.open_beneath(rel, OFlags::PATH).is_ok()
    }

    /// The names of the sub-directories of `rel` (child cgroups), sorted. A missing `rel` is empty.
    pub fn subdirs(&self, rel: &str) -> Result<Vec<String>> {
        let fd = match self.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("open", self.display_path(rel), e)),
        };
        let dir = rfs::Dir::read_from(&fd)
            .map_err(|e| Error::io("read directory", self.display_path(rel), e))?;
        let mut out = Vec::new();
        for ent in dir {
            let ent = ent.map_err(|e| Error::io("read directory", self.display_path(rel), e))?;
            if ent.file_type() != rfs::FileType::Directory {
                continue;
            }
            let name = ent.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            out.push(name_bytes::text_of(name));
        }
        out.sort();
        Ok(out)
    }
}

/// Open `rel` beneath the directory `base` with `flags`: `openat2(RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, or on kernels before 5.6 one
/// `openat(O_NOFOLLOW)` per component, refusing `..` and absolute paths. Every open of a cgroup
/// path goes through here, from the root's fd or from a directory opened beneath it.
pub(crate) fn open_beneath_at(
    base: BorrowedFd<'_>,
    rel: &str,
    flags: OFlags,
) -> std::result::Result<OwnedFd, Errno> {
    let rel = if rel.is_empty() { "." } else { rel };
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    match rfs::openat2(
        base,
        &*bytes_of(rel),
        flags,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        Err(Errno::NOSYS) => open_walk(base, rel, flags),
        other => other,
    }
}

/// The pre-5.6 path: one `openat(O_NOFOLLOW)` per component, refusing `..` and absolute paths.
fn open_walk(
    base: BorrowedFd<'_>,
    rel: &str,
    flags: OFlags,
) -> std::result::Result<OwnedFd, Errno> {
    let parts: Vec<&str> = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if rel.starts_with('/') || parts.contains(&"..") {
        return Err(Errno::XDEV);
    }
    let Some((last, dirs)) = parts.split_last() else {
        return rfs::openat(base, ".", flags, Mode::empty());
    };
    let mut cur: Option<OwnedFd> = None;
    for d in dirs {
        let at = cur.as_ref().map_or(base, |f| f.as_fd());
        cur = Some(rfs::openat(
            at,
            &*bytes_of(d),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?);
    }
    let at = cur.as_ref().map_or(base, |f| f.as_fd());
    rfs::openat(at, &*bytes_of(last), flags, Mode::empty())
}

fn split_parent(rel: &str) -> (&str, &str) {
    match rel.rsplit_once('/') {
        Some((p, n)) => (p, n),
        None => ("", rel),
    }
}

/// Read an fd to its end from offset 0 (kernel files are small), into the buffer's spare
/// capacity (no zeroed scratch buffer per read: `status` reads nine files per module).
pub(crate) fn read_fd(fd: &OwnedFd) -> std::result::Result<String, Errno> {
    read_until(fd, false)
}

/// Read the cgroup file `rel` (its last component names it) open at `fd`: as [`read_fd`], but a
/// read that returns less than it asked for is the end for every file but `cgroup.procs` and
/// `cgroup.threads`. Those list one record per pid (their own `seq_file` iterator), and a read
/// ends short where the next record does not fit; every other cgroup2 file is written by one
/// `show` call (kernfs's single-record `seq_file`), which the kernel copies out up to the
/// size asked, so a short read left nothing behind. One `pread` per file instead of two: `exec`
/// reads six files, `status` nine per module.
pub(crate) fn read_cgroup_file(fd: &OwnedFd, rel: &str) -> std::result::Result<String, Errno> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    read_until(fd, !matches!(name, "cgroup.procs" | "cgroup.threads"))
}

/// [`read_fd`]; with `short_is_end`, up to the first read that returns less than it asked for.
fn read_until(fd: &OwnedFd, short_is_end: bool) -> std::result::Result<String, Errno> {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut off = 0u64;
    loop {
        if buf.capacity() - buf.len() < 1024 {
            buf.reserve(4096);
        }
        let asked = buf.capacity() - buf.len();
        let n = match rustix::io::pread(fd, rustix::buffer::spare_capacity(&mut buf), off) {
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        off += n as u64;
        // Mutation control (`CK_MUTATION=read-to-end`): every file read to its end.
        if short_is_end && n < asked && !mutation::active(Control::ReadToEnd) {
            break;
        }
    }
    Ok(match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

fn write_all(fd: &OwnedFd, data: &[u8]) -> std::result::Result<(), Errno> {
    // Kernel cgroup files take one value per write(2): never split it.
    loop {
        match rustix::io::write(fd, data) {
            Ok(_) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
}
