//! `place` (processes into a module) and `remove` (an empty module's directory); cgroupfs only.

use std::process::ExitCode;

use ck_cgroup::{ModuleId, ModuleName};

use super::Ctx;
use crate::cli::backend::Cgroupfs;
use crate::cli::exit::{Fail, written};
use crate::cli::module_arg::ModuleArg;

/// `place`.
pub fn cmd_place(
    ctx: &Ctx,
    fs: Cgroupfs,
    id: &ModuleArg<ModuleId>,
    pids: &[u32],
) -> Result<ExitCode, Fail> {
    let id = id.get()?;
    let r = fs.open()?.place(id, pids)?;
    written(ctx.out.place(&r));
    Ok(ExitCode::SUCCESS)
}

/// `remove`.
pub fn cmd_remove(ctx: &Ctx, fs: Cgroupfs, id: &ModuleArg<ModuleName>) -> Result<ExitCode, Fail> {
    let r = fs.open()?.remove(id.get()?)?;
    written(ctx.out.remove(&r));
    Ok(ExitCode::SUCCESS)
}
