//! SIGKILL under the freezer: `1` to `cgroup.freeze`, wait (at most 100 ms: a member in
//! ptrace-stop may never count as frozen) for `frozen 1`, SIGKILL every member (a frozen process
//! cannot fork, so the member list is stable), thaw, repeat until empty.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use super::Ran;
use super::control::{Wrote, wait_empty_for, write_control};
use super::signal::signal_members;
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::gone::is_gone;
use crate::cgroup::tree::members;
use crate::cgroup::wait::{Waited, join, wait_events};
use crate::error::{Error, Result};

/// Freeze (`cgroup.freeze`, kernel 5.2), SIGKILL every member, thaw; repeated until empty or
/// `deadline`. The module is never left frozen.
pub(super) fn kill(dir: &CgroupDir, rel: &str, deadline: Instant) -> Result<Ran> {
    let absent = "cgroup.freeze is absent (kernel before 5.2)";
    match write_control(dir, rel, "cgroup.freeze", "1", absent) {
        Wrote::Ok => {}
        Wrote::Gone => return Ok(Ran::Done),
        Wrote::Unsupported(r) => return Ok(Ran::Unsupported(r)),
        Wrote::Failed(e) => return Ok(Ran::Failed(e)),
    }
    let file = join(rel, "cgroup.freeze");
    let result = (|| -> Result<()> {
        loop {
            // At most 100 ms: the kernel's test_cgfreezer_ptraced notes that a member in
            // ptrace-stop may not count as frozen (on 6.18 it does; older kernels differ), and
            // a task that never freezes must not hold the kill until the timeout. A member that
            // is not frozen yet is killed all the same (through its pidfd).
            let left = deadline
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            let frozen = wait_events(dir, rel, left, |e| {
                e.frozen == Some(true) || e.populated == Some(false)
            })? == Waited::Empty;
            if frozen {
                // Frozen: no member can fork or exit-and-be-reaped, so one list is stable.
                for pid in members(dir, rel)? {
                    if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
                        let _ = rustix::process::kill_process(p, Signal::KILL);
                    }
                }
            } else {
                // Not (yet) frozen: through pidfds, as a member may exit and its pid be reused.
                signal_members(dir, rel, Signal::KILL)?;
            }
            match dir.write_raw(&file, "0") {
                Ok(()) => {}
                Err(e) if is_gone(e) => return Ok(()),
                Err(e) => return Err(Error::io("write \"0\" to", dir.display_path(&file), e)),
            }
            let w = wait_empty_for(dir, rel, Duration::from_millis(100), deadline)?;
            if w == Waited::Empty || Instant::now() >= deadline {
                return Ok(());
            }
            match dir.write_raw(&file, "1") {
                Ok(()) => {}
                Err(e) if is_gone(e) => return Ok(()),
                Err(e) => return Err(Error::io("write \"1\" to", dir.display_path(&file), e)),
            }
        }
    })();
    // Never leave the module frozen.
    let thaw = match dir.write_raw(&file, "0") {
        Ok(()) => Ok(()),
        Err(e) if is_gone(e) => Ok(()),
        Err(e) => Err(Error::io("write \"0\" to", dir.display_path(&file), e)),
    };
    match result.and(thaw) {
        Ok(()) => Ok(Ran::Done),
        Err(e) => Ok(Ran::Failed(e)),
    }
}
