//! Every command's input checked before it looks at a module (or at the root): the ids and
//! module names it was given, and the policy file. Bad input is exit 2 and one line naming it,
//! whatever else is wrong later (a missing module, a root not laid out).
//!
//! - a module to make or change (`create`, `set`, `place`, `exec`, `run`) is a module id
//!   ([`ModuleId::new`]);
//! - a module to act on or show (`kill`, `remove`, `freeze`, `thaw`, `status`, `watch`,
//!   `prune --keep`) is an id or a directory name as `list` shows it
//!   ([`ck_cgroup::id::module_name`]: never `..`, `a/b`, `cgroup.procs`);
//! - the policy: `--policy` (or `CK_CGROUP_POLICY`) is read and parsed by every command that is
//!   given one, and the default file by those that use it (`create`, `exec`, `run`, `apply`,
//!   `watch`); the parsed policy is kept for the command ([`Ctx::policy`]).

use ck_cgroup::policy::Policy;
use ck_cgroup::{Error, ModuleId};

use super::args::Command;

/// The ids and names of `command`, checked in the order given.
pub fn ids(command: &Command) -> Result<(), Error> {
    let (ids, names): (Vec<&String>, Vec<&String>) = match command {
        Command::Create { id, .. }
        | Command::Set { id, .. }
        | Command::Place { id, .. }
        | Command::Exec { id, .. }
        | Command::Run { id, .. } => (vec![id], vec![]),
        Command::Kill { id, .. }
        | Command::Remove { id }
        | Command::Freeze { id, .. }
        | Command::Thaw { id, .. } => (vec![], vec![id]),
        Command::Status { ids, .. } | Command::Watch { ids, .. } => (vec![], ids.iter().collect()),
        Command::Prune { keep, .. } => (vec![], keep.iter().collect()),
        _ => (vec![], vec![]),
    };
    for id in ids {
        ModuleId::new(id)?;
    }
    for name in names {
        ck_cgroup::id::module_name(name)?;
    }
    Ok(())
}

/// Whether `command` reads the policy (then the default file too, when no path is given).
pub fn uses_policy(command: &Command) -> bool {
    matches!(
        command,
        Command::Create { .. }
            | Command::Exec { .. }
            | Command::Run { .. }
            | Command::Apply { .. }
            | Command::Watch { .. }
    )
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
