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
    /// In a systemd scope ([`Sandbox::create_in_scope`]): the scope's unit name.
    scope: Option<String>,
}

/// In a scope sandbox, the leaf that holds the helper itself.
pub const HELPER_LEAF: &str = "helper";
/// In a scope sandbox, the leaf where the sandbox's command runs (emptied at teardown).
pub const CMD_LEAF: &str = "cmd";
/// In a scope sandbox, the isolated root.
pub const ROOT_DIR: &str = "root";

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
        Sandbox::create_named(CgroupDir::open(parent)?, unique_name())
    }

    /// On a systemd host: ask the manager on `bus` for a transient scope
    /// `ck-sandbox-<pid>-<seq>-<nanos>.scope` with `Delegate=yes` holding this process, so that
    /// the sandbox lives in a subtree systemd handed over instead of beside systemd's own
    /// cgroups. Inside the scope (no process in an inner node): this process moves to
    /// [`HELPER_LEAF`], the controllers the scope has are enabled for its children, and the
    /// isolated root is [`ROOT_DIR`]; a command meant to run in the sandbox goes to
    /// [`CMD_LEAF`] ([`Sandbox::cmd_procs`]). Teardown empties and removes `root/` and `cmd/`;
    /// when this process exits, the scope is empty and systemd removes it.
    pub fn create_in_scope(bus: crate::systemd::Bus) -> Result<Sandbox> {
        use crate::systemd::{Manager, ScopeSpec};
        let unit = format!("{}.scope", unique_name());
        let me = std::process::id();
        let spec = ScopeSpec {
            unit: unit.clone(),
            slice: None,
            description: "ck-cgroup sandbox (an isolated root for tests)".into(),
            pids: vec![me],
            delegate: true,
            part_of: None,
            limits: crate::limits::Limits::default(),
        };
        Manager::connect(bus)?.start_scope(&spec, crate::scopes::START_TIMEOUT)?;
        let cg = crate::scopes::placed_in(&unit, &format!("/{unit}"))?;
        let scope = CgroupDir::open(&cgroup2_mount()?.join(cg.trim_start_matches('/')))?;
        scope.mkdir(HELPER_LEAF)?;
        scope.write(&format!("{HELPER_LEAF}/cgroup.procs"), &me.to_string())?;
        let available = crate::parse::controllers(&scope.read("cgroup.controllers")?);
        let enable: Vec<String> = crate::module::WANTED_CONTROLLERS
            .iter()
            .filter(|c| available.iter().any(|a| a == *c))
            .map(|c| format!("+{c}"))
            .collect();
        if !enable.is_empty() {
            scope.write("cgroup.subtree_control", &enable.join(" "))?;
        }
        scope.mkdir(CMD_LEAF)?;
        let mut sb = Sandbox::create_named(scope, ROOT_DIR.to_string())?;
        sb.scope = Some(unit);
        Ok(sb)
    }

    /// The scope's unit name, for a sandbox made by [`Sandbox::create_in_scope`].
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// For a scope sandbox: `cmd/cgroup.procs`, opened for writing, to place the sandbox's
    /// command before it runs ([`crate::spawn::place_before_exec`]). `None` otherwise.
    pub fn cmd_procs(&self) -> Result<Option<rustix::fd::OwnedFd>> {
        if self.scope.is_none() {
            return Ok(None);
        }
        let rel = format!("{CMD_LEAF}/cgroup.procs");
        self.parent
            .open_beneath(&rel, rustix::fs::OFlags::WRONLY)
            .map(Some)
            .map_err(|e| Error::io("open", self.parent.display_path(&rel), e))
    }

    fn create_named(parent: CgroupDir, name: String) -> Result<Sandbox> {
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
            scope: None,
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
        empty_and_remove(&self.parent, &self.name, self.root.dir())?;
        if self.scope.is_some() && self.parent.exists(CMD_LEAF) {
            let leaf = CgroupDir::open(&self.parent.display_path(CMD_LEAF))?;
            empty_and_remove(&self.parent, CMD_LEAF, &leaf)?;
        }
        Ok(())
    }
}

fn unique_name() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{PREFIX}{}-{}-{nanos:08x}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Kill everything in `dir` (= `parent/name`), wait until it is empty, remove it deepest first.
/// Independent of [`crate::stop`], so that the mutation controls do not switch it off.
fn empty_and_remove(parent: &CgroupDir, name: &str, dir: &CgroupDir) -> Result<()> {
    {
        match dir.write_raw("cgroup.kill", "1") {
            Ok(()) => {}
            // Before 5.14: SIGKILL each member until none is left (the wait below bounds it).
            Err(Errno::NOENT) => {
                for _ in 0..100 {
                    let pids = crate::module::procs(dir, "")?;
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
                dir.path().display()
            )));
        }
        for sub in dir.subdirs("")? {
            remove_tree(dir, &sub)?;
        }
        parent
            .rmdir_raw(name)
            .or_else(|e| if e == Errno::NOENT { Ok(()) } else { Err(e) })
            .map_err(|e| Error::io("rmdir", dir.path(), e))
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.keep
            && let Err(e) = self.teardown()
        {
            // Not eprintln!: it panics on a stderr that cannot be written (full), in a drop.
            let line = format!("ck-cgroup: sandbox cleanup: {e}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        }
    }
}
