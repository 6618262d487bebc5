//! Why a module's main process died, told from the counters the kernel, systemd-oomd and
//! ck-cgroup leave on the module's directory and on every directory above it, read twice: when
//! the process was spawned (the baseline) and when it had died ([`DeathCounters::read`]). Only
//! what rose between the two reads counts, so a directory reused by a later spawn does not carry
//! an earlier death into this one.
//!
//! The order in which [`cause`] decides:
//!
//! 1. `user.ck_cgroup_stops` of the module rose: a stop of ck-cgroup's (the helper's `kill`,
//!    `prune --kill`, `run`'s stop, the library's `Root::stop`) ended it, however the process
//!    then exited: [`Cause::Stopped`].
//! 2. It exited with a code: [`Cause::Exited`].
//! 3. A signal other than `SIGKILL` (the OOM killers send only `SIGKILL`): [`Cause::Signal`].
//! 4. `SIGKILL`, and the module's `memory.events` `oom_kill` rose: the kernel's OOM killer, with
//!    the limit that made it kill ([`oom_cause::cause`]): [`Cause::KernelOom`].
//! 5. systemd-oomd's `user.oomd_ooms` rose on the module, else on the nearest ancestor where it
//!    rose: [`Cause::Oomd`].
//! 6. A counter of steps 4 and 5 could not be read both times (no memory controller, an
//!    unreadable xattr): [`Cause::Unknown`], saying which. Unknown is never read as "not OOM".
//! 7. Otherwise a plain `SIGKILL` from someone who leaves no mark: [`Cause::Signal`].

use serde::{Deserialize, Serialize};

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::oom_cause::{self, OomCause, OomCounters, each_ancestor};
use crate::cgroup::oomd::{self, KillCounters};
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
    /// Stopped by ck-cgroup: the helper's `kill`, `prune --kill`, `run`'s stop, the library's
    /// `Root::stop`.
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
        let kills = oomd::kill_counters(module, "");
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
/// counters read at spawn (`before`) and after the death (`now`), in the order of this module's
/// documentation.
pub fn cause(
    code: Option<i32>,
    signal: Option<i32>,
    before: &DeathCounters,
    now: &DeathCounters,
) -> Cause {
    if rose(before.kills.ck_stops, now.kills.ck_stops) == Some(true) {
        return Cause::Stopped;
    }
    let sig = match (code, signal) {
        (Some(code), _) => return Cause::Exited { code },
        (None, Some(sig)) => sig,
        (None, None) => {
            return Cause::Unknown {
                why: "the exit status has neither a code nor a signal".into(),
            };
        }
    };
    if sig != rustix::process::Signal::KILL.as_raw() {
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
    let at_module = rose(before.kills.oomd_ooms, now.kills.oomd_ooms);
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
            Some(true) => {
                return Cause::Oomd {
                    ancestor: Some(path.clone()),
                };
            }
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
mod tests {
    use super::*;

    const KILL: Option<i32> = Some(9);

    /// Counters where everything could be read and nothing has happened yet.
    fn quiet() -> DeathCounters {
        DeathCounters {
            kills: KillCounters {
                oom_kill: Some(0),
                oom_group_kill: Some(0),
                oomd_ooms: Some(0),
                oomd_kill: Some(0),
                ck_stops: Some(0),
            },
            oom: OomCounters {
                module_oom: Some(0),
                module_oom_kill: Some(0),
                ancestors: vec![("/r/subc-modules".into(), Some(0)), ("/r".into(), Some(0))],
            },
            oomd_above: vec![("/r/subc-modules".into(), Some(0)), ("/r".into(), Some(0))],
        }
    }

    #[test]
    fn each_cause_from_what_rose() {
        let b = quiet();
        assert_eq!(cause(Some(3), None, &b, &b), Cause::Exited { code: 3 });
        assert_eq!(
            cause(None, Some(11), &b, &b),
            Cause::Signal {
                signal: "SIGSEGV".into()
            }
        );
        assert_eq!(
            cause(None, KILL, &b, &b),
            Cause::Signal {
                signal: "SIGKILL".into()
            }
        );
        let mut n = quiet();
        n.kills.ck_stops = Some(1);
        // A stop of ours, however the process then ended.
        assert_eq!(cause(Some(143), None, &b, &n), Cause::Stopped);
        assert_eq!(cause(None, Some(15), &b, &n), Cause::Stopped);
        let mut n = quiet();
        n.oom.module_oom_kill = Some(1);
        n.oom.ancestors[1].1 = Some(1);
        assert_eq!(
            cause(None, KILL, &b, &n),
            Cause::KernelOom {
                limit: OomCause::Ancestor {
                    cgroup: "/r".into()
                }
            }
        );
        let mut n = quiet();
        n.kills.oomd_ooms = Some(1);
        assert_eq!(cause(None, KILL, &b, &n), Cause::Oomd { ancestor: None });
        let mut n = quiet();
        n.oomd_above[1].1 = Some(2);
        assert_eq!(
            cause(None, KILL, &b, &n),
            Cause::Oomd {
                ancestor: Some("/r".into())
            }
        );
    }

    #[test]
    fn an_earlier_death_in_a_reused_directory_is_not_this_ones() {
        // The directory's counters already show a kill and a stop from before this spawn.
        let mut b = quiet();
        b.kills.ck_stops = Some(4);
        b.kills.oomd_ooms = Some(1);
        b.oom.module_oom_kill = Some(2);
        b.oom.module_oom = Some(2);
        assert_eq!(
            cause(None, KILL, &b, &b.clone()),
            Cause::Signal {
                signal: "SIGKILL".into()
            }
        );
    }

    #[test]
    fn unknown_is_never_read_as_not_oom() {
        // This host: no memory controller, so no memory.events; the marks read.
        let mut b = quiet();
        b.oom = OomCounters::default();
        let c = cause(None, KILL, &b, &b.clone());
        let Cause::Unknown { why } = &c else {
            panic!("{c:?}");
        };
        assert!(why.contains("memory.events"), "{why}");
        assert_eq!(c.charged(), None);
        // An ancestor's mark that could not be read.
        let mut b = quiet();
        b.oomd_above[0].1 = None;
        let c = cause(None, KILL, &b, &b.clone());
        assert!(
            matches!(&c, Cause::Unknown { why } if why.contains("/r/subc-modules")),
            "{c:?}"
        );
        // What is known still decides: a mark that rose where the memory files are absent.
        let mut b = quiet();
        b.oom = OomCounters::default();
        let mut n = b.clone();
        n.oomd_above[0].1 = Some(1);
        assert_eq!(
            cause(None, KILL, &b, &n),
            Cause::Oomd {
                ancestor: Some("/r/subc-modules".into())
            }
        );
    }

    #[test]
    fn charged_only_for_the_modules_own_fault() {
        let yes = [
            Cause::Exited { code: 1 },
            Cause::Signal {
                signal: "SIGSEGV".into(),
            },
            Cause::KernelOom {
                limit: OomCause::Module,
            },
            Cause::Oomd { ancestor: None },
        ];
        let no = [
            Cause::Exited { code: 0 },
            Cause::KernelOom {
                limit: OomCause::Machine,
            },
            Cause::KernelOom {
                limit: OomCause::Ancestor {
                    cgroup: "/r".into(),
                },
            },
            Cause::Oomd {
                ancestor: Some("/r".into()),
            },
            Cause::Stopped,
        ];
        for c in yes {
            assert_eq!(c.charged(), Some(true), "{c:?}");
        }
        for c in no {
            assert_eq!(c.charged(), Some(false), "{c:?}");
        }
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(1), "SIGHUP");
        assert_eq!(signal_name(31), "SIGSYS");
        assert_eq!(signal_name(0), "signal 0");
        assert_eq!(signal_name(40), "signal 40");
    }
}
