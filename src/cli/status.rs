//! Renderers of `status`: the table (which `top` shares) and the order of `--sort`; the
//! Prometheus text exposition format is in `prometheus`.

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::{Figure, ModuleStatus, PROC_RSS_SOURCE};

use super::args::SortKey;

/// `1.5G`, `12.0M`, `512K`, `100B`; `-` for unknown.
pub fn size(v: Option<u64>) -> String {
    let Some(v) = v else {
        return "-".into();
    };
    const UNITS: [(&str, u64); 4] = [
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    for (u, n) in UNITS {
        if v >= n {
            return format!("{:.1}{u}", v as f64 / n as f64);
        }
    }
    format!("{v}B")
}

fn limit_size(l: &Figure<Limit>) -> String {
    match l.value {
        Some(Limit::Max) => "max".into(),
        Some(Limit::Value(v)) => size(Some(v)),
        None => "-".into(),
    }
}

fn limit_num(l: &Figure<Limit>) -> String {
    match l.value {
        Some(Limit::Max) => "max".into(),
        Some(Limit::Value(v)) => v.to_string(),
        None => "-".into(),
    }
}

/// The kernel's `oom_kill`, and systemd-oomd's kills folded in where it killed there
/// (`0+oomd:3`: the kernel killed none, systemd-oomd 3 processes), so the table stays narrow.
fn oom_kill_cell(m: &ModuleStatus) -> String {
    let kernel = opt(m.memory_events.value.and_then(|e| e.oom_kill));
    match (m.oomd_ooms.value, m.oomd_kill.value) {
        (Some(n), k) if n > 0 => format!("{kernel}+oomd:{}", opt(k)),
        _ => kernel,
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// A column of the human tables (`status`, `top`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    /// The directory name as found.
    Name,
    /// The module id (decoded for the daemon's layout).
    Module,
    Pop,
    Procs,
    Mem,
    Peak,
    /// `memory.stat` `anon`.
    Anon,
    /// `memory.stat` `file`.
    File,
    Swap,
    High,
    Max,
    OomKill,
    Pids,
    PidsMax,
    /// CPU time since the module was made, seconds.
    CpuS,
    /// `top`'s share of one CPU over the last interval, percent.
    CpuRate,
    PsiMem,
}

impl Col {
    fn header(self) -> &'static str {
        match self {
            Col::Name => "NAME",
            Col::Module => "MODULE",
            Col::Pop => "POP",
            Col::Procs => "PROCS",
            Col::Mem => "MEM",
            Col::Peak => "PEAK",
            Col::Anon => "ANON",
            Col::File => "FILE",
            Col::Swap => "SWAP",
            Col::High => "HIGH",
            Col::Max => "MAX",
            Col::OomKill => "OOM_KILL",
            Col::Pids => "PIDS",
            Col::PidsMax => "PIDS_MAX",
            Col::CpuS => "CPU_S",
            Col::CpuRate => "CPU%",
            Col::PsiMem => "PSI_MEM",
        }
    }

    /// The cell of module `m`; `cpu_rate` is its share of a CPU for [`Col::CpuRate`].
    fn cell(self, m: &ModuleStatus, cpu_rate: Option<f64>) -> String {
        // A figure summed from /proc is marked.
        let mark = |s: String| {
            if m.memory_current.source == PROC_RSS_SOURCE && s != "-" {
                format!("{s}*")
            } else {
                s
            }
        };
        match self {
            Col::Name => m.name.clone(),
            Col::Module => m.module.clone().unwrap_or_else(|| "-".into()),
            Col::Pop => match m.populated.value {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => "-".into(),
            },
            Col::Procs => opt(m.procs.value),
            Col::Mem => mark(size(m.memory_current.value)),
            Col::Peak => size(m.memory_peak.value),
            Col::Anon => size(m.memory_anon.value),
            Col::File => size(m.memory_file.value),
            Col::Swap => mark(size(m.memory_swap_current.value)),
            Col::High => limit_size(&m.limits.memory_high),
            Col::Max => limit_size(&m.limits.memory_max),
            Col::OomKill => oom_kill_cell(m),
            Col::Pids => opt(m.pids_current.value),
            Col::PidsMax => limit_num(&m.limits.pids_max),
            Col::CpuS => m
                .cpu_usage_usec
                .value
                .map_or("-".into(), |u| format!("{:.1}", u as f64 / 1e6)),
            Col::CpuRate => cpu_rate.map_or("-".into(), |r| format!("{r:.1}")),
            Col::PsiMem => m
                .memory_pressure_avg10
                .value
                .map_or("-".into(), |v| format!("{v:.2}")),
        }
    }
}

/// `status`'s columns.
const STATUS_COLUMNS: [Col; 16] = [
    Col::Name,
    Col::Module,
    Col::Pop,
    Col::Procs,
    Col::Mem,
    Col::Peak,
    Col::Anon,
    Col::File,
    Col::Swap,
    Col::High,
    Col::Max,
    Col::OomKill,
    Col::Pids,
    Col::PidsMax,
    Col::CpuS,
    Col::PsiMem,
];

/// The human table, with a note under it for figures that came from a fallback.
pub fn table(rows: &[ModuleStatus]) -> String {
    table_of(rows, STATUS_COLUMNS, |_| None)
}

/// A human table of `rows` in `columns`, and the notes under it: figures summed from /proc,
/// frozen modules, and what `-` means. `cpu_rate` gives [`Col::CpuRate`]'s figure of a row.
pub fn table_of<const N: usize>(
    rows: &[ModuleStatus],
    columns: [Col; N],
    cpu_rate: impl Fn(&ModuleStatus) -> Option<f64>,
) -> String {
    let mut t = vec![columns.map(|c| c.header().to_string())];
    for m in rows {
        let rate = cpu_rate(m);
        t.push(columns.map(|c| c.cell(m, rate)));
    }
    let mut s = super::output::table(&t);
    if rows
        .iter()
        .any(|m| m.memory_current.source == PROC_RSS_SOURCE)
    {
        s += "* summed from VmRSS/VmSwap in /proc/<pid>/status: the memory controller is not enabled for the modules\n";
    }
    let frozen: Vec<&str> = rows
        .iter()
        .filter(|m| m.frozen.value == Some(true))
        .map(|m| m.name.as_str())
        .collect();
    if !frozen.is_empty() {
        s += &format!(
            "frozen (cgroup.events frozen 1, its processes do not run): {}; `kill` stops it, `echo 0 > <module>/cgroup.freeze` thaws it\n",
            frozen.join(", ")
        );
    }
    // CPU% is `-` before its second reading, which is no file that could not be read.
    let unread = t.iter().skip(1).any(|r| {
        r.iter()
            .zip(columns)
            .any(|(c, col)| c == "-" && col != Col::CpuRate)
    });
    if unread {
        s +=
            "- could not be read (the controller is not enabled, or the kernel has no such file)\n";
    }
    s
}

/// The figure `key` orders by in `status` (CPU: the time used since the module was made).
pub fn sort_figure(m: &ModuleStatus, key: SortKey) -> Option<f64> {
    match key {
        SortKey::Mem => m.memory_current.value.map(|v| v as f64),
        SortKey::Peak => m.memory_peak.value.map(|v| v as f64),
        SortKey::Cpu => m.cpu_usage_usec.value.map(|v| v as f64),
        SortKey::Pids => m.pids_current.value.map(|v| v as f64),
        SortKey::Psi => m.memory_pressure_avg10.value,
    }
}

/// `status --sort`: the modules by `key`, the biggest first.
pub fn sort(rows: &mut [ModuleStatus], key: SortKey) {
    sort_by(rows, |m| m, |m| sort_figure(m, key));
}

/// Order `rows` by `figure`, the biggest first. An unknown figure (`None`) comes after every
/// known one, never as 0; ties, and the unknown among themselves, by name (then layout), so the
/// order is the same whatever order the rows came in.
pub fn sort_by<T>(
    rows: &mut [T],
    module: impl Fn(&T) -> &ModuleStatus,
    figure: impl Fn(&T) -> Option<f64>,
) {
    use std::cmp::Ordering;
    rows.sort_by(|a, b| {
        let by_figure = match (figure(a), figure(b)) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        let (a, b) = (module(a), module(b));
        by_figure
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.layout.cmp(&b.layout))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module named `name` whose figures are unknown but those in `known` (field, value).
    fn module(name: &str, known: &[(&str, serde_json::Value)]) -> ModuleStatus {
        let fig = |source: &str| serde_json::json!({"value": null, "source": source});
        let mut m = serde_json::json!({
            "name": name, "module": name, "layout": "ck", "path": format!("subc-modules/{name}"),
            "populated": fig("cgroup.events"), "frozen": fig("cgroup.events"),
            "procs": fig("cgroup.procs"), "memory_current": fig("memory.current"),
            "memory_peak": fig("memory.peak"), "memory_swap_current": fig("memory.swap.current"),
            "memory_anon": fig("memory.stat anon"), "memory_file": fig("memory.stat file"),
            "memory_events": fig("memory.events"), "pids_current": fig("pids.current"),
            "cpu_usage_usec": fig("cpu.stat usage_usec"),
            "memory_pressure_avg10": fig("memory.pressure"),
            "cpu_pressure_avg10": fig("cpu.pressure"), "io_pressure_avg10": fig("io.pressure"),
            "oomd_preference": fig("user.oomd_avoid, user.oomd_omit xattrs"),
            "oomd_ooms": fig("user.oomd_ooms xattr"), "oomd_kill": fig("user.oomd_kill xattr"),
            "limits": {
                "memory_high": fig("memory.high"), "memory_max": fig("memory.max"),
                "memory_swap_max": fig("memory.swap.max"), "pids_max": fig("pids.max"),
                "cpu_weight": fig("cpu.weight"), "memory_oom_group": fig("memory.oom.group"),
            },
        });
        for (field, v) in known {
            m[*field]["value"] = v.clone();
        }
        serde_json::from_value(m).expect("a ModuleStatus")
    }

    fn names(rows: &[ModuleStatus]) -> Vec<&str> {
        rows.iter().map(|m| m.name.as_str()).collect()
    }

    /// Each key orders by its own figure, the biggest first; the unknown come last (never as
    /// 0, which a known 0 shows), the ties and the unknown by name.
    #[test]
    fn sort_by_each_key_biggest_first_unknown_last_ties_by_name() {
        use serde_json::json;
        for (key, field, values) in [
            (
                SortKey::Mem,
                "memory_current",
                [json!(0), json!(300), json!(300)],
            ),
            (
                SortKey::Peak,
                "memory_peak",
                [json!(0), json!(1 << 30), json!(1 << 30)],
            ),
            (
                SortKey::Cpu,
                "cpu_usage_usec",
                [json!(0), json!(9), json!(9)],
            ),
            (
                SortKey::Pids,
                "pids_current",
                [json!(0), json!(12), json!(12)],
            ),
            (
                SortKey::Psi,
                "memory_pressure_avg10",
                [json!(0.0), json!(2.5), json!(2.5)],
            ),
        ] {
            let mut rows = vec![
                module("unknown-b", &[]),
                module("zero", &[(field, values[0].clone())]),
                module("unknown-a", &[]),
                module("tied-b", &[(field, values[1].clone())]),
                module("tied-a", &[(field, values[2].clone())]),
            ];
            sort(&mut rows, key);
            assert_eq!(
                names(&rows),
                ["tied-a", "tied-b", "zero", "unknown-a", "unknown-b"],
                "--sort {}",
                key.name()
            );
        }
        // Another key's figure does not count.
        let mut rows = vec![
            module("a", &[("memory_peak", serde_json::json!(5))]),
            module("b", &[("memory_current", serde_json::json!(1))]),
        ];
        sort(&mut rows, SortKey::Mem);
        assert_eq!(names(&rows), ["b", "a"]);
    }

    #[test]
    fn the_table_has_module_anon_and_file() {
        use serde_json::json;
        let mut daemon = module(
            "m-mcp_5f3ax_5f7",
            &[("memory_anon", json!(3 << 20)), ("memory_file", json!(0))],
        );
        daemon.module = Some("mcp_3ax".into());
        let t = table(&[daemon, module("aft", &[])]);
        let lines: Vec<Vec<&str>> = t.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(
            lines[0][..8],
            [
                "NAME", "MODULE", "POP", "PROCS", "MEM", "PEAK", "ANON", "FILE"
            ]
        );
        assert_eq!(
            lines[1][..8],
            [
                "m-mcp_5f3ax_5f7",
                "mcp_3ax",
                "-",
                "-",
                "-",
                "-",
                "3.0M",
                "0B"
            ]
        );
        assert_eq!(lines[2][..8], ["aft", "aft", "-", "-", "-", "-", "-", "-"]);
    }
}
