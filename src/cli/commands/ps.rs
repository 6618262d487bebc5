//! `ps`: every process of each module.

use std::process::ExitCode;

use super::Ctx;
use crate::cli::args::PsSort;
use crate::cli::backend::Backend;
use crate::cli::exit::Fail;
use crate::cli::module_arg::ModuleArg;
use ck_cgroup::ModuleName;

/// `ps`: the modules' processes, as a tree or in the order of `--sort`.
pub fn cmd_ps(
    ctx: &Ctx,
    backend: Backend,
    ids: &[ModuleArg<ModuleName>],
    sort: Option<PsSort>,
) -> Result<ExitCode, Fail> {
    let mut mods = backend.processes(&ModuleArg::all(ids)?, &crate::cli::backend::gpu_probe())?;
    crate::cli::ps_tree::order(&mut mods, sort);
    ctx.out.ps(&mods, sort.is_some())?;
    // A module whose processes could not all be listed: said, and exit 1 (the table, or the
    // JSON with each module's `error`, shows what was found).
    let failed: Vec<String> = mods
        .iter()
        .filter_map(|m| m.error.as_ref().map(|e| format!("{}: {e}", m.name)))
        .collect();
    if !failed.is_empty() {
        return Err(ck_cgroup::Error::failed(format!(
            "not every process could be listed: {}",
            failed.join("; ")
        ))
        .into());
    }
    Ok(ExitCode::SUCCESS)
}
