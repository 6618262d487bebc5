//! One metric per limit `status` reads, named after its file with its unit.

use ck_cgroup::limits::{LIMITS, Unit};

use super::series::{Series, each};
use super::{Metric, limit};

/// The metric of a limit of `unit`: its name's suffix (`_bytes`), or `None` for a limit that is
/// not one number (a CPU list, per-device limits, a quota and its period), which has no metric.
/// Counts, weights and booleans are dimensionless: no suffix (`_count` is a histogram's).
fn unit_suffix(unit: Unit) -> Option<&'static str> {
    match unit {
        Unit::Bytes => Some("_bytes"),
        Unit::Count | Unit::Weight | Unit::Bool => Some(""),
        _ => None,
    }
}

/// The name of the metric of the limit in `file` of `unit`: `ck_cgroup_memory_max_bytes`.
pub fn limit_metric_name(file: &str, unit: Unit) -> Option<String> {
    unit_suffix(unit).map(|u| format!("ck_cgroup_{}{u}", file.replace('.', "_")))
}

/// One metric per limit `status` reads (each row of the limits table with `status`), named after
/// its file with its unit; `max` is `+Inf`; a file that could not be read is left out.
pub(super) fn limit_metrics(series: &[Series<'_>]) -> Vec<Metric> {
    let mut out = Vec::new();
    for spec in LIMITS.iter().filter(|s| s.status) {
        let Some(name) = limit_metric_name(spec.file, spec.unit) else {
            continue;
        };
        let max = match spec.unit {
            Unit::Bytes | Unit::Count => "; max is +Inf",
            _ => "",
        };
        let help = format!(
            "{} of the module ({}{max}; left out where it could not be read).",
            spec.file,
            spec.unit.name()
        );
        let samples = each(series, |m| {
            m.limits
                .figures()
                .into_iter()
                .find(|f| f.source == spec.file)
                .and_then(|f| f.value)
                .map(limit)
        });
        out.push(Metric(name, "gauge", help, samples));
    }
    out
}
