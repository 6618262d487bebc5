//! The cgroup layer: an open cgroup2 directory and what the kernel's files say, with no notion of
//! modules, services or backends. Everything above reaches the cgroup tree through here.
//!
//! - [`dir`]: [`CgroupDir`], an open cgroup2 directory; every access beneath it goes through
//!   `openat2(RESOLVE_BENEATH)`.
//! - [`parse`]: the kernel's files (`cgroup.events`, `memory.stat`, `/proc/self/mountinfo`, …)
//!   to types; no I/O.
//! - `tree` (crate-private): walks of a subtree by directory fds (members, thaw, modes, depth-first removal).
//! - [`wait`]: waits on `cgroup.events` (`populated 0`, `frozen 1`), never sleeps.
//! - [`mount`]: where cgroup2 is mounted.
//! - [`oomd`]: systemd-oomd's xattrs (a directory's preference, its kill counters).

pub mod dir;
pub mod mount;
pub mod oomd;
pub mod parse;
pub(crate) mod tree;
pub mod wait;

pub use dir::CgroupDir;
