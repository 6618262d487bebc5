//! The series: one per module, keyed by its labels (`module`, `layout`, `slot`), the newest
//! launch that holds a process for its gauges and the newest that ran for its counters, at most
//! [`MAX_SERIES`] of them (see the module above).

use crate::cli::mutation::{self, Control};
use ck_cgroup::Layout;
use ck_cgroup::id::decode_daemon_name;
use ck_cgroup::telemetry::ModuleStatus;

use super::{Num, escape};

/// A module as the series see it: the directory of its labels its gauges come from (the newest
/// launch that holds a process), the one its counters come from (the newest launch that ran),
/// and how many there are.
pub(super) struct Series<'a> {
    pub(super) m: &'a ModuleStatus,
    pub(super) counters: &'a ModuleStatus,
    pub(super) labels: String,
    pub(super) directories: usize,
}

/// What tells one module's series from another's: `(module, layout, slot)`; and the launch
/// number (the daemon's layout), which picks the newest directory of those.
fn identity(m: &ModuleStatus) -> ((String, &'static str, &'static str), Option<String>) {
    let layout = m.layout.name();
    if m.layout == Layout::Daemon
        && let Some(d) = decode_daemon_name(&m.name)
    {
        let slot = if d.swap { "swap" } else { "main" };
        return ((d.module.to_string(), layout, slot), Some(d.launch));
    }
    // Not the daemon's encoding (or not its layout): the id, else the name as found, which
    // carries no launch number that we know of.
    let module = m.module.as_ref().unwrap_or(&m.name).to_string();
    ((module, layout, "main"), None)
}

/// A launch number for comparison: its digits without leading zeros, shorter is older.
fn launch_order(launch: &Option<String>) -> (usize, String) {
    let digits = launch.as_deref().unwrap_or("").trim_start_matches('0');
    (digits.len(), digits.to_string())
}

/// The most modules written as series; the rest are counted in `ck_cgroup_modules_left_out`.
pub const MAX_SERIES: usize = 2000;

/// Whether a directory holds a process (unknown counts as not).
fn holds(m: &ModuleStatus) -> bool {
    m.populated.value == Some(true)
}

/// Whether a directory ever ran something: it holds a process, or its CPU counter moved (an
/// empty look-alike a module made never did).
fn ran(m: &ModuleStatus) -> bool {
    holds(m) || m.cpu_usage_usec.value.is_some_and(|u| u > 0)
}

/// The series of `rows` (at most [`MAX_SERIES`]) and how many modules were left out.
pub(super) fn series(rows: &[ModuleStatus]) -> (Vec<Series<'_>>, usize) {
    type Key = (String, &'static str, &'static str);
    type Launches = (Option<String>, Option<String>);
    let mut out: Vec<(Key, Launches, Series<'_>)> = Vec::new();
    let mut index: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
    for m in rows {
        let (key, launch) = identity(m);
        if let Some(&i) = index.get(&key) {
            let (_, (newest, counted), s) = &mut out[i];
            s.directories += 1;
            // Mutation: the newest launch is the series, empty or not.
            let by_holding = !mutation::active(Control::SeriesByLaunchOnly);
            let rank =
                |m: &ModuleStatus, l: &Option<String>| (by_holding && holds(m), launch_order(l));
            // The counters: the newest launch that ran, held or not, so that a counter moves
            // forward to a new launch and never back to an older launch's (when the newest
            // empties beside an older one still being torn down).
            let by_run = |m: &ModuleStatus, l: &Option<String>| (ran(m), launch_order(l));
            if by_run(m, &launch) > by_run(s.counters, counted) {
                *counted = launch.clone();
                s.counters = m;
            }
            if rank(m, &launch) > rank(s.m, newest) {
                *newest = launch;
                s.m = m;
            }
            continue;
        }
        index.insert(key.clone(), out.len());
        let labels = format!(
            "module=\"{}\",layout=\"{}\",slot=\"{}\"",
            escape(&key.0),
            key.1,
            key.2
        );
        out.push((
            key,
            (launch.clone(), launch),
            Series {
                m,
                counters: m,
                labels,
                directories: 1,
            },
        ));
    }
    // Mutation: the counters come from the gauges' directory (an older launch's when the
    // newest empties beside it).
    if mutation::active(Control::CountersFollowPopulated) {
        for (_, _, s) in &mut out {
            s.counters = s.m;
        }
    }
    // Ours first, then those that hold a process, each in the order found (by name).
    out.sort_by_key(|(k, _, s)| (k.1 != Layout::Ck.name(), !holds(s.m)));
    let left_out = out.len().saturating_sub(MAX_SERIES);
    out.truncate(MAX_SERIES);
    (out.into_iter().map(|(_, _, s)| s).collect(), left_out)
}

/// `f` of every series that has it, labelled.
pub(super) fn each(
    series: &[Series<'_>],
    f: impl Fn(&ModuleStatus) -> Option<Num>,
) -> Vec<(String, Num)> {
    series
        .iter()
        .filter_map(|s| f(s.m).map(|v| (s.labels.clone(), v)))
        .collect()
}

/// `f` of the counters' directory of every series that has it, labelled.
pub(super) fn each_counter(
    series: &[Series<'_>],
    f: impl Fn(&ModuleStatus) -> Option<Num>,
) -> Vec<(String, Num)> {
    series
        .iter()
        .filter_map(|s| f(s.counters).map(|v| (s.labels.clone(), v)))
        .collect()
}
