//! What the sections share: figures (max, percentiles), the goal verdict, the helper's command
//! line, a process's run to its reaped exit (wait4, peak RSS through `peakrss`), and `/proc`
//! reads.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ck_cgroup::ModuleId;
use ck_cgroup::spawn::ModuleCommand;

pub use crate::common::wait4;
use crate::common::{Res, dev_null, ms_since};
use crate::config::Ctx;

pub fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// The value below which `p` percent of the samples lie (nearest rank).
pub fn pct(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let i = ((p / 100.0) * (s.len() as f64 - 1.0)).round() as usize;
    s[i.min(s.len() - 1)]
}

pub fn verdict(met: bool, why: &str) -> String {
    if met {
        "met".to_string()
    } else {
        format!("not met ({why})")
    }
}

pub fn nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `ck-cgroup --root <root> ARGS`, stdio to /dev/null.
pub fn ck(ctx: &Ctx, args: &[&str]) -> Command {
    let mut cmd = Command::new(&ctx.bin);
    cmd.arg("--root")
        .arg(&ctx.rpath)
        .args(args)
        .env_remove("CK_CGROUP_ROOT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// A process's run: spawn to reaped exit (stdout read to the end when piped).
pub struct Proc {
    pub ms: f64,
    pub out: Vec<u8>,
}

/// Run `cmd` to its end; fail unless it exits 0.
pub fn run_proc(cmd: &mut Command, what: &str) -> Res<Proc> {
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("{what}: spawn: {e}"))?;
    let mut out = Vec::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_end(&mut out)?;
    }
    let (status, _) = wait4(child.id() as i32)?;
    let ms = ms_since(t0);
    if status != 0 {
        let err = child
            .stderr
            .take()
            .map(|mut e| {
                let mut s = String::new();
                let _ = e.read_to_string(&mut s);
                s
            })
            .unwrap_or_default();
        return Err(format!("{what}: wait status {status:#x} {}", err.trim()).into());
    }
    Ok(Proc { ms, out })
}

/// The peak RSS (KiB) of `ck-cgroup --root <root> ARGS`, or of `prog ARGS`, through the static
/// `peakrss` tool (scripts/vm/tools/peakrss.c, `/lane/bin/peakrss` in the guest;
/// `VM_BENCH_PEAKRSS`); None without the tool.
pub fn peak_rss(ctx: &Ctx, prog: Option<&Path>, args: &[&str]) -> Res<Option<u64>> {
    let tool = std::env::var_os("VM_BENCH_PEAKRSS")
        .map_or_else(|| PathBuf::from("/lane/bin/peakrss"), PathBuf::from);
    if !tool.exists() {
        return Ok(None);
    }
    let mut cmd = Command::new(tool);
    match prog {
        Some(p) => cmd.arg(p),
        None => cmd.arg(&ctx.bin).arg("--root").arg(&ctx.rpath),
    };
    let p = run_proc(
        cmd.args(args)
            .env_remove("CK_CGROUP_ROOT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
        "peakrss",
    )?;
    let out = String::from_utf8_lossy(&p.out);
    let mut w = out.split_whitespace();
    let kib: u64 = w.next().ok_or("peakrss printed nothing")?.parse()?;
    if w.next() != Some("0") {
        return Err(format!("peakrss {args:?}: {}", out.trim()).into());
    }
    Ok(Some(kib))
}

pub fn id(s: &str) -> Res<ModuleId> {
    Ok(ModuleId::new(s)?)
}

pub fn true_cmd() -> Res<ModuleCommand> {
    let mut cmd = ModuleCommand::new("/bin/true");
    cmd.stdin(dev_null()?)
        .stdout(dev_null()?)
        .stderr(dev_null()?);
    Ok(cmd)
}

pub fn status_kib(pid: u32, key: &str) -> Res<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = s
        .lines()
        .find(|l| l.starts_with(key))
        .ok_or_else(|| format!("no {key} in /proc/{pid}/status"))?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or("bad status line")?
        .parse()?)
}
