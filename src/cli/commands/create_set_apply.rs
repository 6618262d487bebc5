//! The commands that give modules their limits (cgroupfs only): `create`, `set`, `apply`.

use std::process::ExitCode;

use ck_cgroup::{Error, ModuleId};

use super::{Ctx, module_limits};
use crate::cli::args::LimitArgs;
use crate::cli::backend::Cgroupfs;
use crate::cli::exit::{Fail, written};
use crate::cli::module_arg::ModuleArg;

/// `create`.
pub fn cmd_create(
    ctx: &Ctx,
    fs: Cgroupfs,
    id: &ModuleArg<ModuleId>,
    flags: &LimitArgs,
) -> Result<ExitCode, Fail> {
    let id = id.get()?;
    let want = module_limits(ctx, id, flags)?;
    let root = fs.open()?;
    let existed = root.has_module(id)?;
    let l = root.create_with_limits(id, &want, flags.best_effort)?;
    written(ctx.out.create(id, root.path(), !existed, &l));
    Ok(ExitCode::SUCCESS)
}

/// `set`: the limits of a module that exists.
pub fn cmd_set(
    ctx: &Ctx,
    fs: Cgroupfs,
    id: &ModuleArg<ModuleId>,
    flags: &LimitArgs,
) -> Result<ExitCode, Fail> {
    let id = id.get()?;
    let root = fs.open()?;
    if !root.has_module(id)? {
        return Err(
            Error::failed(format!("no module {id} under {}", root.path().display()))
                .with_hint(format!(
                    "`ck-cgroup list` shows the modules (`ck-cgroup create {id}` makes one)"
                ))
                .with_kind(ck_cgroup::ErrorKind::NoSuchModule)
                .into(),
        );
    }
    let l = root.set_limits(id, &flags.limits(), flags.best_effort)?;
    written(ctx.out.limits(&l));
    Ok(ExitCode::SUCCESS)
}

/// `apply`: the policy's limits to every module.
pub fn cmd_apply(
    ctx: &Ctx,
    fs: Cgroupfs,
    dry_run: bool,
    best_effort: bool,
) -> Result<ExitCode, Fail> {
    let policy = ctx.policy()?;
    if policy.path.is_none() {
        return Err(Error::bad_input(format!(
            "no policy: {} does not exist",
            ck_cgroup::policy::DEFAULT_PATH
        ))
        .with_hint("pass --policy PATH")
        .into());
    }
    let r = fs.open()?.apply(&policy, best_effort, dry_run)?;
    written(ctx.out.apply(&r, dry_run));
    Ok(ExitCode::SUCCESS)
}
