//! The commands whose output is their result: `list`, `status`, `doctor`, `watch`. Output that
//! cannot be written is their failure (exit 1; 0 on a closed pipe).

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::pressure::PressureTrigger;
use ck_cgroup::telemetry::watch::{WatchEvent, WatchOptions};
use ck_cgroup::{DirName, ModuleRef};

use super::Ctx;
use crate::cli::args::{Format, SortKey};
use crate::cli::backend::{Backend, Cgroupfs};
use crate::cli::exit::Fail;
use crate::cli::format::{Versioned, versioned};
use crate::cli::status::{Col, Columns, STATUS_DEFAULT, STATUS_WIDE};

/// `list`.
pub fn cmd_list(ctx: &Ctx, backend: Backend) -> Result<ExitCode, Fail> {
    let (dir, r) = backend.list()?;
    ctx.out.list(dir.as_deref(), &r)?;
    Ok(ExitCode::SUCCESS)
}

/// How `status` shows its figures: the format, `--output`, `--sort`, and the table's columns.
pub struct StatusView<'a> {
    pub format: Format,
    pub output: Option<&'a Path>,
    pub sort: Option<SortKey>,
    pub wide: bool,
    pub columns: Option<&'a [Col]>,
}

/// `status` (`--json` is `--format json`), in the order of `--sort` when given; `--output FILE`
/// is checked before anything is read.
pub fn cmd_status(
    ctx: &Ctx,
    backend: Backend,
    ids: &[String],
    v: StatusView<'_>,
) -> Result<ExitCode, Fail> {
    if let Some(file) = v.output {
        crate::cli::prometheus::check_output(file)?;
    }
    let mut r = backend.status(ids)?;
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
    ctx.out.status(&r, format, v.output, columns)?;
    Ok(ExitCode::SUCCESS)
}

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

/// `watch`: events as JSON Lines until the output cannot be written: a closed pipe (the reader
/// is done) is exit 0, any other failure (a full disk) exit 1. A trigger the kernel refuses
/// (`--pressure`) is exit 1; a module without the trigger's pressure file is a
/// `pressure_unavailable` event and one line on stderr.
pub fn cmd_watch(
    ctx: &Ctx,
    fs: Cgroupfs,
    ids: Vec<String>,
    report_above: Option<Limit>,
    pressure: Vec<PressureTrigger>,
) -> Result<ExitCode, Fail> {
    let policy = ctx.policy()?;
    let root = fs.open()?;
    // An operator at a terminal is told what the silence means; a pipe or a log gets only the
    // events (and the errors).
    if rustix::termios::isatty(io::stderr()) {
        crate::cli::exit::note(format_args!(
            "watch: following the modules under {}: one JSON line on stdout per event, none until one happens; Ctrl-C ends",
            root.path().display()
        ));
    }
    if !pressure.is_empty() {
        // Each module holds a descriptor per trigger: take the hard limit on descriptors (the
        // default soft 1024 is some 300 modules with three triggers). poll(2), not select(2), so
        // high descriptor numbers are fine; a limit that cannot be raised stays as it was.
        use rustix::process::{Resource, getrlimit, setrlimit};
        let mut lim = getrlimit(Resource::Nofile);
        if let (Some(soft), Some(hard)) = (lim.current, lim.maximum)
            && soft < hard
        {
            lim.current = Some(hard);
            let _ = setrlimit(Resource::Nofile, lim);
        }
    }
    let opts = WatchOptions {
        ids,
        report_above: match report_above {
            Some(Limit::Value(v)) => Some(v),
            _ => policy.defaults.memory_report,
        },
        per_module: policy
            .modules
            .iter()
            .filter_map(|(id, e)| e.memory_report.map(|v| (id.to_string(), v)))
            .collect(),
        pressure,
    };
    let mut failed = None;
    ck_cgroup::telemetry::watch::watch(&root, &opts, |e| {
        if e.event == "pressure_unavailable" {
            crate::cli::exit::note(format_args!(
                "watch: module {}: {}",
                e.module,
                e.error.as_deref().unwrap_or("no pressure file")
            ));
        }
        let mut line = serde_json::to_vec(&watch_line(e)).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut o = io::stdout().lock();
        let r = o.write_all(&line).and_then(|()| o.flush());
        if let Err(e) = &r {
            failed = Some(io::Error::new(e.kind(), e.to_string()));
        }
        r
    })?;
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// One `watch` line as the CLI prints it: the library's event with `version`, and the module
/// named as `list` and `status` name it: `name` (its directory; the same as the event's legacy
/// `module`) and `id` (the module id, `null` where the name does not decode).
fn watch_line(e: &WatchEvent) -> Versioned<WatchLine<'_>> {
    let id = DirName::new(&e.module).ok().and_then(|name| {
        ModuleRef {
            layout: e.layout,
            name,
        }
        .module_name()
    });
    versioned(WatchLine {
        name: &e.module,
        id,
        event: e,
    })
}

#[derive(serde::Serialize)]
struct WatchLine<'a> {
    name: &'a str,
    id: Option<String>,
    #[serde(flatten)]
    event: &'a WatchEvent,
}
