//! Section 3's table: per size and row the median, min, max, cost per module, ratio to the limit
//! loop and peak RSS; the marginal cost per module between sizes; the goal lines.

use crate::common::{median, min};
use crate::helpers::{max, verdict};

use super::{SCS, Sc, SizeRow, VICTIM};

/// `status --json` within this factor of the limit loop.
const GOAL_STATUS_X_LIMIT: f64 = 1.5;
/// "Cost per module flat": the marginal cost per module of the largest step within this factor
/// of the first step's.
const GOAL_FLAT: f64 = 1.5;

pub fn print_scale(rows: &[SizeRow]) {
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
