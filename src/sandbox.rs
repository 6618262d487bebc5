//! The isolated root: a fresh, uniquely named cgroup that is `init`ed, handed out as a [`Root`],
//! and emptied (`cgroup.kill`) and removed (deepest first) when the guard is dropped.
//!
//! Tests and demos run in one so that they never touch a live service's subtree.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::io::Errno;

use crate::discover::cgroup2_mount;
use crate::error::{Error, Result};
use crate::module::{Root, remove_tree};
use crate::root::CgroupDir;
use crate::wait::{Waited, wait_empty};

/// Prefix of every sandbox directory name.
pub const PREFIX: &str = "ck-sandbox-";

static SEQ: AtomicU32 = AtomicU32::new(0);

/// An isolated root under a parent cgroup. Dropping it kills what is left and removes it.
#[derive(Debug)]
pub struct Sandbox {
    parent: CgroupDir,
    name: String,
    root: Root,
    keep: bool,
}

impl Sandbox {
    /// The default parent: the cgroup2 mount's root, when the caller may make cgroups there (as
    /// root on a host with cgroup2 mounted). Otherwise an error that says what to pass.
    pub fn default_parent() -> Result<PathBuf> {
        let mount = cgroup2_mount()?;
        if rustix::fs::access(&mount, rustix::fs::Access::WRITE_OK).is_err() {
            return Err(Error::bad_input(format!(
                "no default parent for a sandbox: {} is not writable by this user",
                mount.display()
            ))
            .with_hint(
                "pass --parent PATH, a cgroup2 directory you may make cgroups in (for example one delegated by `systemd-run --user --scope -p Delegate=yes`)",
            ));
        }
        Ok(mount)
    }

    /// Make a fresh sandbox under `parent` and `init` it.
    pub fn create(parent: &Path) -> Result<Sandbox> {
        let parent = CgroupDir::open(parent)?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "{PREFIX}{}-{}-{nanos:08x}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        if !parent.mkdir(&name)? {
            return Err(Error::failed(format!(
                "{} already exists",
                parent.display_path(&name).display()
            )));
        }
        let opened = CgroupDir::open(&parent.display_path(&name)).and_then(Root::from_dir);
        let root = match opened {
            Ok(r) => r,
            Err(e) => {
                let _ = parent.rmdir_raw(&name);
                return Err(e);
            }
        };
        let sandbox = Sandbox {
            parent,
            name,
            root,
            keep: false,
        };
        // On failure the guard's drop removes the directory.
        sandbox.root.init()?;
        Ok(sandbox)
    }

    /// The sandbox's root.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The sandbox's path.
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// Disarm the guard: the sandbox stays. Returns its path.
    pub fn keep(mut self) -> PathBuf {
        self.keep = true;
        self.root.path().to_path_buf()
    }

    /// Kill every process left in the sandbox, wait until it is empty, and remove it.
    pub fn destroy(mut self) -> Result<()> {
        self.keep = true;
        self.teardown()
    }

    fn teardown(&self) -> Result<()> {
        let dir = self.root.dir();
        match dir.write_raw("cgroup.kill", "1") {
            Ok(()) => {}
            // Before 5.14: SIGKILL each member until none is left (the wait below bounds it).
            Err(Errno::NOENT) => {
                for _ in 0..100 {
                    let pids = self.root.procs("")?;
                    if pids.is_empty() {
                        break;
                    }
                    for pid in pids {
                        if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                            let _ =
                                rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                        }
                    }
                }
            }
            Err(e) => {
                return Err(Error::io(
                    "write \"1\" to",
                    dir.display_path("cgroup.kill"),
                    e,
                ));
            }
        }
        if wait_empty(dir, "", Duration::from_secs(10))? == Waited::TimedOut {
            return Err(Error::failed(format!(
                "sandbox {} is still populated 10 s after cgroup.kill",
                self.path().display()
            )));
        }
        for sub in dir.subdirs("")? {
            remove_tree(dir, &sub)?;
        }
        self.parent
            .rmdir_raw(&self.name)
            .or_else(|e| if e == Errno::NOENT { Ok(()) } else { Err(e) })
            .map_err(|e| Error::io("rmdir", self.path(), e))
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.keep
            && let Err(e) = self.teardown()
        {
            eprintln!("ck-cgroup: sandbox cleanup: {e}");
        }
    }
}
