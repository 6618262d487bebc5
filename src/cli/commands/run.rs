//! `run`: CMD starts inside the module (clone3, no window), by default in a PID namespace under
//! an init that dies with this helper (kill-on-close), and gets USR1 and USR2 as the helper gets
//! them. TERM, INT or HUP stop the whole module with that signal; when CMD exits, the rest of the
//! module is stopped. Then the module is removed and the helper exits as CMD did.

use std::process::ExitCode;

use ck_cgroup::signals::SignalRelay;
use ck_cgroup::spawn::{HeldInit, ModuleChild, ModuleCommand};
use ck_cgroup::stop::StopOptions;
use ck_cgroup::{DirName, Error, ModuleId, ModuleName, ModuleRef, Root};
use rustix::process::Signal;

use super::{Ctx, create_with_limits, module_limits};
use crate::cli::args::{LimitArgs, RUN_GRACE, StopArgs};
use crate::cli::backend::Cgroupfs;
use crate::cli::exit::{CmdEnd, Fail, cmd_exit, cmd_status, not_runnable, note, written};
use crate::cli::module_arg::ModuleArg;
use crate::cli::mutation::{self, Control};
use crate::cli::program;

/// The namespaces `run` asks for (each can be turned off by its flag).
#[derive(Clone, Copy)]
pub struct Namespaces {
    pub pid: bool,
    pub cgroup: bool,
}

/// `run`: the input checked and the module made (with its limits) before CMD starts.
pub fn cmd_run(
    ctx: &Ctx,
    fs: Cgroupfs,
    id: &ModuleArg<ModuleId>,
    stop: &StopArgs,
    flags: &LimitArgs,
    ns: Namespaces,
    cmd: &[String],
) -> Result<ExitCode, Fail> {
    let id = id.get()?;
    let opts = stop.options_or_grace(RUN_GRACE);
    let l = module_limits(ctx, id, flags)?;
    // CMD is found before the module is made (one that cannot run leaves nothing), once: the
    // spawn is given the path found, with a `/`, and looks nothing up again.
    let found = match cmd.first().map(|p| program::resolve(p)) {
        Some(Ok(path)) => path,
        Some(Err(e)) => return Ok(not_runnable(e)),
        None => return Ok(ExitCode::from(2)),
    };
    let root = fs.open()?;
    let existed = root.has_module(id)?;
    create_with_limits(&root, id, &l, flags.best_effort)?;
    resident(ctx, root, id, existed, &opts, ns, (&found, cmd))
}

/// CMD (`argv[0]` as given, executed at `found`) started in module `id` and waited for, the signals relayed, the module stopped and
/// removed; the exit code CMD's.
fn resident(
    ctx: &Ctx,
    root: Root,
    id: &ModuleId,
    existed: bool,
    opts: &StopOptions,
    ns: Namespaces,
    (found, cmd): (&std::path::Path, &[String]),
) -> Result<ExitCode, Fail> {
    let Some((prog, args)) = cmd.split_first() else {
        return Ok(ExitCode::from(2));
    };
    // Mutation control (`CK_MUTATION=run-term-to-cmd`): TERM, INT and HUP go to CMD alone.
    const STOP: &[Signal] = if mutation::active(Control::RunTermToCmd) {
        &[]
    } else {
        &[Signal::TERM, Signal::INT, Signal::HUP]
    };
    let relay = SignalRelay::new(&[
        Signal::TERM,
        Signal::INT,
        Signal::HUP,
        Signal::USR1,
        Signal::USR2,
    ])
    .map_err(|e| Error::failed(format!("failed to set up signal relay: {e}")))?;
    let mut command = ModuleCommand::new(found);
    command
        .arg0(prog)
        .args(args)
        .parent_death_signal(Signal::KILL)
        .pid_namespace(ns.pid)
        // The helper stays only to wait for the module: what it copies into the init stays
        // resident as long, so its free heap goes back first.
        .trim_heap(true)
        .cgroup_namespace(ns.cgroup);
    let mut child = match spawn(&root, id, &mut command, prog) {
        Ok(c) => c,
        Err(e) => {
            // Nothing of CMD runs: a module made for it now is removed again (it is empty).
            if !existed {
                let _ = root.remove(ModuleRef::ck(id));
            }
            return Err(e.into());
        }
    };
    let asked = relay
        .relay_until_exit_or(&child, STOP)
        .map_err(|e| Error::failed(format!("failed to wait for {prog}: {e}")))?;
    // The signals stay blocked until the helper exits: one that arrives during the stop must
    // neither kill the helper before it has removed the module nor replace CMD's status.
    std::mem::forget(relay);
    // CMD exited by itself: its death now (its status, and why it died from what rose on the
    // module since the spawn), before the stop kills the namespace's init (which may not have
    // reported it yet, or cannot: held in a stop by a process of the module).
    let death = match asked {
        None => Some(root.death(&mut child)?),
        Some(_) => None,
    };
    if let Some(how) = child.held_init() {
        note(format_args!(
            "run {id}: {prog} exited while the PID namespace's init was {}: its status was read from its zombie; stopping the module kills the init and what held it",
            match how {
                HeldInit::Traced { tracer: Some(t) } => format!("traced by pid {t}"),
                HeldInit::Traced { tracer: None } => "traced".to_string(),
                HeldInit::Stopped => "stopped".to_string(),
            }
        ));
    }
    let opts = StopOptions {
        signal: asked.unwrap_or(opts.signal),
        ..*opts
    };
    let mut report = root
        // Ours by its path: a directory of that name the daemon's layout holds (a decoy a
        // module made, or the daemon's own launch of the id) is not the module run made.
        .stop(ModuleRef::ck(id), &opts)
        .or_else(Error::into_stop_report)?;
    // Reported by the name it was given (`module hog: killed by systemd-oomd`, JSON `"module":
    // "hog"`), as before the stop went by its path: the daemon and operators read that name.
    report.module = ModuleName::from(DirName::from(id.clone()));
    if let Some(e) = &report.error {
        // stdout is CMD's: the JSON result is the last line on stderr, then the error.
        written(ctx.out.run(&report, death.as_ref()));
        return Err(Error::failed(format!("{id}: {e}")).into());
    }
    // The module is empty: CMD and the namespace's init are gone. Stopped on a signal, its
    // death is read now (a stop of ours: `stopped`).
    let death = match death {
        Some(d) => d,
        None => root.death(&mut child)?,
    };
    written(ctx.out.run(&report, Some(&death)));
    let status = death.status();
    let _ = child.wait_init();
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        ck_cgroup::signals::reraise(sig);
    }
    Ok(cmd_exit(cmd_status(CmdEnd::Ended(status))))
}

/// The spawn, with what the host cannot give dropped and said (the library's
/// `Root::spawn_with_fallback`: a PID namespace, then a cgroup namespace; each fallback one line).
fn spawn(
    root: &Root,
    id: &ModuleId,
    command: &mut ModuleCommand,
    prog: &str,
) -> Result<ModuleChild, Error> {
    let child = root.spawn_with_fallback(id, command)?;
    for f in child.fallbacks() {
        note(format_args!("run {id}: {}", f.line(prog)));
    }
    Ok(child)
}
