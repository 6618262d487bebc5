//! `exec`: this process moves into the module (or its scope) and becomes CMD.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::ExitCode;

use ck_cgroup::{Error, ModuleId};

use super::{Ctx, module_limits};
use crate::cli::args::LimitArgs;
use crate::cli::backend::Backend;
use crate::cli::exit::{Fail, cmd_exit, cmd_failed, not_runnable, note};
use crate::cli::module_arg::ModuleArg;
use crate::cli::program;

/// `exec`: CMD found before the module is made (one that cannot run leaves nothing), this
/// process moved into the module, a cgroup namespace entered (unless `cgroupns` is false), CMD
/// executed.
pub fn cmd_exec(
    ctx: &Ctx,
    backend: Backend,
    id: &ModuleArg<ModuleId>,
    flags: &LimitArgs,
    cgroupns: bool,
    cmd: &[String],
) -> Result<ExitCode, Fail> {
    let id = id.get()?;
    let l = module_limits(ctx, id, flags)?;
    let prog = match cmd.first().map(|p| program::resolve(p)) {
        Some(Ok(path)) => path,
        Some(Err(e)) => return Ok(not_runnable(e)),
        None => return Ok(ExitCode::from(2)),
    };
    for s in backend.enter_with_limits(id, &l, flags.best_effort)? {
        note(format_args!("skipped {}: {}", s.file, s.reason));
    }
    contain(id, cgroupns)?;
    Ok(execute(&prog, cmd))
}

/// `exec` after the move into the module: this process enters a cgroup namespace rooted there
/// (unless `on` is false), so CMD cannot leave the module or write its limits on a cgroup2 with
/// nsdelegate. Where none can be made the library goes on without one and gives the line that
/// says so (`spawn::enter_cgroup_namespace_or_fall_back`, as `run`'s fallbacks are the
/// library's); left in a user namespace whose maps failed, nothing runs (exit 1).
fn contain(id: &ModuleId, on: bool) -> Result<(), Error> {
    if !on {
        return Ok(());
    }
    match ck_cgroup::spawn::enter_cgroup_namespace_or_fall_back() {
        Ok(None) => Ok(()),
        Ok(Some(fallback)) => {
            note(format_args!("exec {id}: {}", fallback.line("CMD")));
            Ok(())
        }
        Err(e) => Err(Error::failed(format!("exec {id}: {e}"))),
    }
}

/// `execve(2)` CMD at `path` (found by [`program::resolve`]) with `argv[0]` as given; returns only
/// when that failed (126 cannot execute, 127 not found).
pub(super) fn execute(path: &Path, cmd: &[String]) -> ExitCode {
    let Some((prog, args)) = cmd.split_first() else {
        return ExitCode::from(2);
    };
    let e = std::process::Command::new(path)
        .arg0(prog)
        .args(args)
        .exec();
    cmd_exit(cmd_failed(prog, &e))
}
