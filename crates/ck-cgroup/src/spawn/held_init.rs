//! The program of a PID namespace, held by a pidfd of its own, for when the namespace's init
//! cannot report it.
//!
//! A process of the module that traces the init (`ptrace(2)`: `PTRACE_SEIZE`, then
//! `PTRACE_INTERRUPT` or `PTRACE_ATTACH`'s SIGSTOP) keeps it in a stop: it can neither reap the
//! program nor write its status on the report pipe, and a wait on that pipe (`ck-cgroup run`)
//! did not end when the program exited. With the program's pidfd,
//! [`pidns::Reports`](super::pidns) sees the program exit; when the init is then in a stop (`t`
//! or `T`, field 3 of `/proc/<init>/stat`), the program's wait status is read from its zombie
//! (`exit_code`, field 52 of `/proc/<pid>/stat`; the zombie stays while the init cannot reap
//! it) and [`ModuleChild::held_init`](super::ModuleChild::held_init) says how the init was
//! held. The caller stops the module, which kills the init and whatever held it.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use rustix::fs::OFlags;
use rustix::process::{Pid, PidfdFlags, pidfd_open};

use crate::cgroup::dir::{open_beneath_at, read_fd};
use crate::cgroup::parse;
use crate::mutation::{self, Control};

/// Whether the program is held at all; `false` only for the `CK_MUTATION=init-held-blind`
/// test feature (a wait on the init's report is then the only one).
const HOLD_PROGRAM: bool = !mutation::active(Control::InitHeldBlind);

/// The namespace's program: its pid (in the caller's namespace) and a pidfd on it.
#[derive(Debug)]
pub(super) struct Program {
    pid: u32,
    pidfd: OwnedFd,
}

impl Program {
    /// Its pid, in the caller's PID namespace.
    pub(super) fn pid(&self) -> u32 {
        self.pid
    }
}

/// The pidfd: it polls readable once the program has exited.
impl AsFd for Program {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }
}

/// How the init was held when the program's status was read from its zombie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldInit {
    /// In a ptrace stop (`t`): traced by this process (`TracerPid:` of `/proc/<init>/status`;
    /// `None` when the tracer could not be read).
    Traced {
        /// The tracer's pid, in the caller's PID namespace.
        tracer: Option<u32>,
    },
    /// Stopped by a signal (`T`): a SIGSTOP from outside the namespace, its only source.
    Stopped,
}

/// The program `init` started: of the init's children (`/proc/<init>/task/<init>/children`,
/// else the members of the module: `cgroup.procs` of `cgroup_dir`), the one whose parent is the
/// init and whose pid in the namespace is 2 (`PPid:` and `NSpid:` of `/proc/<pid>/status`),
/// read after `pidfd_open(2)`, so that the pidfd is of that process and not of a pid reused
/// meanwhile. Called right after the program's exec: `None` when it is gone already
/// (the init reaped it; its status is on the report pipe) or `/proc` cannot tell.
pub(super) fn find_program(cgroup_dir: BorrowedFd<'_>, init: u32) -> Option<Program> {
    if !HOLD_PROGRAM {
        return None;
    }
    let children = std::fs::read_to_string(format!("/proc/{init}/task/{init}/children"))
        .ok()
        .or_else(|| {
            let fd = open_beneath_at(cgroup_dir, "cgroup.procs", OFlags::RDONLY).ok()?;
            read_fd(&fd).ok()
        })?;
    children
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .find_map(|pid| {
            let pidfd = pidfd_open(Pid::from_raw(pid as i32)?, PidfdFlags::empty()).ok()?;
            is_program_of(pid, init).then_some(Program { pid, pidfd })
        })
}

/// Whether process `pid` is a child of `init` with pid 2 in its namespace (the first process
/// the init started): `PPid:` and `NSpid:` of `/proc/<pid>/status`.
fn is_program_of(pid: u32, init: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        parse::proc_status_number(&s, "PPid:") == Some(init)
            && parse::proc_status_nspid_inner(&s) == Some(2)
    })
}

/// How `init` is held, if it is in a stop (`t`: traced; `T`: stopped), from
/// `/proc/<init>/stat` (and the tracer from `/proc/<init>/status`).
pub(super) fn held(init: u32) -> Option<HeldInit> {
    let stat = crate::cgroup::procfs::read_text(init, "stat").ok()?;
    match parse::proc_stat(&stat)?.state {
        't' => {
            let tracer = crate::cgroup::procfs::read_text(init, "status")
                .ok()
                .and_then(|s| parse::proc_status_tracer(&s));
            Some(HeldInit::Traced { tracer })
        }
        'T' => Some(HeldInit::Stopped),
        _ => None,
    }
}

/// The program's wait status from its zombie (`exit_code` of `/proc/<pid>/stat`, with its state
/// `Z` and its parent `init` in the same read); `None` when it is no zombie of the init (reaped
/// meanwhile: the init reports it then).
pub(super) fn zombie_status(program: &Program, init: u32) -> io::Result<Option<ExitStatus>> {
    let Ok(stat) = crate::cgroup::procfs::read_text(program.pid, "stat") else {
        return Ok(None);
    };
    let Some(st) = parse::proc_stat(&stat) else {
        return Ok(None);
    };
    if st.state != 'Z' || st.ppid != init {
        return Ok(None);
    }
    let code = parse::proc_stat_exit_code(&stat).ok_or_else(|| {
        io::Error::other(format!(
            "/proc/{}/stat has no exit_code field (Linux 3.5+)",
            program.pid
        ))
    })?;
    Ok(Some(ExitStatus::from_raw(code)))
}
