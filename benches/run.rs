//! `cargo bench --bench run` (`make bench`): what `run`'s kill-on-close costs, in one run, as
//! ratios to a baseline. A report, not a test: nothing is asserted; each goal line says met or
//! not met.
//!
//! Needs root and a cgroup2 mount (unified or hybrid). Everything runs in one fresh
//! [`Sandbox`] under the cgroup2 mount's root, never in the caller's cgroup, through the release
//! binary with `--root <sandbox>`; the sandbox is removed at the end and the run checks that
//! nothing it made is left. The bench is a child subreaper and reaps every process it started
//! (some hosts' PID 1 never reaps).
//!
//! **Start-up**, [`ROUNDS`] rounds after one untimed warm-up round, the order rotated every
//! round; each row is spawned with `std::process::Command` (stdin and stdout `/dev/null`) and
//! timed from the spawn until it has exited and been reaped:
//!
//! - `plain /bin/true`: the baseline, `/bin/true` itself.
//! - `ck-cgroup --version`: the binary's own start-up, no cgroup work (to tell where `exec`'s
//!   time goes).
//! - `exec`: `ck-cgroup exec <id> -- /bin/true`: makes the module, moves itself in, execs.
//!   The module is removed after each (untimed), so every row starts without a module.
//! - `run (pid ns)`: `ck-cgroup run <id> -- /bin/true`, the default: the init in a new PID
//!   namespace, `/bin/true` under it, the stop, the removal of the module.
//! - `run --no-pid-namespace`: the same without the namespace and the init.
//!
//! **Teardown**, for trees of 1, 100 and 1,000 processes. Every tree is built the same way, by
//! `ck-cgroup run <id> -- /bin/sh -c TREE`: a subshell forks N - 1 `sleep 600` and exits, so
//! they are orphans (reparented to the namespace's init), then the shell execs `sleep 600`. The
//! run waits until the module's `cgroup.procs` holds exactly the N `sleep`s and the init (whose
//! parent is the helper), then pauses [`SETTLE`]. Each repetition builds a fresh tree for each
//! row, in rotating order. Rows, each until `populated 0` in the module's `cgroup.events` (read
//! from an already open fd, woken by `poll(POLLPRI)`) unless said otherwise:
//!
//! - `cgroup.kill (b)`: the baseline, the kernel's own time: `1` written to the module's
//!   `cgroup.kill` through an already open fd.
//! - `SIGKILL of run (a)`: `kill(2)` of the `run` helper with SIGKILL. The kernel does the rest:
//!   the init's parent-death signal, then the namespace's teardown.
//! - `SIGKILL of the init (a')`: `kill(2)` of the namespace's init with SIGKILL: the part of
//!   (a) that follows the helper's death, to tell the helper's exit from the namespace's
//!   teardown.
//! - `kill --method cgroup-kill (c)`: `ck-cgroup kill <id> --method cgroup-kill` spawned, until
//!   it has exited (0: tree gone, directory removed).
//!
//! For (b), (a') and (c) the helper is stopped (SIGSTOP, waited for until `/proc` says `T`) before the
//! measurement and continued after it, so that it does not race the kill it is compared with
//! (it would otherwise wake when its init dies and stop and remove the module too). After (a)
//! the empty module directory the killed helper leaves is removed, untimed.

#[path = "common/mod.rs"]
mod common;

use std::fs;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ck_cgroup::discover::cgroup2_mount;
use ck_cgroup::{Root, Sandbox};
use common::{
    Res, binary, dev_null, is_sleep, median, min, print_cgroup_and_binary, print_machine, reap_all,
    report_cleanup,
};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, kill_process};

/// Timed start-up rounds (after one untimed warm-up round).
const ROUNDS: usize = 200;
/// Start-ups slower than this are counted: the kernel's `cgroup.events` notification interval
/// (see [`SETTLE`]) is about 10 ms, and a start that waited for it shows up here.
const SLOW_MS: f64 = 10.0;
/// Tree sizes and repetitions of each teardown row.
const SIZES: [(usize, usize); 3] = [(1, 21), (100, 15), (1000, 9)];
/// Goal: `exec` within this factor of a plain spawn of `/bin/true` (on this host).
const GOAL_EXEC_X_PLAIN: f64 = 3.0;
/// Goal: `run` (pid namespace) within this factor of `exec`.
const GOAL_RUN_X_EXEC: f64 = 2.0;
/// Goal: the pid namespace (the init, its fork, its exit) adds at most half of
/// `run --no-pid-namespace`.
const GOAL_PIDNS_X_NONS: f64 = 1.5;
/// Goal: teardown after SIGKILL of the helper within this factor of `cgroup.kill`.
const GOAL_HELPER_X_KILL: f64 = 1.5;
/// Longest wait for a tree to be built, a helper to stop or exit, a module to empty.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long the second try at removing the sandbox may take.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(60);
/// The pause between a built tree and its kill. The kernel sends at most one `cgroup.events`
/// notification per 10 ms (`CGROUP_FILE_NOTIFY_MIN_INTV`) and delays a later one to the end of
/// that interval: without the pause, a small tree's `populated 0` would wait for the interval
/// that its own `populated 1` opened.
const SETTLE: Duration = Duration::from_millis(30);

/// Builds a tree of `$1` `sleep`s: `$1 - 1` orphans, then the shell becomes the last one.
const TREE_SH: &str = r#"n=$1
( i=1; while [ $i -lt $n ]; do sleep 600 & i=$((i + 1)); done )
exec sleep 600"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Plain,
    Version,
    Exec,
    Run,
    RunNoNs,
}

const STARTS: [Start; 5] = [
    Start::Plain,
    Start::Version,
    Start::Exec,
    Start::Run,
    Start::RunNoNs,
];

impl Start {
    fn label(self) -> &'static str {
        match self {
            Start::Plain => "plain /bin/true",
            Start::Version => "ck-cgroup --version",
            Start::Exec => "exec m -- /bin/true",
            Start::Run => "run m -- /bin/true (pid ns)",
            Start::RunNoNs => "run --no-pid-namespace m",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Start::Plain => "up-plain",
            Start::Version => "up-version",
            Start::Exec => "up-exec",
            Start::Run => "up-run",
            Start::RunNoNs => "up-run-nons",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Down {
    Kernel,
    Helper,
    Init,
    Kill,
}

const DOWNS: [Down; 4] = [Down::Kernel, Down::Helper, Down::Init, Down::Kill];

impl Down {
    fn label(self) -> &'static str {
        match self {
            Down::Kernel => "cgroup.kill (b)",
            Down::Helper => "SIGKILL of run (a)",
            Down::Init => "SIGKILL of the init (a')",
            Down::Kill => "kill --method cgroup-kill (c)",
        }
    }

    fn note(self) -> &'static str {
        match self {
            Down::Kernel => "1 to cgroup.kill to populated 0 (the kernel's own time)",
            Down::Helper => "kill(2) of the helper to populated 0 (kill-on-close)",
            Down::Init => "part of (a): kill(2) of the namespace's init to populated 0",
            Down::Kill => "the command spawned, to its exit: tree gone, directory removed",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Down::Kernel => "kernel",
            Down::Helper => "helper",
            Down::Init => "init",
            Down::Kill => "kill",
        }
    }
}

/// A `run` helper the bench started. Dropped before it was waited for (an error on the way), it
/// is SIGKILLed and reaped, which takes its module's namespace with it.
struct Helper {
    child: Child,
    waited: bool,
}

impl Helper {
    fn pid(&self) -> Res<Pid> {
        Pid::from_raw(self.child.id() as i32).ok_or_else(|| "a helper without a pid".into())
    }

    fn signal(&self, sig: Signal) -> Res<()> {
        Ok(kill_process(self.pid()?, sig)?)
    }

    /// Its exit status, within [`TIMEOUT`], and what it wrote on stderr.
    fn wait(&mut self) -> Res<(ExitStatus, String)> {
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
    fn stop(&self) -> Res<()> {
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
struct Tree {
    id: String,
    dir: PathBuf,
    helper: Helper,
    /// The namespace's init (its host pid).
    init: u32,
}

/// Every sample of the run: start-up per row, teardown per size and row.
struct Measured {
    starts: Vec<Vec<f64>>,
    downs: Vec<(usize, Vec<Vec<f64>>)>,
    up_secs: f64,
    down_secs: f64,
}

fn main() -> Res<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    let mount = cgroup2_mount()?;
    let bin = binary();
    print_header(&mount, &bin)?;

    let sandbox = Sandbox::create(&mount)?;
    let sandbox_path = sandbox.path().to_path_buf();
    println!("sandbox: {}", sandbox_path.display());
    println!();

    // Whatever happens, the sandbox is destroyed and what was started reaped.
    let run = measure_all(sandbox.root(), &sandbox_path, &bin);
    if let Err(e) = sandbox.destroy() {
        // Under a heavy load a killed process can take longer to leave than destroy() waits.
        println!("cleanup: {e}; emptying and removing it again");
        remove_again(&sandbox_path);
    }
    reap_all();
    let m = match run {
        Ok(m) => m,
        Err(e) => {
            report_cleanup(&mount, &sandbox_path)?;
            return Err(e);
        }
    };

    print_results(&m);
    report_cleanup(&mount, &sandbox_path)?;
    println!(
        "measured in {:.1} s (start-up {:.1} s, teardown {:.1} s)",
        m.up_secs + m.down_secs,
        m.up_secs,
        m.down_secs
    );
    Ok(())
}

/// The second try at removing the sandbox (and only it): `cgroup.kill`, then, once it is empty,
/// its directories deepest first; for at most [`CLEANUP_TIMEOUT`]. What is left after that is
/// named by `report_cleanup`.
fn remove_again(sandbox: &Path) {
    let deadline = Instant::now() + CLEANUP_TIMEOUT;
    while Instant::now() < deadline {
        reap_all();
        let _ = fs::write(sandbox.join("cgroup.kill"), "1");
        let empty = fs::read_to_string(sandbox.join("cgroup.events"))
            .is_ok_and(|e| e.lines().any(|l| l == "populated 0"));
        if empty && remove_deepest_first(sandbox).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn remove_deepest_first(dir: &Path) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_deepest_first(&entry.path())?;
        }
    }
    fs::remove_dir(dir)
}

fn print_header(mount: &Path, bin: &Path) -> Res<()> {
    print_machine("ck-cgroup run benchmark")?;
    print_cgroup_and_binary(mount, bin)?;
    println!("load:    {} (1, 5, 15 min; running/all)", loadavg()?);
    let reps: Vec<String> = SIZES.iter().map(|(n, r)| format!("{r} x {n}")).collect();
    println!(
        "repetitions: start-up {ROUNDS} rounds (after 1 warm-up), teardown {}",
        reps.join(", ")
    );
    Ok(())
}

fn measure_all(root: &Root, sandbox: &Path, bin: &Path) -> Res<Measured> {
    let started = Instant::now();
    let mut starts: Vec<Vec<f64>> = STARTS.iter().map(|_| Vec::new()).collect();
    for round in 0..=ROUNDS {
        // Rotate the order so that no row always runs right after another.
        for k in 0..STARTS.len() {
            let i = (k + round) % STARTS.len();
            let ms = start_up(root, sandbox, bin, STARTS[i])?;
            // Round 0 is the warm-up.
            if round > 0 {
                starts[i].push(ms);
            }
        }
    }
    let up_secs = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut downs = Vec::new();
    for (n, reps) in SIZES {
        let mut per_row: Vec<Vec<f64>> = DOWNS.iter().map(|_| Vec::new()).collect();
        for rep in 0..reps {
            for k in 0..DOWNS.len() {
                let i = (k + rep) % DOWNS.len();
                let down = DOWNS[i];
                let id = format!("td-{n}-{}-{rep}", down.tag());
                let tree = build_tree(sandbox, bin, &id, n)?;
                let ms = teardown(root, bin, sandbox, tree, down)?;
                reap_all();
                per_row[i].push(ms);
            }
        }
        downs.push((n, per_row));
    }
    let down_secs = started.elapsed().as_secs_f64();
    Ok(Measured {
        starts,
        downs,
        up_secs,
        down_secs,
    })
}

/// The first three fields of `/proc/loadavg`, read at the start: other work on the machine skews
/// the start-up rows most. (At the end it would count the run's own kills of 1,000 processes,
/// which are all runnable at once.)
fn loadavg() -> Res<String> {
    let l = fs::read_to_string("/proc/loadavg")?;
    Ok(l.split_whitespace().take(4).collect::<Vec<_>>().join(" "))
}

/// One start of `what`, in milliseconds from the spawn to the reaped exit.
fn start_up(root: &Root, sandbox: &Path, bin: &Path, what: Start) -> Res<f64> {
    let mut cmd = match what {
        Start::Plain => Command::new("/bin/true"),
        Start::Version => ck(bin, sandbox, &["--version"]),
        Start::Exec => ck(bin, sandbox, &["exec", what.id(), "--", "/bin/true"]),
        Start::Run => ck(bin, sandbox, &["run", what.id(), "--", "/bin/true"]),
        Start::RunNoNs => ck(
            bin,
            sandbox,
            &["run", "--no-pid-namespace", what.id(), "--", "/bin/true"],
        ),
    };
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    let t0 = Instant::now();
    let st = cmd.status()?;
    let ms = ms_since(t0);
    if !st.success() {
        return Err(format!("{}: {st}", what.label()).into());
    }
    let dir = sandbox.join("subc-modules").join(what.id());
    match what {
        Start::Plain | Start::Version => {}
        Start::Exec => {
            // `exec` leaves the module (empty) to its caller: remove it, untimed.
            let r = root.remove(what.id())?;
            if !r.removed {
                return Err(format!("{}: no module to remove after exec", dir.display()).into());
            }
        }
        Start::Run | Start::RunNoNs => {
            if dir.exists() {
                return Err(format!("{}: left behind by {}", dir.display(), what.label()).into());
            }
        }
    }
    Ok(ms)
}

/// `ck-cgroup --root <sandbox> ARGS`, with `CK_CGROUP_ROOT` removed.
fn ck(bin: &Path, sandbox: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--root")
        .arg(sandbox)
        .args(args)
        .env_remove("CK_CGROUP_ROOT");
    cmd
}

/// Start `run <id> -- sh -c TREE sh <n>` and wait until the module holds exactly the `n`
/// `sleep`s and the namespace's init (a child of the helper), then [`SETTLE`].
fn build_tree(sandbox: &Path, bin: &Path, id: &str, n: usize) -> Res<Tree> {
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

/// One teardown of `tree` by `how`, in milliseconds; afterwards no process and no directory of
/// the tree is left and its helper is reaped.
fn teardown(root: &Root, bin: &Path, sandbox: &Path, mut tree: Tree, how: Down) -> Res<f64> {
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

fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn print_results(m: &Measured) {
    let up = |s: Start| {
        STARTS
            .iter()
            .position(|x| *x == s)
            .map_or(f64::NAN, |i| median(&m.starts[i]))
    };
    let plain = up(Start::Plain);
    println!("start-up: spawn to reaped exit, {ROUNDS} of each");
    println!(
        "{:<30} {:>10} {:>9} {:>9} {:>8} {:>8}",
        "row", "median ms", "min ms", "max ms", "x plain", ">10 ms"
    );
    for (s, ms) in STARTS.iter().zip(&m.starts) {
        println!(
            "{:<30} {:>10.3} {:>9.3} {:>9.3} {:>8.2} {:>8}",
            s.label(),
            median(ms),
            min(ms),
            max(ms),
            median(ms) / plain,
            ms.iter().filter(|x| **x > SLOW_MS).count()
        );
    }
    println!();
    let (exec, run, nons) = (up(Start::Exec), up(Start::Run), up(Start::RunNoNs));
    println!(
        "run (pid ns) / exec                   = {:.2}  (medians)",
        run / exec
    );
    println!(
        "run --no-pid-namespace / exec         = {:.2}  (medians)",
        nons / exec
    );
    println!(
        "run (pid ns) / run --no-pid-namespace = {:.2}  (medians)",
        run / nons
    );
    println!(
        "exec adds {:.3} ms to a plain spawn, {:.3} ms to the binary's own start-up (--version)",
        exec - plain,
        exec - up(Start::Version)
    );
    println!(
        "run adds {:.3} ms to exec; the pid namespace {:.3} ms of it  (medians)",
        run - exec,
        run - nons
    );
    println!();

    println!("teardown: N sleeps and the namespace's init in a module built by run");
    println!(
        "{:<6} {:<30} {:>10} {:>9} {:>9} {:>8}   notes",
        "tree", "row", "median ms", "min ms", "max ms", "x (b)"
    );
    for (n, per_row) in &m.downs {
        let kernel = median(&per_row[0]);
        for (d, ms) in DOWNS.iter().zip(per_row) {
            println!(
                "{:<6} {:<30} {:>10.3} {:>9.3} {:>9.3} {:>8.2}   {}",
                n,
                d.label(),
                median(ms),
                min(ms),
                max(ms),
                median(ms) / kernel,
                d.note()
            );
        }
    }
    println!();
    let down = |n: usize, d: Down| {
        m.downs
            .iter()
            .find(|(rn, _)| *rn == n)
            .and_then(|(_, rows)| DOWNS.iter().position(|x| *x == d).map(|i| &rows[i]))
            .map_or(f64::NAN, |v| median(v))
    };
    for (n, _) in SIZES {
        let b = down(n, Down::Kernel);
        let (a, a1) = (down(n, Down::Helper), down(n, Down::Init));
        println!(
            "tree {n:>4}: (a) / (b) = {:.2}, (a') / (b) = {:.2}, (c) / (b) = {:.2}; (a) - (b) = {:.3} ms, of it (a) - (a') = {:.3} ms  (medians)",
            a / b,
            a1 / b,
            down(n, Down::Kill) / b,
            a - b,
            a - a1
        );
    }
    println!();

    let x = exec / plain;
    println!(
        "goal: exec within {GOAL_EXEC_X_PLAIN} x plain: {x:.2} x -> {}",
        verdict(x <= GOAL_EXEC_X_PLAIN)
    );
    let x = run / exec;
    println!(
        "goal: run (pid ns) within {GOAL_RUN_X_EXEC} x exec: {x:.2} x -> {}",
        verdict(x <= GOAL_RUN_X_EXEC)
    );
    let x = run / nons;
    println!(
        "goal: run (pid ns) within {GOAL_PIDNS_X_NONS} x run --no-pid-namespace: {x:.2} x -> {}",
        verdict(x <= GOAL_PIDNS_X_NONS)
    );
    for (n, _) in SIZES {
        let x = down(n, Down::Helper) / down(n, Down::Kernel);
        println!(
            "goal, tree {n}: SIGKILL of run (a) within {GOAL_HELPER_X_KILL} x cgroup.kill (b): {x:.2} x -> {}",
            verdict(x <= GOAL_HELPER_X_KILL)
        );
    }
}
