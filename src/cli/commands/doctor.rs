//! `doctor`. Output that cannot be written is its failure (exit 1; 0 on a closed pipe).

use std::process::ExitCode;

use super::Ctx;
use crate::cli::backend::Backend;
use crate::cli::exit::Fail;

/// `doctor`: exit 1 when the host or the service is not ready.
pub fn cmd_doctor(ctx: &Ctx, backend: Backend, unit: Option<&str>) -> Result<ExitCode, Fail> {
    let r = ck_cgroup::doctor::doctor_for(ctx.root.as_deref(), unit, backend.scopes_bus());
    ctx.out.doctor(&r)?;
    Ok(if r.ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
