//! Why a module's main process died, told from the counters the kernel, systemd-oomd and
//! ck-cgroup leave on the module's directory and on every directory above it, read twice: when
//! the process was spawned (the baseline) and when it had died ([`DeathCounters::read`]). Only
//! what rose between the two reads counts, so a directory reused by a later spawn does not carry
//! an earlier death into this one.
//!
//! A mark is evidence, not proof: `user.ck_cgroup_stops` and `user.oomd_ooms` are xattrs that
//! anyone who owns the directory can raise, a module of the daemon's uid included. So a mark is
//! believed only where the death agrees with it ([`judge`]); one that does not is named in
//! [`Verdict::unconfirmed`] and the death is told as if it had not risen.
//!
//! The order in which [`judge`] decides:
//!
//! 1. A stop this process made of the module ended it (the library's `Root::stop`, `run`'s
//!    stop), known without any mark: [`Cause::Stopped`].
//! 2. `user.ck_cgroup_stops` of the module rose (a stop of another process: the helper's `kill`,
//!    `prune --kill`) and the death agrees: the process was killed by `SIGKILL` or by a signal a
//!    stop sends (any but the crash signals `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGABRT`,
//!    `SIGSYS`, `SIGTRAP`, `SIGXCPU`, `SIGXFSZ`), or it exited with 0: [`Cause::Stopped`]. An
//!    exit with another code or a crash signal is no stop's doing: the mark is unconfirmed.
//! 3. It exited with a code: [`Cause::Exited`].
//! 4. A signal other than `SIGKILL` (the OOM killers send only `SIGKILL`): [`Cause::Signal`].
//! 5. `SIGKILL`, and the module's `memory.events` `oom_kill` rose: the kernel's OOM killer, with
//!    the limit that made it kill ([`oom_cause::cause`]): [`Cause::KernelOom`].
//! 6. systemd-oomd's `user.oomd_ooms` rose on the module, else on the nearest ancestor where it
//!    rose and no process under that ancestor that started before the spawn still runs
//!    (systemd-oomd kills every process of the cgroup it picks, so such a survivor proves that
//!    no kill of the whole happened: the mark is unconfirmed): [`Cause::Oomd`].
//! 7. A counter of steps 5 and 6 could not be read both times (no memory controller, an
//!    unreadable xattr): [`Cause::Unknown`], saying which. Unknown is never read as "not OOM".
//! 8. Otherwise a plain `SIGKILL` from someone who leaves no mark: [`Cause::Signal`].
//!
//! What stays forgeable: a module that raises a mark and then kills itself with `SIGKILL` (or
//! the stop's signal) dies as a real stop or kill does. The cure is a uid of its own per module
//! (`ModuleCommand::uid`/`gid`): a module that does not own its directory cannot raise its marks.

use serde::{Deserialize, Serialize};

use super::counters::KillCounters;
use crate::cause::oom_cause::{self, OomCause, OomCounters, each_ancestor};
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::oomd;
use crate::mutation::{self, Control};

/// Why a module's main process died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Cause {
    /// It exited by itself with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// Killed by a signal that none of the killers below left a mark for: a crash (`SIGSEGV`,
    /// `SIGABRT`, …) or someone's `kill`.
    Signal {
        /// The signal's name (`SIGSEGV`).
        signal: String,
    },
    /// Killed by the kernel's OOM killer.
    KernelOom {
        /// The limit that made it kill: the module's own, an ancestor's, or the machine's.
        limit: OomCause,
    },
    /// Killed by systemd-oomd.
    Oomd {
        /// The cgroup systemd-oomd chose and killed whole: `None` the module itself, else the
        /// absolute path of the ancestor it killed (the module died with it).
        ancestor: Option<String>,
    },
    /// Stopped by ck-cgroup: a stop of the reporting process's own (the library's
    /// `Root::stop`, `run`'s stop), or another's (the helper's `kill`, `prune --kill`) whose
    /// mark rose with a death a stop causes ([`judge`]).
    Stopped,
    /// It cannot be told.
    Unknown {
        /// Why not: the counter that could not be read.
        why: String,
    },
}

impl Cause {
    /// Whether the death is the module's own fault, so a supervisor charges its restart budget:
    /// `Some(true)` for an exit with a code other than 0, a signal (a crash, or a kill that left
    /// no mark), the kernel's OOM kill for the module's own limit, and systemd-oomd's kill of the
    /// module itself; `Some(false)` for an exit with 0, an OOM kill for an ancestor's limit or
    /// the machine's, systemd-oomd's kill of an ancestor, and a stop by ck-cgroup; `None` where
    /// the cause is unknown (never read as "not its fault").
    pub fn charged(&self) -> Option<bool> {
        match self {
            Cause::Exited { code } => Some(*code != 0),
            Cause::Signal { .. } => Some(true),
            Cause::KernelOom { limit } => Some(*limit == OomCause::Module),
            Cause::Oomd { ancestor } => Some(ancestor.is_none()),
            Cause::Stopped => Some(false),
            Cause::Unknown { .. } => None,
        }
    }
}

/// A mark that rose but that the death does not agree with: believed nowhere, the death told as
/// if it had not risen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UnconfirmedMark {
    /// The mark: `user.ck_cgroup_stops` or `user.oomd_ooms`.
    pub mark: String,
    /// The absolute path of the ancestor it rose on; `None` for the module's own directory.
    pub on: Option<String>,
    /// Why the death does not agree with it.
    pub why: String,
}

impl UnconfirmedMark {
    /// The module's `user.oomd_ooms`, raised while the processes `unkilled` ran with no kill
    /// pending ([`unkilled_despite_oomd`](super::counters::unkilled_despite_oomd)).
    pub(crate) fn oomd_unkilled(unkilled: &[u32]) -> UnconfirmedMark {
        let n = unkilled.len();
        let pids: Vec<String> = unkilled.iter().take(8).map(u32::to_string).collect();
        UnconfirmedMark {
            mark: oomd::OOMS.to_string(),
            on: None,
            why: format!(
                "it is raised, but {n} process{} ran with no kill pending when the stop began \
                 (pid {}{}): systemd-oomd kills every process of the cgroup it picks",
                if n == 1 { "" } else { "es" },
                pids.join(", "),
                if n > pids.len() { ", ..." } else { "" }
            ),
        }
    }
}

/// A death's cause, and the marks that rose but were not believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Why it died.
    pub cause: Cause,
    /// The marks that rose with a death they could not have caused.
    pub unconfirmed: Vec<UnconfirmedMark>,
}

/// The signals a crash raises (the kernel's or the program's own), never a stop's.
const CRASH_SIGNALS: [rustix::process::Signal; 9] = {
    use rustix::process::Signal;
    [
        Signal::SEGV,
        Signal::BUS,
        Signal::ILL,
        Signal::FPE,
        Signal::ABORT,
        Signal::SYS,
        Signal::TRAP,
        Signal::XCPU,
        Signal::XFSZ,
    ]
};

/// Whether signal number `sig` is a crash's (the kernel's or the program's own), never a stop's:
/// `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGABRT`, `SIGSYS`, `SIGTRAP`, `SIGXCPU`, `SIGXFSZ`.
pub fn is_crash_signal(sig: i32) -> bool {
    CRASH_SIGNALS.iter().any(|s| s.as_raw() == sig)
}

/// How a process ended that no stop of ck-cgroup's causes, if it did: an exit with a code other
/// than 0 (`exited with code 3`), or a crash signal (`died of SIGSEGV`); `None` for a stop's
/// signal, `SIGKILL`, or an exit with 0 (a process that caught the stop's signal and ended
/// cleanly). The one rule the death report ([`judge`]) and `watch`'s `stop_unconfirmed` follow.
pub(crate) fn end_no_stop_causes(code: Option<i32>, signal: Option<i32>) -> Option<String> {
    match (code, signal) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("exited with code {code}")),
        (None, Some(sig)) if is_crash_signal(sig) => Some(format!("died of {}", signal_name(sig))),
        _ => None,
    }
}

/// The counters a death is told from, as read at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeathCounters {
    /// The module's kill counters: `memory.events` and the marks (`user.oomd_ooms`,
    /// `user.ck_cgroup_stops`, …).
    pub kills: KillCounters,
    /// The counters that tell an OOM kill's limit.
    pub oom: OomCounters,
    /// Each ancestor's absolute path and its `user.oomd_ooms`, the nearest first (as
    /// [`OomCounters::ancestors`]).
    pub oomd_above: Vec<(String, Option<u64>)>,
}

impl DeathCounters {
    /// Read the counters of the module `module` (its own handle, so that its marks are read
    /// even after its directory was removed: xattrs stay with the open directory), which is
    /// `rel` beneath `root`; the ancestors' beneath `root` and, above the root, beneath `mount`
    /// (the cgroup2 mount's handle; `None` skips those).
    pub fn read(
        root: &CgroupDir,
        rel: &str,
        module: &CgroupDir,
        mount: Option<&CgroupDir>,
    ) -> DeathCounters {
        let kills = super::counters::kill_counters(module, "");
        let events = module.read_flat_keyed("memory.events");
        let mut ancestors = Vec::new();
        let mut oomd_above = Vec::new();
        each_ancestor(root, rel, mount, |path, dir, r| {
            let local = dir
                .read_flat_keyed(&crate::cgroup::wait::join(r, "memory.events.local"))
                .and_then(|m| m.get("oom").copied());
            ancestors.push((path.clone(), local));
            oomd_above.push((path, oomd::oomd_counters(dir, r).0));
        });
        DeathCounters {
            kills,
            oom: OomCounters {
                module_oom: events.as_ref().and_then(|m| m.get("oom").copied()),
                module_oom_kill: events.as_ref().and_then(|m| m.get("oom_kill").copied()),
                ancestors,
            },
            oomd_above,
        }
    }
}

/// Whether a counter rose from `before` to `now`; `None` where either read failed.
fn rose(before: Option<u64>, now: Option<u64>) -> Option<bool> {
    Some(now? > before?)
}

/// The cause of a death whose exit `code` (an exit) or `signal` (its number) is known, from the
/// counters read at spawn (`before`) and after the death (`now`), with no evidence beside the
/// marks: [`judge`] with no stop of this process and no survivor known.
pub fn cause(
    code: Option<i32>,
    signal: Option<i32>,
    before: &DeathCounters,
    now: &DeathCounters,
) -> Cause {
    judge(code, signal, before, now, false, &mut |_| None).cause
}

/// The cause of a death whose exit `code` (an exit) or `signal` (its number) is known, from the
/// counters read at spawn (`before`) and after the death (`now`), in the order of this module's
/// documentation, checking each mark against the death: `stopped_here` is whether a stop this
/// process made ended it; `survivor_under(path)` gives a process under the ancestor `path` that
/// started before the spawn and still runs (`None`: none, or none known), asked only for an
/// ancestor whose `user.oomd_ooms` rose.
pub fn judge(
    code: Option<i32>,
    signal: Option<i32>,
    before: &DeathCounters,
    now: &DeathCounters,
    stopped_here: bool,
    survivor_under: &mut dyn FnMut(&str) -> Option<u32>,
) -> Verdict {
    let mut unconfirmed = Vec::new();
    let cause = decide(
        code,
        signal,
        before,
        now,
        stopped_here,
        survivor_under,
        &mut unconfirmed,
    );
    Verdict { cause, unconfirmed }
}

fn decide(
    code: Option<i32>,
    signal: Option<i32>,
    before: &DeathCounters,
    now: &DeathCounters,
    stopped_here: bool,
    survivor_under: &mut dyn FnMut(&str) -> Option<u32>,
    unconfirmed: &mut Vec<UnconfirmedMark>,
) -> Cause {
    // Mutation: every mark is believed as it reads (a stop mark whatever the death, an
    // ancestor's oomd mark whoever lives on under it), as the death report did before.
    let believe_all = mutation::active(Control::MarksBelieved);
    if stopped_here {
        return Cause::Stopped;
    }
    if rose(before.kills.ck_stops, now.kills.ck_stops) == Some(true) {
        match end_no_stop_causes(code, signal) {
            Some(how) if !believe_all => unconfirmed.push(UnconfirmedMark {
                mark: oomd::STOPS.to_string(),
                on: None,
                why: format!("it rose, but the process {how}, which no stop of ck-cgroup's causes"),
            }),
            _ => return Cause::Stopped,
        }
    }
    let at_module = rose(before.kills.oomd_ooms, now.kills.oomd_ooms);
    let sig = match (code, signal) {
        (Some(code), _) => {
            oomd_without_kill(at_module, &format!("exited with code {code}"), unconfirmed);
            return Cause::Exited { code };
        }
        (None, Some(sig)) => sig,
        (None, None) => {
            return Cause::Unknown {
                why: "the exit status has neither a code nor a signal".into(),
            };
        }
    };
    if sig != rustix::process::Signal::KILL.as_raw() {
        oomd_without_kill(
            at_module,
            &format!("died of {}", signal_name(sig)),
            unconfirmed,
        );
        return Cause::Signal {
            signal: signal_name(sig),
        };
    }
    // Mutation: a SIGKILL is a plain signal, whatever the counters say (the death charged to
    // the module, as a supervisor that reads only the exit status charges it).
    if mutation::active(Control::DeathCauseStatusOnly) {
        return Cause::Signal {
            signal: signal_name(sig),
        };
    }
    let kernel = oom_cause::cause(&before.oom, &now.oom);
    if let Ok(Some(limit)) = kernel {
        return Cause::KernelOom { limit };
    }
    if at_module == Some(true) {
        return Cause::Oomd { ancestor: None };
    }
    let mut unreadable = None;
    for (path, n) in &now.oomd_above {
        let b = before
            .oomd_above
            .iter()
            .find(|(p, _)| p == path)
            .and_then(|(_, v)| *v);
        match rose(b, *n) {
            Some(true) => match survivor_under(path) {
                Some(pid) if !believe_all => unconfirmed.push(UnconfirmedMark {
                    mark: oomd::OOMS.to_string(),
                    on: Some(path.clone()),
                    why: format!(
                        "it rose, but pid {pid} under it, started before this module, still runs: \
                         systemd-oomd kills every process of the cgroup it picks"
                    ),
                }),
                _ => {
                    return Cause::Oomd {
                        ancestor: Some(path.clone()),
                    };
                }
            },
            Some(false) => {}
            None => {
                unreadable.get_or_insert_with(|| format!("user.oomd_ooms of {path}"));
            }
        }
    }
    let why = match (kernel, at_module) {
        (Err(why), _) => Some(why),
        (_, None) => Some("the module's user.oomd_ooms could not be read".into()),
        _ => unreadable.map(|u| format!("{u} could not be read")),
    };
    match why {
        Some(why) => Cause::Unknown {
            why: format!("killed by SIGKILL, and whether by an OOM killer cannot be told: {why}"),
        },
        None => Cause::Signal {
            signal: signal_name(sig),
        },
    }
}

/// The module's own `user.oomd_ooms` rose with a death that was no `SIGKILL` (`how`):
/// systemd-oomd sends only `SIGKILL`, so the mark is unconfirmed.
fn oomd_without_kill(at_module: Option<bool>, how: &str, unconfirmed: &mut Vec<UnconfirmedMark>) {
    if at_module == Some(true) {
        unconfirmed.push(UnconfirmedMark {
            mark: oomd::OOMS.to_string(),
            on: None,
            why: format!("it rose, but the process {how}: systemd-oomd kills only by SIGKILL"),
        });
    }
}

/// The name of signal number `sig` (`SIGSEGV`); `signal N` for one without a name here.
pub fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 31] = [
        "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
        "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
        "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
    ];
    usize::try_from(sig)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("signal {sig}"), |n| format!("SIG{n}"))
}

#[cfg(test)]
mod tests;
