//! `status`: the figures of each module as a table, JSON or Prometheus text, to stdout or
//! `--output FILE`. Output that cannot be written is its failure (exit 1; 0 on a closed pipe).

use std::path::Path;
use std::process::ExitCode;

use ck_cgroup::ModuleName;
use ck_cgroup::backend::StatusOptions;

use super::Ctx;
use crate::cli::args::{Format, SortKey};
use crate::cli::backend::Backend;
use crate::cli::exit::Fail;
use crate::cli::module_arg::ModuleArg;
use crate::cli::status::{Col, Columns, STATUS_DEFAULT, STATUS_WIDE};

/// How `status` shows its figures: the format, `--output`, `--sort`, and the table's columns.
pub struct StatusView<'a> {
    pub format: Format,
    pub output: Option<&'a Path>,
    pub sort: Option<SortKey>,
    pub wide: bool,
    pub columns: Option<&'a [Col]>,
    /// Cold memory is what was not touched for this long.
    pub cold_window: std::time::Duration,
    /// Age the modules' memory first (`--age-cold`).
    pub age_cold: bool,
}

/// `status` (`--json` is `--format json`), in the order of `--sort` when given; `--output FILE`
/// is checked before anything is read.
pub fn cmd_status(
    ctx: &Ctx,
    backend: Backend,
    ids: &[ModuleArg<ModuleName>],
    v: StatusView<'_>,
) -> Result<ExitCode, Fail> {
    if let Some(file) = v.output {
        crate::cli::output_file::check_output(file)?;
    }
    let opts = StatusOptions {
        cold_window_ms: u64::try_from(v.cold_window.as_millis()).unwrap_or(u64::MAX),
        age_cold: v.age_cold,
        gpu: crate::cli::backend::gpu_probe(),
    };
    let (mut r, aging) = backend.status(&ModuleArg::all(ids)?, &opts)?;
    if let Some(why) = aging {
        crate::cli::exit::note(format_args!("--age-cold: {why}"));
    }
    if let Some(key) = v.sort {
        crate::cli::status::sort(&mut r, key);
        // An order by a figure no module has is the order by name: said, not silent.
        if !r.is_empty()
            && r.iter()
                .all(|m| crate::cli::status::sort_figure(m, key).is_none())
        {
            crate::cli::exit::note(format_args!(
                "--sort {}: the figure is unknown for every module, so they are in name order",
                key.name()
            ));
        }
    }
    let format = if ctx.json { Format::Json } else { v.format };
    let columns = match (v.columns, v.wide) {
        (Some(c), _) => Columns::All(c),
        (None, true) => Columns::All(STATUS_WIDE),
        (None, false) => Columns::Fold(
            STATUS_DEFAULT,
            "(--wide shows every column, -o COLS picks them)",
        ),
    };
    // The parents' counters: Prometheus only (they outlive the modules the other formats list).
    let parents = match format {
        Format::Prometheus => backend.parents_status()?,
        _ => Vec::new(),
    };
    ctx.out.status(&r, &parents, format, v.output, columns)?;
    Ok(ExitCode::SUCCESS)
}
