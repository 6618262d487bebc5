//! `make vm-bench` (scripts/vm-bench): the guest bench. Built on the host as a `harness = false`
//! bench target (`cargo bench --no-run --bench vm`), run inside lane 2's guest (Debian 12,
//! systemd 252 as PID 1, every controller) by `scripts/vm/bench/10-bench.sh` from the repository
//! shared read-only at its host path. Prints one table per section, ratios measured in one run,
//! and a `goal:` line for each goal (met / not met, with the figures). Nothing is asserted.
//!
//! On a host without `CK_VM_BENCH=1` it prints one line and exits 0 (a plain `cargo bench`
//! builds and runs every bench target; this one needs the guest: systemd-run, controllers).
//!
//! Sections (docs/performance.md, "Guest bench"):
//!
//! 1. Spawn paths: N starts each of `/bin/true`, in rotating order, spawn to reaped exit: plain
//!    `Command`; `Root::spawn` (clone3 into the module); `ck-cgroup exec` into an existing
//!    module and into a new one; `ck-cgroup run`; `systemd-run --scope`; `exec --backend
//!    systemd`. Once with cgroup2 as systemd mounts it and once remounted with `favordynmods`.
//! 2. Module churn: whole lives (create, a 3-process tree, stop, remove) per second, one module
//!    at a time and `AT_ONCE` modules at once, against `systemd-run --scope` + `systemctl stop`.
//! 3. Scale: `list --json`, `status --json` and `kill` of one module among each size, beside a
//!    limit loop that opens and reads exactly the files `status` was seen opening (inotify
//!    `IN_OPEN` on the root and two modules during one `status`), as a process of its own.
//! 4. watch: CPU time of an idle `watch` over `WATCH_AT` modules and the latency from a
//!    `cgroup.events` change (seen by this process's own inotify) to `watch`'s JSON line.
//! 5. Memory: peak RSS (wait4's `ru_maxrss`, which keeps the peak across `execve`, and `VmHWM`
//!    while `run` is resident) of `exec`, `run`, `list` and `status`.
//!
//! Knobs (environment; defaults sized for CI's budget, docs/performance.md):
//! `VM_BENCH_SPAWNS` (15), `VM_BENCH_LIVES` (10), `VM_BENCH_AT_ONCE` (50), `VM_BENCH_SIZES`
//! ("100 1000 10000"), `VM_BENCH_REPS` (3), `VM_BENCH_BIG` (10000: sizes from here get
//! `VM_BENCH_BIG_REPS`, 1, and no warm-up), `VM_BENCH_WATCH_AT` (1000), `VM_BENCH_WATCH_SECS`
//! (60), `VM_BENCH_WATCH_EVENTS` (10), `VM_BENCH_SECTIONS` ("1 2 3 4 5").
//!
//! One module per section (`spawn`, `churn`, `scale` with its limit loop and its table, `watch`,
//! `memory`); `config` holds the knobs and what the sections share, `helpers`, `mount` and
//! `inotify` the rest they use.

mod churn;
mod config;
mod helpers;
mod memory;
mod mount;
mod scale;
mod spawn;
mod watch;

use ck_bench::{common, inotify};

use std::fs;
use std::time::Instant;

use ck_bench::limit::limit_main;
use ck_cgroup::Sandbox;
use ck_cgroup::discover::cgroup2_mount;
use common::{Res, binary, print_cgroup_and_binary, print_machine, reap_all, report_cleanup};
use config::{Cfg, Ctx};
use mount::super_opts;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("limit-loop") {
        return limit_main(&args[2..]);
    }
    if std::env::var_os("CK_VM_BENCH").is_none() {
        println!(
            "vm bench: runs in lane 2's guest through `make vm-bench` (CK_VM_BENCH=1 runs it here)"
        );
        return Ok(());
    }
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    let cfg = Cfg::from_env()?;
    let mount = cgroup2_mount()?;
    let bin = binary(env!("CARGO_BIN_EXE_ck-cgroup"));
    print_machine("ck-cgroup guest bench (make vm-bench)")?;
    print_cgroup_and_binary(&mount, &bin)?;
    println!("cgroup2 mount options: {}", super_opts(&mount)?.1);
    let cs = fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .unwrap_or_else(|_| "unknown".into());
    println!(
        "clocksource: {} (under TCG without a stable TSC it is jiffies: times come in ticks of 1/CONFIG_HZ s)",
        cs.trim()
    );
    println!(
        "knobs: VM_BENCH_SPAWNS={} VM_BENCH_LIVES={} VM_BENCH_AT_ONCE={} VM_BENCH_SIZES=\"{}\" VM_BENCH_REPS={} VM_BENCH_BIG={} VM_BENCH_BIG_REPS={} VM_BENCH_WATCH_AT={} VM_BENCH_WATCH_SECS={} VM_BENCH_WATCH_EVENTS={}",
        cfg.spawns,
        cfg.lives,
        cfg.at_once,
        cfg.sizes
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        cfg.reps,
        cfg.big,
        cfg.big_reps,
        cfg.watch_at,
        cfg.watch_secs,
        cfg.watch_events
    );
    let started = Instant::now();
    let sandbox = Sandbox::create(&mount)?;
    let sandbox_path = sandbox.path().to_path_buf();
    println!("sandbox: {}", sandbox_path.display());
    let mut ctx = Ctx {
        cfg,
        root: sandbox.root(),
        rpath: sandbox.root().path().to_path_buf(),
        bin,
        mount: mount.clone(),
        rss: Vec::new(),
    };
    let run = sections(&mut ctx);
    drop(ctx);
    let destroyed = sandbox.destroy();
    reap_all();
    run?;
    destroyed?;
    report_cleanup(&mount, &sandbox_path)?;
    println!("measured in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn sections(ctx: &mut Ctx) -> Res<()> {
    let t = |s: &str, t0: Instant| println!("({s} took {:.1} s)", t0.elapsed().as_secs_f64());
    if ctx.cfg.on(1) {
        let t0 = Instant::now();
        spawn::section_spawn(ctx)?;
        t("section 1", t0);
    }
    if ctx.cfg.on(2) {
        let t0 = Instant::now();
        churn::section_churn(ctx)?;
        t("section 2", t0);
    }
    if ctx.cfg.on(3) || ctx.cfg.on(4) {
        let t0 = Instant::now();
        scale::section_scale(ctx)?;
        t("sections 3 and 4", t0);
    }
    if ctx.cfg.on(5) {
        memory::section_memory(ctx)?;
    }
    Ok(())
}
