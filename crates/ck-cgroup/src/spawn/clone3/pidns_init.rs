//! The child side of a PID namespace ([`crate::spawn::pidns`]): the init, PID 1 of the new
//! namespace, and the tagged `pidfd_send_signal(2)` that reaches it. Part of [`super`], the one
//! place of the crate's `unsafe` code.
//!
//! The init keeps the caller's identity (root, for a daemon that sets
//! [`uid`](crate::spawn::ModuleCommand::uid)): a change of credentials would clear its
//! `PR_SET_PDEATHSIG` (kill-on-close), and a program of another uid can then neither signal nor
//! trace it. Only the program it starts takes the identity, in [`child_exec`].

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use libc::c_int;
use rustix::io::Errno;
use rustix::process::Signal;

use super::{
    ChildCtx, CloneArgs, child_exec, child_fail, clone3_fork, errno, nsmaps, raw_clone3,
    reset_signal_handlers,
};
use crate::spawn::CHILD_FAILURE_EXIT;

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

/// What the init needs after the clone.
pub(in crate::spawn) struct InitCtx<'a> {
    /// The program's context (no parent-death signal: its parent is the init).
    pub(in crate::spawn) cmd: ChildCtx<'a>,
    /// The parent's end of the report pipe, which the init closes at once.
    pub(in crate::spawn) status_rd: c_int,
    /// The init's end of the report pipe.
    pub(in crate::spawn) status_wr: c_int,
    pub(in crate::spawn) kill_on_close: bool,
    /// Reap every process reparented to the init (`false` only for `init-no-reap`).
    pub(in crate::spawn) reap_all: bool,
    /// The tag in `si_value.sival_int` of a signal to pass on.
    pub(in crate::spawn) tag: c_int,
    /// The maps for the cgroup namespace the init makes for the namespace; `None`: none.
    pub(in crate::spawn) cgroup_ns: Option<&'a nsmaps::Maps>,
    /// The init leads a process group of its own (`setpgid(0, 0)`), which the program joins.
    pub(in crate::spawn) process_group: bool,
    /// The maps the init writes first, when it was cloned with `CLONE_NEWUSER` too; `None`: it
    /// was not.
    pub(in crate::spawn) user_ns: Option<&'a nsmaps::Maps>,
    /// Give the caller's free heap pages back before the fork
    /// ([`ModuleCommand::trim_heap`](crate::spawn::ModuleCommand::trim_heap)).
    pub(in crate::spawn) trim_heap: bool,
}

/// How far around the thread pointer the init keeps the heap's pages: a static glibc puts the
/// main thread's control block and static TLS (`errno` included) at the start of the `brk`
/// heap, a few KiB on each side of the thread pointer; the init, which calls libc after it gave
/// its heap back, keeps them.
const TCB_WINDOW: usize = 16 << 10;

/// The part of the caller's `brk` heap (from `/proc/self/stat`'s `start_brk` to the break) above
/// [`TCB_WINDOW`] past the thread pointer, page-aligned: what the init gives back of its copy
/// once the program is started (it never reads the heap again: its loop works on its stack).
/// The caller keeps writing its own heap while the module runs, and each page it writes would
/// otherwise be kept twice, its copy and the init's. `None` where the thread's control block is
/// not on the `brk` heap (a dynamically linked caller: the loader maps it elsewhere), or where
/// nothing is left above the window. Called by the parent right before the fork (it allocates;
/// after the trim, which moves the break).
fn heap_above_tcb() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 47 (`start_brk`); the fields after the command's closing `)` start at 3.
    let start: usize = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(47 - 3)?
        .parse()
        .ok()?;
    // SAFETY: sbrk(0) only reads the current break; pthread_self() reads the thread pointer.
    let (brk, tp) = unsafe { (libc::sbrk(0) as usize, libc::pthread_self() as usize) };
    if start == 0 || !(start..brk).contains(&tp) {
        return None;
    }
    let page = rustix::param::page_size();
    let from = (tp + TCB_WINDOW).next_multiple_of(page);
    let end = brk.next_multiple_of(page);
    (from < end).then(|| (from, end - from))
}

/// Clone the init with `flags` (`CLONE_NEWPID`, and `CLONE_INTO_CGROUP` unless `no-placement`;
/// `CLONE_NEWUSER` when `ctx.user_ns` is set) into the cgroup of `cgroup_dir`; its pid and pidfd.
pub(in crate::spawn) fn fork_init(
    cgroup_dir: BorrowedFd<'_>,
    flags: u64,
    ctx: &InitCtx<'_>,
) -> io::Result<(u32, OwnedFd)> {
    let init = |heap_copy| {
        // SAFETY: run only by clone3_fork in the freshly cloned child, PID 1 of the new
        // namespace, with every signal blocked; `ctx` borrows what the parent prepared (alive
        // in the child's copy of its memory too).
        unsafe { ns_init(ctx, heap_copy) }
    };
    // The init is a copy of this process for as long as the module runs, and so is what it
    // copies: where the caller asked, give the heap's free pages back first, so that neither
    // keeps them resident.
    if ctx.trim_heap {
        // SAFETY: malloc_trim(3) only returns free memory of the allocator to the kernel; no
        // allocation in use moves or is invalidated, and this thread holds no allocator lock.
        unsafe { libc::malloc_trim(0) };
    }
    // With the trim, the init gives its copy of the heap back too, once the program is started.
    let heap_copy = if ctx.trim_heap {
        heap_above_tcb()
    } else {
        None
    };
    // SAFETY: `init` makes only async-signal-safe calls on prepared data and never returns.
    unsafe { clone3_fork(cgroup_dir, flags, || init(heap_copy)) }
}

/// The init: see [`crate::spawn::pidns`]. Never returns. `heap_copy`: the part of its copy of
/// the caller's heap it gives back once the program is started ([`heap_above_tcb`]).
///
/// # Safety
/// Only in the child right after `clone3` with `CLONE_NEWPID` (fork semantics), with every
/// signal blocked and `ctx`'s pointers valid.
unsafe fn ns_init(ctx: &InitCtx<'_>, heap_copy: Option<(usize, usize)>) -> ! {
    let fail = |e: c_int| -> ! { child_fail(ctx.cmd.report_fd, e) };
    // SAFETY: we are the child with every signal blocked.
    if let Err(e) = unsafe { reset_signal_handlers() } {
        fail(e);
    }
    if let Some(maps) = ctx.user_ns
        && let Err(e) = nsmaps::write_own_maps(maps)
    {
        // Without its maps the namespace is no place to start the program in.
        fail(e | nsmaps::USERNS_REFUSED_MARK);
    }
    // SAFETY: close(2) of the copy of the parent's read end, which this process never uses.
    unsafe { libc::close(ctx.status_rd) };
    if ctx.kill_on_close
        && let Err(e) = die_with_parent_outside(ctx.status_wr)
    {
        fail(e);
    }
    if let Some(maps) = ctx.cgroup_ns {
        // Born in the module (CLONE_INTO_CGROUP): the namespace is rooted at it, and the program
        // forked below inherits it.
        if let Err(e) = nsmaps::enter(maps) {
            fail(e | nsmaps::CGROUPNS_REFUSED_MARK);
        }
    }
    if ctx.process_group
        && let Err(e) = rustix::process::setpgid(None, None)
    {
        fail(e.raw_os_error());
    }
    let sfd = match init_signalfd() {
        Ok(fd) => fd,
        Err(e) => fail(e),
    };
    // The program: a plain fork (no namespace, no pidfd), in the init's cgroup. The init is
    // single-threaded and its signals are blocked.
    let args = CloneArgs {
        exit_signal: libc::SIGCHLD as u64,
        ..CloneArgs::default()
    };
    // SAFETY: fork semantics (see clone3_fork); the child goes straight to child_exec.
    let ret = unsafe { raw_clone3(&args) };
    if ret < 0 {
        fail(errno());
    }
    if ret == 0 {
        // SAFETY: the freshly forked program, every signal blocked, `ctx.cmd` valid.
        unsafe { child_exec(&ctx.cmd) }
    }
    // The init's copies of the caller's descriptors (the report pipe, the program's stdio and
    // extra fds, whatever else the caller had open) would keep pipes and sockets open for the
    // namespace's whole life: the program has its own now, and the init keeps only its two.
    close_all_but(sfd, ctx.status_wr);
    if let Some((addr, len)) = heap_copy {
        // SAFETY: madvise(2) MADV_DONTNEED of a page-aligned range of this process's own `brk`
        // heap that holds neither its stack nor its thread's control block (heap_above_tcb):
        // the init reads none of it again (`ctx` and serve's state are on its stack), and a
        // page touched after all the same would read as zeros, not fault. The program has its
        // own copy (forked above).
        unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED) };
    }
    serve(ctx, sfd, ret as libc::pid_t)
}

/// Close every descriptor of the calling process except `a` and `b`: `close_range(2)` (Linux
/// 5.9+) around them, else `close(2)` of each number below the soft `RLIMIT_NOFILE`.
fn close_all_but(a: c_int, b: c_int) {
    let (lo, hi) = (a.min(b) as libc::c_uint, a.max(b) as libc::c_uint);
    let ranges = [
        (lo > 0).then(|| (0, lo - 1)),
        (hi > lo + 1).then(|| (lo + 1, hi - 1)),
        Some((hi + 1, libc::c_uint::MAX)),
    ];
    for (first, last) in ranges.into_iter().flatten() {
        // SAFETY: close_range(2) of descriptors this process, the init, never uses again: it
        // owns no Rust object over them (it runs on a copy of the caller's memory and never
        // returns into it).
        let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
        if rc != 0 {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit(2) into a live local.
            let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
                lim.rlim_cur.min(1 << 20) as libc::c_uint
            } else {
                1024
            };
            for fd in first..=last.min(max) {
                // SAFETY: as for close_range above, one descriptor at a time.
                unsafe { libc::close(fd as c_int) };
            }
        }
    }
}

/// `PR_SET_PDEATHSIG` SIGKILL, then check that the parent did not die before it took effect.
/// `getppid()` is 0 in the new namespace (the parent is outside it), so ask the report pipe:
/// with its only reader (the parent) gone, the write end `status_wr` polls `POLLERR` (`ESRCH`).
fn die_with_parent_outside(status_wr: c_int) -> Result<(), c_int> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(Errno::raw_os_error)?;
    let mut p = libc::pollfd {
        fd: status_wr,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: poll(2) on one live pollfd local, no timeout.
    if unsafe { libc::poll(&mut p, 1, 0) } < 0 {
        return Err(errno());
    }
    if p.revents & libc::POLLERR != 0 {
        return Err(libc::ESRCH);
    }
    Ok(())
}

/// A `signalfd(2)` for SIGCHLD and the [`FORWARDED`] signals. Every signal stays blocked in the
/// init: these are read from the signalfd, the rest stay pending, which for a namespace's init
/// is the same as ignored.
fn init_signalfd() -> Result<c_int, c_int> {
    // SAFETY: sigset_t is a plain bit array; all-zero is valid and sigemptyset overwrites it;
    // `set` is a live, writable local and the signal numbers are valid; signalfd gets -1 (a new
    // fd) and that valid set.
    let sfd = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        for s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
        libc::signalfd(-1, &set, libc::SFD_CLOEXEC)
    };
    if sfd < 0 {
        return Err(errno());
    }
    Ok(sfd)
}

/// The init's loop: pass tagged signals on to `program`, reap on SIGCHLD. Exits when nothing
/// but the init is left in its namespace, with the program's code.
fn serve(ctx: &InitCtx<'_>, sfd: c_int, program: libc::pid_t) -> ! {
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
            if running && info.ssi_int == ctx.tag {
                // SAFETY: kill(2) of our own unreaped child: its pid cannot be reused.
                unsafe { libc::kill(program, signo) };
            }
            continue;
        }
        let which = if ctx.reap_all { -1 } else { program };
        if let Err(()) = reap(which, program, ctx.status_wr, &mut running, &mut code) {
            // ECHILD: nothing is left in the namespace but the init.
            // SAFETY: _exit(2) ends the process at once.
            unsafe { libc::_exit(code) }
        }
    }
}

/// Reap what has exited of `which` (-1: any child) without blocking. When it is `program`,
/// write its wait status to `status_wr` and keep its code. `Err` once no child is left.
fn reap(
    which: libc::pid_t,
    program: libc::pid_t,
    status_wr: c_int,
    running: &mut bool,
    code: &mut c_int,
) -> Result<(), ()> {
    loop {
        let mut st: c_int = 0;
        // SAFETY: waitpid(2) with a live status local.
        let pid = unsafe { libc::waitpid(which, &mut st, libc::WNOHANG) };
        if pid == 0 {
            return Ok(());
        }
        if pid < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return Err(());
        }
        if pid == program {
            *running = false;
            *code = if libc::WIFEXITED(st) {
                libc::WEXITSTATUS(st)
            } else {
                128 + libc::WTERMSIG(st)
            };
            let bytes = st.to_ne_bytes();
            // SAFETY: write(2) of a live 4-byte buffer; 4 bytes on a pipe are atomic. With the
            // parent gone it fails with EPIPE (SIGPIPE is blocked), which changes nothing: the
            // init is about to be killed with it.
            unsafe { libc::write(status_wr, bytes.as_ptr().cast(), bytes.len()) };
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

/// `pidfd_send_signal(2)` of `sig` with an `SI_QUEUE` siginfo whose `si_value.sival_int` is
/// `tag`.
pub(in crate::spawn) fn send_tagged(
    pidfd: BorrowedFd<'_>,
    sig: Signal,
    tag: c_int,
) -> io::Result<()> {
    let info = QueueInfo {
        signo: sig.as_raw(),
        errno: 0,
        code: libc::SI_QUEUE,
        #[cfg(target_pointer_width = "64")]
        _align: 0,
        pid: rustix::process::getpid().as_raw_pid(),
        uid: rustix::process::getuid().as_raw(),
        value_int: tag,
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
