//! `watch`: events as JSON Lines. Output that cannot be written is its failure (exit 1; 0 on a
//! closed pipe).

use std::io::{self, Write};
use std::process::ExitCode;

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::pressure::PressureTrigger;
use ck_cgroup::telemetry::watch::{WatchEvent, WatchOptions};
use ck_cgroup::{DirName, ModuleName, ModuleRef};

use super::Ctx;
use crate::cli::backend::Cgroupfs;
use crate::cli::exit::Fail;
use crate::cli::format::{Versioned, versioned};
use crate::cli::module_arg::ModuleArg;

/// `watch`: events as JSON Lines until the output cannot be written: a closed pipe (the reader
/// is done) is exit 0, any other failure (a full disk) exit 1. A trigger the kernel refuses
/// (`--pressure`) is exit 1; a module without the trigger's pressure file is a
/// `pressure_unavailable` event and one line on stderr.
pub fn cmd_watch(
    ctx: &Ctx,
    fs: Cgroupfs,
    ids: Vec<ModuleArg<ModuleName>>,
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
    {
        // Each module holds its directory's descriptor, one per trigger, and a rise of
        // user.oomd_ooms holds pidfds for its check (at most a quarter of the limit): take the
        // hard limit on descriptors (the default soft 1024 is some 300 modules with three
        // triggers). poll(2), not select(2), so high descriptor numbers are fine; a limit that
        // cannot be raised stays as it was (a directory that finds no descriptor is an
        // events_lost line).
        use rustix::process::{Resource, getrlimit, setrlimit};
        let mut lim = getrlimit(Resource::Nofile);
        if let (Some(soft), Some(hard)) = (lim.current, lim.maximum)
            && soft < hard
        {
            lim.current = Some(hard);
            let _ = setrlimit(Resource::Nofile, lim);
        }
    }
    let ids = ModuleArg::all(&ids)?;
    let opts = WatchOptions {
        ids,
        report_above: match report_above {
            Some(Limit::Value(v)) => Some(v),
            _ => policy.defaults.memory_report,
        },
        per_module: policy
            .modules
            .iter()
            .filter_map(|(id, e)| e.memory_report.map(|v| (DirName::from(id), v)))
            .collect(),
        pressure,
    };
    let mut failed = None;
    ck_cgroup::telemetry::watch::watch(&root, &opts, |e| {
        if e.event == "pressure_unavailable" {
            let module = e.module.as_ref().map(ToString::to_string);
            crate::cli::exit::note(format_args!(
                "watch: module {}: {}",
                module.as_deref().unwrap_or("?"),
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
/// `module`) and `id` (the module id, `null` where the name does not decode). An `events_lost`
/// of no one directory (`scope`) has `null` for both, and for `module` and `layout`; one of a
/// name given without its layout has that name and a `null` id.
fn watch_line(e: &WatchEvent) -> Versioned<WatchLine<'_>> {
    let id = match (e.layout, &e.module) {
        (Some(layout), Some(name)) => ModuleRef {
            layout,
            name: name.clone(),
        }
        .module_name(),
        _ => None,
    };
    versioned(WatchLine {
        name: &e.module,
        id,
        event: e,
    })
}

#[derive(serde::Serialize)]
struct WatchLine<'a> {
    name: &'a Option<DirName>,
    id: Option<DirName>,
    #[serde(flatten)]
    event: &'a WatchEvent,
}
