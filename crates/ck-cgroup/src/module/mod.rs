//! Operations on a service root: `init`, module `create` / `place` / `list` / `remove` / `kill`.
//!
//! Layout inside a root (see `docs/design.md`):
//!
//! ```text
//! <root>/                     the cgroup systemd made for the service (Delegate=)
//! ├── daemon/                 the daemon's leaf
//! │   └── subc-modules/m-…    the daemon's own built-in placement (subc-daemon 0.39), read too
//! └── subc-modules/           controllers enabled in its cgroup.subtree_control
//!     └── <id>/               one leaf per module
//! ```
//!
//! Of the root itself only `cgroup.subtree_control` and `cgroup.procs` are ever written.
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html>.

use std::os::unix::io::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::Signal;
use serde::Serialize;

mod init;
mod limits;
mod place;
mod remove;
mod report;
mod stop;

pub use report::*;
pub use stop::signal_name;
#[cfg(feature = "systemd")]
pub(crate) use stop::{Removed, prune_entries, still_populated};

use crate::cgroup::parse;
use crate::cgroup::root::CgroupDir;
use crate::cgroup::tree::members;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::id::{DirName, ModuleId};
use crate::layout::{DAEMON_LEAF, Layout, MODULES_DIR, ModuleRef, WANTED_CONTROLLERS};
use crate::stop::{StopOptions, TreeStop, stop_tree};

/// A service root: a cgroup2 directory below the hierarchy's root.
#[derive(Debug)]
pub struct Root {
    dir: CgroupDir,
}

impl Root {
    /// Open `path` as a service root: a cgroup2 directory (statfs-checked) below the hierarchy's
    /// root. The hierarchy's root itself is refused: it would hold every process of the machine.
    /// A path not on cgroup2 is an error of kind [`ErrorKind::NoCgroup2`](crate::ErrorKind::NoCgroup2).
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let _init = root.init()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(path: &Path) -> Result<Root> {
        let dir = CgroupDir::open(path)?;
        Root::from_dir(dir)
    }

    /// Wrap an already opened cgroup2 directory.
    pub fn from_dir(dir: CgroupDir) -> Result<Root> {
        // cgroup.events exists on every cgroup but the hierarchy's root.
        if !dir.exists("cgroup.events") {
            return Err(Error::bad_input(format!(
                "{} is the root of the cgroup2 hierarchy, not a service's cgroup",
                dir.path().display()
            ))
            .with_hint(
                "pass the service's delegated cgroup with --root, or use `ck-cgroup sandbox`",
            ));
        }
        Ok(Root { dir })
    }

    /// The root's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The underlying directory handle.
    pub fn dir(&self) -> &CgroupDir {
        &self.dir
    }
}
