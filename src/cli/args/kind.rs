//! [`Command`]'s side of `cli::promises`: its kind, and the properties that depend on its flags,
//! each an exhaustive match over the commands (so a new command does not compile until it is
//! decided here too).

use super::{BackendArgs, Command, GenerateKind};
use crate::cli::promises::{Kind, Stdout};

impl Command {
    /// This command's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Command::Init { .. } => Kind::Init,
            Command::Create { .. } => Kind::Create,
            Command::Set { .. } => Kind::Set,
            Command::Exec { .. } => Kind::Exec,
            Command::Place { .. } => Kind::Place,
            Command::Kill { .. } => Kind::Kill,
            Command::Prune { .. } => Kind::Prune,
            Command::Run { .. } => Kind::Run,
            Command::Freeze { .. } => Kind::Freeze,
            Command::Thaw { .. } => Kind::Thaw,
            Command::Remove { .. } => Kind::Remove,
            Command::List { .. } => Kind::List,
            Command::Doctor { .. } => Kind::Doctor,
            Command::Apply { .. } => Kind::Apply,
            Command::Watch { .. } => Kind::Watch,
            Command::Status { .. } => Kind::Status,
            Command::Ps { .. } => Kind::Ps,
            Command::Top { .. } => Kind::Top,
            Command::Sandbox { .. } => Kind::Sandbox,
            Command::Generate { .. } => Kind::Generate,
        }
    }

    /// The modules given on the command line, in order: ids or names as [`Kind::modules`] says.
    pub fn modules(&self) -> Vec<&str> {
        match self {
            Command::Create { id, .. }
            | Command::Set { id, .. }
            | Command::Place { id, .. }
            | Command::Exec { id, .. }
            | Command::Run { id, .. }
            | Command::Kill { id, .. }
            | Command::Remove { id }
            | Command::Freeze { id, .. }
            | Command::Thaw { id, .. } => vec![id],
            Command::Status { ids, .. } | Command::Ps { ids, .. } | Command::Watch { ids, .. } => {
                ids.iter().map(String::as_str).collect()
            }
            Command::Prune { keep, .. } => keep.iter().map(String::as_str).collect(),
            Command::Init { .. }
            | Command::List { .. }
            | Command::Doctor { .. }
            | Command::Apply { .. }
            | Command::Top { .. }
            | Command::Sandbox { .. }
            | Command::Generate { .. } => vec![],
        }
    }

    /// Whether this command's result goes to stdout: [`Kind::stdout`], less where its `unless`
    /// flag sends it elsewhere.
    pub fn result_on_stdout(&self) -> bool {
        match self {
            Command::Status { output, .. } => output.is_none(),
            Command::Generate { kind, .. } => !matches!(kind, GenerateKind::Man),
            other => matches!(other.kind().stdout(), Stdout::Result { .. }),
        }
    }

    /// Its `--backend` and `--manager`, for the commands that take them ([`Kind::backend`]).
    pub fn backend_args(&self) -> Option<&BackendArgs> {
        match self {
            Command::Exec { backend, .. }
            | Command::Kill { backend, .. }
            | Command::Prune { backend, .. }
            | Command::List { backend }
            | Command::Status { backend, .. }
            | Command::Ps { backend, .. }
            | Command::Doctor { backend } => Some(backend),
            Command::Init { .. }
            | Command::Create { .. }
            | Command::Set { .. }
            | Command::Place { .. }
            | Command::Run { .. }
            | Command::Freeze { .. }
            | Command::Thaw { .. }
            | Command::Remove { .. }
            | Command::Apply { .. }
            | Command::Watch { .. }
            | Command::Top { .. }
            | Command::Sandbox { .. }
            | Command::Generate { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Cli;
    use crate::cli::promises::{Cmd, Kind, Missing, Modules, json_lines};
    use clap::CommandFactory;

    /// Every subcommand clap knows has a kind, and [`Kind::ALL`] holds each kind once.
    #[test]
    fn every_subcommand_has_one_kind() {
        let cli = Cli::command();
        let names: Vec<&str> = cli.get_subcommands().map(|s| s.get_name()).collect();
        let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(
            names, kinds,
            "Kind::ALL against clap's subcommands, in order"
        );
        assert!(json_lines(&cli).is_ok());
    }

    /// The properties that clap's definition also shows agree with it: a CMD argument, a
    /// `--backend` for modules, a module argument.
    #[test]
    fn properties_agree_with_the_clap_definition() {
        let cli = Cli::command();
        for sub in cli.get_subcommands() {
            let kind = Kind::from_name(sub.get_name()).unwrap();
            let has = |id: &str| sub.get_arguments().any(|a| a.get_id() == id);
            // `prune --keep ID`, not `sandbox --keep` (a flag).
            let keeps = sub
                .get_arguments()
                .any(|a| a.get_id() == "keep" && a.get_action().takes_values());
            assert_eq!(has("cmd"), kind.cmd() != Cmd::No, "{kind:?}: CMD");
            assert_eq!(
                has("backend") && kind != Kind::Sandbox,
                kind.backend(),
                "{kind:?}: --backend"
            );
            assert_eq!(
                has("id") || has("ids") || keeps,
                kind.modules() != Modules::None,
                "{kind:?}: modules"
            );
            assert_eq!(
                kind.modules() == Modules::None,
                kind.missing() == Missing::NotGiven,
                "{kind:?}: missing"
            );
        }
    }
}
