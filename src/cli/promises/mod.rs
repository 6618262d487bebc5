//! What each command promises, decided once per command: one [`Promises`] literal for each, the
//! [`Promise`] its arguments' type gives (`commands.rs`), so that a command in the list
//! (`args::commands`) without one does not compile, nor does a literal without a property the
//! struct has. What depends on its flags is [`Promise::given`], beside the literal.
//! Everything that needs a property asks it here: the input checks (`cli::validate`), the closed
//! stdout (`cli::stdio`), the root's sources (`cli::backend::root`), `--help`'s exit codes and
//! the man pages' EXIT STATUS (`cli::args`, `cli::generate`), and `generate promises`, the JSON
//! Lines the tests iterate (one object per subcommand clap knows, so a new command is tested the
//! day it exists) and tests/docs.rs holds docs/commands.md to.

mod commands;
pub(crate) mod types;

use serde::Serialize;

pub use super::args::commands::Kind;
pub use types::*;

/// Every property of one command, as `generate promises` writes it.
#[derive(Debug, Serialize)]
struct Line {
    command: &'static str,
    /// `result`, `report` or `cmd` ([`Stdout`]).
    stdout: &'static str,
    /// The argument that sends the result elsewhere (`status --output`, `generate man`).
    stdout_unless: Option<&'static str>,
    /// `stdout`, `stderr`, `refused` or `ignored` ([`Json`]).
    json: &'static str,
    modules: Modules,
    missing: Missing,
    policy: Policy,
    cmd: Cmd,
    /// Takes `--backend systemd` for its modules (`--manager` too).
    backend: bool,
    root: RootUse,
}

impl Line {
    /// The line of `kind`.
    fn of(kind: Kind) -> Line {
        let p = kind.promises();
        Line {
            command: kind.name(),
            stdout: match p.stdout {
                Stdout::Result { .. } => "result",
                Stdout::Report => "report",
                Stdout::Cmd => "cmd",
            },
            stdout_unless: match p.stdout {
                Stdout::Result { unless } => unless,
                Stdout::Report | Stdout::Cmd => None,
            },
            json: match p.json {
                Json::Stdout => "stdout",
                Json::Stderr => "stderr",
                Json::Refused { .. } => "refused",
                Json::Ignored => "ignored",
            },
            modules: p.modules,
            missing: p.missing,
            policy: p.policy,
            cmd: p.cmd,
            backend: p.backend,
            root: p.root,
        }
    }
}

impl super::args::commands::Command {
    /// Whether this command's result goes to stdout: [`Stdout::Result`], less where its
    /// `unless` argument sends it elsewhere ([`Given::elsewhere`]).
    pub fn result_on_stdout(&self) -> bool {
        match self.promises().stdout {
            Stdout::Result { .. } => !self.given().elsewhere,
            Stdout::Report | Stdout::Cmd => false,
        }
    }
}

/// `a`, `b` and `c`: the names of `kinds`, quoted with backticks, as prose lists them.
pub fn prose_list(kinds: impl IntoIterator<Item = Kind>) -> String {
    let names: Vec<String> = kinds
        .into_iter()
        .map(|k| format!("`{}`", k.name()))
        .collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The kinds whose output is their result ([`Stdout::Result`]).
pub fn result_commands() -> impl Iterator<Item = Kind> {
    Kind::ALL
        .into_iter()
        .filter(|k| matches!(k.promises().stdout, Stdout::Result { .. }))
}

/// The kinds that execute a CMD.
pub fn cmd_commands() -> impl Iterator<Item = Kind> {
    Kind::ALL
        .into_iter()
        .filter(|k| k.promises().cmd != Cmd::No)
}

/// `generate promises`: one JSON object per subcommand clap knows (hidden ones too), in its
/// order. A subcommand without a kind is an error here, not a line left out.
pub fn json_lines(cli: &clap::Command) -> Result<String, String> {
    let mut out = String::new();
    for sub in cli.get_subcommands() {
        let name = sub.get_name();
        let kind = Kind::from_name(name)
            .ok_or_else(|| format!("internal: the command {name} has no kind in cli::promises"))?;
        let line = serde_json::to_string(&Line::of(kind)).map_err(|e| e.to_string())?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_lists() {
        assert_eq!(prose_list([Kind::List]), "`list`");
        assert_eq!(
            prose_list([Kind::List, Kind::Ps, Kind::Top]),
            "`list`, `ps` and `top`"
        );
    }
}
