//! Section 4: watch. The CPU time of an idle `watch` over `VM_BENCH_WATCH_AT` modules and the
//! latency from a `cgroup.events` change (seen by this process's own inotify) to `watch`'s
//! JSON line.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ck_cgroup::spawn::ModuleCommand;

use crate::common::{Res, dev_null, median, min, ms_since};
use crate::config::{Ctx, TIMEOUT};
use crate::helpers::{ck, id, max, pct, status_kib, verdict};
use crate::inotify::Inotify;

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
