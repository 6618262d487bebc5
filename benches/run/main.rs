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
//! parent is the helper), then pauses [`tree::SETTLE`]. Each repetition builds a fresh tree for each
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
//!
//! One module per part: `startup` (its rows and one start), `tree` (a built tree and its
//! helper), `teardown` (its rows and one teardown), `report` (the tables, ratios and goal
//! lines), `cleanup` (the second try at removing the sandbox).

mod cleanup;
mod report;
mod startup;
mod teardown;
mod tree;

use ck_bench::common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ck_cgroup::discover::cgroup2_mount;
use ck_cgroup::{Root, Sandbox};
use cleanup::remove_again;
use common::{Res, binary, print_cgroup_and_binary, print_machine, reap_all, report_cleanup};
use report::print_results;
use startup::{STARTS, start_up};
use teardown::{DOWNS, teardown};
use tree::build_tree;

/// Timed start-up rounds (after one untimed warm-up round).
const ROUNDS: usize = 200;
/// Tree sizes and repetitions of each teardown row.
const SIZES: [(usize, usize); 3] = [(1, 21), (100, 15), (1000, 9)];
/// Longest wait for a tree to be built, a helper to stop or exit, a module to empty.
const TIMEOUT: Duration = Duration::from_secs(30);

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
    let bin = binary(env!("CARGO_BIN_EXE_ck-cgroup"));
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

/// `ck-cgroup --root <sandbox> ARGS`, with `CK_CGROUP_ROOT` removed.
fn ck(bin: &Path, sandbox: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--root")
        .arg(sandbox)
        .args(args)
        .env_remove("CK_CGROUP_ROOT");
    cmd
}
