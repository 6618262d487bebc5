//! The processes of each module, one by one: what `ck-cgroup ps` shows, to answer the incident's
//! first question ("which process owns the growth?") after `status --sort mem` named the module.
//!
//! Membership is the cgroup's, never ancestry (a reparented orphan is still the module's): the
//! pids come from `cgroup.procs` of the module and of every sub-cgroup below it (the same walk
//! and the same reading as every stop's, threaded cgroups through `cgroup.threads`), each with the sub-cgroup
//! it was found in. Each process's figures come from `/proc/<pid>/stat` (state, parent),
//! `/proc/<pid>/status` (`VmRSS`, `VmSwap`, `NSpid`) and `/proc/<pid>/cmdline`. A process that
//! exits while it is read is left out; a figure that cannot be read is `None`, never 0.

use serde::Serialize;

use super::Figure;
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::parse;
use crate::cgroup::tree::{Cursor, Visitor, members_of, walk};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Layout;
use crate::module::{ModuleEntry, Root};

/// The source of [`Process::rss`].
pub const RSS_SOURCE: &str = "VmRSS in /proc/<pid>/status";
/// The source of [`Process::swap`].
pub const SWAP_SOURCE: &str = "VmSwap in /proc/<pid>/status";

/// One module and its processes.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ModuleProcesses {
    /// Directory name as found.
    pub name: String,
    /// The module id (decoded for the daemon's layout; `None` where it does not decode).
    pub module: Option<String>,
    /// Which placement made it.
    pub layout: Layout,
    /// Path relative to the root.
    pub path: String,
    /// Its processes, in the order found (each cgroup's `cgroup.procs`, the module's first).
    pub processes: Vec<Process>,
}

/// One process of a module.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Process {
    /// Its pid, as this process sees pids.
    pub pid: u32,
    /// Its parent's pid (field 4 of `/proc/<pid>/stat`); 0 where the parent is not visible here
    /// (outside this PID namespace).
    pub ppid: u32,
    /// Its state (field 3 of `/proc/<pid>/stat`): `R`, `S`, `D`, `Z`, `T`, ...
    pub state: String,
    /// Resident memory, bytes.
    pub rss: Figure<u64>,
    /// Swapped out, bytes.
    pub swap: Figure<u64>,
    /// The sub-cgroup it is in, relative to the module (`""`: the module's own cgroup).
    pub cgroup: String,
    /// Its command line (`/proc/<pid>/cmdline`); `None` where it has none (a zombie) or it
    /// could not be read; [`Process::name`] is there then.
    pub command: Option<Vec<String>>,
    /// Its name (`/proc/<pid>/stat` field 2, at most 15 bytes).
    pub name: String,
    /// Its parent is not its parent by birth: the kernel reparented it to PID 1, or, in `run`'s
    /// PID namespace, to the namespace's init (it is not the init's first child, the command).
    /// It is still the module's: membership, not ancestry.
    pub orphan: bool,
    /// Its parent is a process of the same module (the table indents it under the parent).
    pub parent_in_module: bool,
}

impl Root {
    /// The processes of every module (ours and the daemon's), or of those named; a name that is
    /// no module is an error of kind [`ErrorKind::NoSuchModule`], as in [`Root::status`].
    pub fn processes<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<ModuleProcesses>> {
        let names: Vec<String> = names.iter().map(|n| n.as_ref().to_string()).collect();
        let names = names.as_slice();
        Ok(self
            .selected(names)?
            .iter()
            .map(|m| module_processes(self.dir(), m))
            .collect())
    }
}

/// What the walk collects: each pid once, with the sub-cgroup it was found in.
#[derive(Default)]
struct Found {
    pids: Vec<(u32, String)>,
    seen: std::collections::HashSet<u32>,
}

impl Visitor for Found {
    fn enter(&mut self, at: &Cursor<'_>) -> Result<()> {
        let sub = at.rel_path();
        let Found { pids, seen } = self;
        members_of(at, |pid| {
            if seen.insert(pid) {
                pids.push((pid, sub.clone()));
            }
        })
    }
}

/// One module's processes. Never fails: a module that cannot be walked has no processes listed
/// (its `status` says what could not be read).
pub(crate) fn module_processes(dir: &CgroupDir, m: &ModuleEntry) -> ModuleProcesses {
    let mut found = Found::default();
    let _ = walk(dir, &m.path, &mut found);
    let mut read: Vec<(Process, Option<u32>)> = found
        .pids
        .into_iter()
        .filter_map(|(pid, cgroup)| read_process(pid, cgroup))
        .collect();
    let members: Vec<u32> = read.iter().map(|(p, _)| p.pid).collect();
    // The namespace inits among them (`run`'s): their children other than the command (pid 2
    // in the namespace) were reparented to them.
    let inits: Vec<u32> = read
        .iter()
        .filter(|(_, ns)| *ns == Some(1))
        .map(|(p, _)| p.pid)
        .collect();
    for (p, ns) in &mut read {
        p.parent_in_module = members.contains(&p.ppid);
        p.orphan = if p.parent_in_module {
            inits.contains(&p.ppid) && *ns != Some(2)
        } else {
            p.ppid == 1
        };
    }
    ModuleProcesses {
        name: m.name.as_str().to_string(),
        module: m.module.clone(),
        layout: m.layout,
        path: m.path.clone(),
        processes: read.into_iter().map(|(p, _)| p).collect(),
    }
}

/// One process from `/proc`, with its pid in the innermost PID namespace it is in when that is
/// not this one (`NSpid`'s last field); `None` when it exited meanwhile.
fn read_process(pid: u32, cgroup: String) -> Option<(Process, Option<u32>)> {
    let stat_text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let stat = parse::proc_stat(&stat_text)?;
    let name = stat_text
        .find('(')
        .zip(stat_text.rfind(')'))
        .map(|(a, b)| stat_text[a + 1..b].to_string())
        .unwrap_or_default();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok();
    let mem = status.as_deref().map(parse::proc_status_memory);
    let inner = status.as_deref().and_then(parse::proc_status_nspid_inner);
    let command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .filter(|b| !b.is_empty())
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        });
    // A zombie has no memory left to report: it holds none (its VmRSS line is gone).
    let exited = stat.exited();
    let figure =
        |v: Option<u64>, src: &str| Figure::new(if exited { Some(0) } else { v }, src.to_string());
    Some((
        Process {
            pid,
            ppid: stat.ppid,
            state: stat.state.to_string(),
            rss: figure(mem.and_then(|m| m.rss), RSS_SOURCE),
            swap: figure(mem.and_then(|m| m.swap), SWAP_SOURCE),
            cgroup,
            command,
            name,
            orphan: false,
            parent_in_module: false,
        },
        inner,
    ))
}

/// The error of a name that is no module (what [`Root::status`] and [`Root::processes`] say).
pub(crate) fn no_such_module(name: &str, root: &std::path::Path) -> Error {
    Error::failed(format!("no module {name} under {}", root.display()))
        .with_hint("`ck-cgroup list` shows the modules")
        .with_kind(ErrorKind::NoSuchModule)
}
