//! `list`. Output that cannot be written is its failure (exit 1; 0 on a closed pipe).

use std::process::ExitCode;

use super::Ctx;
use crate::cli::backend::Backend;
use crate::cli::exit::Fail;

/// `list`.
pub fn cmd_list(ctx: &Ctx, backend: Backend) -> Result<ExitCode, Fail> {
    let (dir, r) = backend.list()?;
    ctx.out.list(dir.as_deref(), &r)?;
    Ok(ExitCode::SUCCESS)
}
