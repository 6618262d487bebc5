//! Memory a kill cannot free: pages still charged to a module's cgroup once every process of it
//! is gone, read from its `memory.stat` before the directory is removed. Shared memory (`shmem`:
//! tmpfs files such as those in `/dev/shm`, POSIX and SysV shared memory, memfds still held by
//! another process) is not freed by killing the processes that made it: it stays charged, to the
//! removed (dying) cgroup and so to its ancestors, until the files are deleted. Page cache
//! (`file`) stays too, but the kernel reclaims it under pressure.

use serde::{Deserialize, Serialize};

use crate::cgroup::dir::CgroupDir;
use crate::cgroup::wait::join;

/// What stayed charged to a module after its processes were gone. Each figure is `None` where
/// `memory.stat` could not be read (no memory controller), never 0 for unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MemoryLeft {
    /// `memory.stat` `shmem`, bytes: shared memory and tmpfs pages; a kill does not free them.
    pub shmem: Option<u64>,
    /// `memory.stat` `file`, bytes: page cache (shmem included), reclaimable but for shmem.
    pub file: Option<u64>,
}

impl MemoryLeft {
    /// `memory.stat` of the directory `rel` beneath `dir` (`memory.stat`).
    pub fn read(dir: &CgroupDir, rel: &str) -> MemoryLeft {
        let stat = dir.read_flat_keyed(&join(rel, "memory.stat"));
        let key = |k: &str| stat.as_ref().and_then(|m| m.get(k).copied());
        MemoryLeft {
            shmem: key("shmem"),
            file: key("file"),
        }
    }

    /// Shared memory that stays charged (`shmem` above 0).
    pub fn shmem_left(&self) -> Option<u64> {
        self.shmem.filter(|n| *n > 0)
    }
}
