//! Stopping a module's whole tree: a graceful signal with a grace period that waits on the whole
//! subtree, then SIGKILL by one of three methods, then removal of the directory.
//!
//! Methods, tried in this order by [`Method::Auto`]; any errno of one falls through to the next,
//! and the report says what fell through and why (the errno as the kernel gave it):
//!
//! 1. [`KillMethod::CgroupKill`]: `1` written to `cgroup.kill` (kernel 5.14) of the module's
//!    top, which takes its whole subtree, threaded sub-cgroups and frozen, stopped, traced and
//!    vfork-blocked members included. Atomic: children forked during the kill are killed too. A
//!    process that enters the module afterwards (a spawn racing the kill) keeps it populated, so
//!    while it is, `cgroup.kill` is written again, at growing intervals, until the timeout, and
//!    from the third write on every member still listed is also sent SIGKILL by pidfd (entrants
//!    that repeated writes did not take were seen under load).
//! 2. [`KillMethod::Freeze`]: `1` to `cgroup.freeze` (kernel 5.2), wait (at most 100 ms: a
//!    member in ptrace-stop may never count as frozen) for `frozen 1`, SIGKILL every member (a
//!    frozen process cannot fork, so the member list is stable), thaw, repeat until empty.
//! 3. [`KillMethod::Signal`]: SIGKILL every member through a pidfd, repeat until empty.
//!
//! SIGKILL takes a frozen task on cgroup2 (the kernel wakes it to die), so no method thaws
//! before it kills; the graceful signal of a grace period, which a frozen process could not
//! act on, is sent only after every frozen cgroup of the subtree was thawed. The member lists
//! read `cgroup.threads` where `cgroup.procs` is `EOPNOTSUPP` (a threaded sub-cgroup) and walk
//! sub-cgroups of any depth through directory fds (`crate::cgroup::tree`). Where a write is `EACCES` or
//! `EPERM`, the modes this process's uid owns are restored and the write is tried once more.
//!
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html> ("Core Interface Files").

use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde::Serialize;

use crate::cause::witness::Witness;
use crate::cgroup::dir::CgroupDir;
use crate::cgroup::tree::members;
use crate::cgroup::wait::{Waited, wait_events};
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

mod cgroup_kill;
mod control;
mod freeze_kill;
mutation::alternative_module!("grace-first-pid", grace_first_pid);
mod signal;
mod why;

pub(crate) use signal::signal_members;
pub(crate) use why::not_ended;

/// The kill method asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct FellThrough {
    /// The method.
    pub method: KillMethod,
    /// Why it could not run.
    pub reason: String,
}

/// How to stop a tree.
///
/// [`StopOptions::default()`] is the graceful stop: SIGTERM to every process of the tree, a
/// grace of [`DEFAULT_GRACE`] (10 s, `ck-cgroup run`'s default `--grace`) that ends as soon as
/// the whole tree has exited, then SIGKILL by [`Method::Auto`] for what is left, and a wait of
/// at most [`DEFAULT_TIMEOUT`] (10 s, the helper's default `--timeout`) for the tree to be
/// empty. A stop of a tree that ignores TERM so takes up to 20 s in all. SIGKILL at once, as
/// `ck-cgroup kill` does without `--grace`: [`StopOptions::kill`] (or `grace:
/// Duration::ZERO`), what `Root::kill` uses.
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

/// The grace of [`StopOptions::default()`]: 10 s, as `ck-cgroup run`'s default `--grace`.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// The wait for an empty tree after SIGKILL of [`StopOptions::default()`]: 10 s, as the
/// helper's default `--timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for StopOptions {
    /// SIGTERM, a grace of [`DEFAULT_GRACE`] (10 s), [`Method::Auto`], a timeout of
    /// [`DEFAULT_TIMEOUT`] (10 s).
    fn default() -> Self {
        StopOptions {
            signal: Signal::TERM,
            grace: DEFAULT_GRACE,
            method: Method::Auto,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl StopOptions {
    /// SIGKILL at once (no graceful signal, no grace) by [`Method::Auto`], then a wait of at
    /// most `timeout` for the tree to be empty: `ck-cgroup kill` without `--grace`.
    pub fn kill(timeout: Duration) -> StopOptions {
        StopOptions {
            grace: Duration::ZERO,
            timeout,
            ..StopOptions::default()
        }
    }
}

/// What stopping a tree did (without the removal, which `Root::stop` adds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct TreeStop {
    /// Processes the graceful signal reached (0 without a grace period).
    pub signalled: usize,
    /// Cgroups of the subtree thawed before the graceful signal (relative to the module, `.` for
    /// itself): frozen processes cannot act on it.
    pub thawed: Vec<String>,
    /// Processes still in the tree when the grace ended; `null` without a grace period (or
    /// when they could not be listed).
    pub left_after_grace: Option<usize>,
    /// The kill method that ran; `null` when the tree was empty before a kill was needed.
    pub method: Option<KillMethod>,
    /// Methods that could not run, in the order tried.
    pub fell_through: Vec<FellThrough>,
    /// Processes in the tree when the kill began (0 when they could not be listed: the kill
    /// does not depend on the list). Every process of the tree is counted, the init of a PID
    /// namespace included (`ModuleChild::id`), where a
    /// `Death`'s `survivors` leave it out: for a module spawned with a
    /// PID namespace whose program has died, the kill finds the survivors and the init.
    pub killed: usize,
    /// Milliseconds from the start to `populated 0` (or to the timeout).
    pub waited_ms: f64,
    /// The tree was empty at the end: `populated 0`, and every process the stop listed in it
    /// has exited (see `outside`).
    pub empty: bool,
    /// Processes the stop listed in the tree that still ran when it read `populated 0` and the
    /// timeout had passed: they are outside the tree (moved out meanwhile), so the stop did not
    /// succeed. Empty (and left out of the JSON) otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<u32>,
}

/// Stop every process in `rel` and below: graceful signal and grace, then SIGKILL by `opts.method`,
/// then wait for `populated 0`. A method that cannot run under [`Method::Auto`] falls through; a
/// forced method that cannot run is bad input (exit 2) and changes nothing.
pub(crate) fn stop_tree(dir: &CgroupDir, rel: &str, opts: &StopOptions) -> Result<TreeStop> {
    let mut thawed = Vec::new();
    let mut out = stop_tree_by(
        dir,
        rel,
        opts,
        |sig| {
            // A frozen process cannot act on the graceful signal: thaw first. Best effort: what
            // stays frozen is killed all the same.
            let mut t = crate::cgroup::tree::Thawer::default();
            let _ = crate::cgroup::tree::walk(dir, rel, &mut t);
            thawed = t.thawed;
            signal_members(dir, rel, sig)
        },
        |deadline, out| kill_by_method(dir, rel, opts.method, deadline, out),
    )?;
    out.thawed = thawed;
    Ok(out)
}

/// The shape of every stop, whoever sends the signals: `signal(SIG)` (it returns the pids it
/// reached) and a grace on the whole subtree's `populated 0`; then `kill(deadline, report)`,
/// which sends SIGKILL and sets `method` (and `fell_through`); then a wait for `populated 0`
/// until the deadline, in slices of 500 ms, `kill` run again after each that ends populated. [`stop_tree`] signals through pidfds and kills by `cgroup.kill`, the
/// freezer or pidfds; the systemd backend through systemd's `KillUnit`
/// (the systemd backend's `stop`, in backend/systemd/).
pub(crate) fn stop_tree_by(
    dir: &CgroupDir,
    rel: &str,
    opts: &StopOptions,
    signal: impl FnOnce(Signal) -> Result<Vec<u32>>,
    mut kill: impl FnMut(Instant, &mut TreeStop) -> Result<()>,
) -> Result<TreeStop> {
    let start = Instant::now();
    let mut out = TreeStop::default();
    // One listing before anything is sent: this process must not be in the tree (it would kill
    // itself), and without a grace it is what the kill takes. Under a fork storm every listing
    // costs the stop seconds, so there is no other before the kill.
    let me = std::process::id();
    let refuse = || {
        Error::bad_input(format!(
            "refusing to kill {}: it holds this process ({me})",
            dir.display_path(rel).display()
        ))
        .with_hint("run `ck-cgroup kill` from outside the module, e.g. from the daemon")
        .with_kind(crate::error::ErrorKind::ModuleHoldsCaller)
    };
    let mut seen = Witness::default();
    let before = match members(dir, rel) {
        Ok(p) if p.contains(&me) => return Err(refuse()),
        Ok(p) => {
            seen.saw(&p);
            Some(p)
        }
        // Unlisted (never the case for a subtree a module can make, whose modes this uid
        // owns): where this process is, from /proc/self/cgroup.
        Err(e) => match holds_caller(dir, rel) {
            Some(false) => None,
            Some(true) => return Err(refuse()),
            None => return Err(e),
        },
    };
    if !opts.grace.is_zero() {
        out.signalled = signal(opts.signal)?.len();
        let waited = mutation::choose!(
            "grace-first-pid",
            grace_first_pid::wait(dir, rel, opts.grace, before.as_deref())?,
            grace_wait(dir, rel, opts.grace)?
        );
        if waited == Waited::Empty {
            out.left_after_grace = Some(0);
            out.outside = seen.still_running(Instant::now() + opts.timeout);
            out.empty = out.outside.is_empty();
            out.waited_ms = ms_since(start);
            return Ok(out);
        }
        let after = members(dir, rel).ok();
        if let Some(p) = &after {
            seen.saw(p);
        }
        out.left_after_grace = after.map(|p| p.len());
    }
    // The kill never waits on the list: a subtree that cannot be listed is killed all the same.
    out.killed = if opts.grace.is_zero() {
        before.map_or(0, |p| p.len())
    } else {
        out.left_after_grace.unwrap_or(0)
    };
    let deadline = Instant::now() + opts.timeout;
    kill(deadline, &mut out)?;
    // No method could run (each refused: another user's module, a kernel without any): nothing
    // will empty the tree, so it is read once, not waited on until the deadline.
    // Mutation: the stop waits out its deadline all the same.
    let refused = out.method.is_none()
        && !out.fell_through.is_empty()
        && !mutation::active(Control::RefusedStopWaits);
    // Waited on in slices: a process that entered after the kill's own loop read the tree
    // empty (an exec racing the stop, placed between its last `cgroup.kill` and this wait) is
    // killed again at the end of each slice, not waited on until the deadline (lane 2 and a
    // loaded host saw entrants sleep in the module past the whole timeout). The methods that
    // fell through are said once.
    out.empty = loop {
        let left = if refused {
            Duration::ZERO
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        let slice = left.min(Duration::from_millis(500));
        if wait_events(dir, rel, slice, |e| e.populated == Some(false))? == Waited::Empty {
            break true;
        }
        if refused || Instant::now() >= deadline {
            break false;
        }
        // Mutation: no kill after the kill's own loop (the entrant sleeps to the deadline).
        if mutation::active(Control::NoRekill) {
            continue;
        }
        let said = out.fell_through.len();
        kill(deadline, &mut out)?;
        out.fell_through.truncate(said);
    };
    if out.empty {
        // Re-checked after the last write: `populated 0` is not yet "every process it listed
        // has exited" (cause/witness.rs).
        out.outside = seen.still_running(deadline);
        out.empty = out.outside.is_empty();
    }
    out.waited_ms = ms_since(start);
    Ok(out)
}

/// Whether the calling process is in `rel` or below, from `/proc/self/cgroup` and the cgroup2
/// mount; `None` when that cannot be told.
fn holds_caller(dir: &CgroupDir, rel: &str) -> Option<bool> {
    let mine =
        crate::cgroup::parse::proc_cgroup_v2(&std::fs::read_to_string("/proc/self/cgroup").ok()?)?;
    let mount = crate::cgroup::mount::cgroup2_mount().ok()?;
    let target = dir.display_path(rel);
    let target = format!("/{}", target.strip_prefix(&mount).ok()?.display());
    let target = target.trim_end_matches('/');
    Some(mine == target || mine.starts_with(&format!("{target}/")) || target.is_empty())
}

/// While a stop runs, its thread takes the highest scheduling priority it may (nice -20, with
/// `CAP_SYS_NICE`; without it, it stays as it was), and gives it back when dropped. A module in
/// a fork storm keeps every CPU busy with thousands of runnable processes; at nice 0 the stop
/// gets one share among them and spends seconds on each step between its syscalls (see
/// docs/performance.md). Where the `cpu` controller is delegated, the storm is held to its
/// module's share anyway.
pub(crate) struct Boost {
    old: Option<i32>,
}

impl Boost {
    /// Raise the calling thread's priority (nice -20) if it may.
    pub(crate) fn new() -> Boost {
        let old = rustix::process::getpriority_process(None).ok();
        match old {
            Some(o) if o > -20 && rustix::process::setpriority_process(None, -20).is_ok() => {
                Boost { old: Some(o) }
            }
            _ => Boost { old: None },
        }
    }
}

impl Drop for Boost {
    fn drop(&mut self) {
        if let Some(o) = self.old {
            let _ = rustix::process::setpriority_process(None, o);
        }
    }
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
    use Mechanism::{CgroupKill, Freeze, Signal};
    let order: &[Mechanism] = match method {
        Method::Auto => &[CgroupKill, Freeze, Signal],
        Method::CgroupKill => &[CgroupKill],
        Method::Freeze => &[Freeze],
        Method::Signal => &[Signal],
    };
    for &mech in order {
        let m = mech.reported();
        match mech.run(dir, rel, deadline)? {
            Ran::Done => {
                out.method = Some(m);
                break;
            }
            Ran::Unsupported(reason) if method != Method::Auto => {
                return Err(Error::bad_input(format!(
                    "--method {} cannot run on {}: {reason}",
                    m.name(),
                    dir.display_path(rel).display()
                ))
                .with_hint("use --method auto, which falls through to a method this kernel has"));
            }
            Ran::Failed(e) if method != Method::Auto => return Err(e),
            Ran::Unsupported(reason) => out.fell_through.push(FellThrough { method: m, reason }),
            Ran::Failed(e) => out.fell_through.push(FellThrough {
                method: m,
                reason: e.to_string(),
            }),
        }
    }
    Ok(())
}

/// Milliseconds since `start`, to the microsecond (the `waited_ms` of every report).
pub(crate) fn ms_since(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

/// The grace: wait on the whole subtree (`populated 0`), never on one process.
fn grace_wait(dir: &CgroupDir, rel: &str, grace: Duration) -> Result<Waited> {
    if mutation::active(Control::GraceSleep) {
        // Sleep the whole grace instead of waking when the tree is empty.
        std::thread::sleep(grace);
    }
    wait_events(dir, rel, grace, |e| e.populated == Some(false))
}

/// The SIGKILL mechanisms on a cgroupfs tree, one file each; [`KillMethod`] is what a report
/// names (it also names systemd's `KillUnit`, which the systemd backend runs).
#[derive(Debug, Clone, Copy)]
enum Mechanism {
    /// `cgroup_kill.rs`.
    CgroupKill,
    /// `freeze_kill.rs`.
    Freeze,
    /// `signal.rs`.
    Signal,
}

impl Mechanism {
    fn reported(self) -> KillMethod {
        match self {
            Mechanism::CgroupKill => KillMethod::CgroupKill,
            Mechanism::Freeze => KillMethod::Freeze,
            Mechanism::Signal => KillMethod::Signal,
        }
    }

    fn run(self, dir: &CgroupDir, rel: &str, deadline: Instant) -> Result<Ran> {
        if mutation::active(Control::NoKill) {
            return Ok(Ran::Done);
        }
        match self {
            Mechanism::CgroupKill => cgroup_kill::kill(dir, rel, deadline),
            Mechanism::Freeze => freeze_kill::kill(dir, rel, deadline),
            Mechanism::Signal => signal::kill(dir, rel, deadline),
        }
    }
}

/// How one mechanism ended.
enum Ran {
    Done,
    /// The kernel or the cgroup has no such thing (a missing file, `EOPNOTSUPP`).
    Unsupported(String),
    /// It failed with this error (the errno as the kernel gave it).
    Failed(Error),
}
