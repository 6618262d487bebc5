//! Kill-on-close: the program in a PID namespace of its own, under an init of ours.
//!
//! [`ModuleCommand::pid_namespace`] makes [`spawn_into`] start, instead of the
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

use super::*;

/// `CLONE_NEWPID` from `<linux/sched.h>`.
const CLONE_NEWPID: u64 = 0x2000_0000;

/// The tag in `si_value.sival_int` of a signal the init passes on to the program (`"ckfw"`).
const FORWARD_TAG: c_int = 0x636b_6677;

/// Signals the init passes on to the program when they carry the tag.
const FORWARDED: [c_int; 8] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGWINCH,
];

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

/// What the init needs after the clone, as raw values only.
struct InitCtx {
    /// The program's context (no parent-death signal: its parent is the init).
    cmd: ChildCtx,
    /// The parent's end of the report pipe, which the init closes at once.
    status_rd: c_int,
    /// The init's end of the report pipe.
    status_wr: c_int,
    kill_on_close: bool,
    /// The maps for the cgroup namespace the init makes for the namespace; `None`: none.
    cgroup_ns: Option<*const cgroupns::Maps>,
}

/// Clone the init into the cgroup of `cgroup_dir` (`placement_flag` is `CLONE_INTO_CGROUP`, or 0
/// for the `CK_MUTATION=no-placement` control) in a new PID namespace. Returns the init's pid and
/// pidfd and the parent's end of its report pipe.
pub(super) fn spawn(
    cgroup_dir: BorrowedFd<'_>,
    placement_flag: u64,
    prepared: &Prepared,
    program: &CString,
) -> Result<(u32, OwnedFd, Reports), Clone3Failure> {
    let (status_rd, status_wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // The init makes the cgroup namespace (it is in the module from birth) before it starts the
    // program, which inherits it; the program does not make another.
    let mut cmd = prepared.ctx(program, 0);
    let cgroup_ns = cmd.cgroup_ns.take();
    let ctx = InitCtx {
        cgroup_ns,
        cmd,
        status_rd: status_rd.as_raw_fd(),
        status_wr: status_wr.as_raw_fd(),
        kill_on_close: KILL_ON_CLOSE,
    };
    let init = || {
        // SAFETY: run only by clone3_fork in the freshly cloned child, PID 1 of the new
        // namespace, with every signal blocked; `ctx`'s pointers are kept valid by `prepared`
        // (in the child's copy of our memory too).
        unsafe { ns_init(&ctx) }
    };
    // SAFETY: `init` makes only async-signal-safe calls on prepared data and never returns.
    let (pid, pidfd) = unsafe { clone3_fork(cgroup_dir, placement_flag | CLONE_NEWPID, init) }
        .map_err(|error| Clone3Failure {
            error,
            from_clone3: true,
        })?;
    drop(status_wr);
    let reports = Reports {
        fd: status_rd,
        status: None,
        gone: false,
    };
    Ok((pid, pidfd, reports))
}

/// The init: see the module's documentation. Never returns.
///
/// # Safety
/// Only in the child right after `clone3` with `CLONE_NEWPID` (fork semantics), with every
/// signal blocked and `ctx`'s pointers valid.
unsafe fn ns_init(ctx: &InitCtx) -> ! {
    let fail = |e: c_int| -> ! {
        // SAFETY: we are the child (precondition of ns_init).
        unsafe { child_fail(ctx.cmd.report_fd, e) }
    };
    // SAFETY: we are the child with every signal blocked.
    if let Err(e) = unsafe { reset_signal_handlers() } {
        fail(e);
    }
    // SAFETY: close(2) of the copy of the parent's read end, which this process never uses.
    unsafe { libc::close(ctx.status_rd) };
    if ctx.kill_on_close {
        // SAFETY: prctl(2) with integer arguments only.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if rc != 0 {
            fail(errno());
        }
        // The parent may have died before the prctl took effect. getppid() is 0 here (the
        // parent is outside the namespace), so ask the pipe: with its only reader (the parent)
        // gone, the write end polls POLLERR.
        let mut p = libc::pollfd {
            fd: ctx.status_wr,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: poll(2) on one live pollfd local, no timeout.
        if unsafe { libc::poll(&mut p, 1, 0) } < 0 {
            fail(errno());
        }
        if p.revents & libc::POLLERR != 0 {
            fail(libc::ESRCH);
        }
    }

    if let Some(maps) = ctx.cgroup_ns {
        // SAFETY: the pointer is to the `Maps` the parent prepared and keeps alive (in this
        // copy-on-write copy of its memory too).
        let maps = unsafe { &*maps };
        // Born in the module (CLONE_INTO_CGROUP): the namespace is rooted at it, and the program
        // forked below inherits it.
        if let Err(e) = cgroupns::enter(maps) {
            fail(e | cgroupns::REFUSED_MARK);
        }
    }

    // SAFETY: sigset_t is a plain bit array; all-zero is valid and sigemptyset overwrites it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live, writable local; the signal numbers are valid.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        for s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
    }
    // Every signal stays blocked in the init: these are read from the signalfd, the rest stay
    // pending, which for a namespace's init is the same as ignored.
    // SAFETY: -1 asks for a new fd; `set` is a valid sigset_t.
    let sfd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC) };
    if sfd < 0 {
        fail(errno());
    }

    // The program: a plain fork (no namespace, no pidfd), in the init's cgroup.
    let args = CloneArgs {
        flags: 0,
        pidfd: 0,
        child_tid: 0,
        parent_tid: 0,
        exit_signal: libc::SIGCHLD as u64,
        stack: 0,
        stack_size: 0,
        tls: 0,
        set_tid: 0,
        set_tid_size: 0,
        cgroup: 0,
    };
    // SAFETY: a valid clone_args of the size passed, fork semantics (see clone3_fork). The init
    // is single-threaded and its signals are blocked; the child goes straight to child_exec.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if ret < 0 {
        fail(errno());
    }
    if ret == 0 {
        // SAFETY: the freshly forked program, every signal blocked, `ctx.cmd` valid.
        unsafe { child_exec(&ctx.cmd) }
    }
    let program = ret as libc::pid_t;
    // The report pipe now stays open only in the program until its execve (close-on-exec).
    // SAFETY: close(2) of our copy.
    unsafe { libc::close(ctx.cmd.report_fd) };

    let mut running = true;
    let mut code: c_int = 0;
    loop {
        // SAFETY: signalfd_siginfo is plain data; all-zero is valid.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: read(2) into a live local of exactly `size` bytes.
        let n = unsafe { libc::read(sfd, (&mut info as *mut libc::signalfd_siginfo).cast(), size) };
        if n != size as isize {
            if errno() == libc::EINTR {
                continue;
            }
            // Cannot read signals any more: exit, and the kernel empties the namespace.
            // SAFETY: _exit(2) ends the process at once.
            unsafe { libc::_exit(CHILD_FAILURE_EXIT) }
        }
        let signo = info.ssi_signo as c_int;
        if signo != libc::SIGCHLD {
            if running && info.ssi_int == FORWARD_TAG {
                // SAFETY: kill(2) of our own unreaped child: its pid cannot be reused.
                unsafe { libc::kill(program, signo) };
            }
            continue;
        }
        // Mutation control (`CK_MUTATION=init-no-reap`): reap the program only, as a plain parent does.
        let which = if cfg!(ck_mutation = "init-no-reap") {
            program
        } else {
            -1
        };
        loop {
            let mut st: c_int = 0;
            // SAFETY: waitpid(2) with a live status local.
            let pid = unsafe { libc::waitpid(which, &mut st, libc::WNOHANG) };
            if pid == 0 {
                break;
            }
            if pid < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                // ECHILD: nothing is left in the namespace but the init.
                // SAFETY: _exit(2) ends the process at once.
                unsafe { libc::_exit(code) }
            }
            if pid == program {
                running = false;
                code = if libc::WIFEXITED(st) {
                    libc::WEXITSTATUS(st)
                } else {
                    128 + libc::WTERMSIG(st)
                };
                let bytes = st.to_ne_bytes();
                // SAFETY: write(2) of a live 4-byte buffer; 4 bytes on a pipe are atomic. With
                // the parent gone it fails with EPIPE (SIGPIPE is blocked), which changes
                // nothing: the init is about to be killed with it.
                unsafe { libc::write(ctx.status_wr, bytes.as_ptr().cast(), bytes.len()) };
            }
        }
    }
}

/// `siginfo_t` as `sigqueue(3)` fills it (`SI_QUEUE` with `si_pid`, `si_uid` and
/// `si_value.sival_int`), 128 bytes.
#[repr(C)]
struct QueueInfo {
    signo: c_int,
    errno: c_int,
    code: c_int,
    #[cfg(target_pointer_width = "64")]
    _align: c_int,
    pid: libc::pid_t,
    uid: libc::uid_t,
    value_int: c_int,
    #[cfg(target_pointer_width = "64")]
    _value_rest: c_int,
    _rest: [u8; QUEUE_INFO_REST],
}

const QUEUE_INFO_REST: usize = if cfg!(target_pointer_width = "64") {
    128 - 32
} else {
    128 - 24
};
const _: () = assert!(std::mem::size_of::<QueueInfo>() == 128);

/// Send `sig` to a namespace's init through its pidfd (`pidfd_send_signal(2)` with an `SI_QUEUE`
/// siginfo) tagged so that the init passes it on to the program. Of the signals it is given, the
/// init passes on HUP, INT, QUIT, TERM, USR1, USR2, ALRM and WINCH; KILL and STOP act on the init
/// itself (and KILL so on the whole namespace); others are ignored.
pub fn send_tagged(pidfd: BorrowedFd<'_>, sig: Signal) -> io::Result<()> {
    let info = QueueInfo {
        signo: sig.as_raw(),
        errno: 0,
        code: libc::SI_QUEUE,
        #[cfg(target_pointer_width = "64")]
        _align: 0,
        pid: rustix::process::getpid().as_raw_pid(),
        uid: rustix::process::getuid().as_raw(),
        value_int: FORWARD_TAG,
        #[cfg(target_pointer_width = "64")]
        _value_rest: 0,
        _rest: [0; QUEUE_INFO_REST],
    };
    // SAFETY: pidfd_send_signal(2) with a live pidfd, a valid signal number and a pointer to a
    // live, fully initialised 128-byte siginfo whose si_signo matches and whose si_code
    // (SI_QUEUE) is one a process may send to another; flags 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig.as_raw(),
            &info as *const QueueInfo,
            0,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
