//! One process run, timed from the spawn to its reaped exit, with its peak RSS (`wait4`'s
//! `ru_maxrss`, which keeps the peak across `execve`: the helper's own before it became CMD);
//! and a pair of rows measured interleaved.

use std::io::Read;
use std::process::Command;
use std::time::Instant;

use crate::common::{Res, median, ms_since, wait4_usage};

/// A run: milliseconds from the spawn to the reaped exit, peak RSS in KiB, page faults and CPU
/// milliseconds (0 where not measured: a spawn in this process).
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub ms: f64,
    pub kib: u64,
    pub faults: u64,
    pub cpu_ms: f64,
}

/// Run `cmd` to its end (its stdout read to the end when piped); fail unless it exits 0.
pub fn run(cmd: &mut Command, what: &str) -> Res<Run> {
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("{what}: spawn: {e}"))?;
    if let Some(mut o) = child.stdout.take() {
        let mut out = Vec::new();
        o.read_to_end(&mut out)?;
    }
    let (status, u) = wait4_usage(child.id() as i32)?;
    let ms = ms_since(t0);
    if status != 0 {
        return Err(format!("{what}: wait status {status:#x}").into());
    }
    Ok(Run {
        ms,
        kib: u.kib,
        faults: u.faults,
        cpu_ms: u.cpu_ms,
    })
}

/// The samples of a pair of rows (A and B), taken interleaved in one run.
#[derive(Debug, Default)]
pub struct Pair {
    pub a: Vec<Run>,
    pub b: Vec<Run>,
}

impl Pair {
    /// `pairs` pairs after one untimed warm-up pair, A before B in even pairs and B before A in
    /// odd ones, so that neither always runs first.
    pub fn measure(
        pairs: usize,
        mut a: impl FnMut() -> Res<Run>,
        mut b: impl FnMut() -> Res<Run>,
    ) -> Res<Pair> {
        let mut p = Pair::default();
        for i in 0..=pairs {
            let (ra, rb) = if i % 2 == 0 {
                let ra = a()?;
                (ra, b()?)
            } else {
                let rb = b()?;
                (a()?, rb)
            };
            if i > 0 {
                p.a.push(ra);
                p.b.push(rb);
            }
        }
        Ok(p)
    }

    pub fn ms_a(&self) -> f64 {
        median(&self.a.iter().map(|r| r.ms).collect::<Vec<_>>())
    }

    pub fn ms_b(&self) -> f64 {
        median(&self.b.iter().map(|r| r.ms).collect::<Vec<_>>())
    }

    /// The median of the pairs' ratios A / B.
    pub fn ratio(&self) -> f64 {
        let r: Vec<f64> = self
            .a
            .iter()
            .zip(&self.b)
            .map(|(a, b)| a.ms / b.ms)
            .collect();
        median(&r)
    }

    /// The medians of A's and B's page faults.
    pub fn faults(&self) -> (f64, f64) {
        let m = |v: &[Run]| median(&v.iter().map(|r| r.faults as f64).collect::<Vec<_>>());
        (m(&self.a), m(&self.b))
    }

    /// The medians of A's and B's CPU milliseconds.
    pub fn cpu_ms(&self) -> (f64, f64) {
        let m = |v: &[Run]| median(&v.iter().map(|r| r.cpu_ms).collect::<Vec<_>>());
        (m(&self.a), m(&self.b))
    }

    /// The largest peak RSS of A's runs, KiB.
    pub fn max_kib_a(&self) -> u64 {
        self.a.iter().map(|r| r.kib).max().unwrap_or(0)
    }

    pub fn max_kib_b(&self) -> u64 {
        self.b.iter().map(|r| r.kib).max().unwrap_or(0)
    }
}
