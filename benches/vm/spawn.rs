//! Section 1: spawn paths. N starts each of `/bin/true`, in rotating order, spawn to reaped
//! exit, on every path (plain `Command`, `Root::spawn`, `exec` into an existing and into a new
//! module, `run`, `systemd-run --scope`, `exec --backend systemd`); once with cgroup2 as systemd
//! mounts it and once remounted with `favordynmods`.

use std::fs;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::common::{Res, median, ms_since};
use crate::config::Ctx;
use crate::helpers::{ck, id, max, nanos, pct, run_proc, true_cmd, verdict};
use crate::mount::{remount, super_opts};

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
