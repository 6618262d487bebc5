//! The table, the ratios and the goal lines (the goals in benches/native).

use crate::common::median;
use crate::proc::Pair;
use crate::resident::Resident;
use crate::scale::Scale;
use crate::startup::Starts;
use crate::storm::Storm;

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
/// Page faults of `--version` (the median).
const GOAL_VERSION_FAULTS: f64 = 60.0;
/// The anonymous memory (`Pss_Anon`) a `run` module keeps, both helper processes together, KiB.
const GOAL_RUN_KIB: f64 = 256.0;
/// A `clone3(CLONE_INTO_CGROUP)` spawn under a fork storm, within this factor of its idle time.
const GOAL_STORM: f64 = 1.5;

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

pub fn print(s: &Starts, resident: &[Resident], scales: &[Scale], storm: &Storm) {
    println!(
        "{:<36} {:>10} {:>9} | {:<30} {:>10} {:>9} | {:>7}",
        "row A", "median ms", "peak KiB", "baseline B", "median ms", "peak KiB", "A / B"
    );
    row("ck-cgroup --version", "/bin/true", &s.version, true);
    if let Some(f) = &s.floor {
        row(
            "ck-cgroup --version",
            "static C floor (cc -static)",
            f,
            true,
        );
    }
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
    println!(
        "{:<36} {:>10} {:>9} | {:<30} {:>10} {:>9}",
        "per process (medians)", "cpu ms", "faults", "baseline", "cpu ms", "faults"
    );
    let usage = |a: &str, b: &str, p: &Pair| {
        let ((ca, cb), (fa, fb)) = (p.cpu_ms(), p.faults());
        println!("{a:<36} {ca:>10.3} {fa:>9.0} | {b:<30} {cb:>10.3} {fb:>9.0}");
    };
    usage("ck-cgroup --version", "/bin/true", &s.version);
    if let Some(f) = &s.floor {
        usage("ck-cgroup --version", "static C floor", f);
    }
    usage("exec m -- /bin/true", "dash placement", &s.exec);
    usage("run m -- /bin/true", "exec m -- /bin/true", &s.run);
    println!(
        "(cpu ms: ru_utime + ru_stime, at the kernel's accounting grain; exec's and dash's include /bin/true's)"
    );
    println!();
    println!(
        "{:<36} {:>10} {:>9} {:>9} {:>11}",
        "run modules at once", "anon KiB", "parent", "init", "page tables"
    );
    for r in resident {
        println!(
            "{:<36} {:>10.0} {:>9.0} {:>9.0} {:>11.0}",
            format!("run rN -- sleep 600, {} modules", r.modules),
            r.anon_kib,
            r.parent_kib,
            r.init_kib,
            r.pte_kib
        );
    }
    println!(
        "(medians over the modules: anon KiB both helpers' Pss_Anon, page tables both helpers' VmPTE)"
    );
    println!();
    print_storm(storm);
    let goal = |what: &str, x: f64, max: f64| {
        println!(
            "goal: {what} within {max} x: {x:.2} x -> {}",
            verdict(x <= max)
        );
    };
    goal("--version / /bin/true", s.version.ratio(), GOAL_VERSION);
    let faults = s.version.faults().0;
    let floor_faults = s.floor.as_ref().map(|f| f.faults().1);
    println!(
        "goal: page faults of --version at most {GOAL_VERSION_FAULTS}: {faults:.0} -> {} (/bin/true {:.0}{})",
        verdict(faults <= GOAL_VERSION_FAULTS),
        s.version.faults().1,
        floor_faults.map_or(String::new(), |f| format!(", the static C floor {f:.0}"))
    );
    goal("exec / shell placement", s.exec.ratio(), GOAL_EXEC);
    println!(
        "      (of which the helper's start-up: --version is {:.2} x /bin/true above)",
        s.version.ratio()
    );
    goal("run / exec", s.run.ratio(), GOAL_RUN);
    for sc in scales {
        goal(
            &format!("status --json / limit loop at {}", sc.modules),
            sc.pair.ratio(),
            GOAL_STATUS,
        );
    }
    for r in resident {
        println!(
            "goal: a run module keeps at most {GOAL_RUN_KIB} KiB of anonymous memory at {}: {:.0} KiB -> {} (the parent {:.0}, the init {:.0}; page tables {:.0} KiB more)",
            r.modules,
            r.anon_kib,
            verdict(r.anon_kib <= GOAL_RUN_KIB),
            r.parent_kib,
            r.init_kib,
            r.pte_kib
        );
    }
    let kib = s.exec.max_kib_a();
    println!(
        "goal: peak RSS of exec at most {GOAL_EXEC_KIB} KiB: {kib} KiB -> {}",
        verdict(kib <= GOAL_EXEC_KIB)
    );
    for r in storm.rows.iter().filter(|r| r.clone3) {
        goal(
            &format!("{} under the fork storm / idle", r.name),
            r.ratio(),
            GOAL_STORM,
        );
    }
}

/// The fork storm's rows: each one's median idle and under the storm, and their ratio.
fn print_storm(storm: &Storm) {
    println!(
        "{:<40} {:>10} {:>10} | {:>7}",
        "under a fork storm (medians)", "idle ms", "storm ms", "storm/idle"
    );
    for r in &storm.rows {
        println!(
            "{:<40} {:>10.3} {:>10.3} | {:>7.2}",
            r.name,
            median(&r.idle),
            median(&r.storm),
            r.ratio()
        );
    }
    println!(
        "(the storm: {:.0} forks a second from other cgroups at nice 19, in blocks alternating with idle ones)",
        storm.forks_per_s
    );
    println!();
}
