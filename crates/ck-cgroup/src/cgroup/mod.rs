//! The cgroup layer: an open cgroup2 directory and what the kernel's files say, with no notion of
//! modules, services or backends. Everything above reaches the cgroup tree through here.
//!
//! - [`dir`]: [`CgroupDir`], an open cgroup2 directory; every access beneath it goes through
//!   `openat2(RESOLVE_BENEATH)`.
//! - [`parse`]: the kernel's files (`cgroup.events`, `memory.stat`, `/proc/self/mountinfo`, …)
//!   to types; no I/O.
//! - [`procfs`]: `/proc/<pid>/` files read as bytes (a process's name may be any bytes).
//! - `tree` (crate-private): walks of a subtree by directory fds (members, thaw, modes, depth-first removal).
//! - `gone` (crate-private): which errnos of a cgroup's files say that it was removed meanwhile
//!   (`ENODEV`, `ENOENT`): the one rule every reader racing an `rmdir` follows.
//! - [`wait`]: waits on `cgroup.events` (`populated 0`, `frozen 1`), never sleeps.
//! - [`memory_left`]: what stayed charged to a module once its processes were gone (shmem).
//! - [`mount`]: where cgroup2 is mounted.
//! - [`oomd`]: systemd-oomd's xattrs (a directory's preference, its kill counters).
//! - `kill_known` (crate-private): [`oomd::KillCounters`]' answers as `Option<bool>` (`by_kernel_known`, …):
//!   unknown where a counter could not be read, never "no".
//! - [`death_cause`]: why a module's main process died (exited, a signal, an OOM killer, a stop
//!   of ours), from what rose on its directory and above it since it was spawned.
//! - `stops_here` (crate-private): the stops this process made, by cgroup id, so that its death
//!   reports know them without reading a mark a module could raise.
//! - [`oom_cause`]: which limit an OOM kill in a module came from (the module's, an ancestor's,
//!   the machine's).

pub mod death_cause;
pub mod dir;
pub(crate) mod gone;
mod kill_known;
pub mod memory_left;
pub mod mount;
pub mod oom_cause;
pub mod oomd;
pub mod parse;
pub mod procfs;
pub(crate) mod stops_here;
pub(crate) mod tree;
pub mod wait;

pub use dir::CgroupDir;
