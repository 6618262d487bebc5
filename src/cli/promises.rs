//! What each command promises, decided once per command. Each property is one method with an
//! exhaustive match over [`Kind`] (or over `args::Command`, in `args/kind.rs`, where the answer
//! depends on its flags),
//! with no `_` arm: a command added to [`Command`] does not compile until [`Command::kind`]
//! names its kind, and a kind does not compile until every property below is decided for it.
//! Everything that needs a property asks it here: the input checks (`cli::validate`), the closed
//! stdout (`cli::stdio`), the root's sources (`cli::backend::root`), `--help`'s exit codes and
//! the man pages' EXIT STATUS (`cli::args`, `cli::generate`), and `generate promises`, the JSON
//! Lines the tests iterate (one object per subcommand clap knows, so a new command is tested the
//! day it exists) and tests/docs.rs holds docs/commands.md to.

use serde::Serialize;

/// A command, without its arguments: one per subcommand of `args::Command`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Init,
    Create,
    Set,
    Exec,
    Place,
    Kill,
    Prune,
    Run,
    Freeze,
    Thaw,
    Remove,
    List,
    Doctor,
    Apply,
    Watch,
    Status,
    Ps,
    Top,
    Sandbox,
    Generate,
}

/// Where a command's output goes, and whether it is the command's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdout {
    /// The output is the result: a stdout that cannot take it is the command's failure (exit 1;
    /// a closed stdout before anything is read). `unless` names the argument that sends it
    /// elsewhere.
    Result { unless: Option<&'static str> },
    /// The command changes something and then says what: its exit code stays the operation's
    /// when stdout cannot take the report.
    Report,
    /// stdout is CMD's (`--json`'s result is the last line on stderr).
    Cmd,
}

/// What `--json` does to a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Json {
    /// Its result is one JSON object (or JSON Lines) on stdout.
    Stdout,
    /// stdout is CMD's: the result is the last line on stderr (`run`, `sandbox`); `exec` and
    /// `init -- CMD` become CMD and print nothing when that works.
    Stderr,
    /// It has none and refuses `--json` (exit 2, before anything is read), with this hint.
    Refused { hint: &'static str },
    /// Its output is not data (`generate`: man pages, completions): `--json` changes nothing.
    Ignored,
}

/// The modules a command is given on its command line, checked before anything is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Modules {
    /// None.
    None,
    /// Modules to make or change: module ids ([`ck_cgroup::ModuleId::new`]).
    Ids,
    /// Modules to act on or show: an id or a directory name as `list` shows it
    /// ([`ck_cgroup::id::module_name`]).
    Names,
}

/// What a command does when a module it is given is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Missing {
    /// It is given no module.
    NotGiven,
    /// `no module ID`, exit 1 (`--json`: kind `no_such_module`).
    NoModule,
    /// A stop: it is already gone, exit 0.
    AlreadyGone,
    /// The module is made.
    Made,
    /// Reported when it appears (`watch`).
    Awaited,
    /// Nothing to leave alone (`prune --keep`): the command goes on.
    Ignored,
}

/// Which policy file a command reads (every command reads and checks the one it is given).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Also the default file (/etc/ck-cgroup/policy.toml) when none is given.
    Default,
    /// Only one given (`--policy`, `CK_CGROUP_POLICY`).
    WhenGiven,
}

/// Whether a command executes a CMD (then 126 and 127 are its exit codes too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cmd {
    No,
    Required,
    Optional,
}

/// The root a command works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootUse {
    /// A service root (daemon/ or subc-modules/): any other is refused, exit 2.
    Service,
    /// Any cgroup2 directory, which it lays out (`init`).
    LaysOut,
    /// Any: it reports what it finds (`doctor`).
    Checks,
    /// None of the service's (`sandbox` makes its own, `generate` needs none).
    None,
}

/// Every property of one command, as `generate promises` writes it.
#[derive(Debug, Serialize)]
pub struct Promises {
    pub command: &'static str,
    /// `result`, `report` or `cmd` ([`Stdout`]).
    pub stdout: &'static str,
    /// The argument that sends the result elsewhere (`status --output`, `generate man`).
    pub stdout_unless: Option<&'static str>,
    /// `stdout`, `stderr`, `refused` or `ignored` ([`Json`]).
    pub json: &'static str,
    pub modules: Modules,
    pub missing: Missing,
    pub policy: Policy,
    pub cmd: Cmd,
    /// Takes `--backend systemd` for its modules (`--manager` too).
    pub backend: bool,
    pub root: RootUse,
}

impl Kind {
    /// Every kind, in `--help`'s order.
    pub const ALL: [Kind; 20] = [
        Kind::Init,
        Kind::Create,
        Kind::Set,
        Kind::Exec,
        Kind::Place,
        Kind::Kill,
        Kind::Prune,
        Kind::Run,
        Kind::Freeze,
        Kind::Thaw,
        Kind::Remove,
        Kind::List,
        Kind::Doctor,
        Kind::Apply,
        Kind::Watch,
        Kind::Status,
        Kind::Ps,
        Kind::Top,
        Kind::Sandbox,
        Kind::Generate,
    ];

    /// The subcommand's name, as clap knows it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Init => "init",
            Kind::Create => "create",
            Kind::Set => "set",
            Kind::Exec => "exec",
            Kind::Place => "place",
            Kind::Kill => "kill",
            Kind::Prune => "prune",
            Kind::Run => "run",
            Kind::Freeze => "freeze",
            Kind::Thaw => "thaw",
            Kind::Remove => "remove",
            Kind::List => "list",
            Kind::Doctor => "doctor",
            Kind::Apply => "apply",
            Kind::Watch => "watch",
            Kind::Status => "status",
            Kind::Ps => "ps",
            Kind::Top => "top",
            Kind::Sandbox => "sandbox",
            Kind::Generate => "generate",
        }
    }

    /// The kind of the subcommand named `name`.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Where the output goes: the result, a report of what was done, or CMD's.
    pub fn stdout(self) -> Stdout {
        let result = Stdout::Result { unless: None };
        match self {
            Kind::List | Kind::Doctor | Kind::Watch | Kind::Ps | Kind::Top => result,
            Kind::Status => Stdout::Result {
                unless: Some("--output"),
            },
            Kind::Generate => Stdout::Result {
                unless: Some("man"),
            },
            Kind::Init
            | Kind::Create
            | Kind::Set
            | Kind::Place
            | Kind::Kill
            | Kind::Prune
            | Kind::Freeze
            | Kind::Thaw
            | Kind::Remove
            | Kind::Apply => Stdout::Report,
            Kind::Exec | Kind::Run | Kind::Sandbox => Stdout::Cmd,
        }
    }

    /// What `--json` does to it.
    pub fn json(self) -> Json {
        match self {
            Kind::Top => Json::Refused {
                hint: "`ck-cgroup --json status` gives every figure once, `ck-cgroup watch` the \
                       events as they come",
            },
            Kind::Generate => Json::Ignored,
            Kind::Exec | Kind::Run | Kind::Sandbox => Json::Stderr,
            Kind::Init
            | Kind::Create
            | Kind::Set
            | Kind::Place
            | Kind::Kill
            | Kind::Prune
            | Kind::Freeze
            | Kind::Thaw
            | Kind::Remove
            | Kind::List
            | Kind::Doctor
            | Kind::Apply
            | Kind::Watch
            | Kind::Status
            | Kind::Ps => Json::Stdout,
        }
    }

    /// The modules it is given, and how they are checked.
    pub fn modules(self) -> Modules {
        match self {
            Kind::Create | Kind::Set | Kind::Place | Kind::Exec | Kind::Run => Modules::Ids,
            Kind::Kill
            | Kind::Remove
            | Kind::Freeze
            | Kind::Thaw
            | Kind::Status
            | Kind::Ps
            | Kind::Watch
            | Kind::Prune => Modules::Names,
            Kind::Init
            | Kind::List
            | Kind::Doctor
            | Kind::Apply
            | Kind::Top
            | Kind::Sandbox
            | Kind::Generate => Modules::None,
        }
    }

    /// What it does with a module it is given that is not there.
    pub fn missing(self) -> Missing {
        match self {
            Kind::Set | Kind::Freeze | Kind::Thaw | Kind::Status | Kind::Ps => Missing::NoModule,
            Kind::Kill | Kind::Remove => Missing::AlreadyGone,
            Kind::Create | Kind::Place | Kind::Exec | Kind::Run => Missing::Made,
            Kind::Watch => Missing::Awaited,
            Kind::Prune => Missing::Ignored,
            Kind::Init
            | Kind::List
            | Kind::Doctor
            | Kind::Apply
            | Kind::Top
            | Kind::Sandbox
            | Kind::Generate => Missing::NotGiven,
        }
    }

    /// Which policy file it reads.
    pub fn policy(self) -> Policy {
        match self {
            Kind::Create | Kind::Exec | Kind::Run | Kind::Apply | Kind::Watch => Policy::Default,
            Kind::Init
            | Kind::Set
            | Kind::Place
            | Kind::Kill
            | Kind::Prune
            | Kind::Freeze
            | Kind::Thaw
            | Kind::Remove
            | Kind::List
            | Kind::Doctor
            | Kind::Status
            | Kind::Ps
            | Kind::Top
            | Kind::Sandbox
            | Kind::Generate => Policy::WhenGiven,
        }
    }

    /// Whether it executes a CMD.
    pub fn cmd(self) -> Cmd {
        match self {
            Kind::Exec | Kind::Run => Cmd::Required,
            // sandbox --prune runs none; clap requires CMD otherwise.
            Kind::Init | Kind::Sandbox => Cmd::Optional,
            Kind::Create
            | Kind::Set
            | Kind::Place
            | Kind::Kill
            | Kind::Prune
            | Kind::Freeze
            | Kind::Thaw
            | Kind::Remove
            | Kind::List
            | Kind::Doctor
            | Kind::Apply
            | Kind::Watch
            | Kind::Status
            | Kind::Ps
            | Kind::Top
            | Kind::Generate => Cmd::No,
        }
    }

    /// Whether it takes `--backend systemd` for its modules (`sandbox`'s `--backend` is where
    /// the sandbox is made: not this).
    pub fn backend(self) -> bool {
        match self {
            Kind::Exec
            | Kind::Kill
            | Kind::Prune
            | Kind::List
            | Kind::Status
            | Kind::Ps
            | Kind::Doctor => true,
            Kind::Init
            | Kind::Create
            | Kind::Set
            | Kind::Place
            | Kind::Run
            | Kind::Freeze
            | Kind::Thaw
            | Kind::Remove
            | Kind::Apply
            | Kind::Watch
            | Kind::Top
            | Kind::Sandbox
            | Kind::Generate => false,
        }
    }

    /// The root it works on.
    pub fn root(self) -> RootUse {
        match self {
            Kind::Init => RootUse::LaysOut,
            Kind::Doctor => RootUse::Checks,
            Kind::Sandbox | Kind::Generate => RootUse::None,
            Kind::Create
            | Kind::Set
            | Kind::Exec
            | Kind::Place
            | Kind::Kill
            | Kind::Prune
            | Kind::Run
            | Kind::Freeze
            | Kind::Thaw
            | Kind::Remove
            | Kind::List
            | Kind::Apply
            | Kind::Watch
            | Kind::Status
            | Kind::Ps
            | Kind::Top => RootUse::Service,
        }
    }

    /// What its man page's EXIT STATUS says beyond the common codes.
    pub fn exit_notes(self) -> &'static [&'static str] {
        match self {
            Kind::Init => &[
                "With CMD: 126 or 127 when CMD cannot run (nothing is made); after the exec the \
                 status is CMD's.",
            ],
            Kind::Exec => &[
                "126, 127: the module was placed, but CMD could not be executed, or was not \
                 found (looked up before the module is made: nothing is made). After a \
                 successful exec the exit status is CMD's.",
            ],
            Kind::Run => &[
                "CMD's exit status, or the helper dies of CMD's signal; 1 when the rest of the \
                 tree could not be stopped.",
            ],
            Kind::Sandbox => &[
                "CMD's exit status (128+N when CMD died of signal N). With --prune: 0 when every \
                 leftover was removed, 1 when one could not be (the others still are), 2 with a \
                 CMD, --keep or --backend systemd.",
            ],
            Kind::Doctor => &["0 when the host is ready, 1 when it is not."],
            Kind::Top => &[
                "0 after q or the last of --iterations; after Ctrl-C, SIGTERM or SIGHUP it \
                 restores the terminal and ends by that signal (130, 143, 129 in a shell).",
            ],
            Kind::Create
            | Kind::Set
            | Kind::Place
            | Kind::Kill
            | Kind::Prune
            | Kind::Freeze
            | Kind::Thaw
            | Kind::Remove
            | Kind::List
            | Kind::Apply
            | Kind::Watch
            | Kind::Status
            | Kind::Ps
            | Kind::Generate => &[],
        }
    }

    /// Every property, for `generate promises`.
    pub fn promises(self) -> Promises {
        Promises {
            command: self.name(),
            stdout: match self.stdout() {
                Stdout::Result { .. } => "result",
                Stdout::Report => "report",
                Stdout::Cmd => "cmd",
            },
            stdout_unless: match self.stdout() {
                Stdout::Result { unless } => unless,
                Stdout::Report | Stdout::Cmd => None,
            },
            json: match self.json() {
                Json::Stdout => "stdout",
                Json::Stderr => "stderr",
                Json::Refused { .. } => "refused",
                Json::Ignored => "ignored",
            },
            modules: self.modules(),
            missing: self.missing(),
            policy: self.policy(),
            cmd: self.cmd(),
            backend: self.backend(),
            root: self.root(),
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
        .filter(|k| matches!(k.stdout(), Stdout::Result { .. }))
}

/// The kinds that execute a CMD.
pub fn cmd_commands() -> impl Iterator<Item = Kind> {
    Kind::ALL.into_iter().filter(|k| k.cmd() != Cmd::No)
}

/// `generate promises`: one JSON object per subcommand clap knows (hidden ones too), in its
/// order. A subcommand without a kind is an error here, not a line left out.
pub fn json_lines(cli: &clap::Command) -> Result<String, String> {
    let mut out = String::new();
    for sub in cli.get_subcommands() {
        let name = sub.get_name();
        let kind = Kind::from_name(name)
            .ok_or_else(|| format!("internal: the command {name} has no kind in cli::promises"))?;
        let line = serde_json::to_string(&kind.promises()).map_err(|e| e.to_string())?;
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
