//! `freeze` and `thaw`: a module paused and resumed (cgroupfs only).

use std::process::ExitCode;
use std::time::Duration;

use super::Ctx;
use crate::cli::backend::Cgroupfs;
use crate::cli::exit::{Fail, written};
use crate::cli::module_arg::ModuleArg;
use ck_cgroup::ModuleName;

/// `freeze` (`freeze` true) or `thaw`: the module's cgroup.freeze written and the kernel's
/// `frozen` waited for; exit 1 when it did not come within `timeout`.
pub fn cmd_freeze(
    ctx: &Ctx,
    fs: Cgroupfs,
    id: &ModuleArg<ModuleName>,
    freeze: bool,
    timeout: Duration,
) -> Result<ExitCode, Fail> {
    let root = fs.open()?;
    let r = if freeze {
        root.freeze(id.get()?, timeout)?
    } else {
        root.thaw(id.get()?, timeout)?
    };
    written(ctx.out.freeze(&r));
    Ok(ExitCode::SUCCESS)
}
