//! Section 2: module churn. Whole lives (create, a 3-process tree, stop, remove) per second,
//! one module at a time and `AT_ONCE` modules at once, by the helper, by the library and by
//! `systemd-run --scope` + `systemctl stop`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use ck_cgroup::spawn::ModuleCommand;

use crate::common::{Res, dev_null, ms_since, reap_all};
use crate::config::{Ctx, TIMEOUT};
use crate::helpers::{ck, id, nanos, run_proc, verdict};

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
