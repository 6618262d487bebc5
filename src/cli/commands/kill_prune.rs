//! `kill` and `prune`: whole trees stopped and their modules removed, on either backend.

use std::process::ExitCode;

use ck_cgroup::{Error, ModuleName};

use super::Ctx;
use crate::cli::args::StopArgs;
use crate::cli::backend::Backend;
use crate::cli::exit::{Fail, note, written};
use crate::cli::module_arg::ModuleArg;

/// `prune`'s switches.
pub struct PruneArgs {
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--kill`.
    pub kill: bool,
    /// `--if-laid-out`: a root that is not laid out is nothing to prune, not a refusal.
    pub if_laid_out: bool,
}

/// `kill`: the report printed, then exit 1 when the tree could not be stopped or removed.
pub fn cmd_kill(
    ctx: &Ctx,
    backend: Backend,
    id: &ModuleArg<ModuleName>,
    stop: &StopArgs,
) -> Result<ExitCode, Fail> {
    // A stop that did not end is an error carrying its report: printed, then failed.
    let r = backend
        .stop(id.get()?, &stop.options())
        .or_else(Error::into_stop_report)?;
    written(ctx.out.kill(&r));
    if let Some(e) = &r.error {
        return Err(Error::failed(e.clone()).into());
    }
    Ok(ExitCode::SUCCESS)
}

/// `prune`: every entry printed, then exit 1 when one could not be pruned.
pub fn cmd_prune(
    ctx: &Ctx,
    backend: Backend,
    a: PruneArgs,
    keep: &[ModuleArg<ModuleName>],
    stop: &StopArgs,
) -> Result<ExitCode, Fail> {
    let PruneArgs {
        dry_run,
        kill,
        if_laid_out,
    } = a;
    // A service's first start: ExecStartPre= runs before `init` has laid the root out.
    if if_laid_out && let Some(root) = backend.not_laid_out()? {
        note(format_args!(
            "{} is not laid out yet (neither daemon/ nor subc-modules/): nothing to prune",
            root.display()
        ));
        written(ctx.out.prune(&[], dry_run));
        return Ok(ExitCode::SUCCESS);
    }
    let keep = ModuleArg::all(keep)?;
    let r = backend.prune(dry_run, kill, &keep, &stop.options())?;
    written(ctx.out.prune(&r, dry_run));
    let failed = r.iter().filter(|e| e.error.is_some()).count();
    if failed > 0 {
        return Err(Error::failed(format!(
            "prune: {failed} module{} could not be pruned",
            if failed == 1 { "" } else { "s" }
        ))
        .into());
    }
    Ok(ExitCode::SUCCESS)
}
