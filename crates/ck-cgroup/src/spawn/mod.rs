//! Start a child process directly inside a cgroup-v2 directory.
//!
//! The child never executes a single instruction of the target program
//! outside the target cgroup:
//!
//! * Preferred: [`clone3(2)`](https://man7.org/linux/man-pages/man2/clone3.2.html)
//!   with `CLONE_INTO_CGROUP | CLONE_PIDFD` (Linux 5.7+). The kernel creates
//!   the child already inside the cgroup and hands back a pidfd.
//! * Fallback: a [`std::process::Command`] whose `pre_exec` hook writes `"0"`
//!   to the cgroup's `cgroup.procs` (opened by the parent) before `execve(2)`.
//!   The child is in the cgroup before the target program starts, but it ran
//!   a few instructions of *our* code outside it. The mechanism used is
//!   reported through [`Placement`], so fallbacks are visible.
//!
//! See the kernel's cgroup-v2 documentation,
//! <https://docs.kernel.org/admin-guide/cgroup-v2.html>, for the semantics of
//! `cgroup.procs` and `CLONE_INTO_CGROUP`.
//!
//! With [`ModuleCommand::pid_namespace`] the child is instead a small init of
//! ours, PID 1 of a new PID namespace (`CLONE_NEWPID`), which starts the
//! program as its only child and reaps everything reparented to it; see
//! [`pidns`]. When the spawning thread dies, SIGKILL included, the init gets
//! SIGKILL (`PR_SET_PDEATHSIG`) and the kernel kills every process in the
//! namespace: the module's tree does not outlive what holds it.
//!
//! With [`ModuleCommand::cgroup_namespace`] (the default) the program starts in a new cgroup
//! namespace rooted at its module, made in the child once it is in the module; see
//! [`cgroupns`].
//!
//! With [`ModuleCommand::uid`], [`ModuleCommand::gid`], [`ModuleCommand::process_group`] and
//! [`ModuleCommand::fd`] the child takes an identity, a process group and extra descriptors
//! before `execve(2)`, on both paths.
//!
//! Many modules from one thread: [`wait_any`] sleeps in one `poll(2)` on their exit descriptors
//! and says which one ended; a [`Waiter`] holds them by key and hands back the one that ended.
//!
//! Files: the public surface here; [`ModuleCommand`] in `command.rs`, [`ModuleChild`] in
//! `child.rs`, the `PATH` search in `path_search.rs`, what the clone3 child borrows in `prepare.rs`,
//! the fallback and its hooks in `pre_exec.rs`, the wait on many in `wait_any.rs`, and in `clone3/mod.rs` (with `clone3/pidns_init.rs`, the
//! PID namespace's init) all the `unsafe` code of the crate, every block with a `SAFETY:`
//! argument. The signal relay of `ck-cgroup run` is `signals`.
//!
//! # Mutation testing
//!
//! With the mutation control `CK_MUTATION=no-placement`, the clone3 path omits
//! `CLONE_INTO_CGROUP` and the `pre_exec` write is skipped, so children stay
//! in the parent's cgroup. It exists only so the test suite can prove that its
//! tests fail when placement is switched off; never enable it in production.
mod child;
pub(crate) mod clone3;
mod command;
mod fallback;
mod held_init;
mod path_search;
mod pre_exec;
mod prepare;
mod wait_any;

pub mod cgroupns;
pub mod pidns;

pub use cgroupns::{
    CgroupNamespace, CgroupNamespaceRefused, cgroup_namespace_refused, enter_cgroup_namespace,
    enter_cgroup_namespace_or_fall_back,
};
pub(crate) use child::Baseline;
pub use child::ModuleChild;
pub use command::ModuleCommand;
pub use fallback::Fallback;
pub use held_init::HeldInit;
pub use path_search::find_program;
pub use pidns::{PidNamespaceRefused, pid_namespace_refused};
pub use pre_exec::{pdeathsig_before_exec, place_before_exec, unblock_signals_before_exec};
pub use wait_any::{Ended, Waiter, wait_any};

use std::ffi::CStr;
use std::io;
use std::os::fd::BorrowedFd;

use libc::c_int;
use rustix::io::Errno;
use rustix::process::{Signal, pidfd_send_signal};

use prepare::Prepared;

use crate::mutation::{self, Control};

/// `CLONE_INTO_CGROUP` from `<linux/sched.h>` (Linux 5.7+).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Whether placement is performed at all; `false` only for the
/// `CK_MUTATION=no-placement` test feature.
const PLACEMENT_ENABLED: bool = !mutation::active(Control::NoPlacement);

/// Exit status of a child that failed before `execve(2)` succeeded.
const CHILD_FAILURE_EXIT: c_int = 127;

/// Which mechanism put the child in the cgroup (reported to users: fallbacks
/// are visible).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// `clone3(2)` with `CLONE_INTO_CGROUP`: the kernel created the child
    /// inside the cgroup (no window at all).
    Clone3IntoCgroup,
    /// Fallback: the forked child wrote `"0"` to `cgroup.procs` before
    /// `execve(2)` (see
    /// <https://docs.kernel.org/admin-guide/cgroup-v2.html>).
    PreExecWrite,
}

/// Which mechanisms to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Try `clone3(2)` with `CLONE_INTO_CGROUP`; fall back to the `pre_exec`
    /// write when the kernel rejects it with `ENOSYS`, `E2BIG` or `EINVAL`.
    #[default]
    Auto,
    /// Only `clone3(2)` with `CLONE_INTO_CGROUP`; its error is returned as is.
    Clone3Only,
    /// Only the `pre_exec` write to `cgroup.procs`.
    PreExecOnly,
}

/// Start `cmd` inside the cgroup whose directory is open as `cgroup_dir` (an
/// `O_RDONLY|O_DIRECTORY` fd of a cgroup2 directory), with [`Strategy::Auto`].
///
/// Uses `clone3(2)` with `CLONE_INTO_CGROUP | CLONE_PIDFD`, falling back to a
/// `pre_exec` write of `"0"` to `cgroup.procs`; see [`spawn_into_with`] and
/// <https://docs.kernel.org/admin-guide/cgroup-v2.html>.
pub fn spawn_into(cgroup_dir: BorrowedFd<'_>, cmd: &ModuleCommand) -> io::Result<ModuleChild> {
    spawn_into_with(cgroup_dir, cmd, Strategy::Auto)
}

/// Start `cmd` inside the cgroup whose directory is open as `cgroup_dir`,
/// choosing the mechanism with `strategy`.
///
/// * `clone3(2)` with `CLONE_INTO_CGROUP | CLONE_PIDFD` (Linux 5.7+): the
///   kernel creates the child inside the cgroup. Errors of the child before
///   `execve(2)` (`dup2`, `setuid`, `chdir`, `prctl`, `execve`, ...) are reported back
///   through a close-on-exec pipe and returned from here, after the child
///   has been reaped.
/// * Fallback ([`Strategy::Auto`] when `clone3` fails with `ENOSYS`, `E2BIG`
///   or `EINVAL`, or [`Strategy::PreExecOnly`]): [`std::process::Command`]
///   with [`place_before_exec`] and the other steps as `pre_exec` hooks, then `pidfd_open(2)`.
///
/// A program name without `/` is resolved through `PATH` in the parent; if
/// it is not found, `ENOENT` is returned and nothing is spawned. So is a command the child
/// could not carry out ([`ModuleCommand::fd`] below 3, a nonzero
/// [`ModuleCommand::process_group`] with a PID namespace): `InvalidInput`.
///
/// Writing into a cgroup follows the rules of
/// <https://docs.kernel.org/admin-guide/cgroup-v2.html> (e.g. the
/// no-internal-process constraint yields `EBUSY`).
pub fn spawn_into_with(
    cgroup_dir: BorrowedFd<'_>,
    cmd: &ModuleCommand,
    strategy: Strategy,
) -> io::Result<ModuleChild> {
    cmd.check()?;
    let program = path_search::resolve_program(cmd)?;
    match strategy {
        Strategy::Clone3Only => spawn_clone3(cgroup_dir, cmd, &program).map_err(|f| f.error),
        Strategy::PreExecOnly if cmd.pid_namespace => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a PID namespace needs clone3(2); the pre-exec path cannot make one",
        )),
        Strategy::PreExecOnly => pre_exec::spawn_pre_exec(cgroup_dir, cmd, &program),
        Strategy::Auto => match spawn_clone3(cgroup_dir, cmd, &program) {
            Ok(child) => Ok(child),
            // The pre-exec path cannot make a PID namespace: its error is the answer.
            Err(f) if f.from_clone3 && clone3_unsupported(&f.error) && !cmd.pid_namespace => {
                pre_exec::spawn_pre_exec(cgroup_dir, cmd, &program)
            }
            Err(f) => Err(f.error),
        },
    }
}

/// Errors of `clone3(2)` itself that mean "this kernel cannot do
/// `clone3`/`CLONE_INTO_CGROUP`" (`EINVAL` may also be a bad fd; the
/// fallback then reports the real problem).
fn clone3_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSYS | libc::E2BIG | libc::EINVAL)
    )
}

/// Error of the clone3 path, remembering whether it came from the
/// `clone3(2)` syscall itself (only those may trigger the fallback).
struct Clone3Failure {
    error: io::Error,
    from_clone3: bool,
}

impl From<io::Error> for Clone3Failure {
    fn from(error: io::Error) -> Self {
        Self {
            error,
            from_clone3: false,
        }
    }
}

impl Clone3Failure {
    /// An error of the `clone3(2)` call itself.
    fn from_clone3(error: io::Error) -> Self {
        Self {
            error,
            from_clone3: true,
        }
    }
}

impl From<Errno> for Clone3Failure {
    fn from(e: Errno) -> Self {
        io::Error::from(e).into()
    }
}

/// Preferred path: `clone3(CLONE_INTO_CGROUP | CLONE_PIDFD)` with fork
/// semantics, then `execve` in the child; with a PID namespace, the
/// namespace's init in the child ([`pidns`]).
fn spawn_clone3(
    cgroup_dir: BorrowedFd<'_>,
    cmd: &ModuleCommand,
    program: &CStr,
) -> Result<ModuleChild, Clone3Failure> {
    let prepared = Prepared::new(cmd)?;
    let placement_flag = if PLACEMENT_ENABLED {
        CLONE_INTO_CGROUP
    } else {
        0
    };
    let (pid, pidfd, ns, user_ns) = if cmd.pid_namespace {
        let (pid, pidfd, reports, user_ns) = pidns::spawn(
            cgroup_dir,
            placement_flag,
            &prepared,
            program,
            cmd.trim_heap,
        )?;
        (pid, pidfd, Some(reports), user_ns)
    } else {
        let ctx = prepared.ctx(program);
        let (pid, pidfd) = clone3::fork_exec(cgroup_dir, placement_flag, &ctx)
            .map_err(Clone3Failure::from_clone3)?;
        (pid, pidfd, None, false)
    };
    let Prepared {
        report_rd,
        report_wr,
        ..
    } = prepared;
    drop(report_wr);

    let mut child = ModuleChild {
        pid,
        pidfd,
        placement: Placement::Clone3IntoCgroup,
        status: None,
        ns,
        user_ns,
        fallbacks: Vec::new(),
        baseline: None,
    };
    match read_report(&report_rd) {
        Ok(None) => {
            if let Some(ns) = &mut child.ns {
                ns.hold_program(cgroup_dir);
            }
            Ok(child)
        }
        Ok(Some(code)) => {
            let _ = child.wait_init();
            let e = io::Error::from_raw_os_error(code);
            Err(pidns::unmark(cgroupns::unmark(e)).into())
        }
        Err(e) => {
            // Unknown whether exec happened: do not leave it running (with a PID namespace the
            // kernel takes the whole namespace with its init).
            let _ = pidfd_send_signal(&child.pidfd, Signal::KILL);
            let _ = child.wait_init();
            Err(e.into())
        }
    }
}

/// Read the child's report: EOF means `execve` succeeded, 4 bytes are the
/// errno of the failed step.
fn read_report(rd: &std::os::fd::OwnedFd) -> io::Result<Option<i32>> {
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(rd, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    match got {
        0 => Ok(None),
        4 => Ok(Some(i32::from_ne_bytes(buf))),
        _ => Err(io::Error::other(
            "short error report from child before exec",
        )),
    }
}
