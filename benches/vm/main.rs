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
//! `config` holds the knobs and what the sections share, `helpers`, `mount` and `inotify` the
//! rest they use.

#[path = "../common/mod.rs"]
mod common;
mod config;
mod helpers;
mod inotify;
mod mount;

use std::fs;
use std::time::Instant;

use ck_cgroup::Sandbox;
use ck_cgroup::discover::cgroup2_mount;
use common::{Res, binary, print_cgroup_and_binary, print_machine, reap_all, report_cleanup};
use config::{Cfg, Ctx};
use mount::super_opts;
use std::collections::BTreeSet;
use std::ffi::CString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ck_cgroup::spawn::ModuleCommand;
use common::{dev_null, median, min, ms_since};
use config::TIMEOUT;
use helpers::{ck, id, max, nanos, pct, peak_rss, run_proc, status_kib, true_cmd, verdict, wait4};
use inotify::Inotify;
use mount::remount;
use rustix::fs::{Dir, FileType, Mode, OFlags};

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
    let bin = binary();
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
        section_spawn(ctx)?;
        t("section 1", t0);
    }
    if ctx.cfg.on(2) {
        let t0 = Instant::now();
        section_churn(ctx)?;
        t("section 2", t0);
    }
    if ctx.cfg.on(3) || ctx.cfg.on(4) {
        let t0 = Instant::now();
        section_scale(ctx)?;
        t("sections 3 and 4", t0);
    }
    if ctx.cfg.on(5) {
        section_memory(ctx)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Section 1: spawn paths

/// `Root::spawn` within this factor of a plain spawn.
const GOAL_SPAWN_X_PLAIN: f64 = 1.1;
/// `exec` within this factor of a plain spawn...
const GOAL_EXEC_X_PLAIN: f64 = 2.0;
/// ...and `systemd-run --scope` at least this factor slower than `exec`.
const GOAL_SD_X_EXEC: f64 = 4.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sp {
    Plain,
    Version,
    Spawn,
    Exec,
    ExecNew,
    Run,
    SdRun,
    ExecSd,
}

const SPS: [Sp; 8] = [
    Sp::Plain,
    Sp::Version,
    Sp::Spawn,
    Sp::Exec,
    Sp::ExecNew,
    Sp::Run,
    Sp::SdRun,
    Sp::ExecSd,
];

impl Sp {
    fn label(self) -> &'static str {
        match self {
            Sp::Plain => "plain (Command, fork+exec)",
            Sp::Version => "ck-cgroup --version",
            Sp::Spawn => "Root::spawn (clone3)",
            Sp::Exec => "ck-cgroup exec",
            Sp::ExecNew => "ck-cgroup exec (new module)",
            Sp::Run => "ck-cgroup run",
            Sp::SdRun => "systemd-run --scope",
            Sp::ExecSd => "exec --backend systemd",
        }
    }

    fn note(self) -> &'static str {
        match self {
            Sp::Plain => "no cgroup",
            Sp::Version => "the helper's own start-up, no cgroup",
            Sp::Spawn => "existing module, CLONE_INTO_CGROUP",
            Sp::Exec => "existing module, cgroup.procs write",
            Sp::ExecNew => "mkdir + limits + cgroup.procs write",
            Sp::Run => "module made and removed, pid ns",
            Sp::SdRun => "a transient scope per start (--collect)",
            Sp::ExecSd => "a transient scope per start (D-Bus)",
        }
    }
}

/// One start of `/bin/true` on path `p`: ms from spawn to reaped exit.
fn spawn_once(ctx: &Ctx, p: Sp, tag: &str, i: usize) -> Res<f64> {
    let proc_ms = |cmd: &mut Command| -> Res<f64> { Ok(run_proc(cmd, p.label())?.ms) };
    match p {
        Sp::Plain => proc_ms(
            Command::new("/bin/true")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        ),
        Sp::Spawn => {
            let cmd = true_cmd()?;
            let mid = id("s-spawn")?;
            let t0 = Instant::now();
            let mut child = ctx.root.spawn(&mid, &cmd)?;
            let st = child.wait()?;
            let ms = ms_since(t0);
            if !st.success() {
                return Err(format!("Root::spawn: /bin/true: {st}").into());
            }
            Ok(ms)
        }
        Sp::Version => proc_ms(&mut ck(ctx, &["--version"])),
        Sp::Exec => proc_ms(&mut ck(ctx, &["exec", "s-exec", "--", "/bin/true"])),
        Sp::ExecNew => {
            let name = format!("n{tag}{i}");
            let ms = proc_ms(&mut ck(ctx, &["exec", &name, "--", "/bin/true"]))?;
            let _ = ctx.root.remove(&name)?;
            Ok(ms)
        }
        Sp::Run => proc_ms(&mut ck(ctx, &["run", "s-run", "--", "/bin/true"])),
        Sp::SdRun => proc_ms(
            Command::new("systemd-run")
                .args(["--scope", "--collect", "--quiet", "--", "/bin/true"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        ),
        Sp::ExecSd => {
            let name = format!("b{tag}{i}-{}", nanos() % 1_000_000);
            proc_ms(
                Command::new(&ctx.bin)
                    .args(["exec", "--backend", "systemd", &name, "--", "/bin/true"])
                    .env_remove("CK_CGROUP_ROOT")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped()),
            )
        }
    }
}

/// Stop what `exec --backend systemd` left (its per-module slices), quietly.
fn stop_module_slice() {
    let _ = Command::new("systemctl")
        .args(["stop", "module.slice"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn spawn_round(ctx: &Ctx, tag: &str) -> Res<Vec<Vec<f64>>> {
    let mut samples: Vec<Vec<f64>> = SPS.iter().map(|_| Vec::new()).collect();
    // One untimed warm-up of each path.
    for p in SPS {
        spawn_once(ctx, p, &format!("{tag}w"), 0)?;
    }
    for i in 0..ctx.cfg.spawns {
        for k in 0..SPS.len() {
            let j = (k + i) % SPS.len();
            samples[j].push(spawn_once(ctx, SPS[j], tag, i)?);
        }
    }
    stop_module_slice();
    Ok(samples)
}

fn print_spawn(ctx: &Ctx, mode: &str, s: &[Vec<f64>]) {
    let med = |p: Sp| median(&s[SPS.iter().position(|x| *x == p).unwrap_or(0)]);
    let plain = med(Sp::Plain);
    println!();
    println!(
        "section 1: spawn paths, cgroup2 {mode}: /bin/true, spawn to reaped exit, {} of each, rotating order",
        ctx.cfg.spawns
    );
    println!(
        "{:<30} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}   notes",
        "path", "median", "p10", "p90", "max", "spread", "x plain"
    );
    for (p, v) in SPS.iter().zip(s) {
        let m = median(v);
        println!(
            "{:<30} {:>9.2} {:>8.2} {:>8.2} {:>8.2} {:>7.0}% {:>8.2}   {}",
            p.label(),
            m,
            pct(v, 10.0),
            pct(v, 90.0),
            max(v),
            (pct(v, 90.0) - pct(v, 10.0)) / m * 100.0,
            m / plain,
            p.note()
        );
    }
    println!("(ms; spread = (p90 - p10) / median)");
    let (spawn, exec, sd) = (med(Sp::Spawn), med(Sp::Exec), med(Sp::SdRun));
    let x = spawn / plain;
    println!(
        "goal [{mode}]: Root::spawn within {GOAL_SPAWN_X_PLAIN} x plain: ratio {x:.2} -> {}",
        verdict(
            x <= GOAL_SPAWN_X_PLAIN,
            &format!("{:.2} ms more than plain", spawn - plain)
        )
    );
    let x = exec / plain;
    println!(
        "goal [{mode}]: exec within {GOAL_EXEC_X_PLAIN} x plain: ratio {x:.2} -> {}",
        verdict(
            x <= GOAL_EXEC_X_PLAIN,
            &format!(
                "exec adds {:.2} ms to plain, of which the helper's own start-up (--version) {:.2} ms; a new module adds {:.2} ms more",
                exec - plain,
                med(Sp::Version) - plain,
                med(Sp::ExecNew) - exec
            )
        )
    );
    let x = sd / exec;
    let xn = sd / med(Sp::ExecNew);
    println!(
        "goal [{mode}]: systemd-run --scope at least {GOAL_SD_X_EXEC} x exec: ratio {x:.2} (new module: {xn:.2}) -> {}",
        verdict(
            x >= GOAL_SD_X_EXEC,
            &format!("systemd-run --scope takes {sd:.2} ms, exec {exec:.2} ms")
        )
    );
}

pub fn section_spawn(ctx: &mut Ctx) -> Res<()> {
    let _ = ctx.root.create(&id("s-spawn")?)?;
    let _ = ctx.root.create(&id("s-exec")?)?;
    let default = spawn_round(ctx, "d")?;
    print_spawn(ctx, "as mounted", &default);
    println!("mount options: {}", super_opts(&ctx.mount)?.1);

    if !remount(&ctx.mount, true)? {
        println!();
        println!(
            "section 1, favordynmods: the kernel refused `favordynmods` (EINVAL): not supported by {}",
            fs::read_to_string("/proc/sys/kernel/osrelease")?.trim()
        );
    } else {
        let favored = spawn_round(ctx, "f");
        let restored = remount(&ctx.mount, false);
        let favored = favored?;
        print_spawn(ctx, "remounted favordynmods", &favored);
        restored?;
        println!(
            "mount options while measured: ...,favordynmods; restored: {}",
            super_opts(&ctx.mount)?.1
        );
        let i = |p: Sp| SPS.iter().position(|x| *x == p).unwrap_or(0);
        for p in [Sp::Version, Sp::Spawn, Sp::Exec, Sp::ExecNew, Sp::Run] {
            println!(
                "favordynmods / as mounted, {:<28}: {:.2}  (medians; plain {:.2})",
                p.label(),
                median(&favored[i(p)]) / median(&default[i(p)]),
                median(&favored[i(Sp::Plain)]) / median(&default[i(Sp::Plain)])
            );
        }
    }
    let _ = ctx.root.remove("s-spawn")?;
    let _ = ctx.root.remove("s-exec")?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Section 2: module churn

/// Module lives per second: at least this factor of systemd's.
const GOAL_CHURN_X_SD: f64 = 10.0;
/// The tree of a churned module: a shell, a background `sleep`, the shell's `exec`ed `sleep`.
const TREE: &str = "sleep 600 & echo up; exec sleep 600";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ch {
    Ck,
    Lib,
    Sd,
}

const CHS: [Ch; 3] = [Ch::Ck, Ch::Lib, Ch::Sd];

impl Ch {
    fn label(self) -> &'static str {
        match self {
            Ch::Ck => "ck-cgroup exec + kill",
            Ch::Lib => "Root::spawn + Root::kill",
            Ch::Sd => "systemd-run --scope + systemctl stop",
        }
    }
}

enum LiveChild {
    Proc(Child),
    Lib(ck_cgroup::spawn::ModuleChild),
}

struct Live {
    name: String,
    child: LiveChild,
}

/// Read one line from `r` (the tree says it is up).
fn read_up(r: impl Read) -> Res<()> {
    let mut line = String::new();
    BufReader::new(r).read_line(&mut line)?;
    if line.trim() != "up" {
        return Err(format!("the tree did not come up (read {line:?})").into());
    }
    Ok(())
}

fn live_start(ctx: &Ctx, k: Ch, n: usize) -> Res<Live> {
    match k {
        Ch::Ck => {
            let name = format!("c{n}");
            let mut cmd = ck(ctx, &["exec", &name, "--", "sh", "-c", TREE]);
            let mut child = cmd.stdout(Stdio::piped()).spawn()?;
            read_up(child.stdout.take().ok_or("no stdout")?)?;
            Ok(Live {
                name,
                child: LiveChild::Proc(child),
            })
        }
        Ch::Lib => {
            let name = format!("l{n}");
            let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
            let mut cmd = ModuleCommand::new("sh");
            cmd.args(["-c", TREE])
                .stdin(dev_null()?)
                .stdout(w)
                .stderr(dev_null()?);
            let child = ctx.root.spawn(&id(&name)?, &cmd)?;
            drop(cmd);
            read_up(File::from(r))?;
            Ok(Live {
                name,
                child: LiveChild::Lib(child),
            })
        }
        Ch::Sd => {
            let name = format!("ck-bench-{n}-{}.scope", nanos() % 1_000_000_000);
            let mut child = Command::new("systemd-run")
                .args(["--scope", "--collect", "--quiet", "--unit", &name])
                .args(["--", "sh", "-c", TREE])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()?;
            read_up(child.stdout.take().ok_or("no stdout")?)?;
            Ok(Live {
                name,
                child: LiveChild::Proc(child),
            })
        }
    }
}

fn live_stop(ctx: &Ctx, live: Live) -> Res<()> {
    match live.child {
        LiveChild::Proc(mut child) => {
            if live.name.ends_with(".scope") {
                run_proc(
                    Command::new("systemctl")
                        .args(["stop", &live.name])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped()),
                    "systemctl stop",
                )?;
            } else {
                run_proc(&mut ck(ctx, &["kill", &live.name]), "ck-cgroup kill")?;
            }
            child.wait()?;
        }
        LiveChild::Lib(mut child) => {
            let report = ctx.root.kill(&live.name, TIMEOUT)?;
            if !report.ok() {
                return Err(format!("Root::kill {}: {report:?}", live.name).into());
            }
            child.wait()?;
        }
    }
    Ok(())
}

/// Lives per second: `n` lives, one at a time (`at_once` false) or all started, then all stopped;
/// with `at_once`, also the ms per life of the starts and of the stops.
fn churn(ctx: &Ctx, k: Ch, n: usize, at_once: bool, base: usize) -> Res<(f64, f64, f64)> {
    let t0 = Instant::now();
    let (mut start_ms, mut stop_ms) = (f64::NAN, f64::NAN);
    if at_once {
        let mut lives = Vec::with_capacity(n);
        for i in 0..n {
            lives.push(live_start(ctx, k, base + i)?);
        }
        start_ms = ms_since(t0) / n as f64;
        let t1 = Instant::now();
        for l in lives {
            live_stop(ctx, l)?;
        }
        stop_ms = ms_since(t1) / n as f64;
    } else {
        for i in 0..n {
            let l = live_start(ctx, k, base + i)?;
            live_stop(ctx, l)?;
        }
    }
    let s = t0.elapsed().as_secs_f64();
    reap_all();
    Ok((n as f64 / s, start_ms, stop_ms))
}

pub fn section_churn(ctx: &mut Ctx) -> Res<()> {
    let (one, many) = (ctx.cfg.lives, ctx.cfg.at_once);
    let mut rates = [[0.0f64; 2]; 3];
    let mut phases = [(0.0f64, 0.0f64); 3];
    let mut base = 0;
    for (s, (n, at_once)) in [(one, false), (many, true)].into_iter().enumerate() {
        for j in 0..CHS.len() {
            let i = (j + s) % CHS.len();
            let (rate, start, stop) = churn(ctx, CHS[i], n, at_once, base)?;
            rates[i][s] = rate;
            if at_once {
                phases[i] = (start, stop);
            }
            base += n;
        }
    }
    println!();
    println!(
        "section 2: module churn, whole lives (create, `sh -c '{TREE}'` up, stop, remove) per second"
    );
    println!(
        "{:<38} {:>14} {:>14} {:>12} {:>12}",
        "path",
        "1 at a time",
        format!("{many} at once"),
        "ms/life (1)",
        format!("ms/life ({many})")
    );
    for ((k, r), (start, stop)) in CHS.iter().zip(&rates).zip(&phases) {
        println!(
            "{:<38} {:>14.2} {:>14.2} {:>12.1} {:>12.1}   ({many} at once: start {start:.1} + stop {stop:.1} ms/life)",
            k.label(),
            r[0],
            r[1],
            1000.0 / r[0],
            1000.0 / r[1]
        );
    }
    println!(
        "(lives/s; 1 at a time: {one} lives; {many} at once: {many} started, then {many} stopped; ck kill: SIGKILL, no grace; systemctl stop: SIGTERM)"
    );
    for (s, what) in [
        (0, "1 at a time".to_string()),
        (1, format!("{many} at once")),
    ] {
        for k in [Ch::Ck, Ch::Lib] {
            let i = CHS.iter().position(|x| *x == k).unwrap_or(0);
            let x = rates[i][s] / rates[2][s];
            println!(
                "goal: {} at least {GOAL_CHURN_X_SD} x systemd's lives/s, {what}: ratio {x:.2} -> {}",
                k.label(),
                verdict(
                    x >= GOAL_CHURN_X_SD,
                    &format!(
                        "a life takes {:.1} ms, systemd's {:.1} ms",
                        1000.0 / rates[i][s],
                        1000.0 / rates[2][s]
                    )
                )
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Section 3: scale

/// The files one `status --json` opened, seen through inotify `IN_OPEN`: in the root, in
/// `subc-modules/`, in a populated module and in an empty one.
pub struct Seen {
    pub root: Vec<String>,
    pub populated: Vec<String>,
    pub empty: Vec<String>,
}

/// What one pass of the limit loop did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Opens {
    pub modules: usize,
    pub opened: usize,
    pub failed: usize,
}

/// The limit loop: the root's files, one listing of `subc-modules/`, then per module an
/// openat + read (to a short read) + close of each file `status` opened in an empty module, and
/// where `cgroup.events` says populated, those it opened in a populated one as well.
pub fn limit(root: &Path, seen: &Seen) -> Res<Opens> {
    let rdir = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut opens = Opens::default();
    let mut buf = [0u8; 4096];
    for f in &seen.root {
        read_at(&rdir, f.as_bytes(), &mut buf, &mut opens, None)?;
    }
    let dir = rustix::fs::openat(
        &rdir,
        c"subc-modules",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut names: Vec<Vec<u8>> = Vec::new();
    for ent in Dir::read_from(&dir)? {
        let ent = ent?;
        let name = ent.file_name().to_bytes();
        if ent.file_type() == FileType::Directory && name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    opens.modules = names.len();
    let extra: Vec<&String> = seen
        .populated
        .iter()
        .filter(|f| !seen.empty.contains(f))
        .collect();
    let mut path: Vec<u8> = Vec::with_capacity(256);
    let mut events = Vec::with_capacity(64);
    for name in &names {
        let mut populated = false;
        for f in &seen.empty {
            path.clear();
            path.extend_from_slice(name);
            path.push(b'/');
            path.extend_from_slice(f.as_bytes());
            let keep = f == "cgroup.events";
            events.clear();
            read_at(
                &dir,
                &path,
                &mut buf,
                &mut opens,
                keep.then_some(&mut events),
            )?;
            if keep {
                populated = events.windows(11).any(|w| w == b"populated 1");
            }
        }
        if populated {
            for f in &extra {
                path.clear();
                path.extend_from_slice(name);
                path.push(b'/');
                path.extend_from_slice(f.as_bytes());
                read_at(&dir, &path, &mut buf, &mut opens, None)?;
            }
        }
    }
    Ok(opens)
}

fn read_at(
    dir: &OwnedFd,
    rel: &[u8],
    buf: &mut [u8],
    opens: &mut Opens,
    mut keep: Option<&mut Vec<u8>>,
) -> Res<()> {
    let c = CString::new(rel)?;
    match rustix::fs::openat(dir, &c, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => {
            opens.opened += 1;
            loop {
                let n = rustix::io::read(&fd, &mut *buf)?;
                if let Some(k) = keep.as_deref_mut() {
                    k.extend_from_slice(&buf[..n]);
                }
                if n < buf.len() {
                    return Ok(());
                }
            }
        }
        Err(_) => {
            opens.failed += 1;
            Ok(())
        }
    }
}

/// `vm limit-loop ROOT ROOTFILES EMPTYFILES POPULATEDFILES` (comma-separated): the limit loop
/// as a process of its own, so that it pays a process start as `status` does.
pub fn limit_main(args: &[String]) -> Res<()> {
    let list = |i: usize| -> Vec<String> {
        args.get(i)
            .map(|s| {
                s.split(',')
                    .filter(|w| !w.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let root = PathBuf::from(args.first().ok_or("usage: limit-loop ROOT ...")?);
    let seen = Seen {
        root: list(1),
        empty: list(2),
        populated: list(3),
    };
    let o = limit(&root, &seen)?;
    println!("{} {} {}", o.modules, o.opened, o.failed);
    Ok(())
}

fn see_status_files(ctx: &Ctx, populated: &str, empty: &str) -> Res<Seen> {
    let ino = Inotify::new()?;
    let mods = ctx.rpath.join("subc-modules");
    let w_root = ino.add(&ctx.rpath, libc::IN_OPEN)?;
    let w_mods = ino.add(&mods, libc::IN_OPEN)?;
    let w_pop = ino.add(&mods.join(populated), libc::IN_OPEN)?;
    let w_empty = ino.add(&mods.join(empty), libc::IN_OPEN)?;
    run_proc(&mut ck(ctx, &["--json", "status"]), "status --json")?;
    let mut seen = Seen {
        root: Vec::new(),
        populated: Vec::new(),
        empty: Vec::new(),
    };
    let mut root = BTreeSet::new();
    for (wd, mask, name) in ino.drain()? {
        if mask & libc::IN_ISDIR != 0 || name.is_empty() {
            continue;
        }
        if wd == w_root {
            root.insert(name);
        } else if wd == w_mods {
            root.insert(format!("subc-modules/{name}"));
        } else if wd == w_pop && !seen.populated.contains(&name) {
            seen.populated.push(name);
        } else if wd == w_empty && !seen.empty.contains(&name) {
            seen.empty.push(name);
        }
    }
    seen.root = root.into_iter().collect();
    Ok(seen)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sc {
    Limit,
    LimitProc,
    LibStatus,
    List,
    Status,
    Kill,
}

const SCS: [Sc; 6] = [
    Sc::Limit,
    Sc::LimitProc,
    Sc::LibStatus,
    Sc::List,
    Sc::Status,
    Sc::Kill,
];

impl Sc {
    fn label(self) -> &'static str {
        match self {
            Sc::Limit => "limit loop (in process)",
            Sc::LimitProc => "limit loop (process)",
            Sc::LibStatus => "Root::status + to_vec",
            Sc::List => "ck-cgroup --json list",
            Sc::Status => "ck-cgroup --json status",
            Sc::Kill => "ck-cgroup kill (1 module)",
        }
    }
}

const VICTIM: &str = "m00000";

fn spawn_victim(ctx: &Ctx) -> Res<()> {
    let mut cmd = ModuleCommand::new("/bin/sleep");
    cmd.arg("600")
        .stdin(dev_null()?)
        .stdout(dev_null()?)
        .stderr(dev_null()?);
    let child = ctx.root.spawn(&id(VICTIM)?, &cmd)?;
    drop(child);
    let deadline = Instant::now() + TIMEOUT;
    while !ctx
        .rpath
        .join("subc-modules")
        .join(VICTIM)
        .join("cgroup.events")
        .exists()
        || !fs::read_to_string(
            ctx.rpath
                .join("subc-modules")
                .join(VICTIM)
                .join("cgroup.events"),
        )?
        .contains("populated 1")
    {
        if Instant::now() > deadline {
            return Err("the victim's sleep did not start".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn scale_once(ctx: &Ctx, k: Sc, seen: &Seen, n: usize) -> Res<f64> {
    let ms = match k {
        Sc::Limit => {
            let t0 = Instant::now();
            let o = limit(&ctx.rpath, seen)?;
            let ms = ms_since(t0);
            if o.modules != n {
                return Err(format!("the limit loop saw {o:?}, want {n} modules").into());
            }
            ms
        }
        Sc::LimitProc => {
            let me = std::env::current_exe()?;
            let p = run_proc(
                Command::new(me)
                    .arg("limit-loop")
                    .arg(&ctx.rpath)
                    .arg(seen.root.join(","))
                    .arg(seen.empty.join(","))
                    .arg(seen.populated.join(","))
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
                "limit-loop",
            )?;
            p.ms
        }
        Sc::LibStatus => {
            let t0 = Instant::now();
            let st = ctx.root.status(&[])?;
            let v = serde_json::to_vec(&st)?;
            let ms = ms_since(t0);
            if st.len() != n || v.is_empty() {
                return Err(format!("Root::status gave {} modules, want {n}", st.len()).into());
            }
            ms
        }
        Sc::List | Sc::Status => {
            let what = if k == Sc::List { "list" } else { "status" };
            let p = run_proc(
                ck(ctx, &["--json", what])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
                what,
            )?;
            if p.out.len() < n * 10 {
                return Err(
                    format!("{what} --json wrote {} bytes for {n} modules", p.out.len()).into(),
                );
            }
            p.ms
        }
        Sc::Kill => {
            let p = run_proc(ck(ctx, &["kill", VICTIM]).stderr(Stdio::piped()), "kill")?;
            // Untimed: the victim back, with its sleep.
            let _ = ctx.root.create(&id(VICTIM)?)?;
            spawn_victim(ctx)?;
            reap_all();
            p.ms
        }
    };
    Ok(ms)
}

struct SizeRow {
    n: usize,
    reps: usize,
    create_ms: f64,
    samples: Vec<Vec<f64>>,
    /// Peak RSS (KiB) of the process rows; `None` where it could not be read.
    rss: [Option<u64>; 6],
}

pub fn section_scale(ctx: &mut Ctx) -> Res<()> {
    let sizes = ctx.cfg.sizes.clone();
    let mut made = 0usize;
    let mut seen: Option<Seen> = None;
    let mut rows: Vec<SizeRow> = Vec::new();
    let mut watch: Option<String> = None;
    for &n in &sizes {
        let t0 = Instant::now();
        for i in made..n {
            let _ = ctx.root.create(&id(&format!("m{i:05}"))?)?;
        }
        let create_ms = ms_since(t0);
        let added = n.saturating_sub(made);
        if made == 0 {
            spawn_victim(ctx)?;
        }
        made = made.max(n);
        if seen.is_none() {
            let s = see_status_files(ctx, VICTIM, "m00001")?;
            println!();
            println!("section 3: the files one `status --json` opened (inotify IN_OPEN):");
            println!("  root:              {}", s.root.join(" "));
            println!("  populated module:  {}", s.populated.join(" "));
            println!("  empty module:      {}", s.empty.join(" "));
            if !s.populated.iter().any(|f| f == "memory.current") {
                println!(
                    "  (no memory.current: status also reads /proc/<pid>/status, which the loop does not)"
                );
            }
            seen = Some(s);
        }
        let seen = seen.as_ref().ok_or("no file list")?;
        let big = n >= ctx.cfg.big;
        let reps = if big { ctx.cfg.big_reps } else { ctx.cfg.reps };
        let mut samples: Vec<Vec<f64>> = SCS.iter().map(|_| Vec::new()).collect();
        let mut rss = [None; 6];
        if ctx.cfg.on(3) {
            for rep in 0..reps + usize::from(!big) {
                for j in 0..SCS.len() {
                    let i = (j + rep) % SCS.len();
                    let ms = scale_once(ctx, SCS[i], seen, n)?;
                    // Round 0 is the warm-up (none at the big sizes).
                    if big || rep > 0 {
                        samples[i].push(ms);
                    }
                }
            }
        }
        if ctx.cfg.on(3) {
            // Untimed: the peak RSS of each process row, through peakrss.
            let me = std::env::current_exe()?;
            let (r, e, p) = (
                seen.root.join(","),
                seen.empty.join(","),
                seen.populated.join(","),
            );
            let rp = ctx.rpath.to_string_lossy().into_owned();
            let i = |k: Sc| SCS.iter().position(|x| *x == k).unwrap_or(0);
            rss[i(Sc::LimitProc)] = peak_rss(ctx, Some(&me), &["limit-loop", &rp, &r, &e, &p])?;
            rss[i(Sc::List)] = peak_rss(ctx, None, &["--json", "list"])?;
            rss[i(Sc::Status)] = peak_rss(ctx, None, &["--json", "status"])?;
        }
        println!(
            "size {n}: {added} modules made in {:.1} s ({:.2} ms each), measured {reps} x{}",
            create_ms / 1000.0,
            create_ms / added.max(1) as f64,
            if big {
                " (big size: fewer repetitions, no warm-up)"
            } else {
                " after 1 warm-up"
            }
        );
        rows.push(SizeRow {
            n,
            reps,
            create_ms,
            samples,
            rss,
        });
        if ctx.cfg.on(4) && n == ctx.cfg.watch_at {
            watch = Some(section_watch(ctx, n)?);
        }
    }
    if ctx.cfg.on(3) {
        print_scale(&rows);
    }
    if let Some(w) = watch {
        print!("{w}");
    } else if ctx.cfg.on(4) {
        println!();
        println!(
            "section 4: not run: VM_BENCH_WATCH_AT={} is not one of the sizes",
            ctx.cfg.watch_at
        );
    }
    for r in &rows {
        for (k, v) in SCS.iter().zip(r.rss) {
            if v.is_some() && matches!(k, Sc::List | Sc::Status | Sc::LimitProc) {
                ctx.rss.push((
                    format!("{} over {}", k.label(), r.n),
                    v,
                    "peakrss (wait4 ru_maxrss)",
                ));
            }
        }
    }
    // Untimed: every module removed (the sandbox's teardown would, but slower).
    let t0 = Instant::now();
    let _ = ctx.root.kill(VICTIM, TIMEOUT)?;
    for i in 1..made {
        let _ = ctx.root.remove(&format!("m{i:05}"))?;
    }
    println!(
        "({made} modules removed in {:.1} s)",
        t0.elapsed().as_secs_f64()
    );
    reap_all();
    Ok(())
}

/// `status --json` within this factor of the limit loop.
const GOAL_STATUS_X_LIMIT: f64 = 1.5;
/// "Cost per module flat": the marginal cost per module of the largest step within this factor
/// of the first step's.
const GOAL_FLAT: f64 = 1.5;

fn print_scale(rows: &[SizeRow]) {
    println!();
    println!(
        "section 3: scale, every controller enabled in subc-modules/, one module ({VICTIM}) with a sleep"
    );
    println!(
        "{:>6} {:<28} {:>10} {:>9} {:>9} {:>10} {:>8} {:>9}",
        "size", "row", "median ms", "min ms", "max ms", "us/module", "x limit", "RSS KiB"
    );
    let med = |r: &SizeRow, k: Sc| {
        let i = SCS.iter().position(|x| *x == k).unwrap_or(0);
        if r.samples[i].is_empty() {
            f64::NAN
        } else {
            median(&r.samples[i])
        }
    };
    for r in rows {
        let lim = med(r, Sc::LimitProc);
        for (i, k) in SCS.iter().enumerate() {
            let v = &r.samples[i];
            if v.is_empty() {
                continue;
            }
            let m = median(v);
            println!(
                "{:>6} {:<28} {:>10.2} {:>9.2} {:>9.2} {:>10.1} {:>8.2} {:>9}",
                r.n,
                k.label(),
                m,
                min(v),
                max(v),
                m * 1000.0 / r.n as f64,
                m / lim,
                r.rss[i].map_or_else(|| "-".into(), |k| k.to_string())
            );
        }
        println!(
            "{:>6} {:<28} {:>10.2} {:>9} {:>9} {:>10.1}",
            r.n,
            "(made: Root::create each)",
            r.create_ms,
            "",
            "",
            r.create_ms * 1000.0 / r.n as f64
        );
    }
    println!(
        "(x limit: against the limit loop run as a process, as status is; repetitions per size: {})",
        rows.iter()
            .map(|r| format!("{} x{}", r.n, r.reps))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Marginal cost per module between consecutive sizes (the process start cancels out).
    if rows.len() >= 2 {
        for k in [Sc::LimitProc, Sc::List, Sc::Status] {
            let steps: Vec<String> = rows
                .windows(2)
                .map(|w| {
                    let us = (med(&w[1], k) - med(&w[0], k)) * 1000.0 / (w[1].n - w[0].n) as f64;
                    format!("{}->{}: {us:.1} us", w[0].n, w[1].n)
                })
                .collect();
            println!(
                "marginal cost per module, {:<24} {}",
                k.label(),
                steps.join(", ")
            );
        }
    }
    println!();
    for r in rows {
        let x = med(r, Sc::Status) / med(r, Sc::LimitProc);
        println!(
            "goal, size {}: status --json within {GOAL_STATUS_X_LIMIT} x the limit loop: ratio {x:.2} -> {}",
            r.n,
            verdict(
                x <= GOAL_STATUS_X_LIMIT,
                &format!(
                    "status {:.1} ms, the loop {:.1} ms, Root::status + to_vec in process {:.1} ms vs the loop in process {:.1} ms",
                    med(r, Sc::Status),
                    med(r, Sc::LimitProc),
                    med(r, Sc::LibStatus),
                    med(r, Sc::Limit)
                )
            )
        );
    }
    if rows.len() >= 3 || rows.len() == 2 {
        let (a, b) = (&rows[rows.len() - 2], &rows[rows.len() - 1]);
        let f = &rows[0];
        let first_step = |k: Sc| {
            if rows.len() >= 3 {
                (med(a, k) - med(f, k)) / (a.n - f.n) as f64
            } else {
                med(a, k) / a.n as f64
            }
        };
        for k in [Sc::List, Sc::Status, Sc::Kill] {
            let last = (med(b, k) - med(a, k)) / (b.n - a.n) as f64;
            let first = first_step(k);
            let (x, what) = if k == Sc::Kill {
                // kill acts on one module: its cost should not grow with the others.
                (
                    med(b, k) / med(f, k),
                    format!("kill at {} / at {}", b.n, f.n),
                )
            } else {
                (
                    last / first,
                    format!("marginal per module {}->{} / the first step", a.n, b.n),
                )
            };
            println!(
                "goal: {} cost per module flat (within {GOAL_FLAT} x): {what}: ratio {x:.2} -> {}",
                k.label(),
                verdict(
                    x <= GOAL_FLAT,
                    "the cost per module grows with the number of modules"
                )
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Section 4: watch

/// An idle `watch`: "near zero" CPU, read as at most this percentage of one CPU.
const GOAL_WATCH_IDLE_PCT: f64 = 0.1;

/// CPU time (utime + stime) of `pid`, in seconds.
fn cpu_secs(pid: u32) -> Res<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = stat.rsplit_once(')').ok_or("bad /proc/pid/stat")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>()? + f[12].parse::<u64>()?;
    // SAFETY: plain libc call.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Ok(ticks as f64 / hz)
}

/// `a - b` in ms, negative when `a` came first (watch's line read before this process's own
/// inotify wake: both wake on the same kernel notification).
fn signed_ms(a: Instant, b: Instant) -> f64 {
    match a.checked_duration_since(b) {
        Some(d) => d.as_secs_f64() * 1000.0,
        None => -(b.duration_since(a).as_secs_f64() * 1000.0),
    }
}

/// Wait for a line about `module` with `event`; the instant the reader thread read it.
fn wait_line(rx: &mpsc::Receiver<(Instant, String)>, module: &str, event: &str) -> Res<Instant> {
    wait_line_for(rx, module, event, TIMEOUT)
}

fn wait_line_for(
    rx: &mpsc::Receiver<(Instant, String)>,
    module: &str,
    event: &str,
    timeout: Duration,
) -> Res<Instant> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (t, line) = rx.recv_timeout(left).map_err(|_| {
            format!("watch wrote no `{event}` line for {module} within {timeout:?}")
        })?;
        let v: serde_json::Value = serde_json::from_str(&line)?;
        if v["module"] == module && v["event"] == event {
            return Ok(t);
        }
    }
}

pub fn section_watch(ctx: &mut Ctx, n: usize) -> Res<String> {
    use std::fmt::Write as _;
    let mut child = ck(ctx, &["watch"])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let pid = child.id();
    let out = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    let res = (|| -> Res<String> {
        // Ready once it reports a module made after it started (one made before its first
        // scan ends is part of the scan and reported by no line: try again with another).
        let t0 = Instant::now();
        let mut k = 0;
        loop {
            let name = format!("w-ready{k}");
            let _ = ctx.root.create(&id(&name)?)?;
            let seen = wait_line_for(&rx, &name, "appeared", Duration::from_secs(3)).is_ok();
            let _ = ctx.root.remove(&name)?;
            if seen {
                wait_line(&rx, &name, "removed")?;
                break;
            }
            if t0.elapsed() > 4 * TIMEOUT {
                return Err(format!("watch reported no new module in {:?}", 4 * TIMEOUT).into());
            }
            k += 1;
        }
        let ready_ms = ms_since(t0);
        std::thread::sleep(Duration::from_millis(500));
        while rx.try_recv().is_ok() {}
        let cpu0 = cpu_secs(pid)?;
        let rss = status_kib(pid, "VmHWM")?;
        std::thread::sleep(Duration::from_secs(ctx.cfg.watch_secs));
        let cpu1 = cpu_secs(pid)?;
        let mut idle_lines = 0;
        while rx.try_recv().is_ok() {
            idle_lines += 1;
        }

        // Latency: this process's own inotify on the module's cgroup.events sees the change;
        // the reader thread stamps watch's line.
        let target = "m00001";
        let events = ctx
            .rpath
            .join("subc-modules")
            .join(target)
            .join("cgroup.events");
        let ino = Inotify::new()?;
        ino.add(&events, libc::IN_MODIFY)?;
        let (mut up, mut down) = (Vec::new(), Vec::new());
        let (mut up_act, mut down_act) = (Vec::new(), Vec::new());
        for _ in 0..ctx.cfg.watch_events {
            let mut cmd = ModuleCommand::new("/bin/sleep");
            cmd.arg("600")
                .stdin(dev_null()?)
                .stdout(dev_null()?)
                .stderr(dev_null()?);
            let _ = ino.drain()?;
            let t_act = Instant::now();
            let mut c = ctx.root.spawn(&id(target)?, &cmd)?;
            let changed = ino.wait(TIMEOUT)?.ok_or("no cgroup.events change seen")?;
            let line = wait_line(&rx, target, "populated")?;
            up.push(signed_ms(line, changed));
            up_act.push(signed_ms(line, t_act));
            let _ = ino.drain()?;
            let t_act = Instant::now();
            c.signal(rustix::process::Signal::KILL)?;
            let changed = ino.wait(TIMEOUT)?.ok_or("no cgroup.events change seen")?;
            let line = wait_line(&rx, target, "emptied")?;
            down.push(signed_ms(line, changed));
            down_act.push(signed_ms(line, t_act));
            let _ = c.wait();
        }
        let cpu2 = cpu_secs(pid)?;
        let idle = cpu1 - cpu0;
        let pct_cpu = idle / ctx.cfg.watch_secs.max(1) as f64 * 100.0;
        let mut s = String::new();
        writeln!(s)?;
        writeln!(s, "section 4: watch over {n} modules")?;
        writeln!(
            s,
            "ready (a module made after its start reported; 3 s per miss) within {ready_ms:.1} ms; CPU by then {cpu0:.2} s; VmHWM {rss} KiB"
        )?;
        writeln!(
            s,
            "idle {} s: CPU {idle:.3} s ({pct_cpu:.3} % of one CPU; clock ticks of 1/{} s), {idle_lines} lines",
            ctx.cfg.watch_secs,
            // SAFETY: plain libc call.
            unsafe { libc::sysconf(libc::_SC_CLK_TCK) }
        )?;
        writeln!(
            s,
            "{:<42} {:>9} {:>8} {:>8} {:>8}",
            "watch latency to the JSON line", "median", "min", "p90", "max"
        )?;
        for (what, v) in [
            ("populated, from the spawn into it", &up_act),
            ("emptied, from the SIGKILL of its process", &down_act),
            ("populated, from the file's change", &up),
            ("emptied, from the file's change", &down),
        ] {
            writeln!(
                s,
                "{:<42} {:>9.2} {:>8.2} {:>8.2} {:>8.2}",
                what,
                median(v),
                min(v),
                pct(v, 90.0),
                max(v)
            )?;
        }
        writeln!(
            s,
            "(ms, {} of each, from this process's own inotify wake on the file to the reader thread's read of the line; negative: the line came first; CPU for the {} events: {:.2} s)",
            ctx.cfg.watch_events,
            2 * ctx.cfg.watch_events,
            cpu2 - cpu1
        )?;
        writeln!(
            s,
            "goal: idle watch CPU near zero (at most {GOAL_WATCH_IDLE_PCT} % of one CPU): {pct_cpu:.3} % -> {}",
            verdict(
                pct_cpu <= GOAL_WATCH_IDLE_PCT,
                &format!("{idle:.3} s of CPU in {} s", ctx.cfg.watch_secs)
            )
        )?;
        writeln!(
            s,
            "latency: no goal given; median {:.2} ms (populated), {:.2} ms (emptied)",
            median(&up),
            median(&down)
        )?;
        ctx.rss.push((
            format!("watch over {n} modules (resident)"),
            Some(rss),
            "VmHWM",
        ));
        Ok(s)
    })();
    let _ = child.kill();
    let _ = child.wait();
    res
}

// ---------------------------------------------------------------------------------------------
// Section 5: memory

pub fn section_memory(ctx: &mut Ctx) -> Res<()> {
    let mut rows: Vec<(String, Option<u64>, &'static str)> = Vec::new();
    const HOW: &str = "peakrss (wait4 ru_maxrss)";
    match peak_rss(ctx, Some(Path::new("/bin/true")), &[])? {
        None => println!("\n(section 5: no peakrss tool: only the VmHWM figures)"),
        Some(kib) => {
            rows.push(("/bin/true (reference)".into(), Some(kib), HOW));
            let kib = peak_rss(ctx, None, &["--version"])?;
            rows.push(("ck-cgroup --version".into(), kib, HOW));
            let kib = peak_rss(ctx, None, &["exec", "r-exec", "--", "/bin/true"])?;
            let _ = ctx.root.remove("r-exec")?;
            rows.push((
                "ck-cgroup exec -- /bin/true".into(),
                kib,
                "peakrss (ru_maxrss, kept across execve)",
            ));
        }
    }
    // run: resident for the module's life.
    let mut child = ck(ctx, &["run", "r-run", "--", "/bin/sleep", "600"]).spawn()?;
    let pid = child.id();
    let events = ctx.rpath.join("subc-modules/r-run/cgroup.procs");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let procs = fs::read_to_string(&events).unwrap_or_default();
        let sleeping = procs.lines().any(|p| {
            fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
        });
        if sleeping {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err("run's sleep did not start".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let hwm = status_kib(pid, "VmHWM")?;
    let now = status_kib(pid, "VmRSS")?;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).ok_or("pid 0")?,
        rustix::process::Signal::TERM,
    )?;
    let _ = wait4(pid as i32)?;
    drop(child);
    rows.push((
        "ck-cgroup run (resident, module alive)".into(),
        Some(hwm),
        "VmHWM of the helper",
    ));
    rows.push((
        "ck-cgroup run (resident, now)".into(),
        Some(now),
        "VmRSS of the helper",
    ));
    rows.append(&mut ctx.rss);
    println!();
    println!("section 5: peak RSS");
    println!("{:<52} {:>10}   read from", "process", "KiB");
    for (what, kib, how) in &rows {
        let kib = kib.map_or_else(|| "-".to_string(), |k| k.to_string());
        println!("{what:<52} {kib:>10}   {how}");
    }
    println!("goal: none given; the figures are recorded in docs/performance.md");
    reap_all();
    Ok(())
}
