//! A tree of N `sleep`s and the namespace's init in a module built by `run`, and its `run`
//! helper: built, waited for until the module holds exactly them, stopped and continued.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use crate::common::{Res, dev_null, is_sleep};
use crate::{TIMEOUT, ck};

/// The pause between a built tree and its kill. The kernel sends at most one `cgroup.events`
/// notification per 10 ms (`CGROUP_FILE_NOTIFY_MIN_INTV`) and delays a later one to the end of
/// that interval: without the pause, a small tree's `populated 0` would wait for the interval
/// that its own `populated 1` opened.
pub const SETTLE: Duration = Duration::from_millis(30);

/// Builds a tree of `$1` `sleep`s: `$1 - 1` orphans, then the shell becomes the last one.
const TREE_SH: &str = r#"n=$1
( i=1; while [ $i -lt $n ]; do sleep 600 & i=$((i + 1)); done )
exec sleep 600"#;

/// A `run` helper the bench started. Dropped before it was waited for (an error on the way), it
/// is SIGKILLed and reaped, which takes its module's namespace with it.
pub struct Helper {
    child: Child,
    waited: bool,
}

impl Helper {
    pub fn pid(&self) -> Res<Pid> {
        Pid::from_raw(self.child.id() as i32).ok_or_else(|| "a helper without a pid".into())
    }

    pub fn signal(&self, sig: Signal) -> Res<()> {
        Ok(kill_process(self.pid()?, sig)?)
    }

    /// Its exit status, within [`TIMEOUT`], and what it wrote on stderr.
    pub fn wait(&mut self) -> Res<(ExitStatus, String)> {
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(st) = self.child.try_wait()? {
                break st;
            }
            if Instant::now() >= deadline {
                return Err(format!("the run helper {} did not exit", self.child.id()).into());
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        self.waited = true;
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut err)?;
        }
        Ok((status, err))
    }

    /// SIGSTOP, and wait until it is stopped.
    pub fn stop(&self) -> Res<()> {
        self.signal(Signal::STOP)?;
        let stat = format!("/proc/{}/stat", self.child.id());
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let s = fs::read_to_string(&stat)?;
            let state = s
                .rfind(')')
                .and_then(|i| s[i + 1..].split_whitespace().next());
            if state == Some("T") {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("the run helper {} did not stop", self.child.id()).into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        if !self.waited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One built tree: its module and its helper.
pub struct Tree {
    pub id: String,
    pub dir: PathBuf,
    pub helper: Helper,
    /// The namespace's init (its host pid).
    pub init: u32,
}

/// Start `run <id> -- sh -c TREE sh <n>` and wait until the module holds exactly the `n`
/// `sleep`s and the namespace's init (a child of the helper), then [`SETTLE`].
pub fn build_tree(sandbox: &Path, bin: &Path, id: &str, n: usize) -> Res<Tree> {
    let child = ck(
        bin,
        sandbox,
        &[
            "run",
            id,
            "--",
            "/bin/sh",
            "-c",
            TREE_SH,
            "sh",
            &n.to_string(),
        ],
    )
    .stdin(dev_null()?)
    .stdout(dev_null()?)
    .stderr(Stdio::piped())
    .spawn()?;
    let mut helper = Helper {
        child,
        waited: false,
    };
    let dir = sandbox.join("subc-modules").join(id);
    let deadline = Instant::now() + TIMEOUT;
    let init = loop {
        // The module may not be there yet.
        let pids = read_procs(&dir).unwrap_or_default();
        if pids.len() == n + 1 {
            let others: Vec<u32> = pids.iter().copied().filter(|p| !is_sleep(*p)).collect();
            if others.len() == 1 && ppid(others[0]) == Some(helper.child.id()) {
                break others[0];
            }
        }
        if let Some(st) = helper.child.try_wait()? {
            let (_, err) = helper.wait()?;
            return Err(format!("run {id} exited while its tree was built: {st}: {err}").into());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{}: {} processes after {TIMEOUT:?}, want {n} sleeps and the init",
                dir.display(),
                pids.len()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(SETTLE);
    Ok(Tree {
        id: id.to_string(),
        dir,
        helper,
        init,
    })
}

fn read_procs(dir: &Path) -> Res<Vec<u32>> {
    Ok(fs::read_to_string(dir.join("cgroup.procs"))?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

/// The parent pid from `/proc/<pid>/stat`: `pid (comm) state ppid ...`; comm may hold `)`.
fn ppid(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}
