//! Writing a module's control files for a kill, and waiting a slice of the deadline.

use std::time::{Duration, Instant};

use rustix::io::Errno;

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::wait::{Waited, join, wait_events};
use crate::error::{Error, Result};

/// How a write of a control file of the module ended.
pub(super) enum Wrote {
    Ok,
    /// The module is gone (removed meanwhile): nothing left to kill.
    Gone,
    Unsupported(String),
    Failed(Error),
}

/// Write `data` to `file` of the module. `EINTR` is retried; `EACCES`/`EPERM` once more after
/// the modes this uid owns were restored. `ENOENT` is the module gone, or else the file absent
/// (`absent` says what that means).
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
            Err(Errno::NOENT) | Err(Errno::NODEV) => {
                return if dir.is_dir(rel).unwrap_or(false) {
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
