//! `init` and `init -- DAEMON`: the service root's layout, and `daemon/` marked for systemd-oomd.

use std::process::ExitCode;

use ck_cgroup::cgroup::oomd::OomdPreference;

use super::Ctx;
use super::exec::execute;
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
