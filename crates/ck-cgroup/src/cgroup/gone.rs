//! A cgroup removed while it is read: which errnos say so. The one rule for every reader of a
//! module's files that another process may remove meanwhile (a stop racing another stop,
//! `watch`, `status`).
//!
//! An `rmdir` of a cgroup removes its files first, then its directory
//! (`cgroup_destroy_locked()`), and kernfs deactivates each node before it unlinks it. So a
//! reader racing the removal gets:
//!
//! - `ENODEV` from an `open` that found the file just before it was deactivated
//!   (`kernfs_fop_open()`), and from a `read` or `write` of a descriptor opened before;
//! - `ENOENT` from an `open` of a file already removed, or of any path beneath the directory,
//!   even through a handle of the directory held open.
//!
//! Either is the cgroup gone, never a failure: a stop that lost the race to another stop
//! succeeded (the module is "gone meanwhile"). Every other errno is kept as the kernel gave it.
//! `ENOENT` also stands for a file this kernel or this cgroup does not have (a controller not
//! enabled, a kernel before the file); where the two differ, [`removed`] tells them apart.

use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::cgroup::dir::CgroupDir;
use crate::mutation::{self, Control};

/// Whether `errno`, from an open, read or write of a cgroup's file (or of a path beneath a
/// cgroup), says that the cgroup is gone or being removed: `ENODEV` or `ENOENT`.
pub(crate) fn is_gone(errno: Errno) -> bool {
    match errno {
        Errno::NOENT => true,
        // Mutation: a file of a directory being removed is a failure (what `make test` saw:
        // a kill that lost the race exited 1).
        Errno::NODEV => !mutation::active(Control::GoneIsError),
        _ => false,
    }
}

/// Whether the cgroup `rel` beneath `dir` is removed or being removed: it holds no
/// `cgroup.procs`, which every live cgroup has (a directory removed while a handle of it is
/// open still opens as `.`, but holds no file, and a directory being removed loses its files
/// first). Asked where `ENOENT` may also be a file the kernel does not have.
/// Only `ENOENT` counts: a directory this process may not search (`EACCES`) is still there.
pub(crate) fn removed(dir: &CgroupDir, rel: &str) -> bool {
    // The path spelled here, not by `wait::join`: `wait` asks this file what is gone.
    let procs = if rel.is_empty() {
        "cgroup.procs".to_string()
    } else {
        format!("{rel}/cgroup.procs")
    };
    dir.open_beneath(&procs, OFlags::PATH).err() == Some(Errno::NOENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel answers for the files of a cgroup removed under a reader, on a real
    /// cgroup made and removed here: a descriptor opened before reads `ENODEV`, an open
    /// through the directory's handle `ENOENT`; both are the cgroup gone, and it reads as
    /// removed (a live one does not). Other errnos are not gone.
    #[test]
    fn enodev_and_enoent_of_a_removed_cgroup_are_gone() {
        let parent = match std::env::var_os("CK_CGROUP_TEST_PARENT") {
            Some(p) => std::path::PathBuf::from(p),
            None => crate::cgroup::mount::cgroup2_mount().expect("a cgroup2 mount"),
        };
        let path = parent.join(format!("ck-gone-errno-test-{}", std::process::id()));
        std::fs::create_dir(&path).expect("a cgroup to remove under its readers");
        let dir = CgroupDir::open(&path);
        if let Ok(d) = &dir {
            assert!(!removed(d, ""), "a live cgroup read as removed");
        }
        let events = dir
            .as_ref()
            .ok()
            .and_then(|d| d.open_beneath("cgroup.events", OFlags::RDONLY).ok());
        let _ = std::fs::remove_dir(&path);
        let dir = dir.expect("opened before its removal");
        let events = events.expect("cgroup.events opened before the removal");
        let read = crate::cgroup::dir::read_fd(&events).expect_err("a read after the removal");
        assert_eq!(read, Errno::NODEV, "a descriptor opened before the removal");
        assert!(
            is_gone(read),
            "ENODEV of a removed cgroup's file is not gone"
        );
        let open = dir
            .read_raw("cgroup.events")
            .expect_err("an open after the removal");
        assert_eq!(open, Errno::NOENT, "an open through the removed handle");
        assert!(is_gone(open));
        assert!(removed(&dir, ""));
        for other in [
            Errno::ACCESS,
            Errno::PERM,
            Errno::BUSY,
            Errno::INVAL,
            Errno::MFILE,
        ] {
            assert!(!is_gone(other), "{other:?}");
        }
    }
}
