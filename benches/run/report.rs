//! What the run prints after measuring: the start-up and teardown tables, their ratios and the
//! goal lines.

use crate::common::{median, min};
use crate::startup::{STARTS, Start};
use crate::teardown::{DOWNS, Down};
use crate::{Measured, ROUNDS, SIZES};

/// Start-ups slower than this are counted: the kernel's `cgroup.events` notification interval
/// (see [`SETTLE`](crate::tree::SETTLE)) is about 10 ms, and a start that waited for it shows up here.
const SLOW_MS: f64 = 10.0;
/// Goal: `exec` within this factor of a plain spawn of `/bin/true` (on this host).
const GOAL_EXEC_X_PLAIN: f64 = 3.0;
/// Goal: `run` (pid namespace) within this factor of `exec`.
const GOAL_RUN_X_EXEC: f64 = 2.0;
/// Goal: the pid namespace (the init, its fork, its exit) adds at most half of
/// `run --no-pid-namespace`.
const GOAL_PIDNS_X_NONS: f64 = 1.5;
/// Goal: teardown after SIGKILL of the helper within this factor of `cgroup.kill`.
const GOAL_HELPER_X_KILL: f64 = 1.5;

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

pub fn print_results(m: &Measured) {
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
