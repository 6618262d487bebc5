//! [`Root::signal_member`]: one process of a module signalled through a pidfd, never a bare pid.

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::Root;
use crate::cgroup::tree::members;
use crate::error::{Error, Result};
use crate::layout::ToModuleName;

impl Root {
    /// Send `sig` to the process `pid` of the module `name` (`pidfd_send_signal(2)`): the pidfd
    /// is opened first (`pidfd_open(2)`), then the process is checked to be in the module's
    /// subtree (its `cgroup.procs` and those below), so a pid that a process outside the module
    /// reused since the caller read it is never signalled. A process that is not there, or not
    /// the module's, is an error of kind [`ErrorKind::NoSuchProcess`](crate::error::ErrorKind)
    /// (exit 1); a module that is not there, of kind
    /// [`ErrorKind::NoSuchModule`](crate::error::ErrorKind).
    ///
    /// ```no_run
    /// # fn main() -> ck_cgroup::Result<()> {
    /// let root = ck_cgroup::Root::open("/sys/fs/cgroup/unified/my.service".as_ref())?;
    /// let procs = root.processes(&["worker-1".to_string()])?;
    /// if let Some(p) = procs.first().and_then(|m| m.processes.first()) {
    ///     root.signal_member("worker-1", p.pid, ck_cgroup::Signal::USR1)?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn signal_member(&self, name: impl ToModuleName, pid: u32, sig: Signal) -> Result<()> {
        let name = name.to_module_name()?;
        let Some(m) = self.find(&name)? else {
            return Err(Error::failed(format!(
                "no module {name} under {}: nothing to signal",
                self.path().display()
            ))
            .with_hint("`ck-cgroup list` shows the modules")
            .with_kind(crate::error::ErrorKind::NoSuchModule));
        };
        let rel = m.rel();
        let not_ours = || {
            Error::failed(format!(
                "no process with pid {pid} in module {name}: nothing signalled"
            ))
            .with_hint(format!("`ck-cgroup ps {name}` shows its processes"))
            .with_kind(crate::error::ErrorKind::NoSuchProcess)
        };
        let fd = Pid::from_raw(i32::try_from(pid).unwrap_or(0))
            .and_then(|p| pidfd_open(p, PidfdFlags::empty()).ok())
            .ok_or_else(not_ours)?;
        if !members(&self.dir, &rel)?.contains(&pid) {
            return Err(not_ours());
        }
        match pidfd_send_signal(&fd, sig) {
            Ok(()) => Ok(()),
            Err(Errno::SRCH) => Err(not_ours()),
            Err(e) => Err(Error::io(
                format_args!("signal pid {pid} of"),
                self.dir.display_path(&rel),
                e,
            )),
        }
    }
}
