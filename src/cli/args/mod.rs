//! The command-line definition (clap derive), also the source of the man pages and completions:
//! the top level here ([`Cli`], [`Globals`], `--help`'s exit codes); the command list in
//! `commands` (one row per command), each command's arguments in `opts`, the values they take in
//! `values`, the limit and stop flags in `limit_flags` and `stop_flags`, and the parse of one
//! command's tree in [`lazy`].

use std::path::PathBuf;

use clap::Parser;

use crate::cli::promises;
pub use crate::cli::status::{Col, SortKey};

pub(crate) mod commands;
pub mod lazy;
mod limit_flags;
mod opts;
mod stop_flags;
pub(crate) mod values;

pub use commands::{Command, Kind};
pub use limit_flags::LimitArgs;
pub use opts::*;
pub use stop_flags::{RUN_GRACE, StopArgs};
pub use values::{
    BackendArg, BackendArgs, Format, GenerateKind, ManagerArg, PsSort, parse_duration,
};

/// `--help`'s epilogue. Its first lines, `  CODE  meaning`, are the one list of exit codes: the
/// man pages' EXIT STATUS is made from them ([`exit_codes`]) and tests/docs.rs holds README.md's
/// table to them. The commands each paragraph names are the ones [`promises`] gives.
pub fn exit_codes_help() -> String {
    let cmd = cmd_commands_prose();
    let result = promises::prose_list(promises::result_commands());
    format!(
        "\
Exit codes:
  0  done (for `kill`: the module's tree is gone and its directory removed, or it was already gone)
  1  the operation failed (the message names the file and the errno)
  2  bad input, usage, or an unsupported root or kernel; nothing was changed
  126, 127  {cmd}: CMD cannot be executed, or is not found
CMD is looked up as execvp(3) would, before anything is made; after a successful exec the exit
status is CMD's. `run` and `sandbox` exit with CMD's status (128+N when CMD died of
signal N).

A stdout or stderr that cannot be written (closed, full) changes no exit code, except that
{result}, whose output is their result,
exit 1 when stdout cannot take it (0 on a closed pipe).
`top` exits 0 on `q` or after -n N refreshes; Ctrl-C, SIGTERM and SIGHUP end it by that signal
once the terminal is restored.

With --json, `run` and `sandbox` leave stdout to CMD: their JSON result is one line on stderr,
written after CMD and its module (or sandbox) are gone, so it is stderr's last line.

Root: --root, else --unit, else CK_CGROUP_ROOT, else CK_CGROUP_UNIT (a unit: its ControlGroup
from systemd over D-Bus, the system manager or with --user the caller's), else discovered from
/proc/self/cgroup and the cgroup2 mount in /proc/self/mountinfo (the parent of a `daemon` or
`.control` leaf, the part above `subc-modules/` for a module). Every command but
{not_service} refuses a root that is not a service root (it has neither daemon/ nor subc-modules/, e.g. an
operator's login shell's cgroup) with exit 2 and one line; `init` lays a root out. See
ck-cgroup(1) and docs/design.md.",
        not_service = promises::prose_list(
            promises::Kind::ALL
                .into_iter()
                .filter(|k| k.promises().root != promises::RootUse::Service)
        ),
    )
}

/// The commands that execute a CMD, as prose names them: `init -- CMD` where CMD is optional.
pub fn cmd_commands_prose() -> String {
    // `init`'s CMD is optional: named with it, and last.
    let (init, rest): (Vec<_>, Vec<_>) =
        promises::cmd_commands().partition(|k| *k == promises::Kind::Init);
    let names: Vec<String> = rest
        .iter()
        .map(|k| format!("`{}`", k.name()))
        .chain(init.iter().map(|k| format!("`{} -- CMD`", k.name())))
        .collect();
    names.join(", ")
}

/// The exit codes of [`exit_codes_help`]: each code (`0`, `126, 127`) and its meaning.
pub fn exit_codes() -> Vec<(String, String)> {
    exit_codes_help()
        .lines()
        .skip(1)
        .map_while(|l| l.strip_prefix("  "))
        .filter_map(|l| l.split_once("  "))
        .map(|(c, m)| (c.to_string(), m.to_string()))
        .collect()
}

/// Module cgroups for the ck-subc supervisor: place, list, kill and remove whole process trees.
#[derive(Debug, Parser)]
#[command(name = "ck-cgroup", version, about, after_long_help = exit_codes_help(), after_help = "Exit codes: 0 done, 1 failed, 2 bad input or unsupported (see --help).")]
pub struct Cli {
    /// The options every command takes.
    #[command(flatten)]
    pub globals: Globals,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The options every command takes (`global`: before or after the command's name).
#[derive(Debug, clap::Args)]
pub struct Globals {
    /// The service's cgroup directory (a cgroup2 directory below the hierarchy's root). The
    /// command line comes before the environment: --unit beats CK_CGROUP_ROOT, --root beats
    /// CK_CGROUP_UNIT, and of the two variables CK_CGROUP_ROOT wins (a `sandbox`'s CMD gets its
    /// root so); --root with --unit is a usage error.
    #[arg(long, global = true, env = "CK_CGROUP_ROOT", value_name = "PATH", value_parser = path_even_empty())]
    pub root: Option<PathBuf>,

    /// The service's systemd unit (e.g. ck-subc.service): the root is its cgroup (ControlGroup),
    /// asked of systemd over D-Bus, so `ck-cgroup --unit ck-subc.service kill aft` works from any
    /// shell. Only this flag (or the variable) makes the cgroupfs backend use D-Bus. Without a
    /// reachable systemd, or for a unit that is not running: exit 2 and one line.
    #[arg(long, global = true, env = "CK_CGROUP_UNIT", value_name = "NAME")]
    pub unit: Option<String>,

    /// With --unit: ask the caller's user manager (as `systemctl --user`), not the system
    /// manager.
    #[arg(long, global = true, requires = "unit")]
    pub user: bool,

    /// Print a machine-readable JSON result on stdout; `run` and `sandbox` print it as the last
    /// line on stderr instead (their stdout is CMD's). Every object has "version": 1 (added
    /// fields keep it; a rename or removal bumps it). An error, a usage error too, is then one
    /// JSON line on stderr, {"version":1,"error":{"kind","message","hint","exit"}}, with the same
    /// exit code. Every field: docs/json.md.
    #[arg(long, global = true)]
    pub json: bool,

    /// The policy file: default limits and per-module overrides (TOML), a regular file of at
    /// most 1 MiB (/dev/null: none). Default: /etc/ck-cgroup/policy.toml when it exists.
    #[arg(long, global = true, env = "CK_CGROUP_POLICY", value_name = "PATH", value_parser = path_even_empty())]
    pub policy: Option<PathBuf>,
}

/// A path, the empty one too: clap's own refuses it as a missing value of the flag, even when
/// it came from the variable (`CK_CGROUP_ROOT=`), and even when the flag was given too (the
/// variable is read for each command as well). An empty `--root` or `--policy` is refused after
/// the parse, by the name of where it came from (main.rs).
fn path_even_empty() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

#[cfg(test)]
mod tests;
