//! The cause layer: why a module's processes died, judged from what the kernel's files and the
//! marks on its directory say ([`crate::cgroup`] reads them, with no notion of modules), and what
//! a death left behind. Everything that names a killer lives here.
//!
//! - [`counters`]: a module's kill and stop counters ([`counters::KillCounters`]: the kernel's
//!   OOM killer's, systemd-oomd's marks, ck-cgroup's stops), and the processes an oomd mark
//!   claims were killed that still run.
//! - `kill_known` (crate-private): [`counters::KillCounters`]' answers as `Option<bool>`
//!   (`by_kernel_known`, …): unknown where a counter could not be read, never "no".
//! - `stops_here` (crate-private): the stops this process made, by cgroup id, so that its death
//!   reports know them without reading a mark a module could raise.
//! - [`death_cause`]: why a module's main process died (exited, a signal, an OOM killer, a stop
//!   of ours), from what rose on its directory and above it since it was spawned.
//! - [`oom_cause`]: which limit an OOM kill in a module came from (the module's, an ancestor's,
//!   the machine's).
//! - [`memory_left`]: what stayed charged to a module once its processes were gone (shmem).
//! - `attribution` (crate-private): who killed a module, for `watch`: its counters followed from
//!   one read to the next, each rise of a mark checked against the processes it claims to have
//!   ended.
//! - `witness` (crate-private): processes held by pidfd, so that a stop, or a check of a mark,
//!   knows whether the ones it saw have exited.

pub(crate) mod attribution;
pub mod counters;
pub mod death_cause;
mod kill_known;
pub mod memory_left;
pub mod oom_cause;
pub(crate) mod stops_here;
pub(crate) mod witness;
