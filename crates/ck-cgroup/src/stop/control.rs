//! Writing a module's control files for a kill, and waiting a slice of the deadline.

use std::time::{Duration, Instant};

use rustix::io::Errno;

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::gone::{is_gone, removed};
use crate::cgroup::wait::{Waited, join, wait_events};
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

/// How a write of a control file of the module ended.
pub(super) enum Wrote {
    Ok,
    /// The module is gone (removed meanwhile): nothing left to kill.
    Gone,
    Unsupported(String),
    Failed(Error),
}

/// Write `data` to `file` of the module. `EINTR` is retried; `EACCES`/`EPERM` once more after
/// the modes this uid owns were restored. `ENOENT` or `ENODEV` is the module gone (removed
/// meanwhile: `crate::cgroup::gone`), or else the file absent (`absent` says what that means).
pub(super) fn write_control(
    dir: &CgroupDir,
    rel: &str,
    file: &str,
    data: &str,
    absent: &str,
) -> Wrote {
    let path = join(rel, file);
    let mut restored = false;
    loop {
        match dir.write_raw(&path, data) {
            Ok(()) => return Wrote::Ok,
            Err(e) if is_gone(e) => {
                // Gone or absent, decided from the kernel's own files: a directory removed while
                // its handle is open still opens as `.`, but holds no file, not even
                // `cgroup.procs`, which every cgroup has; a kernel without `file` has the rest.
                // (Asked of the directory, a kill that lost the race to another kill read as
                // a kernel before 5.14, exit 2.)
                let present = if mutation::active(Control::GoneReadAsAbsent) {
                    dir.is_dir(rel).unwrap_or(false)
                } else {
                    !removed(dir, rel)
                };
                return if present {
                    Wrote::Unsupported(absent.to_string())
                } else {
                    Wrote::Gone
                };
            }
            Err(Errno::OPNOTSUPP) => {
                return Wrote::Unsupported(format!(
                    "writing {file}: EOPNOTSUPP (Operation not supported)"
                ));
            }
            Err(Errno::ACCESS) | Err(Errno::PERM) if !restored => {
                restored = true;
                let _ = crate::cgroup::tree::restore_modes(dir, rel);
            }
            Err(e) => {
                return Wrote::Failed(Error::io(
                    format_args!("write {data:?} to"),
                    dir.display_path(&path),
                    e,
                ));
            }
        }
    }
}

/// Wait at most `slice` (and never past `deadline`) for `populated 0`.
pub(super) fn wait_empty_for(
    dir: &CgroupDir,
    rel: &str,
    slice: Duration,
    deadline: Instant,
) -> Result<Waited> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .min(slice);
    wait_events(dir, rel, left, |e| e.populated == Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kill that writes to a module another kill removed meanwhile: the module is gone, not a
    /// kernel without the file. On a real cgroup, made and removed here.
    #[test]
    fn a_module_removed_under_its_handle_is_gone_not_unsupported() {
        // The suite's parent (scripts/test), else the mount's root: explicit, never ambient.
        let parent = match std::env::var_os("CK_CGROUP_TEST_PARENT") {
            Some(p) => std::path::PathBuf::from(p),
            None => crate::cgroup::mount::cgroup2_mount().expect("a cgroup2 mount"),
        };
        let path = parent.join(format!("ck-gone-test-{}", std::process::id()));
        std::fs::create_dir(&path).expect("a cgroup to remove under its handle");
        let dir = CgroupDir::open(&path);
        let _ = std::fs::remove_dir(&path);
        let dir = dir.expect("opened before its removal");
        for (file, absent) in [
            ("cgroup.kill", "kill absent"),
            ("cgroup.freeze", "freeze absent"),
        ] {
            match write_control(&dir, "", file, "1", absent) {
                Wrote::Gone => {}
                Wrote::Unsupported(r) => panic!("{file}: read as unsupported: {r}"),
                Wrote::Ok => panic!("{file}: written to a removed cgroup"),
                Wrote::Failed(e) => panic!("{file}: {e}"),
            }
        }
    }
}
