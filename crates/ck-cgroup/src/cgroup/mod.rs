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
//! - [`mount`]: where cgroup2 is mounted.
//! - `own_threads` (crate-private): controllers enabled in a cgroup this process has just left,
//!   where a thread of its own that was exiting stays counted (`EBUSY`) until it has left.
//! - [`oomd`]: the marks on a directory, systemd-oomd's xattrs and ck-cgroup's own: a
//!   directory's preference set and read back, each counter mark read as the kernel keeps it,
//!   a stop's mark raised. What a mark means for a death is judged a layer up, in `cause`.

pub mod dir;
pub(crate) mod gone;
pub mod mount;
pub mod oomd;
pub(crate) mod own_threads;
pub mod parse;
pub mod procfs;
pub(crate) mod tree;
pub mod wait;

pub use dir::CgroupDir;
