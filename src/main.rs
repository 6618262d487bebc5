//! `ck-cgroup`: a thin binary over the `ck_cgroup` library. The arguments are parsed, [`run`]
//! checks the input and [`dispatch`] hands the command to its function in `cli::commands` (one
//! library call, one renderer), and every error becomes an exit code in one place
//! (`cli::exit::code`).

mod cli;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use cli::args::*;
use cli::commands::*;
use cli::exit::{self, Fail};
use cli::promises::RootUse;

use cli::mutation::{self, Control};

fn main() -> ExitCode {
    // Before any allocation: a memory limit too low to work in is one line and exit 1, not the
    // runtime's abort on the first allocation that fails.
    // Mutation: no check, the runtime's abort.
    if !mutation::active(Control::RoomUnchecked)
        && let Some(code) = cli::room::check()
    {
        return code;
    }
    // With --json errors are JSON, a usage error too: clap finds one before --json is parsed.
    exit::set_json(exit::json_in_args(std::env::args_os()));
    exit::code(
        parse().and_then(|(cli, name)| {
            exit::set_json(cli.globals.json);
            run(cli, &name)
        }),
        || cli::args::lazy::command_in(&std::env::args_os().collect::<Vec<_>>()),
    )
}

/// The arguments, and the command's name as clap knows it (the one a refusal names).
fn parse() -> Result<(Cli, String), Fail> {
    // The top level and the one command named, where that parses as the whole tree does
    // (cli::args::lazy); else the whole tree.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let matches = match cli::args::lazy::tree_for(&args) {
        Some(tree) => tree.try_get_matches_from(&args),
        None => Cli::command().try_get_matches_from(&args),
    }
    .map_err(Fail::Usage)?;
    let mut cli =
        Cli::from_arg_matches(&matches).map_err(|e| Fail::Usage(e.format(&mut Cli::command())))?;
    // The root's sources: the command line before the environment; of the two variables
    // CK_CGROUP_ROOT (a sandbox's CMD inherits CK_CGROUP_UNIT but must stay in the sandbox).
    // The command that checks the root (`doctor`) takes both: the root to check and the unit
    // to ask systemd about.
    use clap::parser::ValueSource::CommandLine;
    let flag = |id| matches.value_source(id) == Some(CommandLine);
    if cli.command.promises().root != RootUse::Checks {
        match (flag("root"), flag("unit")) {
            (true, true) => {
                return Err(Fail::Usage(Cli::command().error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "--root and --unit both name the root: pass one",
                )));
            }
            (false, true) => cli.globals.root = None,
            _ if cli.globals.root.is_some() => cli.globals.unit = None,
            _ => {}
        }
    }
    // An empty path (which cli::args takes): `--root=` is a usage error, as clap says it; an empty
    // variable is refused by its name, with its fix (CK_CGROUP_ROOT's by the library's rule).
    let empty =
        |p: &Option<std::path::PathBuf>| p.as_ref().is_some_and(|p| p.as_os_str().is_empty());
    for (id, is_empty) in [
        ("root", empty(&cli.globals.root)),
        ("policy", empty(&cli.globals.policy)),
    ] {
        if !is_empty {
            continue;
        }
        if flag(id) {
            return Err(Fail::Usage(Cli::command().error(
                clap::error::ErrorKind::InvalidValue,
                format!("a value is required for '--{id} <PATH>' but none was supplied"),
            )));
        }
        let refusal = if id == "root" {
            ck_cgroup::discover::root_from_env(Some(Default::default())).err()
        } else {
            Some(
                ck_cgroup::Error::bad_input("CK_CGROUP_POLICY is set but empty").with_hint(
                    "set CK_CGROUP_POLICY to the policy file (/dev/null: none), or unset it for the default",
                ),
            )
        };
        if let Some(e) = refusal {
            return Err(e.into());
        }
    }
    let name = matches.subcommand_name().unwrap_or_default().to_string();
    Ok((cli, name))
}

/// One command: its input checked, then [`dispatch`]ed.
fn run(cli: Cli, name: &str) -> Result<ExitCode, Fail> {
    // Bad input first (exit 2), before the root or any module is looked at. Mutation: the ids,
    // names and policy are left to each command, as they were.
    if !mutation::active(Control::InputCheckedLate) {
        cli::validate::ids(&cli.command)?;
    }
    // Mutation: --json where a command has none is not refused.
    if !mutation::active(Control::JsonUnrefused) {
        cli::validate::json(&cli.command, cli.globals.json)?;
    }
    let loaded = if mutation::active(Control::InputCheckedLate) {
        None
    } else {
        cli::validate::policy(&cli.command, cli.globals.policy.as_deref())?
    };
    // Then a closed stdout of a command whose output is its result (exit 1), before any work.
    if let Some(e) = cli::stdio::result_cannot_be_written(&cli.command) {
        return Err(e.into());
    }
    let root = cli::backend::root(&cli)?;
    let mut ctx = Ctx::new(root, cli.globals.policy, cli.globals.json);
    ctx.loaded = loaded;
    dispatch(&ctx, cli.command, cli.globals.unit.as_deref(), name)
}

/// The command's backend decided here, once, and its function called: one arm per command.
/// What only cgroupfs has takes `cli::backend::cgroupfs`, which `CK_CGROUP_BACKEND=systemd`
/// refuses before anything else.
fn dispatch(ctx: &Ctx, command: Command, unit: Option<&str>, name: &str) -> Result<ExitCode, Fail> {
    let root = &ctx.root;
    let fs = || cli::backend::cgroupfs(root.clone(), name);
    let chosen = |a| cli::backend::from_args(a, root.clone());
    match command {
        Command::Init(InitOpts { cmd, oomd_daemon }) if cmd.is_empty() => {
            cmd_init(ctx, fs()?, oomd_daemon)
        }
        Command::Init(InitOpts { cmd, oomd_daemon }) => {
            cmd_init_daemon(ctx, cli::backend::from_env(root.clone()), &cmd, oomd_daemon)
        }
        Command::Create(CreateOpts { id, limits }) => cmd_create(ctx, fs()?, &id, &limits),
        Command::Set(SetOpts { id, limits }) => cmd_set(ctx, fs()?, &id, &limits),
        Command::Place(PlaceOpts { id, pids }) => cmd_place(ctx, fs()?, &id, &pids),
        Command::Remove(RemoveOpts { id }) => cmd_remove(ctx, fs()?, &id),
        Command::Apply(ApplyOpts {
            dry_run,
            best_effort,
        }) => cmd_apply(ctx, fs()?, dry_run, best_effort),
        Command::Kill(KillOpts { id, stop, backend }) => {
            cmd_kill(ctx, chosen(&backend), &id, &stop)
        }
        Command::Prune(PruneOpts {
            dry_run,
            kill,
            keep,
            if_laid_out,
            stop,
            backend,
        }) => cmd_prune(
            ctx,
            chosen(&backend),
            PruneArgs {
                dry_run,
                kill,
                if_laid_out,
            },
            &keep,
            &stop,
        ),
        Command::List(ListOpts { backend }) => cmd_list(ctx, chosen(&backend)),
        Command::Status(StatusOpts {
            ids,
            format,
            output,
            sort,
            wide,
            columns,
            cold_window,
            age_cold,
            backend,
        }) => cmd_status(
            ctx,
            chosen(&backend),
            &ids,
            StatusView {
                format,
                output: output.as_deref(),
                sort,
                wide,
                columns: columns.as_ref().map(|c| c.0.as_slice()),
                cold_window,
                age_cold,
            },
        ),
        Command::Ps(PsOpts { ids, sort, backend }) => cmd_ps(ctx, chosen(&backend), &ids, sort),
        Command::Doctor(DoctorOpts { backend }) => cmd_doctor(ctx, chosen(&backend), unit),
        Command::Freeze(FreezeOpts { id, timeout }) => cmd_freeze(ctx, fs()?, &id, true, timeout),
        Command::Thaw(ThawOpts { id, timeout }) => cmd_freeze(ctx, fs()?, &id, false, timeout),
        Command::Watch(WatchOpts {
            ids,
            report_above,
            pressure,
        }) => cmd_watch(ctx, fs()?, ids, report_above, pressure),
        Command::Top(TopOpts {
            sort,
            interval,
            iterations,
        }) => cmd_top(fs()?, sort, interval, iterations),
        Command::Exec(ExecOpts {
            id,
            limits,
            backend,
            no_cgroup_namespace,
            cmd,
        }) => cmd_exec(
            ctx,
            chosen(&backend),
            &id,
            &limits,
            !no_cgroup_namespace,
            &cmd,
        ),
        Command::Run(RunOpts {
            id,
            stop,
            limits,
            no_pid_namespace,
            no_cgroup_namespace,
            cmd,
        }) => {
            let ns = Namespaces {
                pid: !no_pid_namespace,
                cgroup: !no_cgroup_namespace,
            };
            cmd_run(ctx, fs()?, &id, &stop, &limits, ns, &cmd)
        }
        Command::Sandbox(SandboxOpts {
            prune: true,
            parent,
            backend,
            ..
        }) => cmd_sandbox_prune(ctx, backend, parent),
        Command::Sandbox(SandboxOpts {
            parent,
            backend,
            manager,
            keep,
            cmd,
            ..
        }) => cmd_sandbox(ctx, backend, manager, parent, keep, &cmd),
        Command::Generate(GenerateOpts { kind, out_dir }) => {
            cli::generate::generate(kind, out_dir.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
