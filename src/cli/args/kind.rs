//! [`Command`]'s side of `cli::promises`: its kind, and the properties that depend on its flags,
//! each an exhaustive match over the commands (so a new command does not compile until it is
//! decided here too).

use super::{
    ApplyOpts, BackendArgs, Command, CreateOpts, DoctorOpts, ExecOpts, FreezeOpts, GenerateKind,
    GenerateOpts, InitOpts, KillOpts, ListOpts, PlaceOpts, PruneOpts, PsOpts, RemoveOpts, RunOpts,
    SandboxOpts, SetOpts, StatusOpts, ThawOpts, TopOpts, WatchOpts,
};
use crate::cli::promises::{Kind, Stdout};

impl Command {
    /// This command's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Command::Init(InitOpts { .. }) => Kind::Init,
            Command::Create(CreateOpts { .. }) => Kind::Create,
            Command::Set(SetOpts { .. }) => Kind::Set,
            Command::Exec(ExecOpts { .. }) => Kind::Exec,
            Command::Place(PlaceOpts { .. }) => Kind::Place,
            Command::Kill(KillOpts { .. }) => Kind::Kill,
            Command::Prune(PruneOpts { .. }) => Kind::Prune,
            Command::Run(RunOpts { .. }) => Kind::Run,
            Command::Freeze(FreezeOpts { .. }) => Kind::Freeze,
            Command::Thaw(ThawOpts { .. }) => Kind::Thaw,
            Command::Remove(RemoveOpts { .. }) => Kind::Remove,
            Command::List(ListOpts { .. }) => Kind::List,
            Command::Doctor(DoctorOpts { .. }) => Kind::Doctor,
            Command::Apply(ApplyOpts { .. }) => Kind::Apply,
            Command::Watch(WatchOpts { .. }) => Kind::Watch,
            Command::Status(StatusOpts { .. }) => Kind::Status,
            Command::Ps(PsOpts { .. }) => Kind::Ps,
            Command::Top(TopOpts { .. }) => Kind::Top,
            Command::Sandbox(SandboxOpts { .. }) => Kind::Sandbox,
            Command::Generate(GenerateOpts { .. }) => Kind::Generate,
        }
    }

    /// The modules given on the command line, in order: ids or names as [`Kind::modules`] says.
    pub fn modules(&self) -> Vec<&str> {
        match self {
            Command::Create(CreateOpts { id, .. })
            | Command::Set(SetOpts { id, .. })
            | Command::Place(PlaceOpts { id, .. })
            | Command::Exec(ExecOpts { id, .. })
            | Command::Run(RunOpts { id, .. })
            | Command::Kill(KillOpts { id, .. })
            | Command::Remove(RemoveOpts { id })
            | Command::Freeze(FreezeOpts { id, .. })
            | Command::Thaw(ThawOpts { id, .. }) => vec![id],
            Command::Status(StatusOpts { ids, .. })
            | Command::Ps(PsOpts { ids, .. })
            | Command::Watch(WatchOpts { ids, .. }) => ids.iter().map(String::as_str).collect(),
            Command::Prune(PruneOpts { keep, .. }) => keep.iter().map(String::as_str).collect(),
            Command::Init(InitOpts { .. })
            | Command::List(ListOpts { .. })
            | Command::Doctor(DoctorOpts { .. })
            | Command::Apply(ApplyOpts { .. })
            | Command::Top(TopOpts { .. })
            | Command::Sandbox(SandboxOpts { .. })
            | Command::Generate(GenerateOpts { .. }) => vec![],
        }
    }

    /// Whether this command's result goes to stdout: [`Kind::stdout`], less where its `unless`
    /// flag sends it elsewhere.
    pub fn result_on_stdout(&self) -> bool {
        match self {
            Command::Status(StatusOpts { output, .. }) => output.is_none(),
            Command::Generate(GenerateOpts { kind, .. }) => !matches!(kind, GenerateKind::Man),
            other => matches!(other.kind().stdout(), Stdout::Result { .. }),
        }
    }

    /// Its `--backend` and `--manager`, for the commands that take them ([`Kind::backend`]).
    pub fn backend_args(&self) -> Option<&BackendArgs> {
        match self {
            Command::Exec(ExecOpts { backend, .. })
            | Command::Kill(KillOpts { backend, .. })
            | Command::Prune(PruneOpts { backend, .. })
            | Command::List(ListOpts { backend })
            | Command::Status(StatusOpts { backend, .. })
            | Command::Ps(PsOpts { backend, .. })
            | Command::Doctor(DoctorOpts { backend }) => Some(backend),
            Command::Init(InitOpts { .. })
            | Command::Create(CreateOpts { .. })
            | Command::Set(SetOpts { .. })
            | Command::Place(PlaceOpts { .. })
            | Command::Run(RunOpts { .. })
            | Command::Freeze(FreezeOpts { .. })
            | Command::Thaw(ThawOpts { .. })
            | Command::Remove(RemoveOpts { .. })
            | Command::Apply(ApplyOpts { .. })
            | Command::Watch(WatchOpts { .. })
            | Command::Top(TopOpts { .. })
            | Command::Sandbox(SandboxOpts { .. })
            | Command::Generate(GenerateOpts { .. }) => None,
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
