//! `sandbox`: CMD with CK_CGROUP_ROOT set to a fresh isolated root, removed afterwards; and
//! `sandbox --prune`, which removes the leftovers of helpers that died.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ck_cgroup::sandbox::sweep;
use ck_cgroup::signals::SignalRelay;
use ck_cgroup::{Error, Sandbox, discover};
use rustix::process::Signal;

use super::Ctx;
use crate::cli::args::{BackendArg, ManagerArg};
use crate::cli::backend::{ENV_BACKEND, scope_sandbox};
use crate::cli::exit::{
    CmdEnd, Fail, cmd_exit, cmd_failed, cmd_status, not_runnable, note, written,
};
use crate::cli::mutation::{self, Control};
use crate::cli::program;

/// `sandbox --prune`: the leftover directory sandboxes under the parent removed.
pub fn cmd_sandbox_prune(
    ctx: &Ctx,
    backend: Option<BackendArg>,
    parent: Option<PathBuf>,
) -> Result<ExitCode, Fail> {
    if backend == Some(BackendArg::Systemd) {
        return Err(Error::bad_input(
            "sandbox --prune removes directory sandboxes under a parent; a scope sandbox is not swept by it",
        )
        .with_hint("drop --backend systemd (pass --parent PATH, or nothing for the cgroup2 mount's root)")
        .into());
    }
    let parent = match parent {
        Some(p) => p,
        None => Sandbox::default_parent()?,
    };
    ck_cgroup::cgroup::CgroupDir::open(&parent).map_err(|e| {
        e.with_hint("pass --parent PATH, the cgroup2 directory the sandboxes were made under")
    })?;
    let r = sweep(&parent)?;
    written(ctx.out.sandbox_prune(&r));
    if !r.failed.is_empty() {
        return Err(Error::failed(format!(
            "sandbox --prune: {} sandbox{} could not be removed",
            r.failed.len(),
            if r.failed.len() == 1 { "" } else { "es" }
        ))
        .into());
    }
    Ok(ExitCode::SUCCESS)
}

/// `sandbox -- CMD`: the input checked, CMD found, then the sandbox made, CMD run in it, and the
/// sandbox removed (or kept); the exit code CMD's.
pub fn cmd_sandbox(
    ctx: &Ctx,
    backend: Option<BackendArg>,
    manager: Option<ManagerArg>,
    parent: Option<PathBuf>,
    keep: bool,
    cmd: &[String],
) -> Result<ExitCode, Fail> {
    let scope = match (backend, &parent) {
        (Some(BackendArg::Systemd), Some(_)) => {
            return Err(Error::bad_input(
                "--parent and --backend systemd exclude each other: a scope sandbox's parent is systemd's choice",
            )
            .with_hint("drop --parent, or pass --backend cgroupfs")
            .into());
        }
        (Some(BackendArg::Systemd), None) => true,
        (Some(BackendArg::Cgroupfs), _) | (None, Some(_)) => false,
        (None, None) => Path::new("/run/systemd/system").exists(),
    };
    if scope && keep {
        return Err(Error::bad_input(
            "--keep cannot keep a sandbox scope: systemd removes the scope when the helper exits",
        )
        .with_hint("pass --backend cgroupfs (or --parent PATH) with --keep")
        .into());
    }
    // CMD is found before the sandbox is made.
    if let Some(Err(e)) = cmd.first().map(|p| program::resolve(p)) {
        return Ok(not_runnable(e));
    }
    let sb = match scope {
        true => scope_sandbox(manager)?,
        false => directory_sandbox(parent)?,
    };
    let Some((prog, args)) = cmd.split_first() else {
        return Ok(ExitCode::from(2));
    };
    let status = match run_in(&sb, prog, args)? {
        Ok(s) => cmd_status(CmdEnd::Ended(s)),
        Err(e) => cmd_failed(prog, &e),
    };
    let path = sb.path().to_path_buf();
    if keep {
        let kept = sb.keep();
        written(ctx.out.sandbox(&path, true, status));
        kept?;
    } else {
        sb.destroy()?;
        written(ctx.out.sandbox(&path, false, status));
    }
    Ok(cmd_exit(status))
}

/// A directory sandbox under `parent` (default: the cgroup2 mount's root). The leftovers of
/// sandboxes whose helper died (SIGKILL) under the same parent go first; a failure there is
/// noted and does not stop this sandbox.
fn directory_sandbox(parent: Option<PathBuf>) -> Result<Sandbox, Error> {
    let p = match parent {
        Some(p) => p,
        None => Sandbox::default_parent()?,
    };
    // A parent that cannot be one is the refusal, once (not also a note of the sweep's).
    ck_cgroup::cgroup::CgroupDir::open(&p).map_err(|e| {
        e.with_hint("pass --parent PATH, a cgroup2 directory you may make cgroups in")
    })?;
    match sweep(&p) {
        Ok(r) => {
            for s in &r.removed {
                let n = s
                    .killed
                    .map_or("an unknown number of".to_string(), |n| n.to_string());
                let procs = if s.killed == Some(1) {
                    "process"
                } else {
                    "processes"
                };
                note(format_args!(
                    "removed the leftover sandbox {} (its helper is gone; {n} {procs} killed)",
                    s.sandbox.display()
                ));
            }
            for f in &r.failed {
                note(format_args!(
                    "could not remove the leftover sandbox {}: {}",
                    f.sandbox.display(),
                    f.error
                ));
            }
        }
        Err(e) => note(format_args!("could not look for leftover sandboxes: {e}")),
    }
    Sandbox::create(&p)
}

/// CMD run in sandbox `sb` and waited for: its status, or why it could not be started.
fn run_in(
    sb: &Sandbox,
    prog: &str,
    args: &[String],
) -> Result<io::Result<std::process::ExitStatus>, Error> {
    // TERM, INT and HUP must not kill the helper before it has removed the sandbox: they are
    // blocked here and passed on to CMD (a terminal's Ctrl-C reaches CMD directly too), and the
    // sandbox is cleaned up when CMD exits. CMD gets an empty signal mask (std keeps the
    // parent's, which would leave TERM blocked in every process CMD starts).
    let relay = SignalRelay::new(&[Signal::TERM, Signal::INT, Signal::HUP])
        .map_err(|e| Error::failed(format!("failed to set up signal relay: {e}")))?;
    let mut command = std::process::Command::new(prog);
    // CMD's modules go to the sandbox's root, whatever backend the caller's environment names.
    command
        .args(args)
        .env(discover::ENV_ROOT, sb.path())
        .env_remove("CK_CGROUP_UNIT")
        .env_remove(ENV_BACKEND);
    ck_cgroup::spawn::unblock_signals_before_exec(&mut command);
    // CMD runs in the sandbox's cmd/ leaf, which the teardown empties (its orphans too), and so
    // does a `sandbox --prune` (or the next `sandbox` under the same parent) after this helper
    // died by SIGKILL. It keeps the host's pids (no PID namespace: CMD's tests read pids from
    // /proc and cgroup.procs and pass them to `place`), and dies with this helper
    // (PR_SET_PDEATHSIG SIGKILL); what it left is taken by that sweep.
    // Mutation control (`CK_MUTATION=sandbox-cmd-outside`): CMD runs where the helper runs.
    if let Some(procs) = sb.cmd_procs()?
        && !mutation::active(Control::SandboxCmdOutside)
    {
        ck_cgroup::spawn::place_before_exec(&mut command, procs);
    }
    // Mutation control (`CK_MUTATION=no-pdeathsig`): no parent-death signal.
    if !mutation::active(Control::NoPdeathsig) {
        ck_cgroup::spawn::pdeathsig_before_exec(&mut command, Signal::KILL);
    }
    let status = command.spawn().and_then(|mut child| {
        let pid = rustix::process::Pid::from_raw(child.id() as i32)
            .ok_or_else(|| io::Error::other("child without a pid"))?;
        // Our own unreaped child: its pid cannot be reused before we wait for it.
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
        relay.relay_until_readable(std::os::unix::io::AsFd::as_fd(&pidfd))?;
        child.wait()
    });
    drop(relay);
    Ok(status)
}
