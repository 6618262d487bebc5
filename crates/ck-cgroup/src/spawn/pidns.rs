//! Kill-on-close: the program in a PID namespace of its own, under an init of ours.
//!
//! [`ModuleCommand::pid_namespace`] makes [`spawn_into`](super::spawn_into) start, instead of the
//! program, a small init: `clone3(2)` with `CLONE_NEWPID | CLONE_INTO_CGROUP | CLONE_PIDFD`, so it
//! is PID 1 of a new namespace and a member of the module from birth. The init
//!
//! * gets SIGKILL when the spawning thread dies (`PR_SET_PDEATHSIG`), SIGKILL of the spawner
//!   included; when a namespace's init dies the kernel SIGKILLs every process in the namespace
//!   (`pid_namespaces(7)`), reparented orphans and processes that ignore TERM too;
//! * starts the program as its only child (pid 2 in the namespace), in the same cgroup;
//! * reaps every process reparented to it, so no zombie piles up in a long-lived module;
//! * reports the program's wait status on a pipe when it reaps it, and exits when nothing else
//!   is left in its namespace (`waitpid` gives `ECHILD`);
//! * passes on to the program the signals [`send_tagged`] sends (`si_value` carries a tag) and
//!   ignores every other signal, as a namespace's init does by default. A stop that signals every
//!   member of the module by membership therefore reaches the program once, not twice.
//!
//! Everything the init does runs in the forked copy of the caller: raw system calls on data
//! prepared before the clone, no allocation, no locks.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use libc::c_int;
use rustix::io::Errno;
use rustix::process::Signal;

use super::Clone3Failure;
#[cfg(doc)]
use super::ModuleCommand;
use super::clone3::{self, init::InitCtx};
use super::prepare::Prepared;

/// `CLONE_NEWPID` from `<linux/sched.h>`.
const CLONE_NEWPID: u64 = 0x2000_0000;

/// The tag in `si_value.sival_int` of a signal the init passes on to the program (`"ckfw"`).
const FORWARD_TAG: c_int = 0x636b_6677;

/// Whether the init dies with its spawner; `false` only for the `CK_MUTATION=no-kill-on-close`
/// test feature.
const KILL_ON_CLOSE: bool = !cfg!(ck_mutation = "no-kill-on-close");

/// What the init's report pipe said.
pub(super) enum Report {
    /// The program's wait status.
    Status(ExitStatus),
    /// Nothing yet (only when not blocking).
    Pending,
    /// The init is gone without a report.
    Gone,
}

/// The parent's end of the init's report pipe.
#[derive(Debug)]
pub(super) struct Reports {
    fd: OwnedFd,
    status: Option<ExitStatus>,
    gone: bool,
}

impl Reports {
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Remember the program's status found another way.
    pub(super) fn set(&mut self, st: ExitStatus) {
        self.status = Some(st);
    }

    /// The program's status from the pipe: 4 bytes of wait status, or end-of-file when the init
    /// died without writing them.
    pub(super) fn read(&mut self, block: bool) -> io::Result<Report> {
        if let Some(st) = self.status {
            return Ok(Report::Status(st));
        }
        if self.gone {
            return Ok(Report::Gone);
        }
        if !block {
            use rustix::event::{PollFd, PollFlags, Timespec, poll};
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            match poll(&mut fds, Some(&zero)) {
                Ok(0) | Err(Errno::INTR) => return Ok(Report::Pending),
                Ok(_) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < buf.len() {
            match rustix::io::read(&self.fd, &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        if got < buf.len() {
            self.gone = true;
            return Ok(Report::Gone);
        }
        let st = ExitStatus::from_raw(i32::from_ne_bytes(buf));
        self.status = Some(st);
        Ok(Report::Status(st))
    }
}

/// Clone the init into the cgroup of `cgroup_dir` (`placement_flag` is `CLONE_INTO_CGROUP`, or 0
/// for the `CK_MUTATION=no-placement` control) in a new PID namespace. Returns the init's pid and
/// pidfd and the parent's end of its report pipe.
///
/// The init makes the cgroup namespace (it is in the module from birth) and, with
/// [`ModuleCommand::process_group`], leads the process group, before it starts the program, which
/// inherits both; it keeps the caller's identity (see [`clone3::init`]): the program alone takes
/// the [`uid`](ModuleCommand::uid) and [`gid`](ModuleCommand::gid), right before its `execve`.
pub(super) fn spawn(
    cgroup_dir: BorrowedFd<'_>,
    placement_flag: u64,
    prepared: &Prepared,
    program: &CStr,
) -> Result<(u32, OwnedFd, Reports), Clone3Failure> {
    let (status_rd, status_wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let mut cmd = prepared.ctx(program);
    cmd.pdeathsig = None;
    let ctx = InitCtx {
        cgroup_ns: cmd.cgroup_ns.take(),
        process_group: std::mem::take(&mut cmd.process_group),
        cmd,
        status_rd: status_rd.as_raw_fd(),
        status_wr: status_wr.as_raw_fd(),
        kill_on_close: KILL_ON_CLOSE,
        // Mutation control (`CK_MUTATION=init-no-reap`): reap the program only, as a plain
        // parent does.
        reap_all: !cfg!(ck_mutation = "init-no-reap"),
        tag: FORWARD_TAG,
    };
    let (pid, pidfd) = clone3::init::fork_init(cgroup_dir, placement_flag | CLONE_NEWPID, &ctx)
        .map_err(Clone3Failure::from_clone3)?;
    drop(status_wr);
    let reports = Reports {
        fd: status_rd,
        status: None,
        gone: false,
    };
    Ok((pid, pidfd, reports))
}

/// Send `sig` to a namespace's init through its pidfd (`pidfd_send_signal(2)` with an `SI_QUEUE`
/// siginfo) tagged so that the init passes it on to the program. Of the signals it is given, the
/// init passes on HUP, INT, QUIT, TERM, USR1, USR2, ALRM and WINCH; KILL and STOP act on the init
/// itself (and KILL so on the whole namespace); others are ignored.
pub fn send_tagged(pidfd: BorrowedFd<'_>, sig: Signal) -> io::Result<()> {
    clone3::init::send_tagged(pidfd, sig, FORWARD_TAG)
}
