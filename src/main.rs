//! `ck-cgroup`: a thin binary over the `ck_cgroup` library. Arguments are checked, one library
//! call runs, one renderer prints the result, and errors map to exit codes in one place
//! ([`exit_code`]).
//!
//! Nothing here panics on a stdout or stderr that cannot be written (closed, full, a closed
//! pipe): a line on stderr that cannot be written is lost ([`note`]), and a result that cannot
//! be written to stdout changes the exit code only for the commands whose output is the result
//! (`list`, `status`, `doctor`, `watch`, `generate`); for the others the code stays the
//! operation's ([`written`]).

mod cli;

use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use ck_cgroup::policy::{Policy, merge};
use ck_cgroup::{Error, ModuleId, Root, Sandbox, discover};
use cli::args::{Cli, Command};
use cli::output::Output;
use cli::program;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let out = Output::new(cli.json);
    match run(cli, &out) {
        Ok(code) => code,
        Err(Fail::Ck(e)) => {
            report(&e);
            ExitCode::from(exit_code(&e))
        }
        Err(Fail::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Fail::Io(e)) => {
            note(format_args!("failed to write output: {e}"));
            ExitCode::from(1)
        }
    }
}

/// One line on stderr, `ck-cgroup: <line>`, in one write. A stderr that cannot be written
/// (closed, full) loses the line and changes nothing else: `eprintln!` would panic (exit 101).
fn note(line: impl std::fmt::Display) {
    let _ = io::stderr()
        .lock()
        .write_all(format!("ck-cgroup: {line}\n").as_bytes());
}

/// The result of a command that changed something, as the renderer wrote it: when stdout cannot
/// take it (full; a closed pipe is not an error) that is said on stderr, and the exit code stays
/// the operation's, so a caller is not told that a kill that happened failed.
fn written(r: io::Result<()>) {
    if let Err(e) = r
        && e.kind() != io::ErrorKind::BrokenPipe
    {
        note(format_args!(
            "the operation is done but its result could not be written to stdout: {e}"
        ));
    }
}

/// The one place errors become exit codes: 1 failed, 2 bad input or unsupported. Never 255.
fn exit_code(e: &Error) -> u8 {
    e.exit_code() as u8
}

fn report(e: &Error) {
    let mut text = format!("ck-cgroup: {e}\n");
    if let Some(h) = e.hint() {
        text += &format!("ck-cgroup: hint: {h}\n");
    }
    // One write; a stderr that cannot be written loses it, and the exit code is still e's.
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

enum Fail {
    Ck(Error),
    Io(io::Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Ck(e)
    }
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Fail {
        Fail::Io(e)
    }
}

fn open_root(explicit: Option<PathBuf>) -> Result<Root, Error> {
    let path = match explicit {
        Some(p) => p,
        None => discover::discover()?,
    };
    Root::open(&path)
}

/// `CK_CGROUP_BACKEND=systemd` in the environment (a unit with `Delegate=no`) and a command that
/// has no systemd backend: refused, rather than writing into a service root that systemd owns.
fn no_systemd_backend(command: &Command) -> Result<(), Error> {
    let name = match command {
        Command::Init { cmd } if cmd.is_empty() => "init",
        Command::Create { .. } => "create",
        Command::Set { .. } => "set",
        Command::Place { .. } => "place",
        Command::Remove { .. } => "remove",
        Command::Run { .. } => "run",
        Command::Apply { .. } => "apply",
        Command::Watch { .. } => "watch",
        _ => return Ok(()),
    };
    if std::env::var_os(ck_cgroup::backend::systemd::ENV_BACKEND).is_some_and(|v| v == "systemd") {
        return Err(Error::bad_input(format!(
            "{name} has no systemd backend, and CK_CGROUP_BACKEND=systemd says this service's cgroup is not delegated"
        ))
        .with_hint(
            "modules are scopes here: use exec, kill, prune, list, status or doctor (they take the backend from the variable); or unset CK_CGROUP_BACKEND",
        ));
    }
    Ok(())
}

fn run(cli: Cli, out: &Output) -> Result<ExitCode, Fail> {
    no_systemd_backend(&cli.command)?;
    match cli.command {
        Command::Init { cmd } => {
            // CMD is found before the layout is made.
            let prog = match cmd.first() {
                Some(p) => Some(match program::resolve(p) {
                    Ok(path) => path,
                    Err(e) => return Ok(not_runnable(e)),
                }),
                None => None,
            };
            // With the systemd backend (Delegate=no) the modules are scopes: the unit's
            // `init -- DAEMON` makes no layout in systemd's cgroup and only executes the daemon.
            if let Some(prog) = &prog
                && std::env::var_os(ck_cgroup::backend::systemd::ENV_BACKEND)
                    .is_some_and(|v| v == "systemd")
            {
                return Ok(exec(prog, &cmd));
            }
            let root = open_root(cli.root)?;
            let r = root.init()?;
            if let Some(prog) = prog {
                // From the root, init has moved this process already; from elsewhere, now.
                root.enter_daemon_leaf()?;
                return Ok(exec(&prog, &cmd));
            }
            written(out.init(&r));
        }
        Command::Create { id, limits } => {
            let id = ModuleId::new(&id)?;
            let policy = Policy::load(cli.policy.as_deref())?;
            let want = merge(&limits.limits(), &policy.for_module(&id).limits);
            let root = open_root(cli.root)?;
            let existed = root.find(id.as_str())?.is_some();
            let l = root.create_with_limits(&id, &want, limits.best_effort)?;
            written(out.create(&id, root.path(), !existed, &l));
        }
        Command::Set { id, limits } => {
            let id = ModuleId::new(&id)?;
            let root = open_root(cli.root)?;
            if root.find(id.as_str())?.is_none() {
                return Err(Error::failed(format!(
                    "no module {id} under {}",
                    root.path().display()
                ))
                .with_hint(format!(
                    "make it with `ck-cgroup create {id}` and the same limits"
                ))
                .into());
            }
            let l = root.set_limits(&id, &limits.limits(), limits.best_effort)?;
            written(out.limits(&l));
        }
        Command::Place { id, pids } => {
            let id = ModuleId::new(&id)?;
            let r = open_root(cli.root)?.place(&id, &pids)?;
            written(out.place(&r));
        }
        Command::Exec {
            id,
            limits,
            backend,
            no_cgroup_namespace,
            cmd,
        } => {
            let id = ModuleId::new(&id)?;
            let policy = Policy::load(cli.policy.as_deref())?;
            let l = merge(&limits.limits(), &policy.for_module(&id).limits);
            // CMD is found before the module is made: one that cannot run leaves nothing.
            let prog = match cmd.first().map(|p| program::resolve(p)) {
                Some(Ok(path)) => path,
                Some(Err(e)) => return Ok(not_runnable(e)),
                None => return Ok(ExitCode::from(2)),
            };
            if let Some(bus) = backend.systemd() {
                // systemd makes the scope, applies the limits and moves this process; D-Bus is
                // paid for only on this backend.
                ck_cgroup::backend::systemd::enter(
                    bus,
                    &id,
                    &l,
                    ck_cgroup::backend::systemd::START_TIMEOUT,
                )?;
                contain(&id, !no_cgroup_namespace)?;
                return Ok(exec(&prog, &cmd));
            }
            let root = open_root(cli.root)?;
            // The spawn path: without limits, one write to cgroup.procs (and a mkdir the first
            // time); with limits, checked before anything is made.
            create_with_limits(&root, &id, &l, limits.best_effort)?;
            root.enter(&id)?;
            contain(&id, !no_cgroup_namespace)?;
            return Ok(exec(&prog, &cmd));
        }
        Command::Kill { id, stop, backend } => {
            let r = match backend.systemd() {
                Some(bus) => ck_cgroup::backend::systemd::stop(bus, &id, &stop.options())?,
                None => open_root(cli.root)?.stop(&id, &stop.options())?,
            };
            written(out.kill(&r));
            if let Some(e) = &r.error {
                return Err(Error::failed(e.clone()).into());
            }
        }
        Command::Prune {
            dry_run,
            kill,
            keep,
            stop,
            backend,
        } => {
            let r = match backend.systemd() {
                Some(bus) => {
                    ck_cgroup::backend::systemd::prune(bus, dry_run, kill, &keep, &stop.options())?
                }
                None => open_root(cli.root)?.prune(dry_run, kill, &keep, &stop.options())?,
            };
            written(out.prune(&r, dry_run));
            let failed = r.iter().filter(|e| e.error.is_some()).count();
            if failed > 0 {
                return Err(Error::failed(format!(
                    "prune: {failed} module{} could not be pruned",
                    if failed == 1 { "" } else { "s" }
                ))
                .into());
            }
        }
        Command::Remove { id } => {
            let r = open_root(cli.root)?.remove(&id)?;
            written(out.remove(&r));
        }
        Command::Status {
            ids,
            format,
            backend,
        } => {
            let r = match backend.systemd() {
                Some(bus) => ck_cgroup::backend::systemd::status(bus, &ids)?,
                None => open_root(cli.root)?.status(&ids)?,
            };
            let format = if cli.json {
                cli::args::Format::Json
            } else {
                format
            };
            out.status(&r, format)?;
        }
        Command::Doctor { unit, backend } => {
            let r = ck_cgroup::doctor::doctor_for(
                cli.root.as_deref(),
                unit.as_deref(),
                backend.systemd(),
            );
            out.doctor(&r)?;
            if !r.ready {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Apply {
            dry_run,
            best_effort,
        } => {
            let policy = Policy::load(cli.policy.as_deref())?;
            if policy.path.is_none() {
                return Err(Error::bad_input(format!(
                    "no policy: {} does not exist",
                    ck_cgroup::policy::DEFAULT_PATH
                ))
                .with_hint("pass --policy PATH")
                .into());
            }
            let r = open_root(cli.root)?.apply(&policy, best_effort, dry_run)?;
            written(out.apply(&r, dry_run));
        }
        Command::Watch { ids, report_above } => {
            let policy = Policy::load(cli.policy.as_deref())?;
            let root = open_root(cli.root)?;
            let opts = ck_cgroup::telemetry::watch::WatchOptions {
                ids,
                report_above: match report_above {
                    Some(ck_cgroup::cgroup::parse::Limit::Value(v)) => Some(v),
                    _ => policy.defaults.memory_report,
                },
                per_module: policy
                    .modules
                    .iter()
                    .filter_map(|(id, e)| e.memory_report.map(|v| (id.to_string(), v)))
                    .collect(),
            };
            // watch ends when its output cannot be written: a closed pipe (the reader is done)
            // is exit 0, any other failure (a full disk) exit 1.
            let mut failed = None;
            ck_cgroup::telemetry::watch::watch(&root, &opts, |e| {
                let mut line = serde_json::to_vec(e).map_err(io::Error::other)?;
                line.push(b'\n');
                let mut o = io::stdout().lock();
                let r = o.write_all(&line).and_then(|()| o.flush());
                if let Err(e) = &r {
                    failed = Some(io::Error::new(e.kind(), e.to_string()));
                }
                r
            })?;
            if let Some(e) = failed {
                return Err(e.into());
            }
        }
        Command::List { backend } => match backend.systemd() {
            Some(bus) => {
                let (dir, r) = ck_cgroup::backend::systemd::list(bus)?;
                out.list_scopes(dir.as_deref(), &r)?;
            }
            None => {
                let root = open_root(cli.root)?;
                let r = root.list()?;
                out.list(root.path(), &r)?;
            }
        },
        Command::Run {
            id,
            stop,
            limits,
            no_pid_namespace,
            no_cgroup_namespace,
            cmd,
        } => {
            let id = ModuleId::new(&id)?;
            let opts = stop.options_or_grace(cli::args::RUN_GRACE);
            let policy = Policy::load(cli.policy.as_deref())?;
            let l = merge(&limits.limits(), &policy.for_module(&id).limits);
            // CMD is found before the module is made: one that cannot run leaves nothing.
            if let Some(Err(e)) = cmd.first().map(|p| program::resolve(p)) {
                return Ok(not_runnable(e));
            }
            let root = open_root(cli.root)?;
            let existed = root.find(id.as_str())?.is_some();
            create_with_limits(&root, &id, &l, limits.best_effort)?;
            let ns = Namespaces {
                pid: !no_pid_namespace,
                cgroup: !no_cgroup_namespace,
            };
            return run_resident(root, &id, existed, &opts, ns, &cmd, out);
        }
        Command::Sandbox {
            parent,
            backend,
            manager,
            keep,
            prune,
            cmd,
        } => {
            use cli::args::Backend;
            if prune {
                if backend == Some(Backend::Systemd) {
                    return Err(Error::bad_input(
                        "sandbox --prune removes directory sandboxes under a parent; a scope sandbox is not swept by it",
                    )
                    .with_hint("drop --backend systemd (pass --parent PATH, or nothing for the cgroup2 mount's root)")
                    .into());
                }
                let parent = match parent {
                    Some(p) => p,
                    None => Sandbox::default_parent()?,
                };
                let r = ck_cgroup::sandbox::sweep(&parent)?;
                written(out.sandbox_prune(&r));
                if !r.failed.is_empty() {
                    return Err(Error::failed(format!(
                        "sandbox --prune: {} sandbox{} could not be removed",
                        r.failed.len(),
                        if r.failed.len() == 1 { "" } else { "es" }
                    ))
                    .into());
                }
                return Ok(ExitCode::SUCCESS);
            }
            let scope = match (backend, &parent) {
                (Some(Backend::Systemd), Some(_)) => {
                    return Err(Error::bad_input(
                        "--parent and --backend systemd exclude each other: a scope sandbox's parent is systemd's choice",
                    )
                    .with_hint("drop --parent, or pass --backend cgroupfs")
                    .into());
                }
                (Some(Backend::Systemd), None) => true,
                (Some(Backend::Cgroupfs), _) | (None, Some(_)) => false,
                (None, None) => std::path::Path::new("/run/systemd/system").exists(),
            };
            if scope && keep {
                return Err(Error::bad_input(
                    "--keep cannot keep a sandbox scope: systemd removes the scope when the helper exits",
                )
                .with_hint("pass --backend cgroupfs (or --parent PATH) with --keep")
                .into());
            }
            // CMD is found before the sandbox is made.
            if let Some(Err(e)) = cmd.first().map(|p| program::resolve(p)) {
                return Ok(not_runnable(e));
            }
            let bus = scope.then(|| cli::args::bus(manager));
            return sandbox(parent, bus, keep, &cmd, out);
        }
        Command::Generate { kind, out_dir } => cli::generate::generate(kind, out_dir.as_deref())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `exec` and `run` with limits (flags and policy): the module made with them, checked before
/// anything is made; without limits nothing here (the spawn makes the module).
fn create_with_limits(
    root: &Root,
    id: &ModuleId,
    l: &ck_cgroup::limits::Limits,
    best_effort: bool,
) -> Result<(), Error> {
    if !l.is_empty() {
        let r = root.create_with_limits(id, l, best_effort)?;
        for s in &r.skipped {
            note(format_args!("skipped {}: {}", s.file, s.reason));
        }
    }
    Ok(())
}

/// `exec` after the move into the module: this process enters a cgroup namespace rooted there
/// (unless `on` is false), so CMD cannot leave the module or write its limits on a cgroup2 with
/// nsdelegate. Where none can be made, one line says so and CMD runs without (as `run` does
/// without a PID namespace); left in a user namespace whose maps failed, nothing runs (exit 1).
fn contain(id: &ModuleId, on: bool) -> Result<(), Error> {
    if !on {
        return Ok(());
    }
    match ck_cgroup::spawn::enter_cgroup_namespace() {
        Ok(_) => Ok(()),
        Err((e, false)) => {
            note(format_args!(
                "exec {id}: no cgroup namespace here ({e}): CMD runs without one and can leave its module or write its limits where its uid may write"
            ));
            Ok(())
        }
        Err((e, true)) => Err(Error::failed(format!("exec {id}: {e}"))),
    }
}

/// CMD could not run: its message on stderr, and 126 or 127.
fn not_runnable(e: program::NotRunnable) -> ExitCode {
    note(&e.message);
    ExitCode::from(e.code)
}

/// `execve(2)` CMD at `path` (found by [`program::resolve`]) with `argv[0]` as given; returns only
/// when that failed (126 cannot execute, 127 not found).
fn exec(path: &std::path::Path, cmd: &[String]) -> ExitCode {
    let Some((prog, args)) = cmd.split_first() else {
        return ExitCode::from(2);
    };
    let e = std::process::Command::new(path)
        .arg0(prog)
        .args(args)
        .exec();
    let code = if e.kind() == io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    note(format_args!("failed to execute {prog:?}: {e}"));
    ExitCode::from(code)
}

/// `run`: CMD starts inside the module (clone3, no window), by default in a PID namespace under
/// an init that dies with this helper (kill-on-close), and gets USR1 and USR2 as the helper gets
/// them. TERM, INT or HUP stop the whole module with that signal; when CMD exits, the rest of the
/// module is stopped. Then the module is removed and the helper exits as CMD did.
/// The namespaces `run` asks for (each can be turned off by its flag).
#[derive(Clone, Copy)]
struct Namespaces {
    pid: bool,
    cgroup: bool,
}

fn run_resident(
    root: Root,
    id: &ModuleId,
    existed: bool,
    opts: &ck_cgroup::stop::StopOptions,
    ns: Namespaces,
    cmd: &[String],
    out: &Output,
) -> Result<ExitCode, Fail> {
    use ck_cgroup::spawn::{ModuleCommand, SignalRelay};
    use rustix::process::Signal;
    let Some((prog, args)) = cmd.split_first() else {
        return Ok(ExitCode::from(2));
    };
    // Mutation control (`CK_MUTATION=run-term-to-cmd`): TERM, INT and HUP go to CMD alone.
    const STOP: &[Signal] = if cfg!(ck_mutation = "run-term-to-cmd") {
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
    let mut command = ModuleCommand::new(prog);
    command
        .args(args)
        .parent_death_signal(Signal::KILL)
        .pid_namespace(ns.pid)
        .cgroup_namespace(ns.cgroup);
    let spawned = match root.spawn(id, &command) {
        Err(e)
            if ns.pid
                && e.errno() == Some(rustix::io::Errno::PERM)
                && !e.is_no_cgroup_namespace() =>
        {
            note(format_args!(
                "run {id}: no PID namespace here (clone3 CLONE_NEWPID: EPERM, it needs CAP_SYS_ADMIN): {prog} runs without one, and a SIGKILL of this helper kills {prog} alone, not the rest of the module"
            ));
            command.pid_namespace(false);
            root.spawn(id, &command)
        }
        r => r,
    };
    let spawned = match spawned {
        Err(e) if e.is_no_cgroup_namespace() => {
            note(format_args!(
                "run {id}: no cgroup namespace here ({}): {prog} runs without one and can leave its module or write its limits where its uid may write",
                e.errno()
                    .map_or_else(|| e.message().to_string(), ck_cgroup::error::errno_text)
            ));
            command.cgroup_namespace(false);
            root.spawn(id, &command)
        }
        r => r,
    };
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            // Nothing of CMD runs: a module made for it now is removed again (it is empty).
            if !existed {
                let _ = root.remove(id.as_str());
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
    let opts = ck_cgroup::stop::StopOptions {
        signal: asked.unwrap_or(opts.signal),
        ..*opts
    };
    let report = root.stop(id.as_str(), &opts)?;
    // stdout is CMD's: the JSON result is the last line on stderr, written when the module is
    // empty (see `Output::result_line`).
    written(out.run(&report));
    if let Some(e) = &report.error {
        return Err(Error::failed(format!("{id}: {e}")).into());
    }
    // The module is empty: CMD and the namespace's init are gone.
    let status = child
        .wait()
        .map_err(|e| Error::failed(format!("failed to wait for {prog}: {e}")))?;
    let _ = child.wait_init();
    if let Some(sig) = status.signal() {
        ck_cgroup::spawn::reraise(sig);
        return Ok(ExitCode::from((128 + sig).clamp(0, 254) as u8));
    }
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 254) as u8
    ))
}

fn sandbox(
    parent: Option<PathBuf>,
    scope: Option<ck_cgroup::backend::Bus>,
    keep: bool,
    cmd: &[String],
    out: &Output,
) -> Result<ExitCode, Fail> {
    let sb = match (scope, parent) {
        (Some(bus), _) => Sandbox::create_in_scope(bus)?,
        (None, p) => {
            let p = match p {
                Some(p) => p,
                None => Sandbox::default_parent()?,
            };
            // The leftovers of sandboxes whose helper died (SIGKILL) under the same parent go
            // first; a failure there is noted and does not stop this sandbox.
            match ck_cgroup::sandbox::sweep(&p) {
                Ok(r) => {
                    for s in &r.removed {
                        let n = s
                            .killed
                            .map_or("an unknown number of".to_string(), |n| n.to_string());
                        note(format_args!(
                            "removed the leftover sandbox {} (its helper is gone; {n} processes killed)",
                            s.sandbox.display()
                        ));
                    }
                    for f in &r.failed {
                        note(format_args!(
                            "could not remove the leftover sandbox {}: {}",
                            f.sandbox.display(),
                            f.error
                        ));
                    }
                }
                Err(e) => note(format_args!("could not look for leftover sandboxes: {e}")),
            }
            Sandbox::create(&p)?
        }
    };
    let Some((prog, args)) = cmd.split_first() else {
        return Ok(ExitCode::from(2));
    };
    // TERM, INT and HUP must not kill the helper before it has removed the sandbox: they are
    // blocked here and passed on to CMD (a terminal's Ctrl-C reaches CMD directly too), and the
    // sandbox is cleaned up when CMD exits. CMD gets an empty signal mask (std keeps the
    // parent's, which would leave TERM blocked in every process CMD starts).
    let relay = ck_cgroup::spawn::SignalRelay::new(&[
        rustix::process::Signal::TERM,
        rustix::process::Signal::INT,
        rustix::process::Signal::HUP,
    ])
    .map_err(|e| Error::failed(format!("failed to set up signal relay: {e}")))?;
    let mut command = std::process::Command::new(prog);
    // CMD's modules go to the sandbox's root, whatever backend the caller's environment names.
    command
        .args(args)
        .env(discover::ENV_ROOT, sb.path())
        .env_remove(ck_cgroup::backend::systemd::ENV_BACKEND);
    ck_cgroup::spawn::unblock_signals_before_exec(&mut command);
    // CMD runs in the sandbox's cmd/ leaf, which the teardown empties (its orphans too), and so
    // does a `sandbox --prune` (or the next `sandbox` under the same parent) after this helper
    // died by SIGKILL. It keeps the host's pids (no PID namespace: CMD's tests read pids from
    // /proc and cgroup.procs and pass them to `place`), and dies with this helper
    // (PR_SET_PDEATHSIG SIGKILL); what it left is taken by that sweep.
    // Mutation control (`CK_MUTATION=sandbox-cmd-outside`): CMD runs where the helper runs.
    if let Some(procs) = sb.cmd_procs()?
        && !cfg!(ck_mutation = "sandbox-cmd-outside")
    {
        ck_cgroup::spawn::place_before_exec(&mut command, procs);
    }
    // Mutation control (`CK_MUTATION=no-pdeathsig`): no parent-death signal.
    if !cfg!(ck_mutation = "no-pdeathsig") {
        ck_cgroup::spawn::pdeathsig_before_exec(&mut command, rustix::process::Signal::KILL);
    }
    let status = command.spawn().and_then(|mut child| {
        let pid = rustix::process::Pid::from_raw(child.id() as i32)
            .ok_or_else(|| io::Error::other("child without a pid"))?;
        // Our own unreaped child: its pid cannot be reused before we wait for it.
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
        relay.relay_until_readable(std::os::unix::io::AsFd::as_fd(&pidfd))?;
        child.wait()
    });
    drop(relay);
    let code = match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => c,
            (None, Some(sig)) => 128 + sig,
            _ => 1,
        },
        Err(e) => {
            note(format_args!("failed to execute {prog:?}: {e}"));
            if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    };
    let path = sb.path().to_path_buf();
    if keep {
        let kept = sb.keep();
        written(out.sandbox(&path, true, code));
        kept?;
    } else {
        sb.destroy()?;
        written(out.sandbox(&path, false, code));
    }
    Ok(ExitCode::from(code.clamp(0, 254) as u8))
}
