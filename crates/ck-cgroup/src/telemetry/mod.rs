//! Per-module figures for `status`: every figure carries where it came from, and a figure that
//! could not be read is `None` (JSON `null`, table `-`), never 0.
//!
//! Where the memory controller is not enabled for the modules (as on a hybrid host), RSS and swap
//! are summed from `/proc/<pid>/status` (`VmRSS`, `VmSwap`) of the module's processes, and the
//! source says so. Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html>
//! ("Memory Interface Files", "PID Interface Files", "CPU Interface Files", "PSI").

pub mod cold;
mod figures;
pub mod pressure;
pub mod procs;
pub mod watch;

use figures::PRESSURE_FILES;
pub use figures::{Figure, LimitFigures, MemoryEvents, ModuleStatus, Stalled};

use serde::Serialize;

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::gone::{is_gone, removed};
use crate::cgroup::oomd;
use crate::cgroup::parse;
use crate::cgroup::tree::members;
use crate::cgroup::wait::join;
use crate::error::Result;
use crate::gpu::{GpuCensus, GpuProbe};
use crate::layout::{Layout, ModuleName, Selection};
use crate::module::{ModuleEntry, Root};
use crate::mutation::{self, Control};

fn read(dir: &CgroupDir, rel: &str, file: &str) -> Option<String> {
    absent_is_unknown(dir.read_raw(&join(rel, file)).ok())
}

/// What an unreadable file gives: nothing. (The mutation control makes it 0, the bug the null
/// rule exists to prevent, so that the tests guarding the rule can be shown to fail.)
fn absent_is_unknown(text: Option<String>) -> Option<String> {
    if mutation::active(Control::AbsentIsZero) {
        return text.or_else(|| Some("0\n".into()));
    }
    text
}

impl Root {
    /// The figures of every module (ours and the daemon's), or of those named. A name that is
    /// no module is an error of kind [`ErrorKind::NoSuchModule`](crate::error::ErrorKind::NoSuchModule).
    /// A module removed while it is read (a `kill` racing the status) is left out.
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// for s in root.status(&["worker-1".to_string()])? {
    ///     println!("{}: {:?} bytes ({})", s.name, s.memory_current.value, s.memory_current.source);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// `names`: `&Modules::All`, `&Modules::Named(..)`, or names (`&[..]`, `&vec![..]`), an
    /// empty list meaning every module ([`Selection`]). Device memory as [`GpuProbe::default`]
    /// finds it ([`Root::status_with`] takes another).
    pub fn status<N: Selection + ?Sized>(&self, names: &N) -> Result<Vec<ModuleStatus>> {
        self.status_with(names, &GpuCensus::take(&GpuProbe::default()))
    }

    /// [`Root::status`], its device-memory figures from `gpu` (taken once by the caller, e.g.
    /// [`GpuCensus::take`], or recorded), its cold memory over the default window
    /// ([`cold::DEFAULT_WINDOW_MS`]), read and not aged.
    pub fn status_with<N: Selection + ?Sized>(
        &self,
        names: &N,
        gpu: &GpuCensus,
    ) -> Result<Vec<ModuleStatus>> {
        let cold = cold::ColdCensus::read(cold::DEFAULT_WINDOW_MS);
        self.status_cold(names, gpu, &cold)
    }

    /// The path of this root from the cgroup2 hierarchy's root, as `lru_gen` names cgroups
    /// ([`cold::hierarchy_path`]).
    pub fn hierarchy_path(&self) -> Option<String> {
        cold::hierarchy_path(self.path())
    }

    /// [`Root::status_with`], its cold memory from `cold` (read once by the caller, and aged
    /// where it chose to: [`cold::ColdCensus::age`] with [`Root::hierarchy_path`]).
    pub fn status_cold<N: Selection + ?Sized>(
        &self,
        names: &N,
        gpu: &GpuCensus,
        cold: &cold::ColdCensus,
    ) -> Result<Vec<ModuleStatus>> {
        let top = self.hierarchy_path();
        let names = names.selection()?;
        let names = names.as_deref();
        // The controllers each layout's modules have: files of the others are not there, and
        // are not tried (the figure stays unknown either way).
        let enabled = |dir: &str| {
            self.dir()
                .read_raw(&join(dir, "cgroup.subtree_control"))
                .map(|t| parse::controllers(&t))
                .unwrap_or_default()
        };
        let ck = enabled(crate::layout::MODULES_DIR);
        let daemon = enabled("daemon/subc-modules");
        let on = |m: &ModuleEntry| match m.layout {
            Layout::Ck => Some(ck.as_slice()),
            Layout::Daemon => Some(daemon.as_slice()),
            Layout::Systemd => None,
        };
        Ok(self
            .selected_with(names, false)?
            .iter()
            .filter_map(|m| module_status_with(self.dir(), m, on(m), gpu, cold, top.as_deref()))
            .collect())
    }

    /// Every module, or those named (by id or directory name, as [`Root::find_all`] takes them:
    /// every directory of the daemon's an id names), in that order; a name that is no module is an error of kind
    /// [`ErrorKind::NoSuchModule`](crate::error::ErrorKind::NoSuchModule).
    /// `None`: every module.
    pub(crate) fn selected(&self, names: Option<&[ModuleName]>) -> Result<Vec<ModuleEntry>> {
        self.selected_with(names, true)
    }

    /// [`selected`](Self::selected), with each module's `cgroup.events` read by the listing
    /// only when `events` (`status` reads it from the module's own directory).
    /// Each name is looked up before the modules are listed: one removed after its lookup
    /// (a `kill` racing this) is left out, not a name that is no module.
    fn selected_with(
        &self,
        names: Option<&[ModuleName]>,
        events: bool,
    ) -> Result<Vec<ModuleEntry>> {
        let Some(names) = names else {
            return self.entries_with(false, events);
        };
        let mut found = Vec::new();
        for n in names {
            let each = self.find_all(n)?;
            if each.is_empty() {
                return Err(procs::no_such_module(n, self.path()));
            }
            found.push(each);
        }
        let all = self.entries_with(false, events)?;
        let mut out = Vec::new();
        for each in found {
            for m in each {
                if let Some(e) = all
                    .iter()
                    .find(|e| e.name == m.name && e.layout == m.layout)
                {
                    out.push(e.clone());
                }
            }
        }
        Ok(out)
    }
}

/// Read one module's figures. Never fails: what cannot be read is `None`. With `enabled`, the
/// files of controllers not in it are not tried. Device memory comes from `gpu`, cold memory
/// from `cold` (`top`: the path of `dir` from the cgroup2 hierarchy's root). `None` for a
/// module removed before or while it was read (its directory `ENOENT`, or without its files:
/// `crate::cgroup::gone`): it is no module any more.
pub(crate) fn module_status_with(
    dir: &CgroupDir,
    m: &ModuleEntry,
    enabled: Option<&[String]>,
    gpu: &GpuCensus,
    cold: &cold::ColdCensus,
    top: Option<&str>,
) -> Option<ModuleStatus> {
    // The module's directory opened once, its files read from it by one path component each
    // (not each by the whole path from the root); where it cannot be opened, each read from the
    // root fails alike and its figure is unknown.
    // Mutation: a module gone while it was read is shown all the same, every figure unknown.
    let show_gone = mutation::active(Control::StatusShowsGone);
    let module_rel = m.rel();
    let own = match dir.open_dir(&module_rel) {
        Ok(d) => Some(d),
        Err(e) if is_gone(e) && !show_gone => return None,
        Err(_) => None,
    };
    let (dir, rel) = match &own {
        Some(d) => (d, ""),
        None => (dir, module_rel.as_str()),
    };
    let f = |file: &str| {
        let controller = file.split('.').next().unwrap_or("");
        let core = matches!(file, "cpu.stat")
            || file.ends_with(".pressure")
            || !matches!(controller, "memory" | "pids" | "cpu" | "io");
        match enabled {
            Some(on) if !core && !on.iter().any(|c| c == controller) => absent_is_unknown(None),
            _ => read(dir, rel, file),
        }
    };
    // `cgroup.events` read here, from the module's directory, whatever the listing read (a
    // listing that read none, `Root::status`'s, has `None` for both, as has one that could not).
    let events = read(dir, rel, "cgroup.events").map(|t| parse::events(&t));
    let populated = events.as_ref().and_then(|e| e.populated);
    let frozen = events.as_ref().and_then(|e| e.frozen);
    let pids = members(dir, rel).ok();
    let (ooms, killed) = oomd::oomd_counters(dir, rel);

    let (memory_current, memory_swap_current) = memory_now(
        f("memory.current"),
        f("memory.swap.current"),
        pids.as_deref(),
    );
    let events = f("memory.events").map(|t| memory_events(&t));
    let stat = f("memory.stat");
    let (anon, file, shmem) = memory_stat(stat.as_deref());
    let stat_key = |k: &str| stat.as_deref().and_then(|t| parse::flat_key(t, k));
    // `dmem.current` only where a GPU is (no file tried per module on a host without one),
    // and only where the controller is enabled for the modules, when that is known.
    let dmem_on = enabled.is_none_or(|on| on.iter().any(|c| c == "dmem"));
    let dmem = (gpu.has_reader() && dmem_on)
        .then(|| read(dir, rel, "dmem.current"))
        .flatten();
    let [memory_psi, cpu_psi, io_psi] =
        PRESSURE_FILES.map(|file| f(file).map(|t| parse::pressure(&t)));
    let stalled = |p: &Option<parse::Pressure>| {
        p.map(|p| Stalled {
            some: p.some_total,
            full: p.full_total,
        })
        .filter(|s| s.some.is_some() || s.full.is_some())
    };
    let mut s = ModuleStatus::unknown(m.name.clone(), m.module.clone(), m.layout, &m.path);
    s.populated.value = populated;
    s.frozen.value = frozen;
    s.procs.value = pids.as_ref().map(Vec::len);
    s.memory_current = memory_current;
    s.memory_peak.value = f("memory.peak").as_deref().and_then(parse::number);
    s.memory_swap_current = memory_swap_current;
    s.memory_anon.value = anon;
    s.memory_file.value = file;
    s.memory_shmem.value = shmem;
    s.memory_zswapped.value = stat_key("zswapped");
    s.memory_zswap.value = stat_key("zswap");
    s.memory_events.value = events;
    s.pids_current.value = f("pids.current").as_deref().and_then(parse::number);
    s.cpu_usage_usec.value = f("cpu.stat").and_then(|t| parse::flat_key(&t, "usage_usec"));
    s.memory_pressure_avg10.value = memory_psi.and_then(|p| p.some_avg10);
    s.cpu_pressure_avg10.value = cpu_psi.and_then(|p| p.some_avg10);
    s.io_pressure_avg10.value = io_psi.and_then(|p| p.some_avg10);
    s.memory_pressure_stalled_usec.value = stalled(&memory_psi);
    s.cpu_pressure_stalled_usec.value = stalled(&cpu_psi);
    s.io_pressure_stalled_usec.value = stalled(&io_psi);
    s.limits = LimitFigures::read(f);
    s.oomd_preference.value = oomd::preference_of(dir, rel);
    s.oomd_ooms.value = ooms;
    s.oomd_kill.value = killed;
    s.ck_stops.value = oomd::ck_stops(dir, rel);
    s.gpu_memory = gpu.of_module(pids.as_deref(), dmem.as_deref());
    let module_path = top.map(|t| format!("{}/{module_rel}", t.trim_end_matches('/')));
    s.cold_memory = cold.of_module(module_path.as_deref());
    // Asked after every read: a removal that began meanwhile left figures of a module that is
    // no more (an `rmdir` takes the files first).
    if own.as_ref().is_some_and(|d| removed(d, "")) && !show_gone {
        return None;
    }
    Some(s)
}

/// The counters of a `memory.events` text.
fn memory_events(text: &str) -> MemoryEvents {
    let k = parse::flat_keyed(text);
    MemoryEvents {
        low: k.get("low").copied(),
        high: k.get("high").copied(),
        max: k.get("max").copied(),
        oom: k.get("oom").copied(),
        oom_kill: k.get("oom_kill").copied(),
        oom_group_kill: k.get("oom_group_kill").copied(),
    }
}

/// The counters of a layout's parent directory (`subc-modules/`, `daemon/subc-modules/`), which
/// outlive its modules: `memory.events` is hierarchical (it counts the events of every module
/// below, removed ones too, since the parent was made), so an OOM kill of a module removed
/// before anyone read its own file still raised it. systemd-oomd's marks are those it left on
/// the parent itself (where it chose the whole parent); a module's own marks go with it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ParentStatus {
    /// The layout whose modules it holds.
    pub layout: Layout,
    /// Its path, relative to the root.
    pub path: String,
    /// Its `memory.events` (hierarchical: every module below it, removed ones included).
    pub memory_events: Figure<MemoryEvents>,
    /// `user.oomd_ooms` on the parent.
    pub oomd_ooms: Figure<u64>,
    /// `user.oomd_kill` on the parent.
    pub oomd_kill: Figure<u64>,
}

impl Root {
    /// The counters of each layout's parent directory that exists (`subc-modules/`, then
    /// `daemon/subc-modules/`); what cannot be read is `None`.
    pub fn parents_status(&self) -> Vec<ParentStatus> {
        let mut out = Vec::new();
        for layout in [Layout::Ck, Layout::Daemon] {
            let rel = match layout {
                Layout::Ck => crate::layout::MODULES_DIR.to_string(),
                _ => format!("daemon/{}", crate::layout::MODULES_DIR),
            };
            let Ok(dir) = self.dir().open_dir(&rel) else {
                continue;
            };
            let events = read(&dir, "", "memory.events").map(|t| memory_events(&t));
            let (ooms, killed) = oomd::oomd_counters(&dir, "");
            out.push(ParentStatus {
                layout,
                path: rel,
                memory_events: Figure::new(events, "memory.events"),
                oomd_ooms: Figure::new(ooms, format!("{} xattr", oomd::OOMS)),
                oomd_kill: Figure::new(killed, format!("{} xattr", oomd::KILL)),
            });
        }
        out
    }
}

/// Memory and swap in use: `memory.current` and `memory.swap.current` (their texts, `None` when
/// absent), or the `/proc` sums over `pids` when neither file exists.
fn memory_now(
    current: Option<String>,
    swap: Option<String>,
    pids: Option<&[u32]>,
) -> (Figure<u64>, Figure<u64>) {
    match (current, swap) {
        (Some(cur), swap) => (
            Figure::new(parse::number(&cur), "memory.current"),
            Figure::new(
                swap.as_deref().and_then(parse::number),
                "memory.swap.current",
            ),
        ),
        (None, Some(swap)) => (
            Figure::new(None, "memory.current"),
            Figure::new(parse::number(&swap), "memory.swap.current"),
        ),
        (None, None) => proc_memory(pids),
    }
}

/// `anon`, `file` and `shmem` of `memory.stat` (its text, `None` when absent): each `None` where
/// the file or its key is absent (no /proc fallback: a process's RSS does not split so).
fn memory_stat(text: Option<&str>) -> (Option<u64>, Option<u64>, Option<u64>) {
    let key = |k: &str| text.and_then(|t| parse::flat_key(t, k));
    (key("anon"), key("file"), key("shmem"))
}

/// A module's memory in use, as `status` reports it, reading only what that needs (for `watch`'s
/// report threshold, which runs every second).
pub fn memory_current(dir: &CgroupDir, rel: &str) -> Figure<u64> {
    let cur = read(dir, rel, "memory.current");
    let swap = read(dir, rel, "memory.swap.current");
    let pids = if cur.is_none() && swap.is_none() {
        members(dir, rel).ok()
    } else {
        None
    };
    memory_now(cur, swap, pids.as_deref()).0
}

/// The source of a figure summed from `/proc` (the memory controller is not enabled).
pub const PROC_RSS_SOURCE: &str = "sum of VmRSS in /proc/<pid>/status (no memory controller)";
/// As [`PROC_RSS_SOURCE`], for swap.
pub const PROC_SWAP_SOURCE: &str = "sum of VmSwap in /proc/<pid>/status (no memory controller)";

/// Sum `VmRSS`/`VmSwap` of the module's processes. A process that exits while we read is skipped;
/// when none of a populated module's processes could be read, the figure is unknown.
fn proc_memory(pids: Option<&[u32]>) -> (Figure<u64>, Figure<u64>) {
    let Some(pids) = pids else {
        return (
            Figure::new(None, PROC_RSS_SOURCE),
            Figure::new(None, PROC_SWAP_SOURCE),
        );
    };
    let mut rss: Option<u64> = None;
    let mut swap: Option<u64> = None;
    for pid in pids {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let m = parse::proc_status_memory(&text);
        if let Some(r) = m.rss {
            rss = Some(rss.unwrap_or(0) + r);
        }
        if let Some(s) = m.swap {
            swap = Some(swap.unwrap_or(0) + s);
        }
    }
    if pids.is_empty() {
        // No process: nothing is resident, and that is known.
        rss = Some(0);
        swap = Some(0);
    }
    (
        Figure::new(rss, PROC_RSS_SOURCE),
        Figure::new(swap, PROC_SWAP_SOURCE),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::DirName;

    #[test]
    fn anon_and_file_come_from_memory_stat_and_absent_is_none() {
        let (anon, file, shmem) =
            memory_stat(Some("anon 1048576\nfile 4096\nshmem 8192\nkernel 8192\n"));
        assert_eq!((anon, file, shmem), (Some(1 << 20), Some(4096), Some(8192)));
        // A kernel without the key, and no file at all: unknown, never 0.
        assert_eq!(memory_stat(Some("kernel 8192\n")), (None, None, None));
        assert_eq!(memory_stat(None), (None, None, None));
        let u = ModuleStatus::unknown(
            DirName::new("a").unwrap(),
            None,
            Layout::Ck,
            "subc-modules/a",
        );
        assert_eq!(
            (u.memory_anon.source.as_str(), u.memory_file.source.as_str()),
            ("memory.stat anon", "memory.stat file")
        );
        assert_eq!(u.memory_shmem.source, "memory.stat shmem");
    }
}
