//! A module's limits, written through the service root: `check_limits`, `create_module`,
//! `set_limits`, `create_with_limits` and the controllers the modules have.

use super::{CreateReport, Root};
use crate::cgroup::oomd::{self, OomdPreference};
use crate::cgroup::parse;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::id::ModuleId;
use crate::layout::ModuleRef;
use crate::limits::{Applied, LimitReport, Limits, Skipped, Write, creation_limits, sort_writes};

impl Root {
    /// The controllers enabled for the modules (`subc-modules/cgroup.subtree_control`).
    pub fn module_controllers(&self) -> Result<Vec<String>> {
        match self.dir().read_raw("subc-modules/cgroup.subtree_control") {
            Ok(t) => Ok(parse::controllers(&t)),
            Err(rustix::io::Errno::NOENT) => Ok(Vec::new()),
            Err(e) => Err(Error::io(
                "read",
                self.dir()
                    .display_path("subc-modules/cgroup.subtree_control"),
                e,
            )),
        }
    }

    /// Check that every limit's controller is enabled for the modules. Without `best_effort` a
    /// missing one is bad input (exit 2) naming the controller and the fix; with it, the limits
    /// that cannot be written are returned as skipped. Nothing is written here.
    pub fn check_limits(
        &self,
        limits: &Limits,
        best_effort: bool,
    ) -> Result<(Vec<Write>, Vec<Skipped>)> {
        sort_writes(
            &self.module_controllers()?,
            self.path(),
            limits,
            best_effort,
        )
    }

    /// Make the module `subc-modules/<id>` if it does not exist, and write `asked`: the one way
    /// a module is made, whichever path asks for it ([`Root::create`], [`Root::enter`] for
    /// `exec`, [`Root::place`], [`Root::spawn`] for `run`, [`Root::set_limits`],
    /// [`Root::create_with_limits`]). `asked` is checked first ([`Root::check_limits`]):
    /// without `best_effort` a missing controller is bad input and nothing is made. A module made
    /// now gets [`creation_limits`] (`memory.oom.group` 1 by default where the memory controller
    /// is enabled), before any process can be in it; an existing one gets `asked` only. When a
    /// write to a module made now fails, the module is removed again.
    pub fn create_module(
        &self,
        id: &ModuleId,
        asked: &Limits,
        best_effort: bool,
    ) -> Result<(CreateReport, LimitReport)> {
        // The spawn path (no limits) reads nothing before the mkdir.
        let checked = if asked.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            self.check_limits(asked, best_effort)?
        };
        let made = self.make_module_dir(id)?;
        let rel = ModuleRef::ck(id).rel();
        // Leave nothing half-made: a module made now whose writes fail is removed again (a
        // process that entered it meanwhile makes that rmdir fail, and the module stays).
        let undo = |e: Error| {
            if made.created {
                let _ = self.dir().rmdir_raw(&rel);
            }
            e
        };
        let (writes, skipped) = if made.created {
            // Read after the mkdir: making subc-modules/ may have enabled controllers.
            self.module_controllers()
                .and_then(|enabled| {
                    let all = creation_limits(&enabled, asked);
                    sort_writes(&enabled, self.path(), &all, best_effort)
                })
                .map_err(undo)?
        } else {
            checked
        };
        let mut applied = Vec::new();
        for (file, value) in writes {
            self.dir().write(&join(&rel, file), &value).map_err(undo)?;
            applied.push(Applied {
                file: file.into(),
                value,
            });
        }
        let mut skipped = skipped;
        if let Some(pref) = asked.oomd {
            match self.oomd_preference(&rel, pref, best_effort) {
                Ok(Ok(a)) => applied.push(a),
                Ok(Err(s)) => skipped.push(s),
                Err(e) => return Err(undo(e)),
            }
        }
        Ok((
            made,
            LimitReport {
                module: id.clone(),
                applied,
                skipped,
            },
        ))
    }

    /// Set the module `rel`'s systemd-oomd preference ([`oomd::mark`], read back): what was
    /// applied, or under `best_effort` what was skipped; without it a refusal is an error.
    fn oomd_preference(
        &self,
        rel: &str,
        pref: OomdPreference,
        best_effort: bool,
    ) -> Result<std::result::Result<Applied, Skipped>> {
        let m = oomd::mark(self.dir(), rel, pref);
        let file = match pref.xattr() {
            Some(x) => x,
            None => oomd::PREFERENCE_SOURCE,
        };
        match (m.error, m.value) {
            (None, Some(v)) if v == pref => Ok(Ok(Applied {
                file: file.into(),
                value: match pref {
                    OomdPreference::None => "removed".into(),
                    _ => "1".into(),
                },
            })),
            (error, v) => {
                let reason = error.unwrap_or_else(|| {
                    format!(
                        "read back {} instead of {pref}",
                        v.map_or("nothing", OomdPreference::name)
                    )
                });
                if best_effort {
                    return Ok(Err(Skipped {
                        file: file.into(),
                        controller: "xattr".into(),
                        reason,
                    }));
                }
                Err(Error::failed(format!(
                    "systemd-oomd preference {pref} of {}: {reason}",
                    self.dir().display_path(rel).display()
                ))
                .with_hint("pass --best-effort to apply the other limits without it"))
            }
        }
    }

    /// Apply limits to a module, made if needed ([`Root::create_module`]: checked first, and a
    /// module made now gets the default `memory.oom.group` too).
    pub fn set_limits(
        &self,
        id: &ModuleId,
        limits: &Limits,
        best_effort: bool,
    ) -> Result<LimitReport> {
        self.create_module(id, limits, best_effort)
            .map(|(_, report)| report)
    }

    /// Make a module with limits ([`Root::create_module`]): checked first (nothing is made when
    /// a controller is missing and `best_effort` is off); a module made now gets
    /// `memory.oom.group` 1 by default where the memory controller is enabled, so an OOM takes
    /// the module's whole tree and nothing else; an existing one gets `limits` only.
    pub fn create_with_limits(
        &self,
        id: &ModuleId,
        limits: &Limits,
        best_effort: bool,
    ) -> Result<LimitReport> {
        self.set_limits(id, limits, best_effort)
    }

    /// `exec`: move this process into module `id`, made with `limits` when it is not there
    /// ([`Root::create_with_limits`], then [`Root::enter`]); returns the limits skipped
    /// (`best_effort`, a controller missing). Without limits, one write to `cgroup.procs` (and
    /// a mkdir the first time); with limits, checked before anything is made. The systemd
    /// backend's `Scopes::enter_with_limits` is the same operation on a scope.
    pub fn enter_with_limits(
        &self,
        id: &ModuleId,
        limits: &Limits,
        best_effort: bool,
    ) -> Result<Vec<Skipped>> {
        let skipped = if limits.is_empty() {
            Vec::new()
        } else {
            self.create_with_limits(id, limits, best_effort)?.skipped
        };
        self.enter(id)?;
        Ok(skipped)
    }
}
