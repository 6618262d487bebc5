//! What the benchmarks in `benches/` share (each bench target is a crate of its own, so their
//! shared code is this crate, a dev-dependency of the root package):
//!
//! - [`common`]: the machine line of the header, the statistics, the child reaping of a
//!   subreaper, and the check that no sandbox is left;
//! - [`inotify`]: which files `status` opens, and when a module's `cgroup.events` changes;
//! - [`limit`]: the limit loop, the least a `status` could do (the vm and native benches).

pub mod common;
pub mod inotify;
pub mod limit;
