//! What the child of the clone3 path needs, built in the parent before the clone: the child must
//! not allocate, so every string, pointer array and descriptor is ready, and the child only
//! borrows it ([`ChildCtx`]).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use libc::{c_char, c_int};

use super::ModuleCommand;
use super::cgroupns;
use super::clone3::cstring;
use super::clone3::{ChildCtx, Identity};

/// Strings and the `NULL`-terminated array of pointers into them (`argv`, `envp`). The pointers
/// stay valid while this lives: the `CString` heap buffers do not move when the `Vec` does.
struct CStrArray {
    _strings: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

impl CStrArray {
    fn new(strings: Vec<CString>) -> Self {
        let ptrs = strings
            .iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        CStrArray {
            _strings: strings,
            ptrs,
        }
    }
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

/// The lowest fd number above 2 and above every target of `cmd`'s extra fds: where the
/// descriptors the child still needs while it maps them are put.
pub(super) fn above_targets(cmd: &ModuleCommand) -> RawFd {
    cmd.fds.keys().max().map_or(3, |t| (t + 1).max(3))
}

/// Close-on-exec copies of `cmd`'s extra fds, each at or above `floor`, with their targets.
pub(super) fn fd_sources(cmd: &ModuleCommand, floor: RawFd) -> io::Result<Vec<(OwnedFd, c_int)>> {
    cmd.fds
        .iter()
        .map(|(&target, fd)| Ok((rustix::io::fcntl_dupfd_cloexec(fd, floor)?, target)))
        .collect()
}

/// What the child needs after `clone3`, built in the parent: the strings and
/// descriptors that a [`ChildCtx`] borrows, and the report pipe. Keep it alive until the child
/// has exec'd or failed.
pub(super) struct Prepared {
    argv: CStrArray,
    envp: CStrArray,
    cwd: Option<CString>,
    _moved: [Option<OwnedFd>; 3],
    stdio: [c_int; 3],
    /// The extra fds' sources, above every target; `fds` holds their numbers.
    _fd_sources: Vec<(OwnedFd, c_int)>,
    fds: Vec<(c_int, c_int)>,
    pub(super) report_rd: OwnedFd,
    pub(super) report_wr: OwnedFd,
    /// The maps for the module's cgroup namespace, when it gets one.
    cgroup_ns: Option<super::clone3::nsmaps::Maps>,
    identity: Identity,
    process_group: Option<i32>,
    pdeathsig: Option<rustix::process::Signal>,
}

impl Prepared {
    pub(super) fn new(cmd: &ModuleCommand) -> io::Result<Self> {
        let mut argv = Vec::with_capacity(cmd.args.len() + 1);
        argv.push(cstring(cmd.argv0().as_bytes())?);
        for a in &cmd.args {
            argv.push(cstring(a.as_bytes())?);
        }
        let mut envp = Vec::new();
        for (k, v) in cmd.final_env() {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(cstring(&kv)?);
        }
        let cwd = match &cmd.cwd {
            Some(d) => Some(cstring(d.as_os_str().as_bytes())?),
            None => None,
        };
        let (moved, stdio) = Self::stdio(cmd)?;
        let floor = above_targets(cmd);
        let fd_sources = fd_sources(cmd, floor)?;
        let fds = fd_sources
            .iter()
            .map(|(fd, t)| (fd.as_raw_fd(), *t))
            .collect();
        let (report_rd, report_wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        // The report pipe must survive the child's dup2 of stdio and of the extra fds.
        let report_wr = if report_wr.as_raw_fd() < floor {
            rustix::io::fcntl_dupfd_cloexec(&report_wr, floor)?
        } else {
            report_wr
        };
        let cgroup_ns = if cmd.cgroup_namespace && cgroupns::ENABLED {
            Some(super::clone3::nsmaps::Maps::new()?)
        } else {
            None
        };
        Ok(Prepared {
            argv: CStrArray::new(argv),
            envp: CStrArray::new(envp),
            cwd,
            _moved: moved,
            stdio,
            _fd_sources: fd_sources,
            fds,
            report_rd,
            report_wr,
            cgroup_ns,
            identity: cmd.identity(),
            process_group: cmd.pgid,
            pdeathsig: cmd.pdeathsig,
        })
    }

    /// The stdio sources for 0, 1, 2 (`-1`: inherit), those that sit on another stdio number
    /// moved above 2 (the copies returned first, to be kept alive).
    #[allow(clippy::type_complexity)]
    fn stdio(cmd: &ModuleCommand) -> io::Result<([Option<OwnedFd>; 3], [c_int; 3])> {
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
        Ok((moved, stdio))
    }

    /// The child's context, borrowing what this holds.
    pub(super) fn ctx<'a>(&'a self, program: &'a CStr) -> ChildCtx<'a> {
        ChildCtx {
            path: program,
            argv: self.argv.ptrs.as_ptr(),
            envp: self.envp.ptrs.as_ptr(),
            cwd: self.cwd.as_deref(),
            stdio: self.stdio,
            fds: &self.fds,
            report_fd: self.report_wr.as_raw_fd(),
            pdeathsig: self.pdeathsig,
            parent_pid: rustix::process::getpid(),
            identity: self.identity,
            pgid: self.process_group.and_then(rustix::process::Pid::from_raw),
            process_group: self.process_group.is_some(),
            cgroup_ns: self.cgroup_ns.as_ref(),
        }
    }
}
