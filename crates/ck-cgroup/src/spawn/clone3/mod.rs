//! All the `unsafe` code of the crate, in one place (with its submodule [`pidns_init`], the PID
//! namespace's init): `clone3(2)` with fork semantics and the child it runs up to `execve(2)`,
//! the steps of the `pre_exec` path, and the signal-mask and `signalfd(2)` calls of
//! `signals`. Every `unsafe` block carries a `SAFETY:` argument; everything else in the
//! crate is `#![deny(unsafe_code)]` and calls the safe functions here.
//!
//! Code that runs in a child between the clone and `execve` (the `child_*` functions, the
//! [`PreExecStep`]s, [`pidns_init`]) makes only raw system calls on data prepared before the clone: no
//! allocation, no locks, no unwinding. Credentials change through raw system calls (rustix),
//! never through libc's `setuid`, which in a copy made by a raw `clone3` would wait for threads
//! that the copy does not have.
#![allow(unsafe_code)]

pub(super) mod nsmaps;
pub(super) mod pidns_init;

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use libc::{c_char, c_int};
use rustix::io::Errno;
use rustix::process::{Gid, Pid, Signal, Uid};

use super::{CHILD_FAILURE_EXIT, PLACEMENT_ENABLED};

/// `CString::new` with an `InvalidInput` error for interior NULs.
pub(in crate::spawn) fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in command data",
        )
    })
}

/// `CLONE_PIDFD` from `<linux/sched.h>` (Linux 5.2+).
const CLONE_PIDFD: u64 = 0x1000;

/// `struct clone_args` from `<linux/sched.h>` (`CLONE_ARGS_SIZE_VER2`, 88
/// bytes, with the `cgroup` field).
#[repr(C, align(8))]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// The identity a child takes before `execve(2)` (see [`super::ModuleCommand::uid`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Identity {
    pub(crate) uid: Option<Uid>,
    pub(crate) gid: Option<Gid>,
}

impl Identity {
    /// `setgroups(2)` to an empty list (`EPERM` ignored, as by std: a caller without
    /// `CAP_SETGID`, or a user namespace with `setgroups` denied), `setgid(2)`, `setuid(2)`; all
    /// raw system calls. Nothing when neither id is set.
    fn apply(&self) -> Result<(), c_int> {
        if self.uid.is_none() && self.gid.is_none() {
            return Ok(());
        }
        match rustix::thread::set_thread_groups(&[]) {
            Ok(()) | Err(Errno::PERM) => {}
            Err(e) => return Err(e.raw_os_error()),
        }
        if let Some(gid) = self.gid {
            rustix::thread::set_thread_gid(gid).map_err(Errno::raw_os_error)?;
        }
        if let Some(uid) = self.uid {
            rustix::thread::set_thread_uid(uid).map_err(Errno::raw_os_error)?;
        }
        Ok(())
    }
}

/// Everything the child of the clone3 path needs, borrowed from what the parent prepared
/// ([`super::prepare::Prepared::ctx`]) and alive in the child's copy of its memory.
pub(super) struct ChildCtx<'a> {
    pub(super) path: &'a CStr,
    /// NULL-terminated arrays of pointers to NUL-terminated strings.
    pub(super) argv: *const *const c_char,
    pub(super) envp: *const *const c_char,
    pub(super) cwd: Option<&'a CStr>,
    /// Source fds for 0, 1, 2; `-1` means inherit.
    pub(super) stdio: [c_int; 3],
    /// (source, target) of the extra fds; every source is above every target.
    pub(super) fds: &'a [(c_int, c_int)],
    /// The close-on-exec end of the report pipe, above every target.
    pub(super) report_fd: c_int,
    pub(super) pdeathsig: Option<Signal>,
    pub(super) parent_pid: Pid,
    pub(super) identity: Identity,
    /// `setpgid(0, pgid)` when set.
    pub(super) pgid: Option<Pid>,
    pub(super) process_group: bool,
    /// The maps for a cgroup namespace made before `execve`; `None`: no namespace.
    pub(super) cgroup_ns: Option<&'a nsmaps::Maps>,
}

/// `clone3(2)` with fork semantics (no `CLONE_VM`, no stack) and `flags`
/// (`CLONE_PIDFD` is added), into the cgroup of `cgroup_dir` when `flags`
/// holds `CLONE_INTO_CGROUP`. In the child, `child` runs and must not return;
/// in the parent, the child's pid and pidfd. All signals are blocked around
/// the call, so no handler of the parent runs in the child.
///
/// # Safety
/// `child` runs in a copy of a possibly multi-threaded process: it may only
/// make async-signal-safe calls on data prepared before (no allocation, no
/// locks, no unwinding).
unsafe fn clone3_fork(
    cgroup_dir: BorrowedFd<'_>,
    flags: u64,
    child: impl FnOnce(),
) -> io::Result<(u32, OwnedFd)> {
    let mut pidfd_out: c_int = -1;
    let args = CloneArgs {
        flags: CLONE_PIDFD | flags,
        pidfd: &mut pidfd_out as *mut c_int as u64,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup_dir.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    let mask = SavedMask::block_all()?;
    // SAFETY: `args` is a valid, fully initialised clone_args of the size we
    // pass; `pidfd` points to a live c_int the kernel writes the pidfd into.
    // Without CLONE_VM and with stack 0 this has fork semantics: the child
    // gets a copy-on-write copy of our memory and continues on a copy of this
    // stack, so no memory is shared with the parent. In the child (return
    // value 0) we immediately call `child`, which never returns and, by this
    // function's contract, only makes async-signal-safe calls on data
    // prepared before, so the state of other threads' locks in the copied
    // address space does not matter. All signals are blocked, so no parent
    // signal handler can run in the child before it resets them.
    let ret = unsafe { raw_clone3(&args) };
    if ret == 0 {
        child();
        // SAFETY: `child` never returns by contract; should it, end the copy at once.
        unsafe { libc::_exit(CHILD_FAILURE_EXIT) }
    }
    let clone_err = (ret < 0).then(io::Error::last_os_error);
    drop(mask);
    if let Some(error) = clone_err {
        return Err(error);
    }
    // SAFETY: clone3 succeeded with CLONE_PIDFD, so the kernel stored a new,
    // open pidfd (close-on-exec) in `pidfd_out` that nobody else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd_out) };
    Ok((ret as u32, pidfd))
}

/// The `clone3(2)` system call itself; its return value.
///
/// # Safety
/// As for `clone3_fork`: `args` has fork semantics (no `CLONE_VM`, no stack) and the caller's
/// child side makes only async-signal-safe calls.
unsafe fn raw_clone3(args: &CloneArgs) -> libc::c_long {
    // SAFETY: `args` is a live, fully initialised clone_args of the size passed; the rest is
    // the caller's contract.
    unsafe {
        libc::syscall(
            libc::SYS_clone3,
            args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    }
}

/// Clone a child that runs [`child_exec`] with `ctx` (the program, directly); its pid and
/// pidfd. `flags` as for `clone3_fork` (`CLONE_INTO_CGROUP`, or 0 under `no-placement`).
pub(super) fn fork_exec(
    cgroup_dir: BorrowedFd<'_>,
    flags: u64,
    ctx: &ChildCtx<'_>,
) -> io::Result<(u32, OwnedFd)> {
    let exec = || {
        // SAFETY: run only by clone3_fork in the freshly cloned child, with every signal
        // blocked; `ctx` borrows what the parent prepared (alive in the child's copy too).
        unsafe { child_exec(ctx) }
    };
    // SAFETY: `exec` makes only async-signal-safe calls on prepared data and never returns.
    unsafe { clone3_fork(cgroup_dir, flags, exec) }
}

/// A signal mask of the calling thread, restored when this drops.
pub(crate) struct SavedMask(libc::sigset_t);

impl SavedMask {
    /// Block every signal in the calling thread until the guard drops, so
    /// that no handler of the parent runs in the child between `clone3` and
    /// the child's own handler reset.
    fn block_all() -> io::Result<Self> {
        // SAFETY: sigset_t is a plain bit array; all-zero is a valid value that sigfillset then
        // overwrites. `all` is a live, writable local.
        let all = unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            all
        };
        Self::block(&all)
    }

    /// Add `set` to the calling thread's blocked signals; the mask before.
    fn block(set: &libc::sigset_t) -> io::Result<Self> {
        // SAFETY: sigset_t is a plain bit array; all-zero is valid, and pthread_sigmask
        // overwrites it.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers refer to live sigset_t values (`set` read, `old` written); this
        // only changes the calling thread's mask.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, set, &mut old) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(Self(old))
    }

    /// Add `sig` to the calling thread's blocked signals; the mask before.
    pub(crate) fn block_one(sig: Signal) -> io::Result<SavedMask> {
        // SAFETY: sigset_t is a plain bit array; all-zero is valid and sigemptyset overwrites it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live, writable local; an invalid signal number only makes
        // sigaddset fail.
        if unsafe {
            libc::sigemptyset(&mut set) != 0 || libc::sigaddset(&mut set, sig.as_raw()) != 0
        } {
            return Err(io::Error::last_os_error());
        }
        Self::block(&set)
    }

    /// Block `signals` in the calling thread and open a close-on-exec `signalfd(2)` that reads
    /// them; the mask before is restored when the returned guard drops.
    pub(crate) fn block_into_signalfd(signals: &[Signal]) -> io::Result<(OwnedFd, SavedMask)> {
        // SAFETY: sigset_t is a plain bit array; all-zero is valid and sigemptyset overwrites it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live, writable local.
        unsafe { libc::sigemptyset(&mut set) };
        for s in signals {
            // SAFETY: `set` is a live local; an invalid signal number only makes this fail.
            if unsafe { libc::sigaddset(&mut set, s.as_raw()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let saved = Self::block(&set)?;
        // SAFETY: -1 asks for a new fd; `set` is a valid sigset_t; the flags are valid.
        let raw = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC) };
        if raw < 0 {
            // `saved` drops here and restores the mask.
            return Err(io::Error::last_os_error());
        }
        // SAFETY: signalfd returned a new descriptor that nothing else owns.
        Ok((unsafe { OwnedFd::from_raw_fd(raw) }, saved))
    }
}

impl Drop for SavedMask {
    fn drop(&mut self) {
        // SAFETY: self.0 is the valid mask saved by pthread_sigmask; the old-set pointer may be
        // null.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

/// Restore the default action of `sig` (`sigaction(2)`) and unblock it in the calling thread
/// (`signals::reraise`).
pub(crate) fn default_and_unblock(sig: c_int) {
    // SAFETY: sigaction with SIG_DFL and an empty mask is valid for any catchable signal; for
    // SIGKILL/SIGSTOP or an invalid number the calls fail harmlessly. The structs are
    // zero-initialised (valid values) before their fields are set, and all are live locals.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// Unshare the namespaces in `flags`, which may hold only `CLONE_NEWCGROUP` and `CLONE_NEWUSER`
/// (else `EINVAL`); the errno on failure.
pub(super) fn unshare_namespaces(flags: c_int) -> Result<(), c_int> {
    if flags & !(libc::CLONE_NEWCGROUP | libc::CLONE_NEWUSER) != 0 {
        return Err(libc::EINVAL);
    }
    // SAFETY: unshare(2) touches no memory of ours, and with only these two flags it shares no
    // fd table or memory differently (what makes rustix's `unshare` unsafe is CLONE_FILES).
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(errno());
    }
    Ok(())
}

/// The current thread's errno (no allocation).
pub(super) fn errno() -> c_int {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Report `errno` to the parent through the pipe and exit without running
/// any atexit handlers or destructors. Only in a child after `clone3`.
fn child_fail(report_fd: c_int, errno: c_int) -> ! {
    let bytes = errno.to_ne_bytes();
    loop {
        // SAFETY: `bytes` is a live 4-byte buffer; write(2) is async-signal-safe (an fd that is
        // not open only makes it fail).
        let n = unsafe { libc::write(report_fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break;
    }
    // SAFETY: _exit(2) is async-signal-safe and ends the process at once.
    unsafe { libc::_exit(CHILD_FAILURE_EXIT) }
}

/// Reset every caught signal to its default action, and SIGPIPE (which Rust's
/// runtime ignores, and an ignored disposition survives `execve`) too; on
/// failure the errno.
///
/// # Safety
/// Only in a child after `clone3`, with every signal blocked, so that no
/// handler of the parent can run.
unsafe fn reset_signal_handlers() -> Result<(), c_int> {
    let rtmax = libc::SIGRTMAX();
    for sig in 1..=rtmax {
        // SAFETY: sigaction is a plain struct; all-zero is valid (SIG_DFL,
        // empty mask, no flags).
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying with a null new action and a live out pointer;
        // sigaction(2) is async-signal-safe. Errors (SIGKILL, SIGSTOP,
        // libc-reserved signals) are ignored: those cannot be caught by us.
        let rc = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
        if rc == 0 && old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
            // SAFETY: as above, all-zero means SIG_DFL; `dfl` is a live, valid sigaction.
            unsafe {
                let dfl: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
    }
    // SAFETY: signal(2) with SIG_DFL is async-signal-safe and installs no handler of ours.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(errno());
    }
    Ok(())
}

/// Empty the calling thread's signal mask (the step before `execve`); the errno on failure.
fn unblock_all_signals() -> Result<(), c_int> {
    // SAFETY: sigset_t is a plain bit array; all-zero is valid and sigemptyset overwrites it;
    // pthread_sigmask reads the live local and takes a null old-set pointer. Async-signal-safe.
    let rc = unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(rc);
    }
    Ok(())
}

/// `dup2(src, target)` for each pair (the target loses close-on-exec); every source must be
/// an fd the caller owns and above every target, so no `dup2` clobbers a later source.
fn map_fds(fds: impl IntoIterator<Item = (c_int, c_int)>) -> Result<(), c_int> {
    for (src, target) in fds {
        // SAFETY: dup2(2) on integer fds in a child about to exec: the targets are the fds the
        // program is to get, and no source or other fd the child still needs sits on one.
        if unsafe { libc::dup2(src, target) } < 0 {
            return Err(errno());
        }
    }
    Ok(())
}

/// `PR_SET_PDEATHSIG`, then check that the parent (`parent`) did not die before it took effect
/// (`ESRCH` then).
fn die_with_parent(sig: Signal, parent: Pid) -> Result<(), c_int> {
    rustix::process::set_parent_process_death_signal(Some(sig)).map_err(Errno::raw_os_error)?;
    if rustix::process::getppid() != Some(parent) {
        return Err(libc::ESRCH);
    }
    Ok(())
}

/// Set up stdio: `dup2` each source onto 0, 1, 2, or clear close-on-exec on one already there.
fn wire_stdio(stdio: [c_int; 3]) -> Result<(), c_int> {
    for (target, src) in (0..3).zip(stdio) {
        if src < 0 {
            continue;
        }
        if src == target {
            // dup2 onto itself would keep FD_CLOEXEC: clear it instead.
            // SAFETY: fcntl(2) on an integer fd; async-signal-safe; only clears FD_CLOEXEC.
            let rc = unsafe {
                let flags = libc::fcntl(src, libc::F_GETFD);
                if flags < 0 {
                    flags
                } else {
                    libc::fcntl(src, libc::F_SETFD, flags & !libc::FD_CLOEXEC)
                }
            };
            if rc < 0 {
                return Err(errno());
            }
        } else {
            // Sources were moved above 2 by the parent, so no earlier dup2 clobbered them.
            map_fds([(src, target)])?;
        }
    }
    Ok(())
}

impl ChildCtx<'_> {
    /// Every step of the child before `execve`, in order: stdio, the extra fds, the cgroup
    /// namespace (while still privileged), the identity, the process group, the working
    /// directory (as the new identity, like std), the parent-death signal (after the identity
    /// change, which would clear it), an empty signal mask.
    fn setup(&self) -> Result<(), c_int> {
        wire_stdio(self.stdio)?;
        map_fds(self.fds.iter().copied())?;
        if let Some(maps) = self.cgroup_ns {
            // We are in the module (born there): the namespace is rooted at it.
            nsmaps::enter(maps).map_err(|e| e | nsmaps::CGROUPNS_REFUSED_MARK)?;
        }
        self.identity.apply()?;
        if self.process_group {
            rustix::process::setpgid(None, self.pgid).map_err(Errno::raw_os_error)?;
        }
        if let Some(cwd) = self.cwd {
            rustix::process::chdir(cwd).map_err(Errno::raw_os_error)?;
        }
        if let Some(sig) = self.pdeathsig {
            die_with_parent(sig, self.parent_pid)?;
        }
        unblock_all_signals()
    }
}

/// Child side of the clone3 path: reset signals, [`ChildCtx::setup`], then `execve`. Never
/// returns.
///
/// # Safety
/// Only to be called in the child right after `clone3` (fork semantics), with
/// all signals blocked and `ctx`'s pointers valid (NUL-terminated strings and
/// NULL-terminated pointer arrays).
unsafe fn child_exec(ctx: &ChildCtx<'_>) -> ! {
    // SAFETY: we are the child with every signal blocked (our precondition).
    if let Err(e) = unsafe { reset_signal_handlers() } {
        child_fail(ctx.report_fd, e);
    }
    if let Err(e) = ctx.setup() {
        child_fail(ctx.report_fd, e);
    }
    // SAFETY: path is a NUL-terminated string, argv/envp are NULL-terminated
    // arrays of NUL-terminated strings, all prepared by the parent and kept
    // alive in this copy-on-write copy of its memory.
    unsafe { libc::execve(ctx.path.as_ptr(), ctx.argv, ctx.envp) };
    child_fail(ctx.report_fd, errno())
}

/// A step of the `pre_exec` path ([`std::process::Command`]), run in the forked child before
/// `execve` in the order the steps were added.
pub(crate) enum PreExecStep {
    /// Write `"0"` to the fd of a `cgroup.procs` (unless `no-placement`), then mark it
    /// close-on-exec.
    Place(OwnedFd),
    /// Make the cgroup namespace ([`cgroupns::enter`]); its errno comes back marked.
    CgroupNamespace(nsmaps::Maps),
    /// Take the identity.
    Identity(Identity),
    /// `dup2` each (source, target); every source is above every target.
    Fds(Vec<(OwnedFd, c_int)>),
    /// `chdir(2)`.
    Chdir(std::ffi::CString),
    /// An empty signal mask.
    UnblockSignals,
    /// `PR_SET_PDEATHSIG`, checked against the parent's pid captured before the fork.
    ParentDeath(Signal, Pid),
}

impl PreExecStep {
    /// Run the step in the forked child: raw system calls on data the step owns.
    fn run(&self) -> Result<(), c_int> {
        match self {
            PreExecStep::Place(procs) => {
                if PLACEMENT_ENABLED {
                    while let Err(e) = rustix::io::write(procs, b"0") {
                        if e != Errno::INTR {
                            return Err(e.raw_os_error());
                        }
                    }
                }
                rustix::io::fcntl_setfd(procs, rustix::io::FdFlags::CLOEXEC)
                    .map_err(Errno::raw_os_error)
            }
            PreExecStep::CgroupNamespace(maps) => nsmaps::enter(maps)
                .map(|_| ())
                .map_err(|e| e | nsmaps::CGROUPNS_REFUSED_MARK),
            PreExecStep::Identity(id) => id.apply(),
            PreExecStep::Fds(fds) => map_fds(fds.iter().map(|(fd, t)| (fd.as_raw_fd(), *t))),
            PreExecStep::Chdir(dir) => {
                rustix::process::chdir(dir.as_c_str()).map_err(Errno::raw_os_error)
            }
            PreExecStep::UnblockSignals => unblock_all_signals(),
            PreExecStep::ParentDeath(sig, parent) => die_with_parent(*sig, *parent),
        }
    }
}

/// Add `step` to `cmd`'s `pre_exec` hooks.
pub(crate) fn pre_exec(cmd: &mut Command, step: PreExecStep) {
    let hook = move || step.run().map_err(io::Error::from_raw_os_error);
    // SAFETY: `pre_exec` requires the closure to be async-signal-safe, because it runs in a
    // forked child of a possibly multi-threaded process. Every step (`PreExecStep::run`) makes
    // only raw system calls (write, fcntl, unshare, open, close, setgroups, setgid, setuid,
    // dup2, chdir, rt_sigprocmask, prctl, getppid) on data the step owns, prepared before the
    // fork, and builds an io::Error from a raw errno: no allocation, no locks, no panics.
    unsafe {
        cmd.pre_exec(hook);
    }
}
