//! The promises' types: [`Promises`], the literal each command's [`Promise`] gives, what its
//! flags give ([`Given`]) and the properties' values. Apart from the queries over the command
//! list (`super`), so that the list (`args::commands`), which asks each command's `Promise`,
//! imports these and nothing that imports it back.

use serde::Serialize;

use crate::cli::args::values::BackendArgs;

/// Every property of one command, whatever its flags.
#[derive(Debug, Clone, Copy)]
pub struct Promises {
    /// Where the output goes: the result, a report of what was done, or CMD's.
    pub stdout: Stdout,
    /// What `--json` does to it.
    pub json: Json,
    /// The modules it is given, and how they are checked.
    pub modules: Modules,
    /// What it does with a module it is given that is not there.
    pub missing: Missing,
    /// Which policy file it reads.
    pub policy: Policy,
    /// Whether it executes a CMD.
    pub cmd: Cmd,
    /// Whether it takes `--backend systemd` for its modules (`sandbox`'s `--backend` is where
    /// the sandbox is made: not this).
    pub backend: bool,
    /// The root it works on.
    pub root: RootUse,
    /// What its man page's EXIT STATUS says beyond the common codes.
    pub exit_notes: &'static [&'static str],
}

/// What one command's flags give, for the properties that depend on them.
#[derive(Debug)]
pub struct Given<'a> {
    /// The modules given on the command line, in order, as clap read them: ids or names as
    /// [`Promises::modules`] says (and the arguments' type, [`GivenModule::reads`]).
    pub modules: Vec<&'a dyn GivenModule>,
    /// Its `--backend` and `--manager`, for the commands that take them
    /// ([`Promises::backend`]).
    pub backend: Option<&'a BackendArgs>,
    /// Whether the argument that [`Stdout::Result`]'s `unless` names sends the result
    /// elsewhere (`status --output`, `generate man`).
    pub elsewhere: bool,
}

/// A module given on the command line (`cli::module_arg::ModuleArg<ModuleId>` or
/// `<ModuleName>`), as [`Given::modules`] lists it: read once, by clap.
pub trait GivenModule: std::fmt::Debug {
    /// The library's refusal of its text, where it is no module id (or name): bad input.
    fn check(&self) -> Result<(), ck_cgroup::Error>;
    /// What its type reads it as: [`Modules::Ids`] or [`Modules::Names`], which the command's
    /// [`Promises::modules`] says too (the lazy parser's test holds every command to it).
    #[cfg(test)]
    fn reads(&self) -> Modules;
}

/// One command's promises, given by its arguments' type (`args::<Name>Opts`).
pub trait Promise {
    /// What it promises whatever its flags.
    const PROMISES: Promises;
    /// What these flags give.
    fn given(&self) -> Given<'_>;
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
