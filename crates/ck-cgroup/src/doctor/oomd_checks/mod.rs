//! `doctor`'s systemd-oomd checks: whether it runs, which unit at or above the service it
//! monitors, whether its walk reaches the modules (the service's `memory.oom.group` 0), and the
//! candidates it would see there (each module, `daemon/` with its mark), with the fix for each
//! problem. [`gather`] reads (D-Bus on this path only, never on spawn or kill); [`judge`] has no
//! I/O, so each case is tested on facts built by hand.
//!
//! systemd-oomd (src/oom/oomd-util.c, `recursively_get_cgroup_context`) walks down from each
//! monitored cgroup: a child whose `memory.oom.group` is 1 is a candidate as a whole, a child
//! with no children is one, any other child is walked into. `user.oomd_omit` keeps a candidate
//! from ever being picked, `user.oomd_avoid` makes it the last pick.

use std::path::Path;

use super::{Check, Outcome};
use crate::backend::{Bus, OomdUnits};
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::oomd::{self, OomdPreference};
use crate::cgroup::wait::join;
use crate::layout::DAEMON_LEAF;
use crate::module::Root;
use crate::mutation::{self, Control};

/// At most this many cgroups deep below the root, and this many candidates, are walked.
const MAX_DEPTH: usize = 8;
const MAX_CANDIDATES: usize = 512;
/// At most this many directories, the service's and those above it, have their owner read.
const MAX_OWNERS: usize = 16;

/// One cgroup systemd-oomd would take for a candidate below the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its path relative to the service root (`daemon`, `subc-modules/a`).
    pub path: String,
    /// Its preference as read (`Err`: why it could not be read).
    pub preference: Result<OomdPreference, String>,
    /// The preference ck-cgroup set on it (`user.ck_cgroup_oomd`); `None` where it set none.
    pub set_by_ck: Option<OomdPreference>,
}

/// The facts of the systemd-oomd checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomdFacts {
    /// What systemd says (`Err`: why it could not be asked, e.g. no system bus).
    pub units: Result<OomdUnits, String>,
    /// The service's `memory.oom.group`; `None` where it could not be read (no memory controller).
    pub service_oom_group: Option<bool>,
    /// The candidates below the service; `None` when the root could not be opened.
    pub candidates: Option<Vec<Candidate>>,
    /// The owner (uid) of `daemon/`, whose marks systemd-oomd honours only by the owner rule
    /// ([`mark_honoured`]); `None` where it could not be read.
    pub daemon_owner: Option<u32>,
    /// The owner of the service's cgroup and of each directory above it, the service's first:
    /// the cgroups of [`OomdUnits::chain`], in its order (a unit's slice is its parent
    /// directory). `None` where one could not be read.
    pub owners: Vec<Option<u32>>,
}

/// A path of systemd-oomd's, on which it kills a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OomdPath {
    /// `ManagedOOMSwap=kill`: swap use above `SwapUsedLimit=`.
    Swap,
    /// `ManagedOOMMemoryPressure=kill`: memory pressure above the unit's limit.
    Pressure,
}

/// Whether systemd-oomd honours the preference marks (`user.oomd_omit`, `user.oomd_avoid`) of
/// a cgroup owned by `owner`, on `path`, for a unit whose cgroup is owned by `monitored`
/// (systemd's `oomd_fetch_cgroup_oom_preference`, PRs 18401 and 23764): a root-owned cgroup's
/// always; on the pressure path also one owned by the monitored cgroup's owner; on the swap path
/// the comparison is with the root cgroup's owner, root, so never another's.
pub fn mark_honoured(owner: u32, path: OomdPath, monitored: Option<u32>) -> bool {
    // Mutation: every mark is taken for honoured, whoever owns it.
    mutation::active(Control::OomdMarksAnyOwner)
        || owner == 0
        || match path {
            OomdPath::Swap => false,
            OomdPath::Pressure => monitored == Some(owner),
        }
}

/// Read the facts: `unit` is the service's unit (as systemd named it), `None` when systemd
/// could not be asked (`why`).
pub fn gather(root: Option<&Path>, unit: Result<&str, String>, bus: Bus) -> OomdFacts {
    let units = unit.and_then(|u| ask(bus, u));
    let opened = root.and_then(|p| Root::open(p).ok());
    let dir = opened.as_ref().map(|r| r.dir());
    OomdFacts {
        units,
        service_oom_group: dir.and_then(|d| oom_group(d, "")),
        candidates: dir.map(candidates),
        daemon_owner: dir.and_then(|d| owner_beneath(d, DAEMON_LEAF)),
        owners: root.map(owners).unwrap_or_default(),
    }
}

/// The owner of `rel` beneath the root (`fstat(2)` of the directory opened beneath it).
fn owner_beneath(dir: &CgroupDir, rel: &str) -> Option<u32> {
    let fd = dir
        .open_beneath(
            rel,
            rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::PATH,
        )
        .ok()?;
    rustix::fs::fstat(fd).ok().map(|st| st.st_uid)
}

/// The owner of `root` and of each directory above it up to the cgroup2 mount's root
/// (`stat(2)`: metadata only, nothing above the root is opened for reading or writing).
fn owners(root: &Path) -> Vec<Option<u32>> {
    root.ancestors()
        .take(MAX_OWNERS)
        .map(|p| rustix::fs::stat(p).ok().map(|st| st.st_uid))
        .collect()
}

#[cfg(feature = "systemd")]
fn ask(bus: Bus, unit: &str) -> Result<OomdUnits, String> {
    Ok(crate::backend::systemd::oomd_units::oomd_units(bus, unit))
}

#[cfg(not(feature = "systemd"))]
fn ask(_bus: Bus, _unit: &str) -> Result<OomdUnits, String> {
    Err("this build of the ck-cgroup library has no systemd support".into())
}

fn oom_group(dir: &CgroupDir, rel: &str) -> Option<bool> {
    let t = dir.read_raw(&join(rel, "memory.oom.group")).ok()?;
    match t.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// systemd-oomd's walk below the root: a child with `memory.oom.group` 1 or with no children
/// is a candidate; any other child is walked into.
pub fn candidates(dir: &CgroupDir) -> Vec<Candidate> {
    let mut out = Vec::new();
    walk(dir, "", 0, &mut out);
    out
}

fn walk(dir: &CgroupDir, rel: &str, depth: usize, out: &mut Vec<Candidate>) {
    let Ok(children) = dir.subdirs(rel) else {
        return;
    };
    for c in children {
        if out.len() >= MAX_CANDIDATES {
            return;
        }
        let path = join(rel, &c);
        let leaf = dir.subdirs(&path).map(|s| s.is_empty()).unwrap_or(true);
        if leaf || oom_group(dir, &path) == Some(true) || depth >= MAX_DEPTH {
            let preference = oomd::read_preference(dir, &path).map_err(|e| e.to_string());
            let set_by_ck = oomd::set_by_ck(dir, &path);
            out.push(Candidate {
                path,
                preference,
                set_by_ck,
            });
        } else {
            walk(dir, &path, depth + 1, out);
        }
    }
}

fn check(name: &str, outcome: Outcome, detail: String, fix: Option<&str>) -> Check {
    Check {
        name: name.to_string(),
        outcome,
        detail,
        fix: fix.map(str::to_string),
    }
}

/// The systemd-oomd checks, in the order `doctor` prints them.
pub fn judge(f: &OomdFacts) -> Vec<Check> {
    let units = f.units.as_ref();
    let active = units.map(|u| u.active.clone()).map_err(String::clone);
    let monitored: Result<Vec<String>, String> = match units {
        Ok(u) => u.chain.clone().map(|c| {
            c.iter()
                .filter(|m| m.monitors())
                .map(|m| {
                    let mut how = Vec::new();
                    if m.swap.as_deref() == Some("kill") {
                        how.push("ManagedOOMSwap=kill");
                    }
                    if m.pressure.as_deref() == Some("kill") {
                        how.push("ManagedOOMMemoryPressure=kill");
                    }
                    format!("{} ({})", m.unit, how.join(", "))
                })
                .collect()
        }),
        Err(e) => Err(e.clone()),
    };
    // The candidates matter where systemd-oomd runs and monitors the service, or where that is
    // not known: a Fail then, a Warn when it is known not to act.
    let acts = match (&active, &monitored) {
        (Ok(Ok(Some(a))), Ok(m)) => Some(a == "active" && !m.is_empty()),
        (Ok(Ok(_)), Ok(_)) => Some(false),
        _ => None,
    };
    // Without memory.oom.group the memory controller is not the service's: oomd cannot act.
    let acts = acts
        .filter(|_| f.service_oom_group.is_some())
        .or(match f.service_oom_group {
            None => Some(false),
            Some(_) => None,
        });
    let problem = if acts == Some(false) {
        Outcome::Warn
    } else {
        Outcome::Fail
    };
    let mut out = vec![running(&active), monitors(&monitored)];
    out.push(walk_check(f.service_oom_group, problem));
    out.push(candidates_check(f.candidates.as_deref(), problem));
    if let Some(c) = foreign_marks_check(f.candidates.as_deref()) {
        out.push(c);
    }
    if let Some(c) = marks_check(f, problem) {
        out.push(c);
    }
    out
}

/// Whether systemd-oomd honours daemon/'s mark on each path it would act on ([`mark_honoured`]):
/// `None` where daemon/ is no candidate with a mark (the candidates check says why).
fn marks_check(f: &OomdFacts, problem: Outcome) -> Option<Check> {
    let name = "systemd-oomd marks";
    let marked = f.candidates.as_deref()?.iter().any(|k| {
        k.path == DAEMON_LEAF
            && matches!(
                k.preference,
                Ok(OomdPreference::Omit | OomdPreference::Avoid)
            )
    });
    if !marked {
        return None;
    }
    let fix = "make daemon/ root-owned (as root: chown root: SERVICE/daemon, the directory alone; its \
               mark then counts on every path), or keep the daemon's swap small so that the swap \
               path never ranks it first (memory.swap.max on daemon/, MemorySwapMax= on the service)";
    let Some(owner) = f.daemon_owner else {
        return Some(check(
            name,
            Outcome::Warn,
            "daemon/'s owner could not be read: whether systemd-oomd honours its mark is unknown"
                .into(),
            None,
        ));
    };
    if mark_honoured(owner, OomdPath::Swap, None) {
        return Some(check(
            name,
            Outcome::Ok,
            "daemon/ is root-owned: systemd-oomd honours its mark on the swap and the pressure path"
                .into(),
            None,
        ));
    }
    let chain = f.units.as_ref().ok().and_then(|u| u.chain.as_ref().ok());
    let mut ignored = Vec::new();
    let mut honoured = Vec::new();
    let mut swap_seen = false;
    for (i, m) in chain.into_iter().flatten().enumerate() {
        let monitored = f.owners.get(i).copied().flatten();
        if m.swap.as_deref() == Some("kill") {
            swap_seen = true;
            // Never honoured here: only a root-owned daemon/ was, above.
            ignored.push(format!(
                "the swap path ({}): only root-owned cgroups' marks count there",
                m.unit
            ));
        }
        if m.pressure.as_deref() == Some("kill") {
            let line = format!(
                "the pressure path ({}, owned by {})",
                m.unit,
                monitored.map_or("an unknown uid".into(), |u| format!("uid {u}"))
            );
            if mark_honoured(owner, OomdPath::Pressure, monitored) {
                honoured.push(line);
            } else {
                ignored.push(format!(
                    "{line}: only root's marks and its owner's count there"
                ));
            }
        }
    }
    let whose = format!("daemon/ is owned by uid {owner}, not root");
    if !ignored.is_empty() {
        let mut detail = format!(
            "{whose}: systemd-oomd ignores its mark on {}",
            ignored.join("; ")
        );
        if !honoured.is_empty() {
            detail += &format!("; it honours it on {}", honoured.join(", "));
        }
        return Some(check(name, problem, detail, Some(fix)));
    }
    let mut detail = if honoured.is_empty() {
        format!("{whose}; no unit seen here makes systemd-oomd act on the service")
    } else {
        format!(
            "{whose}; systemd-oomd honours its mark on {}",
            honoured.join(", ")
        )
    };
    if !swap_seen {
        // A user manager's chain ends at its own -.slice: the system's (ManagedOOMSwap=kill on
        // Fedora and Ubuntu) is not seen from it.
        detail += "; a ManagedOOMSwap=kill above what was asked (the system's -.slice, for a \
                   user manager's service) would ignore it";
        return Some(check(name, Outcome::Warn, detail, Some(fix)));
    }
    Some(check(name, Outcome::Ok, detail, None))
}

fn running(active: &Result<Result<Option<String>, String>, String>) -> Check {
    let name = "systemd-oomd";
    match active {
        Ok(Ok(Some(a))) if a == "active" => check(
            name,
            Outcome::Ok,
            "systemd-oomd.service is active".into(),
            None,
        ),
        Ok(Ok(Some(a))) => check(
            name,
            Outcome::Ok,
            format!(
                "systemd-oomd.service is {a}: it kills nothing now (the checks below say what it would see)"
            ),
            None,
        ),
        Ok(Ok(None)) => check(
            name,
            Outcome::Ok,
            "systemd-oomd.service is not loaded (not installed): only the kernel's OOM killer acts"
                .into(),
            None,
        ),
        Ok(Err(e)) | Err(e) => check(
            name,
            Outcome::Warn,
            format!("unknown: no system bus ({e})"),
            Some("run `ck-cgroup doctor` on the host with systemd, where the system bus is"),
        ),
    }
}

fn monitors(m: &Result<Vec<String>, String>) -> Check {
    let name = "systemd-oomd monitors";
    match m {
        Ok(v) if v.is_empty() => check(
            name,
            Outcome::Ok,
            "no unit at or above the service has ManagedOOMSwap=kill or ManagedOOMMemoryPressure=kill: systemd-oomd does not act on this service".into(),
            None,
        ),
        Ok(v) => check(
            name,
            Outcome::Ok,
            format!("monitored from {}: every leaf below the service, and each module with memory.oom.group 1, is a candidate", v.join(", ")),
            None,
        ),
        Err(e) => check(
            name,
            Outcome::Warn,
            format!("unknown: no system bus ({e})"),
            Some("run `ck-cgroup doctor` on the host with systemd, where the system bus is"),
        ),
    }
}

fn walk_check(oom_group: Option<bool>, problem: Outcome) -> Check {
    let name = "systemd-oomd walk";
    match oom_group {
        Some(false) => check(
            name,
            Outcome::Ok,
            "memory.oom.group 0 on the service: systemd-oomd walks into it and takes each module for a candidate of its own".into(),
            None,
        ),
        Some(true) => check(
            name,
            problem,
            "memory.oom.group 1 on the service: systemd-oomd takes the whole service for one candidate, and its kill takes the daemon and every module".into(),
            Some("OOMPolicy=continue in the unit (the packaged ck-subc.service has it), then restart the service"),
        ),
        None => check(
            name,
            Outcome::Warn,
            "the service has no readable memory.oom.group (the memory controller is not delegated to it): systemd-oomd cannot act on it".into(),
            Some("Delegate=memory (or yes) in the unit, on a host with the memory controller on cgroup2"),
        ),
    }
}

/// The marks on the candidates that ck-cgroup did not set (no `user.ck_cgroup_oomd`, or another
/// value): a process of the daemon's uid, a module's included, can set `user.oomd_omit` on its
/// own cgroup, and systemd-oomd then never picks it. `None` where there are no candidates.
fn foreign_marks_check(c: Option<&[Candidate]>) -> Option<Check> {
    let name = "systemd-oomd foreign marks";
    let c = c?;
    // Mutation: every mark is taken for ck-cgroup's own.
    if mutation::active(Control::ForeignMarksUnflagged) {
        return Some(check(name, Outcome::Ok, "none".into(), None));
    }
    let foreign: Vec<String> = c
        .iter()
        .filter_map(|k| match &k.preference {
            Ok(p) if *p != OomdPreference::None && k.set_by_ck != Some(*p) => {
                Some(format!("{}/ ({p})", crate::id::shown(&k.path)))
            }
            _ => None,
        })
        .collect();
    Some(if foreign.is_empty() {
        check(
            name,
            Outcome::Ok,
            "every mark on a candidate is one ck-cgroup set".into(),
            None,
        )
    } else {
        check(
            name,
            Outcome::Warn,
            format!(
                "{}: marked by someone other than ck-cgroup (a process of the cgroup's owner, a module's own included, can set user.oomd_omit or user.oomd_avoid); systemd-oomd honours it",
                foreign.join(", ")
            ),
            Some(
                "restore each with `ck-cgroup set ID --oomd none` (or the policy's value; `ck-cgroup init` for daemon/), and run modules under a uid of their own so they cannot mark themselves (docs/operations.md)",
            ),
        )
    })
}

fn candidates_check(c: Option<&[Candidate]>, problem: Outcome) -> Check {
    let name = "systemd-oomd candidates";
    let Some(c) = c else {
        return check(
            name,
            Outcome::Warn,
            "the service root could not be opened: its candidates are unknown".into(),
            None,
        );
    };
    let shown: Vec<String> = c
        .iter()
        .map(|k| {
            // A path a module chose (a sub-cgroup's name): shown escaped.
            let path = crate::id::shown(&k.path);
            match &k.preference {
                Ok(OomdPreference::None) => format!("{path}/"),
                Ok(p) => format!("{path}/ ({p})"),
                Err(_) => format!("{path}/ (mark unreadable)"),
            }
        })
        .collect();
    let list = if shown.is_empty() {
        "none".to_string()
    } else {
        shown.join(", ")
    };
    match c.iter().find(|k| k.path == DAEMON_LEAF) {
        Some(Candidate {
            preference: Ok(OomdPreference::Omit),
            ..
        }) => check(
            name,
            Outcome::Ok,
            format!(
                "{list}: daemon/ has user.oomd_omit, systemd-oomd never picks the daemon's leaf"
            ),
            None,
        ),
        Some(Candidate {
            preference: Err(e), ..
        }) => check(
            name,
            problem,
            format!(
                "{list}: daemon/'s mark cannot be read ({e}): systemd-oomd may pick the daemon's own leaf"
            ),
            Some(
                "user.* xattrs on cgroup2 need kernel 5.7+; run `ck-cgroup init` on such a kernel",
            ),
        ),
        Some(Candidate {
            preference: Ok(p), ..
        }) => check(
            name,
            problem,
            format!(
                "{list}: daemon/ is a candidate with preference {p}: systemd-oomd may pick the daemon's own leaf, and the whole service goes"
            ),
            Some(
                "run `ck-cgroup init` (it marks daemon/ user.oomd_omit; or ck-cgroup init --oomd-daemon omit)",
            ),
        ),
        None => check(
            name,
            Outcome::Ok,
            format!("{list}: daemon/ is no candidate (it has sub-cgroups, or is not there)"),
            None,
        ),
    }
}

#[cfg(test)]
mod tests;
