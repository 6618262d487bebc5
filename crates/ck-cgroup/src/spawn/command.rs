//! [`ModuleCommand`]: the command to start inside a cgroup, a builder of its own (a
//! [`std::process::Command`] cannot be introspected fully).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::process::{Gid, Signal, Uid};

use super::clone3::Identity;
#[cfg(doc)]
use super::{CgroupNamespaceRefused, ModuleChild, cgroup_namespace_refused, cgroupns, pidns};

use crate::mutation::{self, Control};

/// One environment operation, replayed in order.
#[derive(Debug, Clone)]
pub(super) enum EnvOp {
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
    pub(super) program: OsString,
    /// `argv[0]` when it is not `program` (see [`arg0`](Self::arg0)).
    pub(super) arg0: Option<OsString>,
    pub(super) args: Vec<OsString>,
    pub(super) env_ops: Vec<EnvOp>,
    pub(super) cwd: Option<PathBuf>,
    pub(super) stdin: Option<OwnedFd>,
    pub(super) stdout: Option<OwnedFd>,
    pub(super) stderr: Option<OwnedFd>,
    pub(super) pdeathsig: Option<Signal>,
    pub(super) pid_namespace: bool,
    pub(super) trim_heap: bool,
    pub(super) cgroup_namespace: bool,
    pub(super) uid: Option<u32>,
    pub(super) gid: Option<u32>,
    pub(super) pgid: Option<i32>,
    /// The extra fds by their number in the child.
    pub(super) fds: BTreeMap<i32, OwnedFd>,
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
            arg0: None,
            args: Vec::new(),
            env_ops: Vec::new(),
            cwd: None,
            stdin: None,
            stdout: None,
            stderr: None,
            pdeathsig: None,
            pid_namespace: false,
            trim_heap: false,
            cgroup_namespace: true,
            uid: None,
            gid: None,
            pgid: None,
            fds: BTreeMap::new(),
        }
    }

    /// `argv[0]` other than the program: a caller that has found the program itself (a path
    /// with a `/`, so that the spawn looks nothing up again) keeps the name it was given.
    pub fn arg0(&mut self, a: impl AsRef<OsStr>) -> &mut Self {
        self.arg0 = Some(a.as_ref().to_owned());
        self
    }

    /// `argv[0]`: the one given to [`arg0`](Self::arg0), else the program.
    pub(super) fn argv0(&self) -> &OsStr {
        self.arg0.as_deref().unwrap_or(&self.program)
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
        if !mutation::active(Control::NoPdeathsig) {
            self.pdeathsig = Some(sig);
        }
        self
    }

    /// The program's user id: `setuid(2)` in the child once it is in the module (and in its
    /// cgroup namespace), before `execve(2)`, after [`gid`](Self::gid)'s `setgid(2)`. The
    /// supplementary groups are emptied first (`setgroups(2)`, an `EPERM` ignored: a caller
    /// without `CAP_SETGID`), as by std's `CommandExt::uid`. Raw system calls, on both paths
    /// (clone3 and the pre-exec fallback). With a [`pid_namespace`](Self::pid_namespace) the
    /// program takes it and the namespace's init keeps the caller's identity: a change of
    /// credentials would clear the init's parent-death signal, and the program cannot signal or
    /// trace an init of another uid.
    pub fn uid(&mut self, uid: u32) -> &mut Self {
        self.uid = Some(uid);
        self
    }

    /// The program's group id: `setgid(2)` in the child before [`uid`](Self::uid)'s
    /// `setuid(2)`, once it is in the module, before `execve(2)`; the supplementary groups are
    /// emptied first (`setgroups(2)`; as root, where it cannot fail with `EPERM`). With a
    /// [`pid_namespace`](Self::pid_namespace), as for [`uid`](Self::uid): the program's, not the
    /// init's.
    pub fn gid(&mut self, gid: u32) -> &mut Self {
        self.gid = Some(gid);
        self
    }

    /// The process group: `setpgid(0, pgid)` in the child before `execve(2)`, like std's
    /// `CommandExt::process_group`: 0 makes a group of its own, led by the child. With a
    /// [`pid_namespace`](Self::pid_namespace) the init makes it, and the program joins it (the
    /// group's id is [`ModuleChild::id`]); only 0 is accepted then (a group of the caller's
    /// namespace is not visible in the new one): `spawn` fails with `InvalidInput` otherwise.
    pub fn process_group(&mut self, pgid: i32) -> &mut Self {
        self.pgid = Some(pgid);
        self
    }

    /// Give the child `fd` as its descriptor number `child_fd` (3 or above: 0, 1 and 2 are
    /// [`stdin`](Self::stdin), [`stdout`](Self::stdout) and [`stderr`](Self::stderr)): `dup2(2)`
    /// in the child before `execve(2)`, which leaves the copy without `FD_CLOEXEC`; every other
    /// descriptor stays close-on-exec (`fd` itself is marked close-on-exec now). A later call
    /// for the same `child_fd` replaces the earlier one. The command owns `fd` as long as it
    /// lives, like the stdio descriptors.
    ///
    /// On the pre-exec fallback, `std`'s own error pipe may sit on `child_fd`: the `dup2` then
    /// replaces it, and a failure of the final `execve(2)` shows as an exit with status 127
    /// instead of an error of `spawn` (the program is found in the parent before, so this is a
    /// program that cannot be executed).
    pub fn fd(&mut self, child_fd: i32, fd: OwnedFd) -> &mut Self {
        let _ = rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC);
        self.fds.insert(child_fd, fd);
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
    /// `CAP_SYS_ADMIN`, or else user namespaces: without it the init is cloned
    /// with a user namespace too, the caller's uid and gid mapped to themselves
    /// ([`ModuleChild::user_namespace`]; what the program sees differently there:
    /// [`pidns`]). Where neither works `spawn` starts nothing and fails with a
    /// [`PidNamespaceRefused`](pidns::PidNamespaceRefused)
    /// ([`pid_namespace_refused`](pidns::pid_namespace_refused)). Needs
    /// `clone3(2)` too (no fallback: the pre-exec path cannot make one).
    /// [`parent_death_signal`](Self::parent_death_signal) does not apply: the
    /// program's parent is the init.
    pub fn pid_namespace(&mut self, on: bool) -> &mut Self {
        self.pid_namespace = on;
        self
    }

    /// With [`pid_namespace`](Self::pid_namespace): give the caller's free heap pages back to
    /// the kernel (`malloc_trim(3)`) right before the init is forked (off by default). The init
    /// is a copy of the caller for as long as the module runs, so a caller that stays resident
    /// only to wait for the module (the helper's `run`) keeps less so. A daemon with a large heap
    /// leaves it off: the trim walks the whole heap, on every spawn. With it, the init also gives
    /// back its copy of the caller's `brk` heap once the program is started (where the thread's
    /// control block lies on that heap, as in a static binary; the init never reads the heap
    /// again), so that the pages the caller writes while the module runs are not kept twice.
    pub fn trim_heap(&mut self, on: bool) -> &mut Self {
        self.trim_heap = on;
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

    /// Whether the program starts in a PID namespace of its own
    /// ([`pid_namespace`](Self::pid_namespace)).
    pub fn has_pid_namespace(&self) -> bool {
        self.pid_namespace
    }

    /// Whether the program starts in a cgroup namespace of its own
    /// ([`cgroup_namespace`](Self::cgroup_namespace)).
    pub fn has_cgroup_namespace(&self) -> bool {
        self.cgroup_namespace
    }

    /// The identity the child takes.
    pub(super) fn identity(&self) -> Identity {
        Identity {
            uid: self.uid.map(Uid::from_raw),
            gid: self.gid.map(Gid::from_raw),
        }
    }

    /// Refuse what the child could not do, before anything is spawned (`InvalidInput`).
    pub(super) fn check(&self) -> io::Result<()> {
        let invalid = |what: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, what));
        if self.fds.keys().any(|&t| t < 3) {
            return invalid("an extra fd's number in the child must be 3 or above");
        }
        if self.uid == Some(u32::MAX) || self.gid == Some(u32::MAX) {
            return invalid("uid and gid 4294967295 (-1) mean no change; not an id to take");
        }
        match self.pgid {
            Some(p) if p < 0 => invalid("a process group id is 0 or positive"),
            Some(p) if p != 0 && self.pid_namespace => invalid(
                "with a PID namespace the process group can only be the init's own (process_group(0))",
            ),
            _ => Ok(()),
        }
    }

    /// The child's environment after replaying all operations in order.
    pub(super) fn final_env(&self) -> BTreeMap<OsString, OsString> {
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
    pub(super) fn search_path(&self) -> Option<OsString> {
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
