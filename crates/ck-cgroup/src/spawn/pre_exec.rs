//! The fallback path, and the hooks for daemons that build a [`std::process::Command`]
//! themselves: placement by a `pre_exec` write of `"0"` to the module's `cgroup.procs`.

use std::ffi::{CStr, OsStr};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use rustix::fs::{Mode, OFlags};
use rustix::process::{PidfdFlags, Signal, pidfd_open};

use super::clone3::cstring;
use super::clone3::{self, PreExecStep};
use super::command::EnvOp;
use super::prepare::{above_targets, fd_sources};
use super::{ModuleChild, ModuleCommand, Placement, cgroupns};

/// For daemons that build a [`std::process::Command`] themselves: make
/// `cmd`'s child write `"0"` to `cgroup_procs` (an fd of the module's
/// `cgroup.procs`, opened `O_WRONLY` by the caller) before exec. If the write
/// fails the child does not exec and `spawn()` returns the write's error.
///
/// Writing `"0"` to `cgroup.procs` moves the writing process (see
/// <https://docs.kernel.org/admin-guide/cgroup-v2.html>). The hook runs in
/// the forked child after std's `chdir`/stdio setup (`write(2)` and
/// `fcntl(2)` only); `cgroup_procs` is marked close-on-exec in the child so
/// the program never inherits it. The command keeps the fd, so it can be
/// spawned several times.
pub fn place_before_exec(cmd: &mut Command, cgroup_procs: OwnedFd) {
    clone3::pre_exec(cmd, PreExecStep::Place(cgroup_procs));
}

/// Install a `pre_exec` hook setting `PR_SET_PDEATHSIG` and checking that
/// the parent (pid captured now) is still alive (`sandbox`'s CMD uses it too).
pub fn pdeathsig_before_exec(cmd: &mut Command, sig: Signal) {
    let parent = rustix::process::getpid();
    clone3::pre_exec(cmd, PreExecStep::ParentDeath(sig, parent));
}

/// `cmd` as a [`std::process::Command`] running `program`: arguments, environment and stdio.
fn std_command(cmd: &ModuleCommand, program: &CStr) -> io::Result<Command> {
    let mut std_cmd = Command::new(OsStr::from_bytes(program.to_bytes()));
    std_cmd.arg0(cmd.argv0());
    std_cmd.args(&cmd.args);
    for op in &cmd.env_ops {
        match op {
            EnvOp::Set(k, v) => std_cmd.env(k, v),
            EnvOp::Remove(k) => std_cmd.env_remove(k),
            EnvOp::Clear => std_cmd.env_clear(),
        };
    }
    if let Some(fd) = &cmd.stdin {
        std_cmd.stdin(Stdio::from(fd.try_clone()?));
    }
    if let Some(fd) = &cmd.stdout {
        std_cmd.stdout(Stdio::from(fd.try_clone()?));
    }
    if let Some(fd) = &cmd.stderr {
        std_cmd.stderr(Stdio::from(fd.try_clone()?));
    }
    if let Some(pgid) = cmd.pgid {
        std_cmd.process_group(pgid);
    }
    Ok(std_cmd)
}

/// Fallback path: `std::process::Command` + `pre_exec` steps + `pidfd_open`. The steps run in
/// the order of the clone3 path's child: placement, the cgroup namespace, the identity, the
/// extra fds, the working directory, the signal mask, the parent-death signal (std has set up
/// stdio and the process group before).
pub(super) fn spawn_pre_exec(
    cgroup_dir: BorrowedFd<'_>,
    cmd: &ModuleCommand,
    program: &CStr,
) -> io::Result<ModuleChild> {
    let mut std_cmd = std_command(cmd, program)?;
    let procs = rustix::fs::openat(
        cgroup_dir,
        "cgroup.procs",
        OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?;
    place_before_exec(&mut std_cmd, procs);
    if cmd.cgroup_namespace && cgroupns::ENABLED {
        cgroupns::before_exec(&mut std_cmd, cgroupns::Maps::new()?);
    }
    clone3::pre_exec(&mut std_cmd, PreExecStep::Identity(cmd.identity()));
    if !cmd.fds.is_empty() {
        let fds = fd_sources(cmd, above_targets(cmd))?;
        clone3::pre_exec(&mut std_cmd, PreExecStep::Fds(fds));
    }
    if let Some(dir) = &cmd.cwd {
        let dir = cstring(dir.as_os_str().as_bytes())?;
        clone3::pre_exec(&mut std_cmd, PreExecStep::Chdir(dir));
    }
    unblock_signals_before_exec(&mut std_cmd);
    if let Some(sig) = cmd.pdeathsig {
        pdeathsig_before_exec(&mut std_cmd, sig);
    }
    let mut child = std_cmd.spawn().map_err(cgroupns::unmark)?;
    let pid = child.id();
    // The child is ours and not reaped yet, so its pid cannot be reused
    // before pidfd_open: race-free.
    let pidfd = rustix::process::Pid::from_raw(pid as i32)
        .ok_or_else(|| io::Error::other("spawned child has pid 0"))
        .and_then(|p| Ok(pidfd_open(p, PidfdFlags::empty())?));
    match pidfd {
        Ok(pidfd) => Ok(ModuleChild {
            pid,
            pidfd,
            placement: Placement::PreExecWrite,
            status: None,
            ns: None,
            user_ns: false,
            fallbacks: Vec::new(),
            baseline: None,
        }),
        Err(e) => {
            // Do not leave an unsupervised child behind.
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

/// Give `cmd`'s child an empty signal mask before `execve(2)`. The mask is inherited across
/// fork and exec and `std::process::Command` does not reset it, so a parent that blocks signals
/// (a `signals::SignalRelay`) would otherwise start a child that can never receive them.
pub fn unblock_signals_before_exec(cmd: &mut Command) {
    super::clone3::pre_exec(cmd, super::clone3::PreExecStep::UnblockSignals);
}
