//! Every command's input checked before it looks at a module (or at the root): the ids and
//! module names it was given, and the policy file. Bad input is exit 2 and one line naming it,
//! whatever else is wrong later (a missing module, a root not laid out).
//!
//! - a module to make or change ([`Modules::Ids`](promises::Modules::Ids)) is a module id
//!   ([`ck_cgroup::ModuleId::new`]);
//! - a module to act on or show ([`Modules::Names`](promises::Modules::Names)) is an id, a
//!   directory name or a path as `list` shows them ([`ck_cgroup::ModuleName::parse`], the names' one rule: never `..`, `a/b`);
//!
//!   each read once, by clap (the argument's type,
//!   [`ModuleArg`](super::module_arg::ModuleArg)`<ModuleId>` or `<ModuleName>`), which keeps the
//!   refusal for here and the typed value for the command;
//! - the policy: `--policy` (or `CK_CGROUP_POLICY`) is read and parsed by every command that is
//!   given one, and the default file by those that use it ([`promises::Policy::Default`]); the
//!   parsed policy is kept for the command (`Ctx::policy`).

use ck_cgroup::Error;
use ck_cgroup::policy::Policy;

use super::args::Command;
use super::promises::{self, Json};

/// The ids and names of `command` as clap read them: the first refusal, in the order given
/// ([`promises::Given::modules`]).
pub fn ids(command: &Command) -> Result<(), Error> {
    command
        .given()
        .modules
        .into_iter()
        .try_for_each(|m| m.check())
}

/// `--json` for a command that has no JSON result ([`Json::Refused`]).
pub fn json(command: &Command, json: bool) -> Result<(), Error> {
    match command.promises().json {
        Json::Refused { hint } if json => Err(Error::bad_input(format!(
            "{} has no --json",
            command.kind().name()
        ))
        .with_hint(hint)),
        Json::Refused { .. } | Json::Stdout | Json::Stderr | Json::Ignored => Ok(()),
    }
}

/// Whether `command` reads the policy (then the default file too, when no path is given).
pub fn uses_policy(command: &Command) -> bool {
    command.promises().policy == promises::Policy::Default
}

/// The policy, read now when `explicit` is given or `command` uses it; `None` otherwise (a
/// command that neither is given one nor uses one does not read the default file).
pub fn policy(
    command: &Command,
    explicit: Option<&std::path::Path>,
) -> Result<Option<Policy>, Error> {
    if explicit.is_none() && !uses_policy(command) {
        return Ok(None);
    }
    Policy::load(explicit).map(Some)
}
