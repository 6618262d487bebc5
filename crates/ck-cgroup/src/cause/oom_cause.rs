//! Which limit an OOM kill in a module came from: the module's own `memory.max` (or one of its
//! sub-cgroups'), an ancestor's (named), or none, the whole machine's memory. The kernel counts
//! an OOM event, `oom`, in `memory.events` of the cgroup whose limit was reached and of each of
//! its ancestors (hierarchical), and in `memory.events.local` of that cgroup alone; a kill for the
//! machine's memory counts `oom_kill` in the victim's cgroups but no `oom` in any. So between two
//! reads of the counters ([`OomCounters::read`]) a rise of the module's `oom_kill` is:
//!
//! - the module's own, where its hierarchical `oom` rose too (its restart budget applies);
//! - else the nearest ancestor's whose `memory.events.local` `oom` rose (not the module's fault);
//! - else the machine's, where every ancestor's local counter could be read both times;
//! - else unknown, with why: never a guess, and never "not OOM" for a counter that could not be
//!   read (no memory controller, a kernel without `memory.events.local`).
//!
//! Where two causes fall between the same two reads, the most specific is named (the module's,
//! then the nearest ancestor's).

use serde::{Deserialize, Serialize};

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::wait::join;
use crate::mutation::{self, Control};

/// Where the limit was that made the kernel's OOM killer kill in a module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OomCause {
    /// The module's own limit, or one below it: its `memory.events` `oom` rose.
    Module,
    /// An ancestor's limit: its `memory.events.local` `oom` rose.
    Ancestor {
        /// The ancestor's absolute path.
        cgroup: String,
    },
    /// No cgroup's limit: the machine was out of memory (no `oom` rose at or above the module).
    Machine,
}

/// The counters that tell an OOM kill's cause, as read at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OomCounters {
    /// The module's `memory.events` `oom` (hierarchical); `None` where it could not be read.
    pub module_oom: Option<u64>,
    /// The module's `memory.events` `oom_kill`.
    pub module_oom_kill: Option<u64>,
    /// Each ancestor's path and its `memory.events.local` `oom`, the nearest first, up to (not
    /// including) the hierarchy's root, which has no memory files.
    pub ancestors: Vec<(String, Option<u64>)>,
}

impl OomCounters {
    /// Read the counters of the module at `rel` beneath `root` (the service's root directory,
    /// whose absolute path is `root.path()`): the module's `memory.events`, then
    /// `memory.events.local` of each directory above it beneath the root, of the root, and of
    /// each directory above the root up to the cgroup2 mount (read beneath the mount's own
    /// handle, `mount`; `None` skips those).
    pub fn read(root: &CgroupDir, rel: &str, mount: Option<&CgroupDir>) -> OomCounters {
        let events = root.read_flat_keyed(&join(rel, "memory.events"));
        let key = |k: &str| events.as_ref().and_then(|m| m.get(k).copied());
        let local_oom = |dir: &CgroupDir, r: &str| {
            dir.read_flat_keyed(&join(r, "memory.events.local"))
                .and_then(|m| m.get("oom").copied())
        };
        let mut ancestors = Vec::new();
        each_ancestor(root, rel, mount, |path, dir, r| {
            ancestors.push((path, local_oom(dir, r)));
        });
        OomCounters {
            module_oom: key("oom"),
            module_oom_kill: key("oom_kill"),
            ancestors,
        }
    }
}

/// Call `f` with each directory above the module at `rel` beneath `root`, the nearest first: its
/// absolute path, the handle it is read beneath and its path relative to that handle. Those
/// beneath the root, the root itself, then (with `mount`, the cgroup2 mount's handle) each
/// directory above the root up to, not including, the mount's root.
pub(crate) fn each_ancestor(
    root: &CgroupDir,
    rel: &str,
    mount: Option<&CgroupDir>,
    mut f: impl FnMut(String, &CgroupDir, &str),
) {
    let mut r = rel;
    while let Some((parent, _)) = r.rsplit_once('/') {
        f(
            root.display_path(parent).display().to_string(),
            root,
            parent,
        );
        r = parent;
    }
    if !rel.is_empty() {
        f(root.path().display().to_string(), root, "");
    }
    if let Some(m) = mount
        && let Ok(above) = root.path().strip_prefix(m.path())
    {
        let mut p = above.parent();
        while let Some(dir) = p.filter(|d| !d.as_os_str().is_empty()) {
            let rel = dir.to_string_lossy();
            f(m.display_path(&rel).display().to_string(), m, &rel);
            p = dir.parent();
        }
    }
}

/// The cause of the OOM kills in a module between the reads `before` and `now`: `Ok(None)` where
/// its `oom_kill` did not rise; `Err` saying why where the cause cannot be told.
pub fn cause(before: &OomCounters, now: &OomCounters) -> Result<Option<OomCause>, String> {
    let (Some(b), Some(n)) = (before.module_oom_kill, now.module_oom_kill) else {
        return Err("the module's memory.events could not be read (no memory controller)".into());
    };
    if n <= b {
        return Ok(None);
    }
    // Mutation: every OOM kill is the module's own (what a restart budget charged before).
    if mutation::active(Control::OomCauseAlwaysModule) {
        return Ok(Some(OomCause::Module));
    }
    match (before.module_oom, now.module_oom) {
        (Some(b), Some(n)) if n > b => return Ok(Some(OomCause::Module)),
        (Some(_), Some(_)) => {}
        _ => return Err("the module's memory.events has no oom counter".into()),
    }
    let mut unreadable = None;
    for (path, n) in &now.ancestors {
        let b = before
            .ancestors
            .iter()
            .find(|(p, _)| p == path)
            .and_then(|(_, v)| *v);
        match (b, n) {
            (Some(b), Some(n)) if n > &b => {
                return Ok(Some(OomCause::Ancestor {
                    cgroup: path.clone(),
                }));
            }
            (Some(_), Some(_)) => {}
            _ => {
                unreadable.get_or_insert(path.clone());
            }
        }
    }
    match unreadable {
        Some(p) => Err(format!(
            "memory.events.local of {p} could not be read: the limit above the module is unknown"
        )),
        None => Ok(Some(OomCause::Machine)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(oom: u64, kill: u64, anc: &[(&str, Option<u64>)]) -> OomCounters {
        OomCounters {
            module_oom: Some(oom),
            module_oom_kill: Some(kill),
            ancestors: anc.iter().map(|(p, v)| (p.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn each_cause_from_its_counters() {
        let anc = |a: u64, b: u64| [("/r/subc-modules", Some(a)), ("/r", Some(b))];
        let before = at(0, 0, &anc(0, 0));
        // No kill: no cause.
        assert_eq!(cause(&before, &at(0, 0, &anc(0, 0))), Ok(None));
        // Its own limit.
        assert_eq!(
            cause(&before, &at(1, 1, &anc(0, 0))),
            Ok(Some(OomCause::Module))
        );
        // subc-modules/'s limit, the nearest that rose.
        assert_eq!(
            cause(&before, &at(0, 2, &anc(1, 0))),
            Ok(Some(OomCause::Ancestor {
                cgroup: "/r/subc-modules".into()
            }))
        );
        assert_eq!(
            cause(&before, &at(0, 1, &anc(0, 3))),
            Ok(Some(OomCause::Ancestor {
                cgroup: "/r".into()
            }))
        );
        // No limit anywhere: the machine.
        assert_eq!(
            cause(&before, &at(0, 1, &anc(0, 0))),
            Ok(Some(OomCause::Machine))
        );
    }

    #[test]
    fn unknown_is_never_a_guess() {
        // No memory controller (this host): unknown, not "no kill".
        let none = OomCounters::default();
        assert!(cause(&none, &none).is_err());
        // An ancestor that could not be read: not the machine.
        let before = at(0, 0, &[("/r", None)]);
        let e = cause(&before, &at(0, 1, &[("/r", None)])).unwrap_err();
        assert!(e.contains("/r"), "{e}");
        // The module's own rise is known without the ancestors.
        assert_eq!(
            cause(&before, &at(1, 1, &[("/r", None)])),
            Ok(Some(OomCause::Module))
        );
    }
}
