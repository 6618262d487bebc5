//! `prune`: every module that is not kept, removed where empty and stopped first under `kill`;
//! the decisions shared by both backends ([`prune_entries`]).

use super::{ModuleEntry, PruneAction, PruneEntry, Root, StopReport};
use crate::cgroup::tree::Removal;
use crate::error::{Error, Result};
use crate::id::DirName;
use crate::layout::{Layout, ModuleName, ModuleRef};
use crate::stop::StopOptions;

/// `prune`'s decisions over `modules`, the same for every layout: `--keep` ones are kept;
/// populated ones are stopped with `stop` under `kill` and skipped otherwise; empty ones are
/// removed with `remove`; `dry_run` only says what would be done.
pub(crate) fn prune_entries(
    modules: Vec<ModuleEntry>,
    dry_run: bool,
    kill: bool,
    keep: &[ModuleName],
    stop: impl Fn(&ModuleRef) -> Result<StopReport>,
    remove: impl Fn(&ModuleRef) -> Result<Removal>,
) -> Vec<PruneEntry> {
    let mut out = Vec::new();
    for m in modules {
        let mut e = PruneEntry {
            name: m.name.clone(),
            layout: m.layout,
            procs: m.procs,
            action: PruneAction::Kept,
            stop: None,
            error: None,
        };
        let populated = m.procs != Some(0) || m.populated != Some(false);
        let this = ModuleRef {
            layout: m.layout,
            name: m.name.clone(),
        };
        if keep.iter().any(|k| k.names(&this, m.module.as_ref())) {
            e.action = PruneAction::Kept;
        } else if populated && !kill {
            e.action = PruneAction::SkippedPopulated;
        } else if dry_run {
            e.action = if populated {
                PruneAction::WouldKill
            } else {
                PruneAction::WouldRemove
            };
        } else if populated {
            stop_entry(&mut e, &this, &stop);
        } else {
            match remove(&this) {
                // Removed, or gone already.
                Ok(Removal::Removed | Removal::Gone) => e.action = PruneAction::Removed,
                // Filled after the listing: a live module now, stopped only under --kill.
                Ok(Removal::Populated(_)) if kill => stop_entry(&mut e, &this, &stop),
                Ok(Removal::Populated(_)) => e.action = PruneAction::SkippedPopulated,
                Err(err) => {
                    e.action = PruneAction::Failed;
                    e.error = Some(err.to_string());
                }
            }
        }
        out.push(e);
    }
    out
}

fn stop_entry(e: &mut PruneEntry, m: &ModuleRef, stop: &impl Fn(&ModuleRef) -> Result<StopReport>) {
    // A stop that did not end is an error that carries its report: the entry shows it.
    match stop(m).or_else(Error::into_stop_report) {
        Ok(r) => {
            e.action = if r.ok() {
                PruneAction::Killed
            } else {
                PruneAction::Failed
            };
            e.error = r.error.clone();
            e.stop = Some(r);
        }
        Err(err) => {
            e.action = PruneAction::Failed;
            e.error = Some(err.to_string());
        }
    }
}

impl Root {
    /// Remove every empty module that is not in `keep`; with `kill`, also stop and remove the
    /// populated ones (the orphans of a daemon that died). With `dry_run`, change nothing and say
    /// what would be done. Both layouts, ours and the daemon's, are pruned. Unless `dry_run`,
    /// the modes of the modules' directories and control files are restored first where this
    /// process's uid owns them, so that what a module did to them neither hides it from the
    /// listing nor defeats the stop. A module filled after the listing (a spawn racing the
    /// prune) is stopped under `kill`, left alone otherwise; one removed meanwhile is gone.
    pub fn prune(
        &self,
        dry_run: bool,
        kill: bool,
        keep: &[ModuleName],
        opts: &StopOptions,
    ) -> Result<Vec<PruneEntry>> {
        if !dry_run {
            self.restore_layout_modes();
            for layout in [Layout::Ck, Layout::Daemon] {
                for name in self.dir.subdirs(layout.dir())? {
                    if let Ok(name) = DirName::from_text(&name) {
                        let m = ModuleRef { layout, name };
                        crate::cgroup::tree::restore_modes(&self.dir, &m.rel());
                    }
                }
            }
        }
        Ok(prune_entries(
            self.list()?,
            dry_run,
            kill,
            keep,
            |m| self.stop(m, opts),
            |m| {
                Ok(self
                    .remove_module(&ModuleName::from(m))?
                    .map_or(Removal::Gone, |(_, removal)| removal))
            },
        ))
    }
}
