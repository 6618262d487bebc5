//! The figures `status` reports: each a value and where it came from ([`Figure`]), and every
//! figure of one module ([`ModuleStatus`]), each unknown until read.

use serde::Serialize;

use super::cold;
use crate::cgroup::oomd;
use crate::cgroup::parse::{self, Limit};
use crate::error::Result;
use crate::gpu::GpuMemory;
use crate::id::DirName;
use crate::layout::{Layout, ToModuleName};

/// A value and the file (or computation) it came from.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Figure<T> {
    /// The value; `None` when it could not be read.
    pub value: Option<T>,
    /// Where it came from: a kernel file name, or a description of the fallback.
    pub source: String,
}

impl<T> Figure<T> {
    pub(super) fn new(value: Option<T>, source: impl Into<String>) -> Figure<T> {
        Figure {
            value,
            source: source.into(),
        }
    }
}

/// `memory.events` counters (`None` each where the file or the key is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct MemoryEvents {
    /// Reclaimed below `memory.low`.
    pub low: Option<u64>,
    /// Throttled above `memory.high`.
    pub high: Option<u64>,
    /// Hit `memory.max`.
    pub max: Option<u64>,
    /// Hit the limit and the OOM killer was invoked.
    pub oom: Option<u64>,
    /// Processes killed by the OOM killer.
    pub oom_kill: Option<u64>,
    /// Whole-group OOM kills (`memory.oom.group`, kernel 5.17+ key).
    pub oom_group_kill: Option<u64>,
}

/// A pressure file's `total`s: microseconds in which some (or all non-idle) tasks of the cgroup
/// stalled on the resource since the cgroup was made (`None` each where the line is absent:
/// `full` of `cpu.pressure` before 5.13). Counters: a rate of them covers every second, where an
/// `avg10` sampled every 15 s covers the last 10 of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Stalled {
    /// `some total`.
    pub some: Option<u64>,
    /// `full total`.
    pub full: Option<u64>,
}

/// The struct of the limits `status` shows, written from one list of (field, file): the fields,
/// their sources, and the walks over them all come from it, so a limit is named once here (its
/// row of [`crate::limits::LIMITS`] is the other place, held together by a unit test).
macro_rules! limit_figures {
    ($($field:ident => $file:literal),* $(,)?) => {
        /// The limits in force on a module: one figure per row of [`crate::limits::LIMITS`]
        /// shown in `status` ([`LimitSpec::status`](crate::limits::LimitSpec::status)), named as
        /// its file with `_` for `.`, its source the file.
        #[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
        #[non_exhaustive]
        pub struct LimitFigures {
            $(
                #[doc = concat!("`", $file, "`.")]
                pub $field: Figure<Limit>,
            )*
        }

        impl LimitFigures {
            /// Every figure, `None` each (nothing read yet), its source its file.
            fn unread() -> LimitFigures {
                LimitFigures { $($field: Figure::new(None, $file),)* }
            }

            /// Every figure, in the order of the struct.
            fn each(&self) -> Vec<&Figure<Limit>> {
                vec![$(&self.$field,)*]
            }

            /// Every figure, mutable, in the order of the struct.
            fn each_mut(&mut self) -> Vec<&mut Figure<Limit>> {
                vec![$(&mut self.$field,)*]
            }
        }
    };
}

limit_figures! {
    memory_high => "memory.high",
    memory_max => "memory.max",
    memory_swap_max => "memory.swap.max",
    pids_max => "pids.max",
    cpu_weight => "cpu.weight",
    memory_oom_group => "memory.oom.group",
}

impl LimitFigures {
    /// Every figure, in the order of [`crate::limits::LIMITS`].
    pub fn figures(&self) -> Vec<&Figure<Limit>> {
        let all = self.each();
        crate::limits::LIMITS
            .iter()
            .filter_map(|s| all.iter().find(|f| f.source == s.file).copied())
            .collect()
    }

    /// Read every limit `status` shows, each from its row's file, with `read` (a file that
    /// cannot be read is `None`).
    pub(super) fn read(read: impl Fn(&str) -> Option<String>) -> LimitFigures {
        let mut l = LimitFigures::unread();
        for s in crate::limits::LIMITS.iter().filter(|s| s.status) {
            if let Some(f) = l.each_mut().into_iter().find(|f| f.source == s.file) {
                f.value = read(s.file).as_deref().and_then(parse::limit);
            }
        }
        l
    }
}

/// Every figure of one module.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ModuleStatus {
    /// Directory name as found, in its shown form.
    pub name: DirName,
    /// The module id (decoded for the daemon's layout; `null` where it does not decode).
    pub module: Option<DirName>,
    /// Which placement made it.
    pub layout: Layout,
    /// Path relative to the root, as shown.
    pub path: String,
    /// `populated` from `cgroup.events`.
    pub populated: Figure<bool>,
    /// `frozen` from `cgroup.events`: a module left frozen (by itself, or by a freeze-kill that
    /// did not finish) runs nothing until it is thawed or killed.
    pub frozen: Figure<bool>,
    /// Processes in the module and its sub-cgroups.
    pub procs: Figure<usize>,
    /// Memory in use: `memory.current`, or the sum of `VmRSS` where that file is absent.
    pub memory_current: Figure<u64>,
    /// `memory.peak` (kernel 5.19).
    pub memory_peak: Figure<u64>,
    /// Swap in use: `memory.swap.current`, or the sum of `VmSwap`.
    pub memory_swap_current: Figure<u64>,
    /// `memory.stat` `anon`: anonymous memory (heaps, stacks), the part of `memory.current` a
    /// hoard grows in and the kernel cannot drop without swap.
    pub memory_anon: Figure<u64>,
    /// `memory.stat` `file`: page cache (tmpfs and shared memory included), the part of
    /// `memory.current` the kernel can mostly reclaim.
    pub memory_file: Figure<u64>,
    /// `memory.stat` `shmem`: shared memory and tmpfs pages (`/dev/shm`, memfds), the part of
    /// `memory_file` that killing the module does not free (`kill`'s `memory_left`).
    #[serde(default = "shmem_unread")]
    pub memory_shmem: Figure<u64>,
    /// `memory.stat` `zswapped`: anonymous memory the kernel moved to zswap, at its size before
    /// compression (counted in `memory_swap_current` too: each such page holds a swap slot).
    #[serde(default = "zswapped_unread")]
    pub memory_zswapped: Figure<u64>,
    /// `memory.stat` `zswap`: what those pages take compressed, charged to `memory_current`.
    #[serde(default = "zswap_unread")]
    pub memory_zswap: Figure<u64>,
    /// `memory.events`.
    pub memory_events: Figure<MemoryEvents>,
    /// `pids.current`.
    pub pids_current: Figure<u64>,
    /// `cpu.stat` `usage_usec`.
    pub cpu_usage_usec: Figure<u64>,
    /// `memory.pressure` `some avg10`, percent.
    pub memory_pressure_avg10: Figure<f64>,
    /// `cpu.pressure` `some avg10`, percent.
    pub cpu_pressure_avg10: Figure<f64>,
    /// `io.pressure` `some avg10`, percent.
    pub io_pressure_avg10: Figure<f64>,
    /// `memory.pressure` `total`s, microseconds.
    #[serde(default = "stalled_unread::<0>")]
    pub memory_pressure_stalled_usec: Figure<Stalled>,
    /// `cpu.pressure` `total`s, microseconds.
    #[serde(default = "stalled_unread::<1>")]
    pub cpu_pressure_stalled_usec: Figure<Stalled>,
    /// `io.pressure` `total`s, microseconds.
    #[serde(default = "stalled_unread::<2>")]
    pub io_pressure_stalled_usec: Figure<Stalled>,
    /// The limits in force.
    pub limits: LimitFigures,
    /// systemd-oomd's preference for the module (`user.oomd_avoid`, `user.oomd_omit`); `None`
    /// where the attributes cannot be read.
    pub oomd_preference: Figure<crate::cgroup::oomd::OomdPreference>,
    /// `user.oomd_ooms`: how many times systemd-oomd killed the module (0: the attribute is
    /// absent, it never did; `None`: it cannot be read).
    pub oomd_ooms: Figure<u64>,
    /// `user.oomd_kill`: how many processes systemd-oomd killed in it.
    pub oomd_kill: Figure<u64>,
    /// `user.ck_cgroup_stops`: how many times a stop of ck-cgroup's (the helper's `kill`,
    /// `prune --kill`, `run`'s, the library's `Root::stop`) began on the module (0: never;
    /// `None`: it cannot be read, or a report from a helper that did not carry it).
    #[serde(default = "ck_stops_unread")]
    pub ck_stops: Figure<u64>,
    /// Device (GPU) memory its processes hold, per device: `dmem.current`, DRM `fdinfo`, or
    /// `nvidia-smi` ([`crate::gpu`]); unknown, with the reason, where there is no GPU or a reader
    /// failed.
    #[serde(default)]
    pub gpu_memory: GpuMemory,
    /// Memory it holds and has not touched within a window, from the multi-gen LRU
    /// ([`cold`]); unknown, with the reason, where that cannot be told.
    #[serde(default)]
    pub cold_memory: cold::ColdMemory,
}

/// The directory the figures are of, by its layout and name
/// ([`ModuleName::of_dir`](crate::layout::ModuleName::of_dir)).
impl ToModuleName for ModuleStatus {
    fn to_module_name(&self) -> Result<crate::layout::ModuleName> {
        Ok(crate::layout::ModuleName::of_dir(self.layout, &self.name))
    }
}

/// The figure of a report that does not carry `memory_shmem`: unknown.
pub(super) fn shmem_unread() -> Figure<u64> {
    Figure::new(None, "memory.stat shmem")
}

/// The pressure files, in the order of the `*_pressure_stalled_usec` fields.
pub(super) const PRESSURE_FILES: [&str; 3] = ["memory.pressure", "cpu.pressure", "io.pressure"];

/// The figure of a report that does not carry the `total`s of `PRESSURE_FILES[I]`: unknown.
pub(super) fn stalled_unread<const I: usize>() -> Figure<Stalled> {
    Figure::new(None, format!("{} total", PRESSURE_FILES[I]))
}

/// The figure of a report that does not carry `memory_zswapped`: unknown.
pub(super) fn zswapped_unread() -> Figure<u64> {
    Figure::new(None, "memory.stat zswapped")
}

/// The figure of a report that does not carry `memory_zswap`: unknown.
pub(super) fn zswap_unread() -> Figure<u64> {
    Figure::new(None, "memory.stat zswap")
}

/// The figure of a report that does not carry `ck_stops`: unknown.
pub(super) fn ck_stops_unread() -> Figure<u64> {
    Figure::new(None, format!("{} xattr", oomd::STOPS))
}

impl ModuleStatus {
    /// A module's figures, every one unknown (`None`), each with the source `status` reads it
    /// from (where memory comes from `/proc` instead, `status` says so in its source). The one
    /// place the sources are named: [`Root::status`](crate::module::Root::status) starts from it, and so does a test's
    /// fixture (set the values it needs).
    pub fn unknown(
        name: DirName,
        module: Option<DirName>,
        layout: Layout,
        path: &str,
    ) -> ModuleStatus {
        let psi = |file: &str| Figure::new(None, format!("{file} some avg10"));
        ModuleStatus {
            name,
            module,
            layout,
            path: path.to_string(),
            populated: Figure::new(None, "cgroup.events populated"),
            frozen: Figure::new(None, "cgroup.events frozen"),
            procs: Figure::new(None, "cgroup.procs (sub-cgroups included)"),
            memory_current: Figure::new(None, "memory.current"),
            memory_peak: Figure::new(None, "memory.peak"),
            memory_swap_current: Figure::new(None, "memory.swap.current"),
            memory_anon: Figure::new(None, "memory.stat anon"),
            memory_file: Figure::new(None, "memory.stat file"),
            memory_shmem: shmem_unread(),
            memory_zswapped: zswapped_unread(),
            memory_zswap: zswap_unread(),
            memory_events: Figure::new(None, "memory.events"),
            pids_current: Figure::new(None, "pids.current"),
            cpu_usage_usec: Figure::new(None, "cpu.stat usage_usec"),
            memory_pressure_avg10: psi("memory.pressure"),
            cpu_pressure_avg10: psi("cpu.pressure"),
            io_pressure_avg10: psi("io.pressure"),
            memory_pressure_stalled_usec: stalled_unread::<0>(),
            cpu_pressure_stalled_usec: stalled_unread::<1>(),
            io_pressure_stalled_usec: stalled_unread::<2>(),
            limits: LimitFigures::unread(),
            oomd_preference: Figure::new(None, oomd::PREFERENCE_SOURCE),
            oomd_ooms: Figure::new(None, format!("{} xattr", oomd::OOMS)),
            oomd_kill: Figure::new(None, format!("{} xattr", oomd::KILL)),
            ck_stops: ck_stops_unread(),
            gpu_memory: GpuMemory::unknown(crate::gpu::NOT_READ),
            cold_memory: cold::ColdMemory::unknown(cold::DEFAULT_WINDOW_MS, cold::NOT_READ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limit_status_shows_has_its_figure_and_no_other() {
        let l = LimitFigures::unread();
        for s in crate::limits::LIMITS {
            let has = l.each().iter().any(|f| f.source == s.file);
            assert_eq!(has, s.status, "{}", s.key);
        }
        assert_eq!(
            l.each().len(),
            l.figures().len(),
            "a figure with no row of LIMITS"
        );
        let files: Vec<&str> = l.figures().iter().map(|f| f.source.as_str()).collect();
        let shown: Vec<&str> = crate::limits::LIMITS
            .iter()
            .filter(|s| s.status)
            .map(|s| s.file)
            .collect();
        assert_eq!(files, shown);
        let read = LimitFigures::read(|file| (file == "pids.max").then(|| "max\n".to_string()));
        assert_eq!(read.pids_max.value, Some(Limit::Max));
        assert_eq!(read.memory_max.value, None);
    }
}
