//! The table, the ratios and the goal lines (the goals in benches/native).

use crate::proc::Pair;
use crate::scale::Scale;
use crate::startup::Starts;

/// `--version` within this factor of `/bin/true`.
const GOAL_VERSION: f64 = 1.3;
/// `exec` within this factor of the shell placement baseline.
const GOAL_EXEC: f64 = 1.2;
/// `run` within this factor of `exec`.
const GOAL_RUN: f64 = 1.3;
/// `status --json` within this factor of the limit loop, at every size.
const GOAL_STATUS: f64 = 1.3;
/// The peak RSS of `exec`, KiB.
const GOAL_EXEC_KIB: u64 = 4 << 10;

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn row(label_a: &str, label_b: &str, p: &Pair, rss: bool) {
    let kib = |k: u64| {
        if rss {
            format!("{k:>9}")
        } else {
            format!("{:>9}", "-")
        }
    };
    println!(
        "{:<36} {:>10.3} {} | {:<30} {:>10.3} {} | {:>7.2}",
        label_a,
        p.ms_a(),
        kib(p.max_kib_a()),
        label_b,
        p.ms_b(),
        kib(p.max_kib_b()),
        p.ratio()
    );
}

pub fn print(s: &Starts, scales: &[Scale]) {
    println!(
        "{:<36} {:>10} {:>9} | {:<30} {:>10} {:>9} | {:>7}",
        "row A", "median ms", "peak KiB", "baseline B", "median ms", "peak KiB", "A / B"
    );
    row("ck-cgroup --version", "/bin/true", &s.version, true);
    row(
        "exec m -- /bin/true",
        "dash: echo $$ > procs; exec",
        &s.exec,
        true,
    );
    row(
        "run m -- /bin/true",
        "exec m -- /bin/true (makes m)",
        &s.run,
        true,
    );
    row(
        "Root::spawn /bin/true + wait",
        "Command /bin/true + wait",
        &s.spawn,
        false,
    );
    for sc in scales {
        row(
            &format!("--json status, {} modules", sc.modules),
            "limit loop (process)",
            &sc.pair,
            true,
        );
    }
    println!();
    println!("A / B: the median of the pairs' ratios; peak KiB: the largest ru_maxrss of the runs");
    println!();
    let goal = |what: &str, x: f64, max: f64| {
        println!(
            "goal: {what} within {max} x: {x:.2} x -> {}",
            verdict(x <= max)
        );
    };
    goal("--version / /bin/true", s.version.ratio(), GOAL_VERSION);
    goal("exec / shell placement", s.exec.ratio(), GOAL_EXEC);
    goal("run / exec", s.run.ratio(), GOAL_RUN);
    for sc in scales {
        goal(
            &format!("status --json / limit loop at {}", sc.modules),
            sc.pair.ratio(),
            GOAL_STATUS,
        );
    }
    let kib = s.exec.max_kib_a();
    println!(
        "goal: peak RSS of exec at most {GOAL_EXEC_KIB} KiB: {kib} KiB -> {}",
        verdict(kib <= GOAL_EXEC_KIB)
    );
}
