//! `freeze` and `thaw`: a module paused and resumed by its `cgroup.freeze`, and the wait on its
//! `cgroup.events` until the kernel says `frozen 1` (or `frozen 0`): poll, never a sleep.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::Root;
use crate::cgroup::gone::{is_gone, removed};
use crate::cgroup::tree::members;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::layout::{Layout, ModuleName, ToModuleName};
use crate::mutation::{self, Control};

/// What `freeze` or `thaw` did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct FreezeReport {
    /// The name asked for.
    pub module: ModuleName,
    /// Which placement made it.
    pub layout: Layout,
    /// Its path.
    pub path: PathBuf,
    /// `cgroup.events` `frozen` after the wait: `true` after a freeze, `false` after a thaw.
    pub frozen: bool,
    /// It was in the other state before (false: frozen already, or running already).
    pub changed: bool,
    /// How long the wait for the kernel's `frozen` took, in milliseconds.
    pub waited_ms: f64,
}

impl Root {
    /// Freeze module `name` (an id, or a directory name as `list` shows it): `1` to its
    /// `cgroup.freeze`, then wait on its `cgroup.events` until `frozen 1`, at most `timeout`.
    /// Every process of the module and of its sub-cgroups stops where it is until
    /// [`Root::thaw`]; `kill` takes a frozen module as it is.
    ///
    /// A module that does not exist is [`ErrorKind::NoSuchModule`](crate::error::ErrorKind) (exit 1);
    /// one still not frozen after `timeout` is [`ErrorKind::NotFrozen`](crate::error::ErrorKind)
    /// (exit 1), naming the module and what it holds (its `cgroup.freeze` stays `1`: the kernel
    /// goes on freezing it).
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open_service("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let r = root.freeze("worker-1", std::time::Duration::from_secs(10))?;
    /// assert!(r.frozen);
    /// let _ = root.thaw("worker-1", std::time::Duration::from_secs(10))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn freeze(&self, name: impl ToModuleName, timeout: Duration) -> Result<FreezeReport> {
        self.set_frozen(&name.to_module_name()?, true, timeout)
    }

    /// Thaw module `name`: `0` to its `cgroup.freeze`, then wait until `frozen 0`, at most
    /// `timeout`. A module frozen by an ancestor's `cgroup.freeze` stays frozen: that is the
    /// timeout's error. Errors as [`Root::freeze`].
    pub fn thaw(&self, name: impl ToModuleName, timeout: Duration) -> Result<FreezeReport> {
        self.set_frozen(&name.to_module_name()?, false, timeout)
    }

    fn set_frozen(
        &self,
        name: &ModuleName,
        frozen: bool,
        timeout: Duration,
    ) -> Result<FreezeReport> {
        let verb = if frozen { "freeze" } else { "thaw" };
        // The one rule for a module that is not there (docs/commands.md): exit 1, as status,
        // ps and set say it.
        let missing = || {
            Error::failed(format!(
                "no module {name} under {}: nothing to {verb}",
                self.path().display()
            ))
            .with_hint("`ck-cgroup list` shows the modules")
            .with_kind(crate::error::ErrorKind::NoSuchModule)
        };
        let Some(m) = self.find(name)? else {
            return Err(missing());
        };
        let rel = m.rel();
        let path = self.dir.display_path(&rel);
        let mdir = match self.dir.open_dir(&rel) {
            Ok(d) => d,
            Err(e) if is_gone(e) => return Err(missing()),
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        let before = self.events(&rel).ok().and_then(|e| e.frozen);
        let file = join(&rel, "cgroup.freeze");
        match self.dir.write_raw(&file, if frozen { "1" } else { "0" }) {
            Ok(()) => {}
            // Absent only where the cgroup's own files are there (as a kill decides it).
            Err(e) if is_gone(e) && !removed(&self.dir, &rel) => {
                return Err(Error::bad_input(format!(
                    "cannot {verb} {name}: {} is absent (kernel before 5.2)",
                    self.dir.display_path(&file).display()
                )));
            }
            Err(e) if is_gone(e) => return Err(missing()),
            Err(e) => {
                return Err(Error::io(
                    format_args!("write \"{}\" to", u8::from(frozen)),
                    self.dir.display_path(&file),
                    e,
                ));
            }
        }
        let start = Instant::now();
        // Mutation control (`CK_MUTATION=freeze-no-wait`): return as soon as the file is
        // written, before the kernel has frozen (or thawed) every process.
        // A module removed meanwhile (a `kill` racing this) ends the wait at once: missing.
        if !mutation::active(Control::FreezeNoWait) {
            let until = crate::cgroup::wait::wait_events_or_gone(
                &self.dir,
                m.layout.dir(),
                m.name.text(),
                &mdir,
                timeout,
                |e| e.frozen == Some(frozen),
            )?;
            if until == crate::cgroup::wait::Until::Gone {
                return Err(missing());
            }
        }
        let waited_ms = crate::stop::ms_since(start);
        let now = match self.events(&rel) {
            Ok(e) => e.frozen,
            Err(_) if !self.dir.is_dir(&rel)? => return Err(missing()),
            Err(e) => return Err(e),
        };
        if now != Some(frozen) {
            return Err(self.not_reached(name, &rel, frozen, now, waited_ms));
        }
        Ok(FreezeReport {
            module: name.clone(),
            layout: m.layout,
            path,
            frozen,
            changed: before != Some(frozen),
            waited_ms,
        })
    }

    /// The error of a freeze or thaw that did not reach `frozen` within its timeout: what
    /// `cgroup.events` says (`now`) and which processes are in the module.
    fn not_reached(
        &self,
        name: &ModuleName,
        rel: &str,
        frozen: bool,
        now: Option<bool>,
        waited_ms: f64,
    ) -> Error {
        let procs = members(&self.dir, rel).map_or_else(
            |_| "its processes could not be read".to_string(),
            |p| {
                let list: Vec<String> = p.iter().map(u32::to_string).collect();
                format!("{} process(es) in it: {}", p.len(), list.join(" "))
            },
        );
        let state = match now {
            Some(true) => "frozen 1",
            Some(false) => "frozen 0",
            None => "no frozen key",
        };
        let left = if frozen {
            "cgroup.freeze stays 1: the kernel goes on freezing it"
        } else {
            "an ancestor's cgroup.freeze may hold it frozen"
        };
        Error::failed(format!(
            "{name}: not {} after {waited_ms} ms: {}/cgroup.events says {state} ({procs}; {left})",
            if frozen { "frozen" } else { "thawed" },
            self.dir.display_path(rel).display()
        ))
        .with_kind(crate::error::ErrorKind::NotFrozen)
    }
}
