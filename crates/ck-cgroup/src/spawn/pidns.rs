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
//!
//! # Without `CAP_SYS_ADMIN`
//!
//! `clone3(2)` with `CLONE_NEWPID` needs `CAP_SYS_ADMIN`; a caller without it (a helper run by a
//! user's manager) gets `EPERM`. The init is then cloned with `CLONE_NEWUSER | CLONE_NEWPID`,
//! which an unprivileged process may do: the PID namespace is owned by the new user namespace,
//! and the init, first thing, denies `setgroups` and maps the caller's effective uid and gid to
//! themselves there (the maps [`cgroupns`](super::cgroupns) writes for its own user namespace).
//! Kill-on-close is the same: the init still dies with its spawner, and the kernel empties the
//! namespace. The init then holds `CAP_SYS_ADMIN` in its own user namespace, so it makes the
//! module's cgroup namespace with `unshare(CLONE_NEWCGROUP)` alone, owned by that same user
//! namespace. [`ModuleChild::user_namespace`](super::ModuleChild::user_namespace) tells that it
//! happened. The spawner's signals still reach the init (same uid; a `SI_QUEUE` siginfo).
//!
//! The program keeps its uid and gid; what it sees differently there, as with the cgroup
//! namespace's user namespace: other uids and gids (root's files, say) show as the overflow ids
//! (65534, "nobody"), setuid and setgid programs of unmapped owners do not change ids,
//! `setgroups(2)` is refused, and the capabilities the new user namespace gave it end at
//! `execve` (unless its uid there is 0: a root caller without `CAP_SYS_ADMIN`); it never had any
//! over the host. A command that takes another [`uid`](ModuleCommand::uid) or
//! [`gid`](ModuleCommand::gid) is not retried this way (no other id is mapped there).
//!
//! When the retry fails too (user namespaces disabled: `EPERM`, `ENOSPC` or `EINVAL`, or a map
//! that cannot be written), nothing is started and the error is a [`PidNamespaceRefused`] with
//! the errno of that last step: spawn again without a PID namespace.

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
use super::clone3::nsmaps::{Maps, USERNS_REFUSED_MARK as REFUSED_MARK};
use super::clone3::{self, pidns_init::InitCtx};
use super::held_init::{self, HeldInit, Program};
use super::prepare::Prepared;

use crate::mutation::{self, Control};

/// `CLONE_NEWPID` from `<linux/sched.h>`.
const CLONE_NEWPID: u64 = 0x2000_0000;

/// `CLONE_NEWUSER` from `<linux/sched.h>`.
const CLONE_NEWUSER: u64 = 0x1000_0000;

/// Whether a refused PID namespace is tried again with a user namespace; `false` only for the
/// `CK_MUTATION=no-pidns-userns` test feature.
const USERNS_RETRY: bool = !mutation::active(Control::NoPidnsUserns);

/// No PID namespace could be made for the module (nothing was started); the payload of the
/// [`io::Error`] that [`spawn_into`](super::spawn_into) returns then. Its text names the steps
/// (`clone3 CLONE_NEWPID: EPERM, it needs CAP_SYS_ADMIN; then with a user namespace: ENOSPC`);
/// see [`pid_namespace_refused`].
#[derive(Debug)]
pub struct PidNamespaceRefused {
    /// The errno of the last step tried: `clone3(2)` with `CLONE_NEWUSER | CLONE_NEWPID` or a
    /// write of the init's maps; `EPERM` of `CLONE_NEWPID` alone when that was not tried.
    pub errno: Errno,
    /// Whether the user namespace was tried (`false`: `CLONE_NEWPID` alone was refused).
    pub with_user_namespace: bool,
}

impl std::fmt::Display for PidNamespaceRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.with_user_namespace {
            write!(
                f,
                "clone3 CLONE_NEWPID: EPERM, it needs CAP_SYS_ADMIN; then with a user namespace: {}",
                crate::error::errno_text(self.errno)
            )
        } else {
            write!(
                f,
                "clone3 CLONE_NEWPID: {}, it needs CAP_SYS_ADMIN",
                crate::error::errno_text(self.errno)
            )
        }
    }
}

impl std::error::Error for PidNamespaceRefused {}

/// The errno when `e` says that no PID namespace could be made for the module (the spawn
/// started nothing); `None` for every other error.
pub fn pid_namespace_refused(e: &io::Error) -> Option<Errno> {
    e.get_ref()?
        .downcast_ref::<PidNamespaceRefused>()
        .map(|r| r.errno)
}

/// The error for `errno` of the last step.
fn refused(errno: Errno, with_user_namespace: bool) -> io::Error {
    io::Error::new(
        io::Error::from(errno).kind(),
        PidNamespaceRefused {
            errno,
            with_user_namespace,
        },
    )
}

/// An error as it came back from the init: one whose raw errno carries [`REFUSED_MARK`] (its
/// maps could not be written) becomes a [`PidNamespaceRefused`].
pub(super) fn unmark(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) if code & REFUSED_MARK != 0 => {
            refused(Errno::from_raw_os_error(code & !REFUSED_MARK), true)
        }
        _ => e,
    }
}

/// The tag in `si_value.sival_int` of a signal the init passes on to the program (`"ckfw"`).
const FORWARD_TAG: c_int = 0x636b_6677;

/// Whether the init dies with its spawner; `false` only for the `CK_MUTATION=no-kill-on-close`
/// test feature.
const KILL_ON_CLOSE: bool = !mutation::active(Control::NoKillOnClose);

/// What the init's report pipe said.
pub(super) enum Report {
    /// The program's wait status.
    Status(ExitStatus),
    /// Nothing yet (only when not blocking).
    Pending,
    /// The init is gone without a report.
    Gone,
}

/// How often, once the program has exited and until the init reports it, whether the init is
/// held ([`held_init`]) is looked at: no event tells that a process entered a stop. Normally the
/// report comes at once and this is never waited.
const HELD_CHECK_NS: i64 = 10_000_000;

/// The parent's end of the init's report pipe, and the program held by a pidfd of its own
/// ([`held_init`]).
#[derive(Debug)]
pub(super) struct Reports {
    fd: OwnedFd,
    status: Option<ExitStatus>,
    gone: bool,
    /// The init's pid (in the caller's namespace).
    init: u32,
    program: Option<Program>,
    held: Option<HeldInit>,
}

impl Reports {
    /// What polls readable once the program has exited: its pidfd when it is held, else the
    /// pipe (readable when the init reports, or hung up when the init is gone).
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        match &self.program {
            Some(p) => p.as_fd(),
            None => self.fd.as_fd(),
        }
    }

    /// Hold the program by a pidfd ([`held_init::find_program`]); right after its exec.
    pub(super) fn hold_program(&mut self, cgroup_dir: BorrowedFd<'_>) {
        self.program = held_init::find_program(cgroup_dir, self.init);
    }

    /// The program's pid (in the caller's namespace), where it was held.
    pub(super) fn program_pid(&self) -> Option<u32> {
        self.program.as_ref().map(|p| p.pid())
    }

    /// How the init was held when the program's status came from its zombie; `None` when the
    /// init reported it (or it has not exited).
    pub(super) fn held(&self) -> Option<HeldInit> {
        self.held
    }

    /// Remember the program's status found another way.
    pub(super) fn set(&mut self, st: ExitStatus) {
        self.status = Some(st);
    }

    /// The program's status: the init's report on the pipe (4 bytes of wait status, or
    /// end-of-file when the init died without writing them), or, when the program has exited
    /// while the init is held in a stop, its zombie's ([`held_init`]). Once the program has
    /// exited this waits for one of the two even when not `block`: it comes at once unless the
    /// init is held, which is looked at every 10 ms ([`HELD_CHECK_NS`]).
    pub(super) fn read(&mut self, block: bool) -> io::Result<Report> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        if let Some(st) = self.status {
            return Ok(Report::Status(st));
        }
        if self.gone {
            return Ok(Report::Gone);
        }
        let mut exited = false;
        loop {
            // Blocking until the program has exited; then every HELD_CHECK_NS.
            let timeout = match (exited, block) {
                (false, true) => None,
                (exited, _) => Some(Timespec {
                    tv_sec: 0,
                    tv_nsec: if exited { HELD_CHECK_NS } else { 0 },
                }),
            };
            let (pipe_ready, program_ready) = {
                let mut fds = vec![PollFd::new(&self.fd, PollFlags::IN)];
                if let (Some(p), false) = (&self.program, exited) {
                    fds.push(PollFd::new(p, PollFlags::IN));
                }
                match poll(&mut fds, timeout.as_ref()) {
                    Ok(_) => {}
                    Err(Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                }
                let ready = |i: usize| fds.get(i).is_some_and(|f| !f.revents().is_empty());
                (ready(0), ready(1))
            };
            if pipe_ready {
                return self.read_pipe();
            }
            exited |= program_ready;
            if exited
                && let (Some(how), Some(p)) = (held_init::held(self.init), &self.program)
                && let Some(st) = held_init::zombie_status(p, self.init)?
            {
                self.status = Some(st);
                self.held = Some(how);
                return Ok(Report::Status(st));
            }
            if !block && !exited {
                return Ok(Report::Pending);
            }
        }
    }

    /// Read the init's report from the pipe (readable or hung up).
    fn read_pipe(&mut self) -> io::Result<Report> {
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
/// for the `CK_MUTATION=no-placement` control) in a new PID namespace; when `CLONE_NEWPID` is
/// refused (`EPERM`), in a new user namespace too (see the module's doc). Returns the init's pid
/// and pidfd, the parent's end of its report pipe, and whether it has a user namespace.
///
/// The init makes the cgroup namespace (it is in the module from birth) and, with
/// [`ModuleCommand::process_group`], leads the process group, before it starts the program, which
/// inherits both; it keeps the caller's identity (see [`clone3::pidns_init`]): the program alone takes
/// the [`uid`](ModuleCommand::uid) and [`gid`](ModuleCommand::gid), right before its `execve`.
pub(super) fn spawn(
    cgroup_dir: BorrowedFd<'_>,
    placement_flag: u64,
    prepared: &Prepared,
    program: &CStr,
    trim_heap: bool,
) -> Result<(u32, OwnedFd, Reports, bool), Clone3Failure> {
    let (status_rd, status_wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let mut cmd = prepared.ctx(program);
    cmd.pdeathsig = None;
    let identity = cmd.identity;
    let mut ctx = InitCtx {
        cgroup_ns: cmd.cgroup_ns.take(),
        process_group: std::mem::take(&mut cmd.process_group),
        cmd,
        status_rd: status_rd.as_raw_fd(),
        status_wr: status_wr.as_raw_fd(),
        kill_on_close: KILL_ON_CLOSE,
        // Mutation control (`CK_MUTATION=init-no-reap`): reap the program only, as a plain
        // parent does.
        reap_all: !mutation::active(Control::InitNoReap),
        tag: FORWARD_TAG,
        user_ns: None,
        trim_heap,
    };
    let flags = placement_flag | CLONE_NEWPID;
    let (pid, pidfd, user_ns) = match clone3::pidns_init::fork_init(cgroup_dir, flags, &ctx) {
        Ok((pid, pidfd)) => (pid, pidfd, false),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            if !USERNS_RETRY || identity.uid.is_some() || identity.gid.is_some() {
                return Err(refused(Errno::PERM, false).into());
            }
            // The maps are made here: the init must not allocate.
            let maps = Maps::new()?;
            ctx.user_ns = Some(&maps);
            let (pid, pidfd) =
                clone3::pidns_init::fork_init(cgroup_dir, flags | CLONE_NEWUSER, &ctx)
                    .map_err(|e| refused(Errno::from_io_error(&e).unwrap_or(Errno::IO), true))?;
            (pid, pidfd, true)
        }
        Err(e) => return Err(Clone3Failure::from_clone3(e)),
    };
    drop(status_wr);
    let reports = Reports {
        fd: status_rd,
        status: None,
        gone: false,
        init: pid,
        program: None,
        held: None,
    };
    Ok((pid, pidfd, reports, user_ns))
}

/// Send `sig` to a namespace's init through its pidfd (`pidfd_send_signal(2)` with an `SI_QUEUE`
/// siginfo) tagged so that the init passes it on to the program. Of the signals it is given, the
/// init passes on HUP, INT, QUIT, TERM, USR1, USR2, ALRM and WINCH; KILL and STOP act on the init
/// itself (and KILL so on the whole namespace); others are ignored.
pub fn send_tagged(pidfd: BorrowedFd<'_>, sig: Signal) -> io::Result<()> {
    clone3::pidns_init::send_tagged(pidfd, sig, FORWARD_TAG)
}
