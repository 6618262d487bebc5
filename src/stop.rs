//! Stopping a module's whole tree: a graceful signal with a grace period that waits on the whole
//! subtree, then SIGKILL by one of three methods, then removal of the directory.
//!
//! Methods, tried in this order by [`Method::Auto`]; a missing file or `EOPNOTSUPP` falls through
//! to the next, and the report says what fell through and why:
//!
//! 1. [`KillMethod::CgroupKill`]: `1` written to `cgroup.kill` (kernel 5.14). Atomic: children
//!    forked during the kill are killed too.
//! 2. [`KillMethod::Freeze`]: `1` to `cgroup.freeze` (kernel 5.2), wait for `frozen 1`, SIGKILL
//!    every member (a frozen process cannot fork, so the member list is stable), thaw, repeat
//!    until empty.
//! 3. [`KillMethod::Signal`]: SIGKILL every member through a pidfd, repeat until empty.
//!
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html> ("Core Interface Files").

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::module::procs;
use crate::root::CgroupDir;
use crate::wait::{Waited, join, wait_events};

/// The kill method asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The first of cgroup-kill, freeze, signal that the kernel and the cgroup support.
    #[default]
    Auto,
    /// Only `cgroup.kill`.
    CgroupKill,
    /// Only the freezer.
    Freeze,
    /// Only per-process SIGKILL.
    Signal,
}

/// A kill method that ran or fell through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KillMethod {
    /// `1` written to `cgroup.kill`.
    CgroupKill,
    /// Freeze, SIGKILL every member, thaw.
    Freeze,
    /// SIGKILL every member, repeated until empty.
    Signal,
    /// systemd's `KillUnit(unit, "all", SIGKILL)` (the systemd backend: the scope's cgroup is
    /// systemd's, so ck-cgroup writes none of its files).
    Systemd,
}

impl KillMethod {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            KillMethod::CgroupKill => "cgroup-kill",
            KillMethod::Freeze => "freeze",
            KillMethod::Signal => "signal",
            KillMethod::Systemd => "systemd",
        }
    }
}

/// A method that could not run here, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FellThrough {
    /// The method.
    pub method: KillMethod,
    /// Why it could not run.
    pub reason: String,
}

/// How to stop a tree.
#[derive(Debug, Clone, Copy)]
pub struct StopOptions {
    /// The graceful signal, sent when `grace` is above zero.
    pub signal: Signal,
    /// How long to wait for the tree to exit on `signal` before SIGKILL.
    pub grace: Duration,
    /// The SIGKILL method.
    pub method: Method,
    /// How long to wait for the tree to be empty after SIGKILL.
    pub timeout: Duration,
}

impl Default for StopOptions {
    fn default() -> Self {
        StopOptions {
            signal: Signal::TERM,
            grace: Duration::ZERO,
            method: Method::Auto,
            timeout: Duration::from_secs(10),
        }
    }
}

/// What stopping a tree did (without the removal, which [`crate::Root::stop`] adds).
#[derive(Debug, Clone, Default, Serialize)]
pub struct TreeStop {
    /// Processes the graceful signal reached (0 without a grace period).
    pub signalled: usize,
    /// Processes still in the tree when the grace ended; `null` without a grace period.
    pub left_after_grace: Option<usize>,
    /// The kill method that ran; `null` when the tree was empty before a kill was needed.
    pub method: Option<KillMethod>,
    /// Methods that could not run, in the order tried.
    pub fell_through: Vec<FellThrough>,
    /// Processes in the tree when the kill began.
    pub killed: usize,
    /// Milliseconds from the start to `populated 0` (or to the timeout).
    pub waited_ms: f64,
    /// The tree was empty at the end.
    pub empty: bool,
}

/// Stop every process in `rel` and below: graceful signal and grace, then SIGKILL by `opts.method`,
/// then wait for `populated 0`. A method that cannot run under [`Method::Auto`] falls through; a
/// forced method that cannot run is bad input (exit 2) and changes nothing.
pub fn stop_tree(dir: &CgroupDir, rel: &str, opts: &StopOptions) -> Result<TreeStop> {
    stop_tree_by(
        dir,
        rel,
        opts,
        |sig| signal_members(dir, rel, sig),
        |deadline, out| kill_by_method(dir, rel, opts.method, deadline, out),
    )
}

/// The shape of every stop, whoever sends the signals: `signal(SIG)` (it returns the pids it
/// reached) and a grace on the whole subtree's `populated 0`; then `kill(deadline, report)`,
/// which sends SIGKILL and sets `method` (and `fell_through`); then a wait for `populated 0`
/// until the deadline. [`stop_tree`] signals through pidfds and kills by `cgroup.kill`, the
/// freezer or pidfds; the systemd backend through systemd's `KillUnit`
/// ([`crate::scopes::stop`]).
pub(crate) fn stop_tree_by(
    dir: &CgroupDir,
    rel: &str,
    opts: &StopOptions,
    signal: impl FnOnce(Signal) -> Result<Vec<u32>>,
    kill: impl FnOnce(Instant, &mut TreeStop) -> Result<()>,
) -> Result<TreeStop> {
    let start = Instant::now();
    let mut out = TreeStop::default();
    if !opts.grace.is_zero() {
        let signalled = signal(opts.signal)?;
        let first = signalled.iter().copied().min();
        out.signalled = signalled.len();
        let waited = grace_wait(dir, rel, opts.grace, first)?;
        if waited == Waited::Empty {
            out.left_after_grace = Some(0);
            out.empty = true;
            out.waited_ms = ms(start);
            return Ok(out);
        }
        out.left_after_grace = Some(procs(dir, rel)?.len());
    }
    out.killed = procs(dir, rel)?.len();
    let deadline = Instant::now() + opts.timeout;
    kill(deadline, &mut out)?;
    let left = deadline.saturating_duration_since(Instant::now());
    out.empty = wait_events(dir, rel, left, |e| e.populated == Some(false))? == Waited::Empty;
    out.waited_ms = ms(start);
    Ok(out)
}

/// SIGKILL by `method`: under [`Method::Auto`] the first of cgroup-kill, freeze, signal that can
/// run here, with what fell through recorded in `out`.
fn kill_by_method(
    dir: &CgroupDir,
    rel: &str,
    method: Method,
    deadline: Instant,
    out: &mut TreeStop,
) -> Result<()> {
    let order: &[KillMethod] = match method {
        Method::Auto => &[
            KillMethod::CgroupKill,
            KillMethod::Freeze,
            KillMethod::Signal,
        ],
        Method::CgroupKill => &[KillMethod::CgroupKill],
        Method::Freeze => &[KillMethod::Freeze],
        Method::Signal => &[KillMethod::Signal],
    };
    for &m in order {
        match run_method(dir, rel, m, deadline)? {
            Ran::Done => {
                out.method = Some(m);
                break;
            }
            Ran::Unsupported(reason) => {
                if method != Method::Auto {
                    return Err(Error::bad_input(format!(
                        "--method {} cannot run on {}: {reason}",
                        m.name(),
                        dir.display_path(rel).display()
                    ))
                    .with_hint(
                        "use --method auto, which falls through to a method this kernel has",
                    ));
                }
                out.fell_through.push(FellThrough { method: m, reason });
            }
        }
    }
    Ok(())
}

fn ms(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

/// The grace: wait on the whole subtree (`populated 0`), never on one process.
fn grace_wait(dir: &CgroupDir, rel: &str, grace: Duration, first: Option<u32>) -> Result<Waited> {
    if cfg!(feature = "mutation-grace-first-pid") {
        // Mutation: wait on the first process only, as a supervisor that knows one child does.
        if let Some(p) = first.and_then(|p| Pid::from_raw(p as i32))
            && let Ok(fd) = pidfd_open(p, PidfdFlags::empty())
        {
            let ms = i32::try_from(grace.as_millis()).unwrap_or(i32::MAX);
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::IN,
            )];
            let ts = rustix::event::Timespec {
                tv_sec: (ms / 1000).into(),
                tv_nsec: ((ms % 1000) * 1_000_000).into(),
            };
            let _ = rustix::event::poll(&mut fds, Some(&ts));
        }
        let e = wait_events(dir, rel, Duration::ZERO, |e| e.populated == Some(false))?;
        return Ok(e);
    }
    if cfg!(feature = "mutation-grace-sleep") {
        // Mutation: sleep the whole grace instead of waking when the tree is empty.
        std::thread::sleep(grace);
    }
    wait_events(dir, rel, grace, |e| e.populated == Some(false))
}

enum Ran {
    Done,
    Unsupported(String),
}

fn run_method(dir: &CgroupDir, rel: &str, m: KillMethod, deadline: Instant) -> Result<Ran> {
    if cfg!(feature = "mutation-no-kill") {
        return Ok(Ran::Done);
    }
    match m {
        KillMethod::CgroupKill => {
            let file = join(rel, "cgroup.kill");
            match dir.write_raw(&file, "1") {
                Ok(()) => Ok(Ran::Done),
                Err(Errno::NOENT) => Ok(Ran::Unsupported(
                    "cgroup.kill is absent (kernel before 5.14)".into(),
                )),
                Err(Errno::OPNOTSUPP) => Ok(Ran::Unsupported(
                    "writing cgroup.kill: EOPNOTSUPP (a threaded cgroup)".into(),
                )),
                Err(e) => Err(Error::io("write \"1\" to", dir.display_path(&file), e)),
            }
        }
        KillMethod::Freeze => freeze_kill(dir, rel, deadline),
        KillMethod::Systemd => Ok(Ran::Unsupported(
            "systemd's KillUnit runs only with --backend systemd".into(),
        )),
        KillMethod::Signal => loop {
            signal_members(dir, rel, Signal::KILL)?;
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(20));
            let w = wait_events(dir, rel, slice, |e| e.populated == Some(false))?;
            if w == Waited::Empty || Instant::now() >= deadline {
                return Ok(Ran::Done);
            }
        },
    }
}

fn freeze_kill(dir: &CgroupDir, rel: &str, deadline: Instant) -> Result<Ran> {
    let file = join(rel, "cgroup.freeze");
    match dir.write_raw(&file, "1") {
        Ok(()) => {}
        Err(Errno::NOENT) => {
            return Ok(Ran::Unsupported(
                "cgroup.freeze is absent (kernel before 5.2)".into(),
            ));
        }
        Err(Errno::OPNOTSUPP) => {
            return Ok(Ran::Unsupported("writing cgroup.freeze: EOPNOTSUPP".into()));
        }
        Err(e) => return Err(Error::io("write \"1\" to", dir.display_path(&file), e)),
    }
    let result = (|| -> Result<()> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            wait_events(dir, rel, left, |e| {
                e.frozen == Some(true) || e.populated == Some(false)
            })?;
            // Frozen: no member can fork or exit-and-be-reaped, so the list is stable.
            for pid in procs(dir, rel)? {
                if let Some(p) = Pid::from_raw(pid as i32) {
                    let _ = rustix::process::kill_process(p, Signal::KILL);
                }
            }
            dir.write(&file, "0")?;
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            let w = wait_events(dir, rel, slice, |e| e.populated == Some(false))?;
            if w == Waited::Empty || Instant::now() >= deadline {
                return Ok(());
            }
            dir.write(&file, "1")?;
        }
    })();
    // Never leave the module frozen.
    let thaw = dir.write(&file, "0");
    result.and(thaw.or_else(|e| {
        if e.errno() == Some(Errno::NOENT) {
            Ok(())
        } else {
            Err(e)
        }
    }))?;
    Ok(Ran::Done)
}

/// Send `sig` to every process in the subtree through a pidfd, so a reused pid is never
/// signalled: each pid is opened, then the member list is read again, and only pids still listed
/// (so the pidfd names the member) are signalled. Returns the pids signalled.
pub fn signal_members(dir: &CgroupDir, rel: &str, sig: Signal) -> Result<Vec<u32>> {
    let mut fds = Vec::new();
    for pid in procs(dir, rel)? {
        let Some(p) = Pid::from_raw(pid as i32) else {
            continue;
        };
        if let Ok(fd) = pidfd_open(p, PidfdFlags::empty()) {
            fds.push((pid, fd));
        }
    }
    let still: HashSet<u32> = procs(dir, rel)?.into_iter().collect();
    let mut sent = Vec::new();
    for (pid, fd) in fds {
        if still.contains(&pid) && pidfd_send_signal(&fd, sig).is_ok() {
            sent.push(pid);
        }
    }
    Ok(sent)
}
