//! Teardown: the rows (`cgroup.kill`, SIGKILL of the helper and of the init, `kill --method
//! cgroup-kill`) and one teardown of a built tree, until `populated 0`.

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use ck_cgroup::Root;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, kill_process};

use crate::common::{Res, ms_since};
use crate::tree::Tree;
use crate::{TIMEOUT, ck};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Down {
    Kernel,
    Helper,
    Init,
    Kill,
}

pub const DOWNS: [Down; 4] = [Down::Kernel, Down::Helper, Down::Init, Down::Kill];

impl Down {
    pub fn label(self) -> &'static str {
        match self {
            Down::Kernel => "cgroup.kill (b)",
            Down::Helper => "SIGKILL of run (a)",
            Down::Init => "SIGKILL of the init (a')",
            Down::Kill => "kill --method cgroup-kill (c)",
        }
    }

    pub fn note(self) -> &'static str {
        match self {
            Down::Kernel => "1 to cgroup.kill to populated 0 (the kernel's own time)",
            Down::Helper => "kill(2) of the helper to populated 0 (kill-on-close)",
            Down::Init => "part of (a): kill(2) of the namespace's init to populated 0",
            Down::Kill => "the command spawned, to its exit: tree gone, directory removed",
        }
    }

    pub fn tag(self) -> &'static str {
        match self {
            Down::Kernel => "kernel",
            Down::Helper => "helper",
            Down::Init => "init",
            Down::Kill => "kill",
        }
    }
}

/// One teardown of `tree` by `how`, in milliseconds; afterwards no process and no directory of
/// the tree is left and its helper is reaped.
pub fn teardown(root: &Root, bin: &Path, sandbox: &Path, mut tree: Tree, how: Down) -> Res<f64> {
    let events = open(&tree.dir.join("cgroup.events"), OFlags::RDONLY)?;
    let mut buf = [0u8; 256];
    // Reading arms the notification.
    if !populated(&events, &mut buf)? {
        return Err(format!("{}: empty before the kill", tree.dir.display()).into());
    }
    let ms = match how {
        Down::Helper => {
            let pid = tree.helper.pid()?;
            let t0 = Instant::now();
            kill_process(pid, Signal::KILL)?;
            wait_empty(&events, &mut buf, &tree.dir)?;
            let ms = ms_since(t0);
            let (st, err) = tree.helper.wait()?;
            if st.signal() != Some(Signal::KILL.as_raw()) {
                return Err(format!("run {}: {st} after SIGKILL: {err}", tree.id).into());
            }
            // The killed helper leaves the empty directory: remove it, untimed.
            let r = root.remove(&tree.id)?;
            if !r.removed {
                return Err(
                    format!("{}: not there after SIGKILL of run", tree.dir.display()).into(),
                );
            }
            ms
        }
        Down::Init => {
            tree.helper.stop()?;
            let pid = Pid::from_raw(tree.init as i32).ok_or("an init without a pid")?;
            let t0 = Instant::now();
            kill_process(pid, Signal::KILL)?;
            wait_empty(&events, &mut buf, &tree.dir)?;
            let ms = ms_since(t0);
            continue_and_wait(&mut tree)?;
            ms
        }
        Down::Kernel => {
            tree.helper.stop()?;
            let kill = open(&tree.dir.join("cgroup.kill"), OFlags::WRONLY)?;
            let t0 = Instant::now();
            rustix::io::write(&kill, b"1")?;
            wait_empty(&events, &mut buf, &tree.dir)?;
            let ms = ms_since(t0);
            continue_and_wait(&mut tree)?;
            ms
        }
        Down::Kill => {
            tree.helper.stop()?;
            let mut cmd = ck(bin, sandbox, &["kill", &tree.id, "--method", "cgroup-kill"]);
            cmd.stdin(Stdio::null()).stdout(Stdio::null());
            let t0 = Instant::now();
            let st = cmd.status()?;
            let ms = ms_since(t0);
            if !st.success() {
                return Err(format!("kill {}: {st}", tree.id).into());
            }
            // Exit 0: the tree is gone and the directory removed (checked below).
            continue_and_wait(&mut tree)?;
            ms
        }
    };
    if tree.dir.exists() {
        return Err(format!("{}: left behind by {}", tree.dir.display(), how.label()).into());
    }
    Ok(ms)
}

/// Continue a stopped helper whose tree was killed and wait for it: it finds its program
/// killed, removes the module if it is still there, and dies of the program's SIGKILL.
fn continue_and_wait(tree: &mut Tree) -> Res<()> {
    tree.helper.signal(Signal::CONT)?;
    let (st, err) = tree.helper.wait()?;
    if st.signal() != Some(Signal::KILL.as_raw()) && st.code() != Some(0) {
        // Not a failure of the measurement, but worth seeing.
        println!("note: run {} after the kill: {st}: {}", tree.id, err.trim());
    }
    Ok(())
}

fn open(path: &Path, flags: OFlags) -> Res<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

fn populated(events: &OwnedFd, buf: &mut [u8]) -> Res<bool> {
    let len = rustix::io::pread(events, &mut *buf, 0)?;
    let text = std::str::from_utf8(&buf[..len])?;
    Ok(text.lines().any(|l| l == "populated 1"))
}

/// Until `cgroup.events` says `populated 0` (woken by `POLLPRI`), at most [`TIMEOUT`].
fn wait_empty(events: &OwnedFd, buf: &mut [u8], dir: &Path) -> Res<()> {
    let deadline = Instant::now() + TIMEOUT;
    while populated(events, buf)? {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("{}: still populated after {TIMEOUT:?}", dir.display()).into());
        }
        let timeout = Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        };
        let mut fds = [PollFd::new(events, PollFlags::PRI)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
