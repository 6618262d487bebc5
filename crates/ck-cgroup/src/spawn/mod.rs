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
//! This module is the only place in the crate that uses `unsafe`; every block
//! carries a `SAFETY:` argument.
//!
//! # Mutation testing
//!
//! With the cargo feature `CK_MUTATION=no-placement`, the clone3 path omits
//! `CLONE_INTO_CGROUP` and the `pre_exec` write is skipped, so children stay
//! in the parent's cgroup. It exists only so the test suite can prove that its
//! tests fail when placement is switched off; never enable it in production.
#![allow(unsafe_code)]

pub mod cgroupns;
pub mod pidns;

pub use cgroupns::{
    CgroupNamespace, CgroupNamespaceRefused, cgroup_namespace_refused, enter_cgroup_namespace,
};

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use libc::{c_char, c_int};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::process::{
    Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, WaitIdStatus, pidfd_open, pidfd_send_signal,
    waitid,
};

/// `CLONE_PIDFD` from `<linux/sched.h>` (Linux 5.2+).
const CLONE_PIDFD: u64 = 0x1000;
/// `CLONE_INTO_CGROUP` from `<linux/sched.h>` (Linux 5.7+).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Whether placement is performed at all; `false` only for the
/// `CK_MUTATION=no-placement` test feature.
const PLACEMENT_ENABLED: bool = !cfg!(ck_mutation = "no-placement");

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

/// One environment operation, replayed in order.
#[derive(Debug, Clone)]
enum EnvOp {
    Set(OsString, OsString),
    Remove(OsString),
    Clear,
}

/// A command to start inside a cgroup (own builder, because
/// [`std::process::Command`] cannot be introspected fully).
///
/// The stdio descriptors given to [`stdin`](Self::stdin),
/// [`stdout`](Self::stdout) and [`stderr`](Self::stderr) are owned by the
/// command and stay open as long as it lives (the command can be spawned
/// several times); drop the command to close the parent's copies, e.g. to
/// see end-of-file on a pipe.
#[derive(Debug)]
pub struct ModuleCommand {
    program: OsString,
    args: Vec<OsString>,
    env_ops: Vec<EnvOp>,
    cwd: Option<PathBuf>,
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    pdeathsig: Option<Signal>,
    pid_namespace: bool,
    cgroup_namespace: bool,
}

impl ModuleCommand {
    /// The program as given to [`new`](Self::new).
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// A command running `program`. A program without `/` is looked up in
    /// `PATH` (the one set with [`env`](Self::env) if any, else the parent's),
    /// like `execvp(3)`, before anything is spawned. `argv[0]` is `program`
    /// as given.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Self {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env_ops: Vec::new(),
            cwd: None,
            stdin: None,
            stdout: None,
            stderr: None,
            pdeathsig: None,
            pid_namespace: false,
            cgroup_namespace: true,
        }
    }

    /// Append one argument.
    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(a.as_ref().to_owned());
        self
    }

    /// Append several arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Set an environment variable for the child.
    pub fn env(&mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> &mut Self {
        self.env_ops
            .push(EnvOp::Set(k.as_ref().to_owned(), v.as_ref().to_owned()));
        self
    }

    /// Remove an environment variable from the child's environment.
    pub fn env_remove(&mut self, k: impl AsRef<OsStr>) -> &mut Self {
        self.env_ops.push(EnvOp::Remove(k.as_ref().to_owned()));
        self
    }

    /// Start the child with an empty environment (plus variables set
    /// afterwards with [`env`](Self::env)).
    pub fn env_clear(&mut self) -> &mut Self {
        self.env_ops.push(EnvOp::Clear);
        self
    }

    /// Working directory of the child (`chdir(2)` before `execve(2)`).
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// Standard input of the child (default: inherited from the parent).
    pub fn stdin(&mut self, fd: OwnedFd) -> &mut Self {
        self.stdin = Some(fd);
        self
    }

    /// Standard output of the child (default: inherited from the parent).
    pub fn stdout(&mut self, fd: OwnedFd) -> &mut Self {
        self.stdout = Some(fd);
        self
    }

    /// Standard error of the child (default: inherited from the parent).
    pub fn stderr(&mut self, fd: OwnedFd) -> &mut Self {
        self.stderr = Some(fd);
        self
    }

    /// Signal the child gets when the spawning thread dies
    /// (`prctl(PR_SET_PDEATHSIG)`); checked against a parent that already
    /// died (the child then exits with status 127 instead of running the
    /// program).
    ///
    /// Note that the kernel tracks the *thread* that created the child: if
    /// the spawning thread exits while the daemon lives on, the child gets
    /// the signal too.
    pub fn parent_death_signal(&mut self, sig: Signal) -> &mut Self {
        // Mutation control: the child outlives a dead parent.
        if !cfg!(ck_mutation = "no-pdeathsig") {
            self.pdeathsig = Some(sig);
        }
        self
    }

    /// Kill-on-close: start the program in a new PID namespace
    /// (`clone3(2)` with `CLONE_NEWPID | CLONE_INTO_CGROUP`) under an init of
    /// ours, PID 1 there (see [`pidns`]). When the thread that spawned it
    /// dies, by any means, the init gets SIGKILL and the kernel kills every
    /// process of the namespace, reparented orphans and processes that ignore
    /// signals included.
    ///
    /// The program sees its own pid as 2 and its children's pids as the
    /// namespace numbers them; `/proc` is still the host's. Needs
    /// `CAP_SYS_ADMIN` (else `spawn` fails with `EPERM` and starts nothing)
    /// and `clone3(2)` (no fallback: the pre-exec path cannot make one).
    /// [`parent_death_signal`](Self::parent_death_signal) does not apply: the
    /// program's parent is the init.
    pub fn pid_namespace(&mut self, on: bool) -> &mut Self {
        self.pid_namespace = on;
        self
    }

    /// Containment (on by default): the program starts in a new cgroup namespace rooted at its
    /// module, made by the child once it is in the module (with a PID namespace, by the init
    /// before it starts the program). The program reads `0::/` in `/proc/self/cgroup`; on a
    /// cgroup2 mounted with `nsdelegate` it can neither move out of the module nor write the
    /// module's own limits, whatever its uid (see [`cgroupns`]). Without `CAP_SYS_ADMIN` the
    /// namespace is made together with a user namespace mapping the caller's uid and gid to
    /// themselves. When neither can be made, `spawn` starts nothing and fails with a
    /// [`CgroupNamespaceRefused`] error ([`cgroup_namespace_refused`]); spawn again with
    /// `cgroup_namespace(false)` to run uncontained.
    ///
    /// A program that keeps `CAP_SYS_ADMIN` (root) can `setns(2)` back into the host's cgroup
    /// namespace: drop that capability or run it as its own user.
    pub fn cgroup_namespace(&mut self, on: bool) -> &mut Self {
        self.cgroup_namespace = on;
        self
    }

    /// Whether the program starts in a cgroup namespace of its own
    /// ([`cgroup_namespace`](Self::cgroup_namespace)).
    pub fn has_cgroup_namespace(&self) -> bool {
        self.cgroup_namespace
    }

    /// The child's environment after replaying all operations in order.
    fn final_env(&self) -> BTreeMap<OsString, OsString> {
        let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        for op in &self.env_ops {
            match op {
                EnvOp::Set(k, v) => {
                    env.insert(k.clone(), v.clone());
                }
                EnvOp::Remove(k) => {
                    env.remove(k);
                }
                EnvOp::Clear => env.clear(),
            }
        }
        env
    }

    /// The `PATH` used to resolve a bare program name: the child's `PATH`
    /// when explicitly set on this command, else the parent's (like
    /// [`std::process::Command`]).
    fn search_path(&self) -> Option<OsString> {
        let explicit = self.env_ops.iter().rev().find_map(|op| match op {
            EnvOp::Set(k, v) if k == "PATH" => Some(Some(v.clone())),
            EnvOp::Remove(k) if k == "PATH" => Some(None),
            EnvOp::Clear => Some(None),
            _ => None,
        });
        match explicit {
            Some(Some(p)) => Some(p),
            _ => std::env::var_os("PATH"),
        }
    }
}

/// A child started inside a cgroup. Holds a pidfd, so signals never reach a
/// reused pid.
///
/// Dropping it neither kills nor reaps the child (like
/// [`std::process::Child`]).
#[derive(Debug)]
pub struct ModuleChild {
    pid: u32,
    pidfd: OwnedFd,
    placement: Placement,
    status: Option<ExitStatus>,
    /// With a PID namespace: the pipe on which the init reports the program's wait status.
    ns: Option<pidns::Reports>,
}

impl ModuleChild {
    /// The child's process id (in the parent's pid namespace). With a PID
    /// namespace, the init's.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The child's pidfd (see `pidfd_open(2)`); close-on-exec. With a PID
    /// namespace, the init's.
    pub fn pidfd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }

    /// Whether the program runs under an init of ours in its own PID
    /// namespace ([`ModuleCommand::pid_namespace`]).
    pub fn in_pid_namespace(&self) -> bool {
        self.ns.is_some()
    }

    /// A descriptor that polls readable once the program has exited: the
    /// pidfd, or with a PID namespace the init's report pipe (readable when
    /// it reports the program's status, or hung up when the init is gone).
    pub fn exit_fd(&self) -> BorrowedFd<'_> {
        match &self.ns {
            Some(ns) => ns.fd(),
            None => self.pidfd.as_fd(),
        }
    }

    /// Which mechanism put the child into the cgroup.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Send a signal to the program through the pidfd
    /// (`pidfd_send_signal(2)`). With a PID namespace it goes to the init
    /// tagged for passing on, and the init passes it to the program (other
    /// signals reaching the init are ignored, as by any namespace's init).
    /// Fails with `ESRCH` once the child has been reaped.
    pub fn signal(&self, sig: Signal) -> io::Result<()> {
        if self.ns.is_some() {
            return pidns::send_tagged(self.pidfd.as_fd(), sig);
        }
        Ok(pidfd_send_signal(&self.pidfd, sig)?)
    }

    /// Block until the program exits, `EINTR` retried, and return its
    /// status; the same status again afterwards.
    ///
    /// Without a PID namespace this reaps the child
    /// (`waitid(P_PIDFD, WEXITED)`). With one it reads the status the init
    /// reports when it reaps the program; the init itself lives on while
    /// anything else of the namespace does (stop the module, then
    /// [`wait_init`](Self::wait_init)). An init that died without reporting
    /// (killed, which killed the program too) gives the init's own status.
    ///
    /// Fails with `ECHILD` if someone else reaped the child (e.g. `SIGCHLD`
    /// set to `SIG_IGN`, or a `waitpid(-1)` loop elsewhere in the process).
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.program_status(true)?
            .ok_or_else(|| io::Error::other("no status for a blocking wait"))
    }

    /// Reap the child process itself: with a PID namespace the init, which
    /// exits once nothing else is left in its namespace (or is killed with
    /// the module). Without one, the same as [`wait`](Self::wait).
    pub fn wait_init(&mut self) -> io::Result<ExitStatus> {
        self.reap(WaitIdOptions::EXITED)?
            .ok_or_else(|| io::Error::other("waitid(P_PIDFD) returned no status"))
    }

    /// The program's status if it has exited (without a PID namespace this
    /// reaps the child: `waitid(P_PIDFD, WEXITED|WNOHANG)`), else `Ok(None)`
    /// without blocking.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.program_status(false)
    }

    /// The program's status, waiting for it when `block`; `Ok(None)` only
    /// when not blocking and it still runs.
    fn program_status(&mut self, block: bool) -> io::Result<Option<ExitStatus>> {
        let Some(ns) = &mut self.ns else {
            let opts = if block {
                WaitIdOptions::EXITED
            } else {
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG
            };
            return self.reap(opts);
        };
        match ns.read(block)? {
            pidns::Report::Status(st) => Ok(Some(st)),
            pidns::Report::Pending => Ok(None),
            pidns::Report::Gone => {
                // The init died without reporting: it was killed, and the kernel killed the
                // program with it. Its own status is the best account of the program's end.
                let st = self.wait_init()?;
                if let Some(ns) = &mut self.ns {
                    ns.set(st);
                }
                Ok(Some(st))
            }
        }
    }

    /// `waitid(P_PIDFD)` of the child process itself, once; the status is kept.
    fn reap(&mut self, opts: WaitIdOptions) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let status = wait_pidfd(self.pidfd.as_fd(), opts)?;
        if status.is_some() {
            self.status = status;
        }
        Ok(status)
    }
}

/// `waitid(P_PIDFD, fd, options)` with `EINTR` retried, converted to an
/// [`ExitStatus`].
fn wait_pidfd(fd: BorrowedFd<'_>, options: WaitIdOptions) -> io::Result<Option<ExitStatus>> {
    loop {
        match waitid(WaitId::PidFd(fd), options) {
            Ok(Some(st)) => return exit_status_from(&st).map(Some),
            Ok(None) => return Ok(None),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Build the classic wait status: exit code `<< 8`, or the signal number
/// with `0x80` when a core was dumped.
fn exit_status_from(st: &WaitIdStatus) -> io::Result<ExitStatus> {
    if let Some(code) = st.exit_status() {
        Ok(ExitStatus::from_raw((code & 0xff) << 8))
    } else if let Some(sig) = st.terminating_signal() {
        let core = if st.dumped() { 0x80 } else { 0 };
        Ok(ExitStatus::from_raw((sig & 0x7f) | core))
    } else {
        Err(io::Error::other(format!(
            "waitid returned an unexpected child state (si_code {})",
            st.raw_code()
        )))
    }
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
///   `execve(2)` (`dup2`, `chdir`, `prctl`, `execve`) are reported back
///   through a close-on-exec pipe and returned from here, after the child
///   has been reaped.
/// * Fallback ([`Strategy::Auto`] when `clone3` fails with `ENOSYS`, `E2BIG`
///   or `EINVAL`, or [`Strategy::PreExecOnly`]): [`std::process::Command`]
///   with [`place_before_exec`], then `pidfd_open(2)`.
///
/// A program name without `/` is resolved through `PATH` in the parent; if
/// it is not found, `ENOENT` is returned and nothing is spawned.
///
/// Writing into a cgroup follows the rules of
/// <https://docs.kernel.org/admin-guide/cgroup-v2.html> (e.g. the
/// no-internal-process constraint yields `EBUSY`).
pub fn spawn_into_with(
    cgroup_dir: BorrowedFd<'_>,
    cmd: &ModuleCommand,
    strategy: Strategy,
) -> io::Result<ModuleChild> {
    let program = resolve_program(cmd)?;
    match strategy {
        Strategy::Clone3Only => spawn_clone3(cgroup_dir, cmd, &program).map_err(|f| f.error),
        Strategy::PreExecOnly if cmd.pid_namespace => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a PID namespace needs clone3(2); the pre-exec path cannot make one",
        )),
        Strategy::PreExecOnly => spawn_pre_exec(cgroup_dir, cmd, &program),
        Strategy::Auto => match spawn_clone3(cgroup_dir, cmd, &program) {
            Ok(child) => Ok(child),
            // The pre-exec path cannot make a PID namespace: its error is the answer.
            Err(f) if f.from_clone3 && clone3_unsupported(&f.error) && !cmd.pid_namespace => {
                spawn_pre_exec(cgroup_dir, cmd, &program)
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
    let hook = move || -> io::Result<()> {
        if PLACEMENT_ENABLED {
            loop {
                match rustix::io::write(&cgroup_procs, b"0") {
                    Ok(_) => break,
                    Err(Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        rustix::io::fcntl_setfd(&cgroup_procs, rustix::io::FdFlags::CLOEXEC)?;
        Ok(())
    };
    // SAFETY: `pre_exec` requires the closure to be async-signal-safe because
    // it runs in a forked child of a possibly multi-threaded process. The
    // closure only issues raw `write(2)` and `fcntl(2)` syscalls through
    // rustix on an fd it owns, and builds `io::Error` from a raw errno (no
    // allocation, no locks, no panics).
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// Install a `pre_exec` hook setting `PR_SET_PDEATHSIG` and checking that
/// the parent (pid captured now) is still alive (`sandbox`'s CMD uses it too).
pub fn pdeathsig_before_exec(cmd: &mut Command, sig: Signal) {
    let parent = rustix::process::getpid().as_raw_pid();
    let raw = sig.as_raw();
    let hook = move || -> io::Result<()> {
        // SAFETY: prctl(PR_SET_PDEATHSIG) takes an integer signal number and
        // touches no memory of ours; it is a plain syscall wrapper.
        let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, raw as libc::c_ulong, 0, 0, 0) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if rustix::process::getppid().map(Pid::as_raw_pid) != Some(parent) {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: the closure only performs the `prctl(2)` and `getppid(2)`
    // syscalls and builds `io::Error` from raw errno values: async-signal-safe,
    // no allocation, no locks, no panics.
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// Fallback path: `std::process::Command` + `pre_exec` write + `pidfd_open`.
fn spawn_pre_exec(
    cgroup_dir: BorrowedFd<'_>,
    cmd: &ModuleCommand,
    program: &CString,
) -> io::Result<ModuleChild> {
    let mut std_cmd = Command::new(OsStr::from_bytes(program.as_bytes()));
    std_cmd.arg0(&cmd.program);
    std_cmd.args(&cmd.args);
    for op in &cmd.env_ops {
        match op {
            EnvOp::Set(k, v) => std_cmd.env(k, v),
            EnvOp::Remove(k) => std_cmd.env_remove(k),
            EnvOp::Clear => std_cmd.env_clear(),
        };
    }
    if let Some(dir) = &cmd.cwd {
        std_cmd.current_dir(dir);
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
    unblock_signals_before_exec(&mut std_cmd);
    if let Some(sig) = cmd.pdeathsig {
        pdeathsig_before_exec(&mut std_cmd, sig);
    }
    let mut child = std_cmd.spawn().map_err(cgroupns::unmark)?;
    let pid = child.id();
    // The child is ours and not reaped yet, so its pid cannot be reused
    // before pidfd_open: race-free.
    let pidfd = Pid::from_raw(pid as i32)
        .ok_or_else(|| io::Error::other("spawned child has pid 0"))
        .and_then(|p| Ok(pidfd_open(p, PidfdFlags::empty())?));
    match pidfd {
        Ok(pidfd) => Ok(ModuleChild {
            pid,
            pidfd,
            placement: Placement::PreExecWrite,
            status: None,
            ns: None,
        }),
        Err(e) => {
            // Do not leave an unsupervised child behind.
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

/// Resolve the program like `execvp(3)` would, in the parent. Returns the
/// path to pass to `execve(2)`.
fn resolve_program(cmd: &ModuleCommand) -> io::Result<CString> {
    let prog = cmd.program.as_bytes();
    if prog.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if prog.contains(&b'/') {
        return cstring(prog);
    }
    let path = cmd
        .search_path()
        .unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    let mut saw_eacces = false;
    for dir in path.as_bytes().split(|&b| b == b':') {
        let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
        let mut candidate = dir.to_vec();
        candidate.push(b'/');
        candidate.extend_from_slice(prog);
        let candidate = cstring(&candidate)?;
        match rustix::fs::stat(candidate.as_c_str()) {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => {}
            _ => continue,
        }
        match rustix::fs::access(candidate.as_c_str(), rustix::fs::Access::EXEC_OK) {
            Ok(()) => return Ok(candidate),
            Err(Errno::ACCESS) => saw_eacces = true,
            Err(_) => {}
        }
    }
    Err(io::Error::from_raw_os_error(if saw_eacces {
        libc::EACCES
    } else {
        libc::ENOENT
    }))
}

/// `CString::new` with an `InvalidInput` error for interior NULs.
fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in command data",
        )
    })
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

impl From<Errno> for Clone3Failure {
    fn from(e: Errno) -> Self {
        io::Error::from(e).into()
    }
}

/// `struct clone_args` from `<linux/sched.h>` (`CLONE_ARGS_SIZE_VER2`, 88
/// bytes, with the `cgroup` field).
#[repr(C, align(8))]
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

/// Everything the child needs after `clone3`, as raw values only: the child
/// must not allocate or take locks.
struct ChildCtx {
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    /// Null when the working directory is inherited.
    cwd: *const c_char,
    /// Source fds for 0, 1, 2; `-1` means inherit.
    stdio: [c_int; 3],
    report_fd: c_int,
    /// 0 when no parent-death signal is requested.
    pdeathsig: c_int,
    parent_pid: libc::pid_t,
    /// The maps for a cgroup namespace made before `execve`; `None`: no namespace.
    cgroup_ns: Option<*const cgroupns::Maps>,
}

/// A `NULL`-terminated pointer array into `strings` (which must outlive it;
/// the `CString` heap buffers do not move when the `Vec` does).
fn ptr_array(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// If `fd` is one of 0..=2 but must land on a different stdio number, move it
/// to a number >= 3 so the child's `dup2` sequence cannot clobber it.
fn above_stdio(fd: Option<&OwnedFd>, target: RawFd) -> io::Result<Option<OwnedFd>> {
    match fd {
        Some(fd) if fd.as_raw_fd() < 3 && fd.as_raw_fd() != target => {
            Ok(Some(rustix::io::fcntl_dupfd_cloexec(fd, 3)?))
        }
        _ => Ok(None),
    }
}

/// Restores the calling thread's signal mask on drop.
struct MaskGuard(libc::sigset_t);

impl MaskGuard {
    /// Block every signal in the calling thread until the guard drops, so
    /// that no handler of the parent runs in the child between `clone3` and
    /// the child's own handler reset.
    fn block_all() -> io::Result<Self> {
        // SAFETY: sigset_t is a plain bit array; all-zero is a valid value
        // that sigfillset/pthread_sigmask then overwrite.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `all` is a live, writable sigset_t local.
        unsafe { libc::sigfillset(&mut all) };
        // SAFETY: both pointers refer to live sigset_t locals (`all` read,
        // `old` written); this only changes the calling thread's mask.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(Self(old))
    }
}

impl Drop for MaskGuard {
    fn drop(&mut self) {
        // SAFETY: self.0 is the valid mask saved by pthread_sigmask; the
        // old-set pointer may be null.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}

/// What the child needs after `clone3`, built in the parent: the strings and
/// descriptors that the raw pointers of a [`ChildCtx`] point into, and the
/// report pipe. Keep it alive until the child has exec'd or failed.
struct Prepared {
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const c_char>,
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const c_char>,
    cwd: Option<CString>,
    _moved: [Option<OwnedFd>; 3],
    stdio: [c_int; 3],
    report_rd: OwnedFd,
    report_wr: OwnedFd,
    /// The maps for the module's cgroup namespace, when it gets one.
    cgroup_ns: Option<cgroupns::Maps>,
}

impl Prepared {
    fn new(cmd: &ModuleCommand) -> io::Result<Self> {
        let mut argv = Vec::with_capacity(cmd.args.len() + 1);
        argv.push(cstring(cmd.program.as_bytes())?);
        for a in &cmd.args {
            argv.push(cstring(a.as_bytes())?);
        }
        let argv_ptrs = ptr_array(&argv);

        let mut envp = Vec::new();
        for (k, v) in cmd.final_env() {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(cstring(&kv)?);
        }
        let envp_ptrs = ptr_array(&envp);

        let cwd = match &cmd.cwd {
            Some(d) => Some(cstring(d.as_os_str().as_bytes())?),
            None => None,
        };

        // Stdio sources that sit on another stdio number are moved above 2.
        let moved = [
            above_stdio(cmd.stdin.as_ref(), 0)?,
            above_stdio(cmd.stdout.as_ref(), 1)?,
            above_stdio(cmd.stderr.as_ref(), 2)?,
        ];
        let src = |orig: &Option<OwnedFd>, moved: &Option<OwnedFd>| {
            moved
                .as_ref()
                .or(orig.as_ref())
                .map_or(-1, |fd| fd.as_raw_fd())
        };
        let [m0, m1, m2] = &moved;
        let stdio = [
            src(&cmd.stdin, m0),
            src(&cmd.stdout, m1),
            src(&cmd.stderr, m2),
        ];

        let (report_rd, report_wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let report_wr = if report_wr.as_raw_fd() < 3 {
            rustix::io::fcntl_dupfd_cloexec(&report_wr, 3)?
        } else {
            report_wr
        };
        let cgroup_ns = if cmd.cgroup_namespace && cgroupns::ENABLED {
            Some(cgroupns::Maps::new()?)
        } else {
            None
        };
        Ok(Prepared {
            cgroup_ns,
            _argv: argv,
            argv_ptrs,
            _envp: envp,
            envp_ptrs,
            cwd,
            _moved: moved,
            stdio,
            report_rd,
            report_wr,
        })
    }

    /// The child's context; `pdeathsig` 0 for none.
    fn ctx(&self, program: &CString, pdeathsig: c_int) -> ChildCtx {
        ChildCtx {
            path: program.as_ptr(),
            argv: self.argv_ptrs.as_ptr(),
            envp: self.envp_ptrs.as_ptr(),
            cwd: self.cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            stdio: self.stdio,
            report_fd: self.report_wr.as_raw_fd(),
            pdeathsig,
            parent_pid: rustix::process::getpid().as_raw_pid(),
            cgroup_ns: self.cgroup_ns.as_ref().map(|m| m as *const cgroupns::Maps),
        }
    }
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
        child_tid: 0,
        parent_tid: 0,
        exit_signal: libc::SIGCHLD as u64,
        stack: 0,
        stack_size: 0,
        tls: 0,
        set_tid: 0,
        set_tid_size: 0,
        cgroup: cgroup_dir.as_raw_fd() as u64,
    };
    let mask = MaskGuard::block_all()?;
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
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
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

/// Preferred path: `clone3(CLONE_INTO_CGROUP | CLONE_PIDFD)` with fork
/// semantics, then `execve` in the child; with a PID namespace, the
/// namespace's init in the child ([`pidns`]).
fn spawn_clone3(
    cgroup_dir: BorrowedFd<'_>,
    cmd: &ModuleCommand,
    program: &CString,
) -> Result<ModuleChild, Clone3Failure> {
    let prepared = Prepared::new(cmd)?;
    let placement_flag = if PLACEMENT_ENABLED {
        CLONE_INTO_CGROUP
    } else {
        0
    };
    let (pid, pidfd, ns) = if cmd.pid_namespace {
        let (pid, pidfd, reports) = pidns::spawn(cgroup_dir, placement_flag, &prepared, program)?;
        (pid, pidfd, Some(reports))
    } else {
        let ctx = prepared.ctx(program, cmd.pdeathsig.map_or(0, Signal::as_raw));
        let exec = || {
            // SAFETY: run only by clone3_fork in the freshly cloned child, with every signal
            // blocked; `ctx`'s pointers are kept valid by `prepared` (in the child's copy of
            // our memory too).
            unsafe { child_exec(&ctx) }
        };
        // SAFETY: `exec` makes only async-signal-safe calls on prepared data and never returns.
        let (pid, pidfd) =
            unsafe { clone3_fork(cgroup_dir, placement_flag, exec) }.map_err(|error| {
                Clone3Failure {
                    error,
                    from_clone3: true,
                }
            })?;
        (pid, pidfd, None)
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
    };
    match read_report(&report_rd) {
        Ok(None) => Ok(child),
        Ok(Some(code)) => {
            let _ = child.wait_init();
            Err(cgroupns::unmark(io::Error::from_raw_os_error(code)).into())
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
fn read_report(rd: &OwnedFd) -> io::Result<Option<i32>> {
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

/// Report `errno` to the parent through the pipe and exit without running
/// any atexit handlers or destructors.
///
/// # Safety
/// Only to be called in the child after `clone3`.
unsafe fn child_fail(report_fd: c_int, errno: c_int) -> ! {
    let bytes = errno.to_ne_bytes();
    loop {
        // SAFETY: `bytes` is a live 4-byte buffer; write(2) is
        // async-signal-safe.
        let n = unsafe { libc::write(report_fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break;
    }
    // SAFETY: _exit(2) is async-signal-safe and ends the process at once.
    unsafe { libc::_exit(CHILD_FAILURE_EXIT) }
}

/// The current thread's errno (no allocation).
fn errno() -> c_int {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Reset every caught signal to its default action, and SIGPIPE (which Rust's
/// runtime ignores, and an ignored disposition survives `execve`) too; on
/// failure the errno.
///
/// # Safety
/// Only in a child after `clone3`, with every signal blocked, so that no
/// handler of the parent can run.
unsafe fn reset_signal_handlers() -> Result<(), c_int> {
    // Reset every caught signal to its default action while all signals are
    // still blocked, so no parent handler can run in the child.
    let rtmax = libc::SIGRTMAX();
    let mut sig = 1;
    while sig <= rtmax {
        // SAFETY: sigaction is a plain struct; all-zero is valid (SIG_DFL,
        // empty mask, no flags).
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying with a null new action and a live out pointer;
        // sigaction(2) is async-signal-safe. Errors (SIGKILL, SIGSTOP,
        // libc-reserved signals) are ignored: those cannot be caught by us.
        let rc = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
        if rc == 0 && old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
            // SAFETY: as above, all-zero means SIG_DFL.
            let dfl: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: `dfl` is a live, valid sigaction.
            unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) };
        }
        sig += 1;
    }
    // Rust's runtime ignores SIGPIPE; an ignored disposition survives execve.
    // SAFETY: signal(2) with SIG_DFL is async-signal-safe and installs no
    // handler of ours.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(errno());
    }
    Ok(())
}

/// Child side of the clone3 path: reset signals, set up stdio, cwd and the
/// parent-death signal, then `execve`. Never returns.
///
/// # Safety
/// Only to be called in the child right after `clone3` (fork semantics), with
/// all signals blocked and `ctx`'s pointers valid (NUL-terminated strings and
/// NULL-terminated pointer arrays).
unsafe fn child_exec(ctx: &ChildCtx) -> ! {
    let fail = |e: c_int| -> ! {
        // SAFETY: we are the child (precondition of child_exec).
        unsafe { child_fail(ctx.report_fd, e) }
    };

    // SAFETY: we are the child with every signal blocked (our precondition).
    if let Err(e) = unsafe { reset_signal_handlers() } {
        fail(e);
    }

    for (target, src) in (0..3).zip(ctx.stdio) {
        if src < 0 {
            continue;
        }
        if src == target {
            // dup2 onto itself would keep FD_CLOEXEC: clear it instead.
            // SAFETY: fcntl(2) on an integer fd; async-signal-safe.
            let flags = unsafe { libc::fcntl(src, libc::F_GETFD) };
            if flags < 0 {
                fail(errno());
            }
            // SAFETY: as above; only clears FD_CLOEXEC on that fd.
            if unsafe { libc::fcntl(src, libc::F_SETFD, flags & !libc::FD_CLOEXEC) } < 0 {
                fail(errno());
            }
        } else {
            // SAFETY: dup2(2) on integer fds; sources were moved above 2 by
            // the parent, so no earlier dup2 clobbered them.
            if unsafe { libc::dup2(src, target) } < 0 {
                fail(errno());
            }
        }
    }

    // SAFETY: `ctx.cwd` is a valid NUL-terminated string when non-null.
    if !ctx.cwd.is_null() && unsafe { libc::chdir(ctx.cwd) } != 0 {
        fail(errno());
    }

    if ctx.pdeathsig != 0 {
        // SAFETY: prctl(2) with integer arguments only.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                ctx.pdeathsig as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if rc != 0 {
            fail(errno());
        }
        // SAFETY: getppid(2) has no preconditions.
        if unsafe { libc::getppid() } != ctx.parent_pid {
            // The parent already died before PR_SET_PDEATHSIG took effect.
            fail(libc::ESRCH);
        }
    }

    if let Some(maps) = ctx.cgroup_ns {
        // SAFETY: the pointer is to the `Maps` the parent prepared and keeps alive (in this
        // copy-on-write copy of its memory too).
        let maps = unsafe { &*maps };
        // We are in the module (born there): the namespace is rooted at it.
        if let Err(e) = cgroupns::enter(maps) {
            fail(e | cgroupns::REFUSED_MARK);
        }
    }

    // SAFETY: sigset_t is a plain bit array; all-zero is a valid value.
    let mut empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `empty` is a live, writable sigset_t.
    unsafe { libc::sigemptyset(&mut empty) };
    // SAFETY: sigprocmask(2) with a live set and a null old-set pointer.
    let rc = unsafe { libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) };
    if rc != 0 {
        fail(errno());
    }

    // SAFETY: path is a NUL-terminated string, argv/envp are NULL-terminated
    // arrays of NUL-terminated strings, all prepared by the parent and kept
    // alive in this copy-on-write copy of its memory.
    unsafe { libc::execve(ctx.path, ctx.argv, ctx.envp) };
    fail(errno())
}

/// Give `cmd`'s child an empty signal mask before `execve(2)`. The mask is inherited across
/// fork and exec and `std::process::Command` does not reset it, so a parent that blocks signals
/// (a [`SignalRelay`]) would otherwise start a child that can never receive them.
pub fn unblock_signals_before_exec(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and calls only sigemptyset and
    // pthread_sigmask on a local sigset_t (all-zero is a valid value that sigemptyset then
    // overwrites); both are async-signal-safe and nothing is allocated.
    unsafe {
        cmd.pre_exec(|| {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            match libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) {
                0 => Ok(()),
                rc => Err(io::Error::from_raw_os_error(rc)),
            }
        });
    }
}

/// Relays signals that the calling thread receives to a child, for a helper that stays resident
/// as the module's parent (`ck-cgroup run`).
///
/// [`SignalRelay::new`] blocks the signals in the calling thread (so none is lost or acts on the
/// helper between now and the child's exit) and reads them from a `signalfd(2)`; children spawned
/// by this module start with an empty signal mask. The previous mask is restored on drop.
pub struct SignalRelay {
    fd: OwnedFd,
    old: libc::sigset_t,
}

impl SignalRelay {
    /// Block `signals` and open a `signalfd(2)` for them. Create it before spawning the child.
    pub fn new(signals: &[Signal]) -> io::Result<SignalRelay> {
        // SAFETY: sigset_t is a plain bit array; all-zero is valid, and sigemptyset/sigaddset
        // and pthread_sigmask overwrite it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live, writable local.
        unsafe { libc::sigemptyset(&mut set) };
        for s in signals {
            // SAFETY: `set` is a live local; an invalid signal number only makes this fail.
            if unsafe { libc::sigaddset(&mut set, s.as_raw()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: both pointers refer to live locals; only the calling thread's mask changes.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        // SAFETY: -1 asks for a new fd; `set` is a valid sigset_t; the flags are valid.
        let raw = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: restores the mask saved above.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
            return Err(e);
        }
        // SAFETY: signalfd returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(SignalRelay { fd, old })
    }

    /// Until `child`'s program exits, send it ([`ModuleChild::signal`]) every blocked signal that
    /// arrives; then reap it and return its status. Signals are relayed one for one, in order.
    pub fn relay_until_exit(&self, child: &mut ModuleChild) -> io::Result<ExitStatus> {
        self.relay_until_exit_or(child, &[])?;
        child.wait()
    }

    /// Until `child`'s program exits, send it every blocked signal that arrives except those in
    /// `stop`. Returns `Some(sig)` for the first signal in `stop` that arrives (not passed on),
    /// or `None` once the program has exited (unreaped: [`ModuleChild::wait`] gives its status).
    pub fn relay_until_exit_or(
        &self,
        child: &ModuleChild,
        stop: &[Signal],
    ) -> io::Result<Option<Signal>> {
        self.relay(child.exit_fd(), |sig| {
            if stop.contains(&sig) {
                return Some(sig);
            }
            // The program may have exited in between: ESRCH is not an error.
            let _ = child.signal(sig);
            None
        })
    }

    /// Until the process of `pidfd` exits, send it every blocked signal that arrives; return
    /// when it has exited, without reaping it (for a child started with `std::process::Command`:
    /// open its pidfd with `pidfd_open(2)` while it is unreaped, then `wait` it after this).
    pub fn relay_until_readable(&self, pidfd: BorrowedFd<'_>) -> io::Result<()> {
        self.relay::<()>(pidfd, |sig| {
            // The child may have exited in between: ESRCH is not an error.
            let _ = pidfd_send_signal(pidfd, sig);
            None
        })
        .map(|_| ())
    }

    /// Poll the signalfd and `done`; hand each signal to `on_signal` (unless the
    /// `CK_MUTATION=no-relay` control is on), which may end the loop with a value. `None` once
    /// `done` is readable.
    fn relay<T>(
        &self,
        done: BorrowedFd<'_>,
        mut on_signal: impl FnMut(Signal) -> Option<T>,
    ) -> io::Result<Option<T>> {
        use rustix::event::{PollFd, PollFlags, poll};
        loop {
            let (sig_ready, child_ready) = {
                let mut fds = [
                    PollFd::new(&self.fd, PollFlags::IN),
                    PollFd::new(&done, PollFlags::IN),
                ];
                match poll(&mut fds, None) {
                    Ok(_) => {}
                    Err(Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                }
                (!fds[0].revents().is_empty(), !fds[1].revents().is_empty())
            };
            if sig_ready {
                // signalfd_siginfo is 128 bytes; ssi_signo is its first u32.
                let mut buf = [0u8; 128];
                match rustix::io::read(&self.fd, &mut buf) {
                    Ok(128) => {
                        let signo = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
                        if let Some(sig) = Signal::from_named_raw(signo as i32)
                            && !cfg!(ck_mutation = "no-relay")
                            && let Some(v) = on_signal(sig)
                        {
                            return Ok(Some(v));
                        }
                    }
                    Ok(_) | Err(Errno::AGAIN) | Err(Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if child_ready {
                return Ok(None);
            }
        }
    }
}

impl Drop for SignalRelay {
    fn drop(&mut self) {
        // SAFETY: self.old is the mask saved by pthread_sigmask in `new`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// Die of `sig` as the child did, so the caller sees the same death: the signal's default action
/// is restored (`sigaction(2)`; Rust's runtime ignores SIGPIPE), it is unblocked, and raised.
/// Returns only for a signal whose default action is not to terminate.
pub fn reraise(sig: i32) {
    // SAFETY: sigaction with SIG_DFL and an empty mask is valid for any catchable signal; for
    // SIGKILL/SIGSTOP the call fails harmlessly. The struct is zero-initialised, which is a
    // valid sigaction value, before the handler field is set.
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
    if let Some(s) = Signal::from_named_raw(sig) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// Decode the octal escapes (`\040`) of mountinfo fields.
    fn unescape(field: &str) -> PathBuf {
        let b = field.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 4 <= b.len() {
                let digits = std::str::from_utf8(&b[i + 1..i + 4]).ok();
                if let Some(v) = digits.and_then(|d| u8::from_str_radix(d, 8).ok()) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
            out.push(b[i]);
            i += 1;
        }
        PathBuf::from(OsString::from_vec(out))
    }

    /// (mount point, root of the mount inside the hierarchy) of cgroup2.
    fn cgroup2_mount() -> (PathBuf, PathBuf) {
        let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        for line in mi.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            if right.split_whitespace().next() != Some("cgroup2") {
                continue;
            }
            let fields: Vec<&str> = left.split_whitespace().collect();
            return (unescape(fields[4]), unescape(fields[3]));
        }
        panic!("no cgroup2 mount in /proc/self/mountinfo");
    }

    /// A scratch cgroup, killed and removed on drop (even on failure).
    struct Scratch {
        path: PathBuf,
        /// Path as it appears in /proc/<pid>/cgroup ("0::<rel>").
        rel: String,
        dir: OwnedFd,
    }

    impl Scratch {
        fn new() -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let (mount, root) = cgroup2_mount();
            let name = format!(
                "ck-spawn-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            );
            let path = mount.join(&name);
            std::fs::create_dir(&path).unwrap();
            let rel = root.join(&name).to_string_lossy().into_owned();
            let dir = match rustix::fs::open(
                &path,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(d) => d,
                Err(e) => {
                    let _ = std::fs::remove_dir(&path);
                    panic!("open {}: {e}", path.display());
                }
            };
            Self { path, rel, dir }
        }

        fn fd(&self) -> BorrowedFd<'_> {
            self.dir.as_fd()
        }

        fn populated(&self) -> bool {
            std::fs::read_to_string(self.path.join("cgroup.events"))
                .map(|s| s.lines().any(|l| l == "populated 1"))
                .unwrap_or(false)
        }

        fn wait_unpopulated(&self) -> bool {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if !self.populated() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            !self.populated()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::write(self.path.join("cgroup.kill"), "1");
            self.wait_unpopulated();
            if let Err(e) = std::fs::remove_dir(&self.path) {
                eprintln!("warning: rmdir {}: {e}", self.path.display());
            }
        }
    }

    fn pipe() -> (std::fs::File, OwnedFd) {
        let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        (std::fs::File::from(r), w)
    }

    /// Run `cmd` (stdout to a pipe) in `cg` and reap it; return (output, child).
    fn run(cg: &Scratch, mut cmd: ModuleCommand, strategy: Strategy) -> (String, ModuleChild) {
        let (mut r, w) = pipe();
        cmd.stdout(w);
        let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
        drop(cmd);
        let mut out = String::new();
        r.read_to_string(&mut out).unwrap();
        child.wait().unwrap();
        (out, child)
    }

    fn cgroup_line(out: &str) -> &str {
        out.lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or_else(|| panic!("no 0:: line in {out:?}"))
    }

    /// The child's cgroup as the host sees it: without a cgroup namespace of its own (the
    /// placement tests; the namespace has tests of its own).
    fn cat_cgroup() -> ModuleCommand {
        let mut cmd = ModuleCommand::new("/bin/sh");
        cmd.args(["-c", "cat /proc/self/cgroup"])
            .cgroup_namespace(false);
        cmd
    }

    /// Every spawn path (clone3, the pre-exec write, the PID namespace's init) starts the
    /// program in a cgroup namespace rooted at its cgroup: it reads `0::/`, its namespace is not
    /// ours, and its pid is in the cgroup's `cgroup.procs`.
    #[test]
    fn every_spawn_path_starts_the_child_in_a_cgroup_namespace_rooted_at_its_cgroup() {
        let own = std::fs::read_link("/proc/self/ns/cgroup").unwrap();
        for (strategy, pidns) in [
            (Strategy::Clone3Only, false),
            (Strategy::PreExecOnly, false),
            (Strategy::Clone3Only, true),
        ] {
            let cg = Scratch::new();
            let mut cmd = ModuleCommand::new("/bin/sh");
            cmd.args([
                "-c",
                &format!(
                    "grep '^0::' /proc/self/cgroup; readlink /proc/self/ns/cgroup; grep -cx $$ {}",
                    cg.path.join("cgroup.procs").display()
                ),
            ])
            .pid_namespace(pidns);
            assert!(cmd.has_cgroup_namespace(), "on by default");
            let (out, child) = run(&cg, cmd, strategy);
            let what = format!("{strategy:?}, pid namespace {pidns}: {out}");
            let l: Vec<&str> = out.lines().collect();
            assert_eq!(l.len(), 3, "{what}");
            assert_eq!(l[0], "0::/", "{what}");
            assert_ne!(l[1], own.to_string_lossy(), "{what}");
            assert_eq!(l[2], "1", "{what}");
            drop(child);
        }
    }

    #[test]
    fn clone3_places_child_in_cgroup() {
        let cg = Scratch::new();
        let (out, mut child) = run(&cg, cat_cgroup(), Strategy::Auto);
        assert_eq!(cgroup_line(&out), cg.rel);
        assert_eq!(child.placement(), Placement::Clone3IntoCgroup);
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn clone3_only_places_child_in_cgroup() {
        let cg = Scratch::new();
        let (out, child) = run(&cg, cat_cgroup(), Strategy::Clone3Only);
        assert_eq!(cgroup_line(&out), cg.rel);
        assert_eq!(child.placement(), Placement::Clone3IntoCgroup);
    }

    #[test]
    fn pre_exec_places_child_in_cgroup() {
        let cg = Scratch::new();
        let (out, mut child) = run(&cg, cat_cgroup(), Strategy::PreExecOnly);
        assert_eq!(cgroup_line(&out), cg.rel);
        assert_eq!(child.placement(), Placement::PreExecWrite);
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn exit_code_and_signal() {
        use std::os::unix::process::ExitStatusExt;
        let cg = Scratch::new();
        for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
            let mut cmd = ModuleCommand::new("/bin/sh");
            cmd.args(["-c", "exit 3"]);
            let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
            let st = child.wait().unwrap();
            assert_eq!(st.code(), Some(3), "{strategy:?}");
            // Waiting again returns the cached status.
            assert_eq!(child.wait().unwrap().code(), Some(3));

            let mut cmd = ModuleCommand::new("/bin/sleep");
            cmd.arg("100");
            let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
            assert_eq!(child.try_wait().unwrap(), None);
            child.signal(Signal::KILL).unwrap();
            let st = child.wait().unwrap();
            assert_eq!(st.signal(), Some(9), "{strategy:?}");
            assert_eq!(st.code(), None);
            assert!(child.signal(Signal::KILL).is_err());
        }
        assert!(cg.wait_unpopulated());
    }

    #[test]
    fn try_wait_reaps() {
        let cg = Scratch::new();
        let mut cmd = ModuleCommand::new("/bin/sh");
        cmd.args(["-c", "exit 0"]);
        let mut child = spawn_into(cg.fd(), &cmd).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let st = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(st.success());
        assert_eq!(child.wait().unwrap(), st);
    }

    #[test]
    fn program_not_found() {
        let cg = Scratch::new();
        for strategy in [Strategy::Auto, Strategy::Clone3Only, Strategy::PreExecOnly] {
            // Not in PATH: rejected in the parent, nothing cloned.
            let cmd = ModuleCommand::new("ck-definitely-not-a-program");
            let err = spawn_into_with(cg.fd(), &cmd, strategy).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound, "{strategy:?}");
            // Full path: fails in the child's execve, reported back and reaped.
            let cmd = ModuleCommand::new("/nonexistent/ck-prog");
            let err = spawn_into_with(cg.fd(), &cmd, strategy).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound, "{strategy:?}");
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        }
        assert!(!cg.populated());
        let procs = std::fs::read_to_string(cg.path.join("cgroup.procs")).unwrap();
        assert_eq!(procs, "");
    }

    #[test]
    fn program_found_in_path() {
        let cg = Scratch::new();
        for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
            let mut cmd = ModuleCommand::new("sh");
            cmd.args(["-c", "cat /proc/self/cgroup; echo \"$0\""])
                .cgroup_namespace(false);
            let (out, child) = run(&cg, cmd, strategy);
            assert_eq!(cgroup_line(&out), cg.rel);
            // argv[0] stays the name as given.
            assert_eq!(out.lines().last(), Some("sh"));
            assert!(child.status.unwrap().success());
        }
    }

    #[test]
    fn env_clear_and_set() {
        let cg = Scratch::new();
        for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
            let mut cmd = ModuleCommand::new("/usr/bin/env");
            cmd.env("DROPPED", "x")
                .env_clear()
                .env("A", "b")
                .env("C", "d");
            cmd.env_remove("C");
            let (out, _) = run(&cg, cmd, strategy);
            assert_eq!(out, "A=b\n", "{strategy:?}");
        }
    }

    #[test]
    fn current_dir_is_applied() {
        let cg = Scratch::new();
        let dir = std::env::temp_dir().join(format!("ck-spawn-cwd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let expected = dir.canonicalize().unwrap();
        for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
            let mut cmd = ModuleCommand::new("/bin/readlink");
            cmd.arg("/proc/self/cwd").current_dir(&dir);
            let (out, _) = run(&cg, cmd, strategy);
            assert_eq!(Path::new(out.trim_end()), expected, "{strategy:?}");
        }
        let _ = std::fs::remove_dir(&dir);
        // A missing directory is reported as ENOENT.
        let mut cmd = ModuleCommand::new("/bin/true");
        cmd.current_dir("/nonexistent/ck-dir");
        for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
            let err = spawn_into_with(cg.fd(), &cmd, strategy).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{strategy:?}");
        }
    }

    #[test]
    fn stdin_and_stderr_are_wired() {
        let cg = Scratch::new();
        for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
            let (in_r, in_w) = pipe();
            let (mut err_r, err_w) = pipe();
            let mut w = std::fs::File::from(in_w);
            std::io::Write::write_all(&mut w, b"hello\n").unwrap();
            drop(w);
            let mut cmd = ModuleCommand::new("/bin/sh");
            cmd.args(["-c", "cat >&2"]);
            cmd.stdin(OwnedFd::from(in_r)).stderr(err_w);
            let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
            drop(cmd);
            let mut out = String::new();
            err_r.read_to_string(&mut out).unwrap();
            assert_eq!(out, "hello\n");
            assert!(child.wait().unwrap().success());
        }
    }

    #[test]
    fn parent_death_signal_fires_when_spawning_thread_exits() {
        use std::os::unix::process::ExitStatusExt;
        let cg = Scratch::new();
        for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
            let fd = cg.dir.try_clone().unwrap();
            let mut child = std::thread::spawn(move || {
                let mut cmd = ModuleCommand::new("/bin/sleep");
                cmd.arg("100").parent_death_signal(Signal::KILL);
                spawn_into_with(fd.as_fd(), &cmd, strategy).unwrap()
            })
            .join()
            .unwrap();
            let st = child.wait().unwrap();
            assert_eq!(st.signal(), Some(9), "{strategy:?}");
        }
    }

    #[test]
    fn place_before_exec_with_std_command() {
        let cg = Scratch::new();
        let procs = rustix::fs::openat(
            cg.fd(),
            "cgroup.procs",
            OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .unwrap();
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "cat /proc/self/cgroup"]);
        cmd.stdout(Stdio::piped());
        place_before_exec(&mut cmd, procs);
        let out = cmd.output().unwrap();
        assert!(out.status.success());
        let out = String::from_utf8(out.stdout).unwrap();
        assert_eq!(cgroup_line(&out), cg.rel);
    }

    #[test]
    fn place_before_exec_write_error_is_returned() {
        let cg = Scratch::new();
        // Read-only fd: the write fails with EBADF, so the child must not exec.
        let procs = rustix::fs::openat(
            cg.fd(),
            "cgroup.procs",
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let mut cmd = Command::new("/bin/true");
        place_before_exec(&mut cmd, procs);
        let err = cmd.spawn().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF));
    }

    #[test]
    fn auto_surfaces_non_fallback_errors() {
        // A regular file is not a cgroup directory: clone3 fails (EBADF) and
        // the fallback cannot open cgroup.procs under it either.
        let cg = Scratch::new();
        let file = rustix::fs::open(
            cg.path.join("cgroup.procs"),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let cmd = ModuleCommand::new("/bin/true");
        assert!(spawn_into(file.as_fd(), &cmd).is_err());
        assert!(spawn_into_with(file.as_fd(), &cmd, Strategy::Clone3Only).is_err());
        assert!(!cg.populated());
    }

    #[test]
    fn placement_serializes_kebab_case() {
        // serde_json is a dependency of the crate.
        assert_eq!(
            serde_json::to_string(&Placement::Clone3IntoCgroup).unwrap(),
            "\"clone3-into-cgroup\""
        );
        assert_eq!(
            serde_json::to_string(&Placement::PreExecWrite).unwrap(),
            "\"pre-exec-write\""
        );
        assert_eq!(Strategy::default(), Strategy::Auto);
    }
}
