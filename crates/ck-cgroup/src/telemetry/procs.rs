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
use crate::gpu::GpuCensus;
use crate::id::DirName;
use crate::layout::Layout;
use crate::layout::ToModuleName;
use crate::module::{ModuleEntry, Root};
use crate::mutation::{self, Control};

/// The source of [`Process::rss`].
pub const RSS_SOURCE: &str = "VmRSS in /proc/<pid>/status";
/// The source of [`Process::swap`].
pub const SWAP_SOURCE: &str = "VmSwap in /proc/<pid>/status";

/// One module and its processes.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ModuleProcesses {
    /// Directory name as found, in its shown form.
    pub name: DirName,
    /// The module id (decoded for the daemon's layout; `None` where it does not decode).
    pub module: Option<DirName>,
    /// Which placement made it.
    pub layout: Layout,
    /// Path relative to the root, as shown.
    pub path: String,
    /// Its processes, in the order found (each cgroup's `cgroup.procs`, the module's first).
    pub processes: Vec<Process>,
    /// Why its processes could not all be listed (a sub-cgroup that could not be read: a mode
    /// a module's process set, a removal racing the walk); `None` when every cgroup of it was
    /// read. [`processes`](Self::processes) then holds those found before the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
    /// Its command line (`/proc/<pid>/cmdline`), every argument, empty ones too, each UTF-8
    /// text or, where its bytes are not UTF-8, a NUL and its bytes in hex (as a directory name
    /// that is not UTF-8); `None` where it has none (a zombie) or it could not be read;
    /// [`Process::name`] is there then.
    pub command: Option<Vec<String>>,
    /// The command line was longer than [`COMMAND_CAP`] bytes and [`Process::command`] holds
    /// its start only.
    #[serde(default)]
    pub command_cut: bool,
    /// Its name (`/proc/<pid>/stat` field 2, at most 15 bytes), as [`Process::command`]'s
    /// arguments are held (a name that is not UTF-8: a NUL and its bytes in hex).
    pub name: String,
    /// Its parent is not its parent by birth: the kernel reparented it to PID 1, or, in `run`'s
    /// PID namespace, to the namespace's init (it is not the init's first child, the command).
    /// It is still the module's: membership, not ancestry.
    pub orphan: bool,
    /// Its parent is a process of the same module (the table indents it under the parent).
    pub parent_in_module: bool,
    /// It is the init of a PID namespace (pid 1 there: `NSpid:` of `/proc/<pid>/status`), as
    /// `run` and `ModuleCommand::pid_namespace` start one: a fork of the process that spawned
    /// the module (the helper, or the daemon), which never runs `execve`, so its
    /// [`command`](Self::command) and [`name`](Self::name) are that spawner's. The program is
    /// its child. Left out of the JSON where false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub init: bool,
    /// Device (GPU) memory it holds: DRM `fdinfo` or `nvidia-smi` ([`crate::gpu`]); unknown,
    /// with the reason, where there is no GPU or a reader failed.
    #[serde(default)]
    pub gpu_memory: crate::gpu::GpuMemory,
}

/// The directory the report is of, by its layout and name (`ModuleName::of_dir`).
impl ToModuleName for ModuleProcesses {
    fn to_module_name(&self) -> Result<crate::layout::ModuleName> {
        Ok(crate::layout::ModuleName::of_dir(self.layout, &self.name))
    }
}

impl Root {
    /// The processes of every module (ours and the daemon's), or of those named; a name that is
    /// no module is an error of kind [`ErrorKind::NoSuchModule`], as in [`Root::status`].
    ///
    /// `names`: as [`Root::status`] takes them ([`Selection`](crate::layout::Selection)).
    /// Device memory as [`GpuProbe::default`](crate::gpu::GpuProbe::default) finds it
    /// ([`Root::processes_with`] takes another census).
    pub fn processes<N: crate::layout::Selection + ?Sized>(
        &self,
        names: &N,
    ) -> Result<Vec<ModuleProcesses>> {
        let gpu = GpuCensus::take(&crate::gpu::GpuProbe::default());
        self.processes_with(names, &gpu)
    }

    /// [`Root::processes`], each process's device memory from `gpu`.
    pub fn processes_with<N: crate::layout::Selection + ?Sized>(
        &self,
        names: &N,
        gpu: &GpuCensus,
    ) -> Result<Vec<ModuleProcesses>> {
        let names = names.selection()?;
        Ok(modules_processes(
            self.dir(),
            &self.selected(names.as_deref())?,
            gpu,
        ))
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

/// The processes of `modules`, each as [`module_processes`] reads it: every module is walked
/// first, so that the command lines read share one budget ([`Budget`]) over all their processes.
pub(crate) fn modules_processes(
    dir: &CgroupDir,
    modules: &[ModuleEntry],
    gpu: &GpuCensus,
) -> Vec<ModuleProcesses> {
    let walked: Vec<(Found, Option<String>)> =
        modules.iter().map(|m| walk_module(dir, m)).collect();
    let mut budget = Budget::new(walked.iter().map(|(f, _)| f.pids.len()).sum());
    modules
        .iter()
        .zip(walked)
        .map(|(m, (found, error))| module_processes(m, found, error, gpu, &mut budget))
        .collect()
}

/// The pids of module `m` and the walk's error. A walk that failed keeps what it found and says
/// why in [`ModuleProcesses::error`]: a process is never left out silently.
fn walk_module(dir: &CgroupDir, m: &ModuleEntry) -> (Found, Option<String>) {
    let mut found = Found::default();
    // Mutation: the walk's error is dropped, and the processes it did not reach with it.
    let error = match walk(dir, &m.rel(), &mut found) {
        Err(_) if mutation::active(Control::PsWalkErrorDropped) => None,
        Err(e) => Some(e.to_string()),
        Ok(()) => None,
    };
    (found, error)
}

/// One module's processes, those `found` by its walk, their command lines read within `budget`.
fn module_processes(
    m: &ModuleEntry,
    found: Found,
    error: Option<String>,
    gpu: &GpuCensus,
    budget: &mut Budget,
) -> ModuleProcesses {
    let mut read: Vec<(Process, Option<u32>)> = found
        .pids
        .into_iter()
        .filter_map(|(pid, cgroup)| read_process(pid, cgroup, budget))
        .collect();
    for (p, _) in &mut read {
        p.gpu_memory = gpu.of_process(p.pid);
    }
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
        name: m.name.clone(),
        module: m.module.clone(),
        layout: m.layout,
        path: m.path.clone(),
        processes: read.into_iter().map(|(p, _)| p).collect(),
        error,
    }
}

/// The most of a command line read (`/proc/<pid>/cmdline`): a module's process may have one of
/// any size (its stack limit allows). The rest is cut, and [`Process::command_cut`] says so.
pub const COMMAND_CAP: usize = 256 * 1024;

/// The most of all command lines one [`Root::processes`] holds together: 60 processes of
/// [`COMMAND_CAP`] each were 15 MiB, and `ps` must fit in the room every command is given (16 MiB
/// beyond what it has mapped at its start, the CLI's `room`) with its output, where a byte may
/// take 4 (`\x01` in the table, held three times as it is built) or 6 (`\u0001` in JSON): some
/// 8 MiB at most for this budget. Each process reads at most its share of what is left (what is
/// left over the processes not yet read), never less than [`COMMAND_FLOOR`]: what is held is at
/// most this or [`COMMAND_FLOOR`] a process, whichever is more.
pub const COMMANDS_BUDGET: usize = 512 << 10;

/// The least of a command line read, however many processes share [`COMMANDS_BUDGET`]: the
/// program and its first arguments (a process's other figures take as much).
pub const COMMAND_FLOOR: usize = 256;

/// What is left of [`COMMANDS_BUDGET`], and for how many processes.
pub(crate) struct Budget {
    left: usize,
    processes: usize,
}

impl Budget {
    /// The budget of `processes` command lines.
    fn new(processes: usize) -> Budget {
        Budget {
            left: COMMANDS_BUDGET,
            processes,
        }
    }

    /// The most the next process may read: its share of what is left.
    fn share(&self) -> usize {
        // Mutation: every process reads up to the cap, however many there are.
        if mutation::active(Control::PsArgvUncapped) {
            return COMMAND_CAP;
        }
        (self.left / self.processes.max(1)).clamp(COMMAND_FLOOR, COMMAND_CAP)
    }

    /// A process read `used` bytes (or none, gone meanwhile).
    fn spend(&mut self, used: usize) {
        self.left = self.left.saturating_sub(used);
        self.processes = self.processes.saturating_sub(1);
    }
}

/// `/proc/<pid>/cmdline`, at most `cap` bytes; whether there was more.
fn read_cmdline(pid: u32, cap: usize) -> Option<(Vec<u8>, bool)> {
    use std::io::Read;
    let f = std::fs::File::open(format!("/proc/{pid}/cmdline")).ok()?;
    let mut buf = Vec::new();
    f.take(cap as u64 + 1).read_to_end(&mut buf).ok()?;
    let cut = buf.len() > cap;
    buf.truncate(cap);
    Some((buf, cut))
}

/// The arguments of a command line as `/proc/<pid>/cmdline` holds them: each ended by a NUL,
/// empty ones kept (`""` is an argument); a last one without its NUL (a process that rewrote its
/// arguments, or a cut line) kept too. Each is the crate's text of its bytes (UTF-8, else a NUL
/// and its bytes in hex, as a name that is not UTF-8).
fn arguments(bytes: &[u8]) -> Vec<String> {
    let body = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    // Mutation: the empty arguments are dropped.
    if mutation::active(Control::ArgvLossy) {
        return body
            .split(|&c| c == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
    }
    body.split(|&c| c == 0)
        .map(crate::id::name_bytes::text_of)
        .collect()
}

/// One process from `/proc`, with its pid in the innermost PID namespace it is in when that is
/// not this one (`NSpid`'s last field); `None` when it exited meanwhile. Its files are read as
/// bytes: a name or an argument that is not UTF-8 is kept as the crate's text of its bytes, never
/// a reason to leave the process out.
fn read_process(pid: u32, cgroup: String, budget: &mut Budget) -> Option<(Process, Option<u32>)> {
    let share = budget.share();
    // Spent whether or not the process is still there: the next ones' shares are known.
    let cmdline = read_cmdline(pid, share);
    budget.spend(cmdline.as_ref().map_or(0, |(b, _)| b.len()));
    let stat_bytes = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let stat_text = String::from_utf8_lossy(&stat_bytes);
    let stat = parse::proc_stat(&stat_text)?;
    let name = crate::cgroup::procfs::stat_name(&stat_bytes)
        .map(crate::id::name_bytes::text_of)
        .unwrap_or_default();
    let status = crate::cgroup::procfs::read_text(pid, "status").ok();
    let mem = status.as_deref().map(parse::proc_status_memory);
    let inner = status.as_deref().and_then(parse::proc_status_nspid_inner);
    let cmdline = cmdline.filter(|(b, _)| !b.is_empty());
    let command_cut = cmdline.as_ref().is_some_and(|(_, cut)| *cut);
    let command = cmdline.map(|(b, _)| arguments(&b));
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
            command_cut,
            name,
            orphan: false,
            parent_in_module: false,
            init: inner == Some(1),
            gpu_memory: crate::gpu::GpuMemory::default(),
        },
        inner,
    ))
}

/// The error of a name that is no module (what [`Root::status`] and [`Root::processes`] say).
pub(crate) fn no_such_module(name: &crate::layout::ModuleName, root: &std::path::Path) -> Error {
    Error::failed(format!("no module {name} under {}", root.display()))
        .with_hint("`ck-cgroup list` shows the modules")
        .with_kind(ErrorKind::NoSuchModule)
}
