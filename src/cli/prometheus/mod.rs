//! The Prometheus text exposition format of `status`, and the file `status --output` replaces
//! whole (for the node exporter's textfile collector, which may read it at any moment).
//!
//! One series per module, keyed by stable labels: `module` (the module id, decoded for the
//! daemon's layout: never its directory name, which carries the launch number), `layout`, and
//! `slot` (`swap` for the daemon's alternate slot, else `main`). Where several directories share
//! those labels (a launch still being torn down beside the next one) the series is the newest
//! launch that holds a process (an empty directory never hides a populated one: a module may
//! make look-alikes), else the newest, and `ck_cgroup_module_directories` counts them; its
//! counters are the newest launch that ran (so they never go back to an older launch's). The
//! modules' parent directories' counters (hierarchical: they outlive the modules) are series
//! labelled `layout` only. At most
//! [`MAX_SERIES`] modules are written, ours (`ck`) first, then those that hold a process;
//! `ck_cgroup_modules_left_out` counts the rest (module-chosen ids must not grow the series
//! without bound). One metric per limit, named after its
//! file with its unit, driven by the limits table.
//!
//! The series and their labels are `series.rs`; the metrics of the modules' figures and
//! counters and of their parents' counters `metrics.rs`; the limits' `limits.rs`.

mod limits;
mod metrics;
mod series;

use std::fmt::{self, Write as _};

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::{ModuleStatus, ParentStatus};

use limits::limit_metrics;
use metrics::{cold, counted, figures, gpu, parent_metrics};
pub use series::MAX_SERIES;
use series::series;

/// A label value in the exposition format: text as people see it (a name's shown form, or
/// `id::shown` of other text: one-to-one, no control character), then `\`, `"` and newline
/// escaped as the format wants, so that two names are never one label value.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample's value: an integer as it was read, a float, or `+Inf` (a limit of `max`).
#[derive(Clone, Copy)]
enum Num {
    Int(u64),
    Float(f64),
    Inf,
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Num::Int(v) => write!(f, "{v}"),
            Num::Float(v) if v.is_nan() => f.write_str("NaN"),
            Num::Float(v) if v == f64::INFINITY => f.write_str("+Inf"),
            Num::Float(v) if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            Num::Float(v) => write!(f, "{v}"),
            Num::Inf => f.write_str("+Inf"),
        }
    }
}

fn limit(l: Limit) -> Num {
    match l {
        Limit::Max => Num::Inf,
        Limit::Value(v) => Num::Int(v),
    }
}

/// One metric family: name, type, help, and its samples (labels, value); none: left out.
struct Metric(String, &'static str, String, Vec<(String, Num)>);

impl Metric {
    fn new(name: &str, kind: &'static str, help: &str, samples: Vec<(String, Num)>) -> Metric {
        Metric(name.into(), kind, help.into(), samples)
    }
}

/// The Prometheus text exposition format of the modules' figures and their parents' counters.
/// Unknown figures are left out, never written as 0.
pub fn prometheus(rows: &[ModuleStatus], parents: &[ParentStatus]) -> String {
    let (series, left_out) = series(rows);
    let mut s = String::new();
    let metrics = figures(&series)
        .into_iter()
        .chain(gpu(&series))
        .chain(cold(&series))
        .chain(counted(&series))
        .chain(parent_metrics(parents))
        .chain(limit_metrics(&series))
        .chain([Metric::new(
            "ck_cgroup_modules_left_out",
            "gauge",
            &format!(
                "Modules not written as series: past the first {MAX_SERIES} (ours first, then those that hold a process)."
            ),
            vec![(String::new(), Num::Int(left_out as u64))],
        )]);
    for Metric(name, kind, help, values) in metrics {
        if values.is_empty() {
            continue;
        }
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} {kind}");
        for (l, v) in values {
            if l.is_empty() {
                let _ = writeln!(s, "{name} {v}");
            } else {
                let _ = writeln!(s, "{name}{{{l}}} {v}");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests;
