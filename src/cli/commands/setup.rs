//! The commands that lay out and change a service root (cgroupfs only): `init`, `create`, `set`,
//! `place`, `remove`, `apply`; and `init -- DAEMON`.

use std::process::ExitCode;

use ck_cgroup::cgroup::oomd::OomdPreference;
use ck_cgroup::{Error, ModuleId};

use super::exec::execute;
use super::{Ctx, module_limits};
use crate::cli::args::LimitArgs;
use crate::cli::backend::{Backend, Cgroupfs};
use crate::cli::exit::{Fail, not_runnable, written};
use crate::cli::program;

/// `daemon/`'s systemd-oomd preference: `--oomd-daemon`, else the policy's `oomd_daemon`, else
/// omit. A bad policy is refused (exit 2) before anything is made.
fn oomd_daemon(ctx: &Ctx, flag: Option<OomdPreference>) -> Result<OomdPreference, Fail> {
    Ok(match flag {
        Some(p) => p,
        None => ctx.policy()?.oomd_daemon.unwrap_or(OomdPreference::Omit),
    })
}

/// `init`: the layout, and `daemon/` marked for systemd-oomd.
pub fn cmd_init(ctx: &Ctx, fs: Cgroupfs, flag: Option<OomdPreference>) -> Result<ExitCode, Fail> {
    let pref = oomd_daemon(ctx, flag)?;
    let r = fs.open_unchecked()?.init_with(pref)?;
    written(ctx.out.init(&r));
    Ok(ExitCode::SUCCESS)
}

/// `init -- DAEMON`: DAEMON found before the layout is made, then executed in its place. A
/// `daemon/` that could not be marked for systemd-oomd is one line on stderr.
pub fn cmd_init_daemon(
    ctx: &Ctx,
    backend: Backend,
    cmd: &[String],
    flag: Option<OomdPreference>,
) -> Result<ExitCode, Fail> {
    let Some(first) = cmd.first() else {
        return Ok(ExitCode::from(2));
    };
    let pref = oomd_daemon(ctx, flag)?;
    let prog = match program::resolve(first) {
        Ok(path) => path,
        Err(e) => return Ok(not_runnable(e)),
    };
    if let Some(mark) = backend.enter_daemon(pref)?
        && let Some(line) = crate::cli::oomd_lines::oomd_mark_failure(&mark)
    {
        eprintln!("ck-cgroup: {line}");
    }
    Ok(execute(&prog, cmd))
}

/// `create`.
pub fn cmd_create(ctx: &Ctx, fs: Cgroupfs, id: &str, flags: &LimitArgs) -> Result<ExitCode, Fail> {
    let id = ModuleId::new(id)?;
    let want = module_limits(ctx, &id, flags)?;
    let root = fs.open()?;
    let existed = root.has_module(&id)?;
    let l = root.create_with_limits(&id, &want, flags.best_effort)?;
    written(ctx.out.create(&id, root.path(), !existed, &l));
    Ok(ExitCode::SUCCESS)
}

/// `set`: the limits of a module that exists.
pub fn cmd_set(ctx: &Ctx, fs: Cgroupfs, id: &str, flags: &LimitArgs) -> Result<ExitCode, Fail> {
    let id = ModuleId::new(id)?;
    let root = fs.open()?;
    if !root.has_module(&id)? {
        return Err(
            Error::failed(format!("no module {id} under {}", root.path().display()))
                .with_hint(format!(
                    "make it with `ck-cgroup create {id}` and the same limits"
                ))
                .with_kind(ck_cgroup::ErrorKind::NoSuchModule)
                .into(),
        );
    }
    let l = root.set_limits(&id, &flags.limits(), flags.best_effort)?;
    written(ctx.out.limits(&l));
    Ok(ExitCode::SUCCESS)
}

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
