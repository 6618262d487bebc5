//! `cargo bench --bench native` (`make bench`): the helper at the kernel's own cost, natively on
//! this host, each row against a like-for-like baseline measured in the same run, interleaved
//! pair by pair (A B, then B A), the ratio the median of the pairs' ratios. A report, not a test:
//! nothing is asserted; the goal lines say met or not met.
//!
//! Needs root and a cgroup2 mount. Everything runs in one fresh [`Sandbox`] under the cgroup2
//! mount's root, removed at the end, and the run checks that nothing it made is left. The bench is
//! a child subreaper and reaps what it started.
//!
//! Rows ([`startup`]: processes from the spawn to the reaped exit, stdio `/dev/null`):
//!
//! - `ck-cgroup --version` vs `/bin/true`: the helper's start-up, no cgroup work.
//! - `exec up-place -- /bin/true` vs the shell placement baseline, `dash -c 'echo $$ >
//!   DIR/cgroup.procs && exec /bin/true'` ([`startup::SHELL`]): two `execve`s and one write each,
//!   into the same module, made before (untimed).
//! - `run up-run -- /bin/true` vs `exec up-exec -- /bin/true`: both make their module; `run` removes
//!   its own, `exec`'s is removed after it (untimed).
//! - `Root::spawn` of `/bin/true` into a module and its wait vs `std::process::Command` of
//!   `/bin/true` and its wait, in this process.
//! - [`scale`]: `--json status` vs the limit loop, both as processes, at 100 and 1,000 modules
//!   (10,000 with `CK_BENCH_STATUS_10K=1`: making and removing them adds about a minute here).
//!
//! - `--version` vs a static C program that writes one line (the floor, built here with `cc
//!   -static`), and per process the CPU time and page faults of each start-up row (`wait4`'s
//!   `ru_utime + ru_stime`, `ru_minflt + ru_majflt`).
//! - [`resident`]: what a `run` module keeps resident (both helper processes' `Pss_Anon` and page
//!   tables) at 1, 100 and 1,000 modules.
//! - [`storm`]: `Root::spawn`, `run`, `exec` and the dash placement while other (sandbox)
//!   cgroups fork as fast as they can, against the same idle, in alternating blocks.
//!
//! Peak RSS is `wait4`'s `ru_maxrss` of each run (the largest over its runs): for `exec` the
//! helper's own peak, kept across its `execve` of `/bin/true`.
//!
//! Knobs: `CK_BENCH_PAIRS` (start-up pairs, default 100), `CK_BENCH_STATUS_10K=1`.

mod proc;
mod report;
mod resident;
mod scale;
mod startup;
mod storm;

use ck_bench::{common, limit};

use std::path::Path;

use ck_cgroup::discover::cgroup2_mount;
use ck_cgroup::{Root, Sandbox};
use common::{Res, binary, print_cgroup_and_binary, print_machine, reap_all, report_cleanup};

/// How many `run` modules at once, for what they keep resident.
const RUN_MODULES: [usize; 3] = [1, 100, 1000];

/// Pairs of each status size: fewer for the larger ones, each of which takes longer.
const SIZES: [(usize, usize); 3] = [(100, 31), (1000, 15), (10_000, 5)];

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("limit-loop") {
        return limit::limit_main(&args[2..]);
    }
    if args.get(1).map(String::as_str) == Some("storm-fork") {
        return storm::storm_main();
    }
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    let mount = cgroup2_mount()?;
    let bin = binary(env!("CARGO_BIN_EXE_ck-cgroup"));
    let pairs: usize = match std::env::var("CK_BENCH_PAIRS") {
        Ok(v) => v.parse().map_err(|e| format!("CK_BENCH_PAIRS={v}: {e}"))?,
        Err(_) => 100,
    };
    let big = std::env::var_os("CK_BENCH_STATUS_10K").is_some_and(|v| v == "1");
    let sizes: Vec<(usize, usize)> = SIZES
        .iter()
        .copied()
        .filter(|(n, _)| big || *n < 10_000)
        .collect();
    print_machine("ck-cgroup native benchmark (this host, no emulation)")?;
    print_cgroup_and_binary(&mount, &bin)?;
    println!(
        "load:    {} (1, 5, 15 min; running/all)",
        std::fs::read_to_string("/proc/loadavg")?.trim()
    );
    println!(
        "pairs:   start-up {pairs} (after 1 warm-up pair); status {} (CK_BENCH_STATUS_10K=1 adds 10,000)",
        sizes
            .iter()
            .map(|(n, p)| format!("{p} at {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let sandbox = Sandbox::create(&mount)?;
    let sandbox_path = sandbox.path().to_path_buf();
    println!("sandbox: {}", sandbox_path.display());
    println!();
    let measured = measure(sandbox.root(), &sandbox_path, &bin, pairs, &sizes);
    let destroyed = sandbox.destroy();
    reap_all();
    let (starts, resident, scales, storm) = match measured {
        Ok(m) => m,
        Err(e) => {
            report_cleanup(&mount, &sandbox_path)?;
            return Err(e);
        }
    };
    destroyed?;
    report::print(&starts, &resident, &scales, &storm);
    report_cleanup(&mount, &sandbox_path)
}

type Measured = (
    startup::Starts,
    Vec<resident::Resident>,
    Vec<scale::Scale>,
    storm::Storm,
);

fn measure(
    root: &Root,
    sandbox: &Path,
    bin: &Path,
    pairs: usize,
    sizes: &[(usize, usize)],
) -> Res<Measured> {
    let starts = startup::measure(root, sandbox, bin, pairs)?;
    let resident = resident::measure(sandbox, bin, &RUN_MODULES)?;
    let (scales, _seen) = scale::measure(root, sandbox, bin, sizes)?;
    let storm = storm::measure(root, sandbox, bin)?;
    Ok((starts, resident, scales, storm))
}
