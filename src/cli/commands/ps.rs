//! `ps`: every process of each module.

use std::process::ExitCode;

use super::Ctx;
use crate::cli::args::PsSort;
use crate::cli::backend::Backend;
use crate::cli::exit::Fail;

/// `ps`: the modules' processes, as a tree or in the order of `--sort`.
pub fn cmd_ps(
    ctx: &Ctx,
    backend: Backend,
    ids: &[String],
    sort: Option<PsSort>,
) -> Result<ExitCode, Fail> {
    let mut mods = backend.processes(ids)?;
    crate::cli::ps_tree::order(&mut mods, sort);
    ctx.out.ps(&mods, sort.is_some())?;
    Ok(ExitCode::SUCCESS)
}
