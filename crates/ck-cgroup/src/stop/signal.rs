//! SIGKILL (or any signal) to every member through a pidfd, so a reused pid is never signalled;
//! as a kill method, repeated until the subtree is empty.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::Pid;
use rustix::process::{PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::Ran;
use super::control::wait_empty_for;
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::tree::members;
use crate::cgroup::wait::Waited;
use crate::error::Result;

/// SIGKILL every member, until the subtree is empty or `deadline`.
pub(super) fn kill(dir: &CgroupDir, rel: &str, deadline: Instant) -> Result<Ran> {
    loop {
        match signal_members(dir, rel, Signal::KILL) {
            // Nobody reached while members are left: refused (another user's processes), said
            // at once instead of waited on until the deadline.
            Ok(sent) if sent.is_empty() => {
                if let Some(e) = refused(dir, rel) {
                    return Ok(Ran::Failed(e));
                }
            }
            Ok(_) => {}
            Err(e) => return Ok(Ran::Failed(e)),
        }
        let w = wait_empty_for(dir, rel, Duration::from_millis(20), deadline)?;
        if w == Waited::Empty || Instant::now() >= deadline {
            return Ok(Ran::Done);
        }
    }
}

/// Why no member of the subtree could be signalled, if this process may not signal them
/// (`kill(2)` with signal 0 on the first member: `EPERM`); `None` where it may, or none is left.
fn refused(dir: &CgroupDir, rel: &str) -> Option<crate::error::Error> {
    let first = members(dir, rel).ok()?.into_iter().next()?;
    let pid = Pid::from_raw(i32::try_from(first).ok()?)?;
    match rustix::process::test_kill_process(pid) {
        Err(Errno::PERM) => Some(crate::error::Error::io(
            format_args!("signal pid {first} of"),
            dir.display_path(rel),
            Errno::PERM,
        )),
        _ => None,
    }
}

/// At most this many pidfds are held at once by [`signal_members`].
const PIDFD_BATCH: usize = 256;

/// Send `sig` to every process in the subtree through a pidfd, so a reused pid is never
/// signalled: each pid is opened, then the member list is read again, and only pids still listed
/// (so the pidfd names the member) are signalled. Returns the pids signalled.
///
/// The pidfds are held in batches of at most 256 (`PIDFD_BATCH`), fewer when the descriptor limit is
/// reached (`EMFILE`, `ENFILE`: half of those held are let go, so the member list can be read
/// again, and opened in the next batch): a module of thousands of processes is signalled
/// whole under a service's default `RLIMIT_NOFILE` of 1024, or `prlimit --nofile=64`.
pub(crate) fn signal_members(dir: &CgroupDir, rel: &str, sig: Signal) -> Result<Vec<u32>> {
    let pids = members(dir, rel)?;
    let mut sent = Vec::new();
    let mut next = 0;
    while next < pids.len() {
        // (index in pids, pid, pidfd)
        let mut fds = Vec::new();
        let mut i = next;
        while i < pids.len() && fds.len() < PIDFD_BATCH {
            let pid = pids[i];
            if let Some(p) = Pid::from_raw(pid as i32) {
                match pidfd_open(p, PidfdFlags::empty()) {
                    Ok(fd) => fds.push((i, pid, fd)),
                    Err(Errno::MFILE) | Err(Errno::NFILE) if !fds.is_empty() => {
                        // At least one is kept: each batch signals someone, so this ends.
                        fds.truncate((fds.len() / 2).max(1));
                        i = fds.last().map_or(next, |(j, _, _)| j + 1);
                        break;
                    }
                    // Exited meanwhile, or no descriptor even for one: not signalled here.
                    Err(_) => {}
                }
            }
            i += 1;
        }
        next = i;
        // The list is read again with the batch held. Should the descriptors held elsewhere
        // leave no room for it (EMFILE, ENFILE), half of the batch is let go and read again.
        let still: HashSet<u32> = loop {
            match members(dir, rel) {
                Ok(m) => break m.into_iter().collect(),
                Err(e)
                    if matches!(e.errno(), Some(Errno::MFILE) | Some(Errno::NFILE))
                        && fds.len() > 1 =>
                {
                    fds.truncate(fds.len() / 2);
                    next = fds.last().map_or(next, |(j, _, _)| j + 1);
                }
                Err(e) => return Err(e),
            }
        };
        for (_, pid, fd) in fds {
            if still.contains(&pid) && pidfd_send_signal(&fd, sig).is_ok() {
                sent.push(pid);
            }
        }
    }
    Ok(sent)
}
