//! The kill and stop counters of a module's directory, read into one value and judged: the
//! kernel's OOM killer's (`memory.events` `oom_kill`, `oom_group_kill`), systemd-oomd's marks
//! (`user.oomd_ooms`, `user.oomd_kill`) and ck-cgroup's own (`user.ck_cgroup_stops`), which
//! [`crate::cgroup::oomd`] reads as the kernel keeps them; and whether the processes of a module
//! whose oomd mark rose were in fact killed ([`unkilled_despite_oomd`]).

use serde::{Deserialize, Serialize};

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::oomd;
use crate::cgroup::tree::members;
use crate::cgroup::wait::join;
use crate::cgroup::{parse, procfs};

/// The kill counters of a module's directory: the kernel's OOM killer's (`memory.events`) and
/// systemd-oomd's (its xattrs). `None` each where it could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KillCounters {
    /// `memory.events` `oom_kill`: processes the kernel's OOM killer killed.
    pub oom_kill: Option<u64>,
    /// `memory.events` `oom_group_kill`: whole-group kills by the kernel (5.17+).
    pub oom_group_kill: Option<u64>,
    /// `user.oomd_ooms`: systemd-oomd's kills of the cgroup (0 when absent).
    pub oomd_ooms: Option<u64>,
    /// `user.oomd_kill`: processes systemd-oomd killed in it (0 when absent).
    pub oomd_kill: Option<u64>,
    /// `user.ck_cgroup_stops`: stops of it by ck-cgroup, the helper's or the library's (0 when
    /// absent; [`STOPS`](oomd::STOPS)).
    #[serde(default)]
    pub ck_stops: Option<u64>,
}

impl KillCounters {
    /// Whether systemd-oomd killed there (`oomd_ooms` above 0); `false` also where it could not
    /// be read: [`by_oomd_known`](Self::by_oomd_known) tells the two apart.
    pub fn by_oomd(&self) -> bool {
        self.oomd_ooms.is_some_and(|n| n > 0)
    }

    /// Whether ck-cgroup's own stop (the helper's `kill`, `prune --kill`, `run`'s end, the
    /// library's `Root::stop`) ended it (`ck_stops` above 0); `false` also where it could not be
    /// read: [`by_ck_known`](Self::by_ck_known) tells the two apart. A mark, not proof: a module
    /// that owns its directory can raise it ([`death_cause`](super::death_cause)).
    pub fn by_ck(&self) -> bool {
        self.ck_stops.is_some_and(|n| n > 0)
    }

    /// Whether the kernel's OOM killer killed there; `false` also where the counters could not
    /// be read (no memory controller): [`by_kernel_known`](Self::by_kernel_known) tells the two
    /// apart.
    pub fn by_kernel(&self) -> bool {
        self.oom_kill.is_some_and(|n| n > 0) || self.oom_group_kill.is_some_and(|n| n > 0)
    }
}

/// Every kill counter of the directory `rel`: read before it is removed (a removed directory
/// takes them with it).
pub fn kill_counters(dir: &CgroupDir, rel: &str) -> KillCounters {
    let events = dir.read_flat_keyed(&join(rel, "memory.events"));
    let key = |k: &str| events.as_ref().and_then(|m| m.get(k).copied());
    let (oomd_ooms, oomd_kill) = oomd::oomd_counters(dir, rel);
    KillCounters {
        oom_kill: key("oom_kill"),
        oom_group_kill: key("oom_group_kill"),
        oomd_ooms,
        oomd_kill,
        ck_stops: oomd::ck_stops(dir, rel),
    }
}

/// The processes of the module `dir` that run unkilled although its [`OOMS`](oomd::OOMS) mark says that
/// systemd-oomd killed it: systemd-oomd sends `SIGKILL` to every process of the cgroup it
/// picks, so a member with no `SIGKILL` pending (`/proc/<pid>/status` `SigPnd`/`ShdPnd`) that
/// is not exiting (`State` other than `Z`, `X`) outlived no such kill, and the mark (which a
/// module that owns its directory can raise itself) is not taken for one. Empty where the mark
/// is not raised (one `getxattr(2)`, the only read then) or every member is dying.
pub fn unkilled_despite_oomd(dir: &CgroupDir) -> Vec<u32> {
    if oomd::oomd_counters(dir, "").0.is_none_or(|n| n == 0) {
        return Vec::new();
    }
    let members = members(dir, "").unwrap_or_default();
    members
        .into_iter()
        .filter(|&pid| {
            procfs::read_text(pid, "status").is_ok_and(|st| !parse::proc_status_dying(&st))
        })
        .collect()
}
