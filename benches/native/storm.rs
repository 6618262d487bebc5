//! Placement under a fork storm: the library's spawn, `exec` and `run` while other cgroups fork
//! as fast as they can, against the same on the idle host, in one run.
//!
//! Moving a process into a cgroup by writing `cgroup.procs` (what `exec` does: it keeps its pid,
//! which the daemon spawned) takes the kernel's `cgroup_threadgroup_rwsem` for writing, which
//! every fork of the host takes for reading; a cgroup seeded by `clone3(CLONE_INTO_CGROUP)`
//! (`Root::spawn`, `run`'s init) takes no write lock. The storm: [`STORMS`] processes, each in a
//! sandbox cgroup of its own (modules `storm-N` of the bench's sandbox, removed with it), each a
//! loop of `fork(2)` and a child that exits at once, at nice 19, so that what the rows pay is
//! the lock more than the CPU (the plain `Command` row, no cgroup, shows what the CPU costs).
//! Blocks alternate, idle and storm, [`BLOCKS`] of each (in turn idle first and storm first); in a block each row runs [`PER_BLOCK`]
//! times, the rows interleaved; each row's figure is its median per phase. Each row that writes
//! `cgroup.procs` (the dash placement, `exec`) starts [`PAUSE`] after the row before it: a write
//! right after another finds the lock still in its writer mode (the kernel keeps it so for a
//! grace period after the last writer) and would not pay what a lone write pays.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use ck_cgroup::spawn::ModuleCommand;
use ck_cgroup::{ModuleId, Root};

use crate::common::{Res, median, ms_since};
use crate::proc::run;
use crate::startup::SHELL;

/// Storm processes (forking loops), each in a cgroup of its own.
const STORMS: usize = 4;
/// Idle and storm blocks, alternating (idle first, then storm first, and so on, so that a trend
/// in the host's own load falls on both alike).
const BLOCKS: usize = 4;
/// Runs of each row in a block.
const PER_BLOCK: usize = 8;
/// The untimed pause before a row that writes `cgroup.procs`.
const PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// One row: its name and its runs' milliseconds, idle and under the storm.
pub struct Row {
    pub name: &'static str,
    pub idle: Vec<f64>,
    pub storm: Vec<f64>,
    /// A `clone3(CLONE_INTO_CGROUP)` path, which the goal is for.
    pub clone3: bool,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        median(&self.storm) / median(&self.idle)
    }
}

/// The rows, and the storm's forks per second (over its blocks).
pub struct Storm {
    pub rows: Vec<Row>,
    pub forks_per_s: f64,
}

/// `native storm-fork`: fork children that exit at once until stdin ends, then print how many.
pub fn storm_main() -> Res<()> {
    // SAFETY: setpriority(2) of this process; nice 19, the least CPU share.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
    let mut forks: u64 = 0;
    loop {
        for _ in 0..64 {
            // SAFETY: fork(2) of this single-threaded process; the child only calls _exit(2).
            match unsafe { libc::fork() } {
                0 => unsafe { libc::_exit(0) },
                pid if pid > 0 => {
                    let mut st = 0;
                    // SAFETY: waitpid(2) of our own child, with a live status local.
                    unsafe { libc::waitpid(pid, &mut st, 0) };
                    forks += 1;
                }
                _ => {}
            }
        }
        let mut p = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) of one live pollfd, no timeout.
        if unsafe { libc::poll(&mut p, 1, 0) } != 0 {
            break;
        }
    }
    println!("{forks}");
    Ok(())
}

/// Start the storm: [`STORMS`] copies of this bench (`storm-fork`), each placed in module
/// `storm-N` before its `execve` (the library's `place_before_exec`).
fn start(root: &Root) -> Res<Vec<Child>> {
    let me = std::env::current_exe()?;
    let mut out = Vec::new();
    for i in 0..STORMS {
        let id = ModuleId::new(&format!("storm-{i}"))?;
        let mut cmd = Command::new(&me);
        cmd.arg("storm-fork")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        ck_cgroup::spawn::place_before_exec(&mut cmd, root.procs_fd(&id)?);
        out.push(cmd.spawn()?);
    }
    Ok(out)
}

/// End the storm (stdin closed); the forks it made.
fn stop(storms: Vec<Child>) -> Res<u64> {
    let mut total = 0;
    for mut c in storms {
        drop(c.stdin.take());
        let mut text = String::new();
        if let Some(mut o) = c.stdout.take() {
            o.read_to_string(&mut text)?;
        }
        c.wait()?;
        total += text.trim().parse::<u64>().unwrap_or(0);
    }
    Ok(total)
}

fn quiet(cmd: &mut Command) -> &mut Command {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
}

pub fn measure(root: &Root, sandbox: &Path, bin: &Path) -> Res<Storm> {
    let placed = ModuleId::new("storm-place")?;
    let _made = root.create(&placed)?;
    let dir = sandbox.join("subc-modules").join(placed.as_str());
    let dir = dir
        .to_str()
        .ok_or("the sandbox's path is not UTF-8")?
        .to_string();
    let ck = |args: &[&str]| {
        let mut c = Command::new(bin);
        c.arg("--root")
            .arg(sandbox)
            .args(args)
            .env_remove("CK_CGROUP_ROOT")
            .env_remove("CK_CGROUP_POLICY");
        quiet(&mut c);
        c
    };
    type Step<'a> = Box<dyn Fn() -> Res<f64> + 'a>;
    let timed = |mut c: Command, what: &'static str| -> Res<f64> { Ok(run(&mut c, what)?.ms) };
    let steps: Vec<(&'static str, bool, Step)> = vec![
        (
            "Command /bin/true + wait (no cgroup)",
            false,
            Box::new(|| {
                let t0 = Instant::now();
                quiet(&mut Command::new("/bin/true")).status()?;
                Ok(ms_since(t0))
            }),
        ),
        (
            "dash: echo $$ > procs; exec",
            false,
            Box::new(|| {
                let mut c = Command::new("/bin/dash");
                c.args(["-c", SHELL, "dash", &dir]);
                quiet(&mut c);
                timed(c, "dash")
            }),
        ),
        (
            "Root::spawn /bin/true + wait",
            true,
            Box::new(|| {
                let t0 = Instant::now();
                let st = root
                    .spawn(&placed, &ModuleCommand::new("/bin/true"))?
                    .wait()?;
                let ms = ms_since(t0);
                if !st.success() {
                    return Err(format!("Root::spawn of /bin/true: {st}").into());
                }
                Ok(ms)
            }),
        ),
        (
            "run m -- /bin/true",
            true,
            Box::new(|| timed(ck(&["run", "storm-run", "--", "/bin/true"]), "run")),
        ),
        (
            "exec m -- /bin/true (cgroup.procs)",
            false,
            Box::new(|| timed(ck(&["exec", "storm-place", "--", "/bin/true"]), "exec")),
        ),
    ];
    let mut rows: Vec<Row> = steps
        .iter()
        .map(|(name, clone3, _)| Row {
            name,
            idle: Vec::new(),
            storm: Vec::new(),
            clone3: *clone3,
        })
        .collect();
    let (mut forks, mut storm_ms) = (0u64, 0.0);
    for block in 0..BLOCKS {
        let order = if block % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for stormy in order {
            let storms = if stormy { Some(start(root)?) } else { None };
            let t0 = Instant::now();
            let mut result = Ok(());
            'block: for _ in 0..PER_BLOCK {
                for (row, (name, _, step)) in rows.iter_mut().zip(&steps) {
                    if name.contains("procs") {
                        std::thread::sleep(PAUSE);
                    }
                    match step() {
                        Ok(ms) if stormy => row.storm.push(ms),
                        Ok(ms) => row.idle.push(ms),
                        Err(e) => {
                            result = Err(e);
                            break 'block;
                        }
                    }
                }
            }
            if let Some(s) = storms {
                storm_ms += ms_since(t0);
                forks += stop(s)?;
            }
            result?;
        }
    }
    Ok(Storm {
        rows,
        forks_per_s: forks as f64 / (storm_ms / 1e3),
    })
}
