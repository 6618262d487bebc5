//! SIGKILL by `cgroup.kill` (kernel 5.14): `1` written to the module's top takes its whole
//! subtree, threaded sub-cgroups and frozen, stopped, traced and vfork-blocked members included,
//! atomically (what they fork meanwhile is killed too). systemd's `cg_kill_kernel_sigkill`.

use std::time::{Duration, Instant};

use super::control::{Wrote, wait_empty_for, write_control};
use super::{Ran, signal};
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::wait::Waited;
use crate::error::Result;
use crate::mutation::{self, Control};

/// Write `cgroup.kill`, and again, at growing intervals, while the subtree stays populated
/// until `deadline`: a process moved in after the write (an exec racing the kill) is not taken
/// by it.
pub(super) fn kill(dir: &CgroupDir, rel: &str, deadline: Instant) -> Result<Ran> {
    let absent = "cgroup.kill is absent (kernel before 5.14)";
    match write_control(dir, rel, "cgroup.kill", "1", absent) {
        Wrote::Ok => {}
        Wrote::Gone => return Ok(Ran::Done),
        Wrote::Unsupported(r) => return Ok(Ran::Unsupported(r)),
        Wrote::Failed(e) => return Ok(Ran::Failed(e)),
    }
    // cgroup.kill takes what is in the subtree when it is written, and what those fork
    // meanwhile; a process moved in afterwards (an exec racing this kill) is not taken.
    // So while the subtree stays populated, write it again.
    let mut slice = Duration::from_millis(20);
    let mut writes = 1;
    loop {
        if wait_empty_for(dir, rel, slice, deadline)? == Waited::Empty || Instant::now() >= deadline
        {
            return Ok(Ran::Done);
        }
        if mutation::active(Control::NoRekill) {
            slice = (slice * 2).min(Duration::from_millis(500));
            continue;
        }
        if let Wrote::Gone = write_control(dir, rel, "cgroup.kill", "1", absent) {
            return Ok(Ran::Done);
        }
        writes += 1;
        // From the third write on, every member still listed is also sent SIGKILL through its
        // pidfd: under load, entrants racing the kill were seen sleeping in the module for
        // 30 and 60 s of writes every 500 ms, with no signal pending (kernel 6.x, cause not
        // established), while a cgroup.kill of an ancestor or a signal to the pid took them.
        if writes >= 3 {
            let _ = signal::signal_members(dir, rel, rustix::process::Signal::KILL);
        }
        slice = (slice * 2).min(Duration::from_millis(500));
    }
}
