//! One function per command, `cmd_<name>`, called by `main.rs::dispatch` with the command's arguments
//! and its backend; each checks its input, makes one library call and renders the result. What
//! several commands share is here: the context ([`Ctx`]), the limits a module is made with
//! ([`module_limits`], the one place flags and policy merge) and [`create_with_limits`].

mod create_set_apply;
mod doctor;
mod exec;
mod freeze_thaw;
mod init;
mod kill_prune;
mod list;
mod place_remove;
mod ps;
mod run;
mod sandbox;
mod status;
mod top;
mod watch;

use std::path::PathBuf;

use ck_cgroup::limits::Limits;
use ck_cgroup::policy::{Policy, merge};
use ck_cgroup::{Error, ModuleId, Root};

use super::args::LimitArgs;
use super::exit::note;
use super::output::Output;

pub use create_set_apply::{cmd_apply, cmd_create, cmd_set};
pub use doctor::cmd_doctor;
pub use exec::cmd_exec;
pub use freeze_thaw::cmd_freeze;
pub use init::{cmd_init, cmd_init_daemon};
pub use kill_prune::{PruneArgs, cmd_kill, cmd_prune};
pub use list::cmd_list;
pub use place_remove::{cmd_place, cmd_remove};
pub use ps::cmd_ps;
pub use run::{Namespaces, cmd_run};
pub use sandbox::{cmd_sandbox, cmd_sandbox_prune};
pub use status::{StatusView, cmd_status};
pub use top::cmd_top;
pub use watch::cmd_watch;

/// The global options every command may use.
pub struct Ctx {
    /// `--root` (or `CK_CGROUP_ROOT`), as given.
    pub root: Option<PathBuf>,
    /// `--policy` (or `CK_CGROUP_POLICY`), as given.
    pub policy: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
    /// The renderer (human or `--json`).
    pub out: Output,
    /// The policy as read before the command began (`cli::validate::policy`), when it was.
    pub loaded: Option<Policy>,
}

impl Ctx {
    pub fn new(root: Option<PathBuf>, policy: Option<PathBuf>, json: bool) -> Ctx {
        Ctx {
            root,
            policy,
            json,
            out: Output::new(json),
            loaded: None,
        }
    }

    /// The policy file (`--policy`, else the default path when it exists): the one read before
    /// the command began, when it was.
    fn policy(&self) -> Result<Policy, Error> {
        match &self.loaded {
            Some(p) => Ok(p.clone()),
            None => Policy::load(self.policy.as_deref()),
        }
    }
}

/// The limits module `id` is made with (`create`, `exec`, `run`): the flags, over the policy's
/// for `id` (its module entry, over its defaults).
fn module_limits(ctx: &Ctx, id: &ModuleId, flags: &LimitArgs) -> Result<Limits, Error> {
    let policy = ctx.policy()?;
    Ok(merge(&flags.limits(), &policy.for_module(id).limits))
}

/// `exec` and `run` with limits (flags and policy): the module made with them, checked before
/// anything is made; without limits nothing here (the spawn makes the module).
pub fn create_with_limits(
    root: &Root,
    id: &ModuleId,
    l: &Limits,
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
