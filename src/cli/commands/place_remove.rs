//! `place` (processes into a module) and `remove` (an empty module's directory); cgroupfs only.

use std::process::ExitCode;

use ck_cgroup::ModuleId;

use super::Ctx;
use crate::cli::backend::Cgroupfs;
use crate::cli::exit::{Fail, written};

/// `place`.
pub fn cmd_place(ctx: &Ctx, fs: Cgroupfs, id: &str, pids: &[u32]) -> Result<ExitCode, Fail> {
    let id = ModuleId::new(id)?;
    let r = fs.open()?.place(&id, pids)?;
    written(ctx.out.place(&r));
    Ok(ExitCode::SUCCESS)
}

/// `remove`.
pub fn cmd_remove(ctx: &Ctx, fs: Cgroupfs, id: &str) -> Result<ExitCode, Fail> {
    let r = fs.open()?.remove(id)?;
    written(ctx.out.remove(&r));
    Ok(ExitCode::SUCCESS)
}
