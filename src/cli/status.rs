//! Renderers of `status`: the table (which `top` shares) and the order of `--sort`; the
//! Prometheus text exposition format is in `prometheus`.

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::{Figure, ModuleStatus, PROC_RSS_SOURCE};

use clap::ValueEnum;

use super::format::{size, table_vec};

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
/// A count of the two that could not be read is `?` (`?+oomd:3`), not `-`, which is the
/// whole cell's.
fn oom_kill_cell(m: &ModuleStatus) -> String {
    let kernel = m.memory_events.value.and_then(|e| e.oom_kill);
    let part = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
    match (m.oomd_ooms.value, m.oomd_kill.value) {
        (Some(n), k) if n > 0 => format!("{}+oomd:{}", part(kernel), part(k)),
        _ => opt(kernel),
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
    /// The module id, else (a daemon directory that does not decode) its directory name: the
    /// one name column of the default table, headed `MODULE`.
    Id,
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
    /// Device (GPU) memory, every device together.
    GpuMem,
    /// Anonymous memory not touched within the cold window (the multi-gen LRU's).
    Cold,
}

impl Col {
    /// Every column `-o` takes: the wide table's and [`Col::Id`] (`CPU%` is `top`'s alone).
    pub fn for_o() -> impl Iterator<Item = Col> {
        STATUS_WIDE.iter().copied().chain([Col::Id])
    }

    /// Its name for `-o`: the header in lower case (`id` for [`Col::Id`], `cpu_pct` for `CPU%`).
    pub fn key(self) -> String {
        match self {
            Col::Id => "id".into(),
            Col::CpuRate => "cpu_pct".into(),
            c => c.header().to_ascii_lowercase(),
        }
    }

    /// A column of figures, which may be unknown (`-`), as names are not (MODULE's `-` is a
    /// name that does not decode).
    fn is_figure(self) -> bool {
        !matches!(self, Col::Name | Col::Id | Col::Module)
    }

    fn header(self) -> &'static str {
        match self {
            Col::Name => "NAME",
            Col::Module | Col::Id => "MODULE",
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
            Col::GpuMem => "GPU_MEM",
            Col::Cold => "COLD",
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
            Col::Name => m.name.to_string(),
            Col::Module => m.module.as_ref().map_or("-".into(), ToString::to_string),
            Col::Id => m.module.as_ref().unwrap_or(&m.name).to_string(),
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
            Col::GpuMem => size(m.gpu_memory.value),
            Col::Cold => size(m.cold_memory.value),
        }
    }
}

/// `status`'s columns by default: what tells a module that hoards memory from the others, in
/// 80 columns for ids up to about 12 characters. A column with no known figure in any row is
/// left out and named under the table.
pub const STATUS_DEFAULT: &[Col] = &[
    Col::Id,
    Col::Procs,
    Col::Mem,
    Col::Peak,
    Col::Swap,
    Col::Max,
    Col::OomKill,
    Col::CpuS,
    Col::PsiMem,
    Col::GpuMem,
];

/// `status --wide`: every column, each shown whether or not a figure in it is known.
pub const STATUS_WIDE: &[Col] = &[
    Col::Name,
    Col::Module,
    Col::Pop,
    Col::Procs,
    Col::Mem,
    Col::Peak,
    Col::Anon,
    Col::File,
    Col::Swap,
    Col::Cold,
    Col::High,
    Col::Max,
    Col::OomKill,
    Col::Pids,
    Col::PidsMax,
    Col::CpuS,
    Col::PsiMem,
    Col::GpuMem,
];

/// Which columns a human table shows.
#[derive(Debug, Clone, Copy)]
pub enum Columns<'a> {
    /// These, but those with no known figure in any row (named under the table instead, with
    /// the second field: how to see them).
    Fold(&'a [Col], &'a str),
    /// These, every one.
    All(&'a [Col]),
}

/// The human table, with a note under it for figures that came from a fallback.
pub fn table(rows: &[ModuleStatus], columns: Columns<'_>) -> String {
    table_of(rows, columns, |_| None)
}

/// A human table of `rows` in `columns`, and the notes under it: figures summed from /proc,
/// frozen modules, the columns left out, and what `-` means. `cpu_rate` gives
/// [`Col::CpuRate`]'s figure of a row.
pub fn table_of(
    rows: &[ModuleStatus],
    columns: Columns<'_>,
    cpu_rate: impl Fn(&ModuleStatus) -> Option<f64>,
) -> String {
    let (cols, fold, how) = match columns {
        Columns::Fold(c, how) => (c, true, how),
        Columns::All(c) => (c, false, ""),
    };
    let rates: Vec<Option<f64>> = rows.iter().map(&cpu_rate).collect();
    let cells = |c: Col| -> Vec<String> {
        rows.iter()
            .zip(&rates)
            .map(|(m, r)| c.cell(m, *r))
            .collect()
    };
    // A column is folded when no row knows its figure (CPU% before its second reading is no
    // unread file, and the module's name is always known).
    let mut shown = Vec::new();
    let mut folded = Vec::new();
    for &c in cols {
        let v = cells(c);
        // CPU% is `-` on a first screen: no file it could not read.
        let foldable = c.is_figure() && c != Col::CpuRate;
        // GPU_MEM on a host without a GPU: nothing to show, and nothing to say either.
        let no_gpu = c == Col::GpuMem && rows.iter().all(|m| m.gpu_memory.no_gpu());
        if fold && !rows.is_empty() && no_gpu {
            continue;
        }
        if fold && !rows.is_empty() && foldable && v.iter().all(|x| x == "-") {
            folded.push(c.header());
        } else {
            shown.push((c, v));
        }
    }
    // Rows that share a module id (the daemon's launches and slots of one module) are told
    // apart by their directory: NAME after MODULE, where the columns were not chosen.
    if fold
        && !cols.contains(&Col::Name)
        && let Some(at) = shown.iter().position(|(c, _)| *c == Col::Id)
    {
        let ids = &shown[at].1;
        let repeated = ids.iter().enumerate().any(|(i, id)| ids[..i].contains(id));
        if repeated {
            shown.insert(at + 1, (Col::Name, cells(Col::Name)));
        }
    }
    let mut t: Vec<Vec<String>> = vec![shown.iter().map(|(c, _)| c.header().to_string()).collect()];
    for i in 0..rows.len() {
        t.push(shown.iter().map(|(_, v)| v[i].clone()).collect());
    }
    let mut s = table_vec(&t);
    if rows
        .iter()
        .any(|m| m.memory_current.source == PROC_RSS_SOURCE)
    {
        s += "* summed from VmRSS/VmSwap in /proc/<pid>/status: no memory controller here\n";
    }
    let frozen: Vec<String> = rows
        .iter()
        .filter(|m| m.frozen.value == Some(true))
        .map(|m| m.name.to_string())
        .collect();
    if !frozen.is_empty() {
        s += &format!(
            "frozen (cgroup.events frozen 1, its processes do not run): {}\n  `ck-cgroup thaw ID` lets it run again, `ck-cgroup kill ID` stops it\n",
            frozen.join(", ")
        );
    }
    // Why a module's device memory is unknown (no GPU, a tool that failed, a process whose
    // files could not be read), each reason once.
    let gpu_shown = shown.iter().any(|(c, _)| *c == Col::GpuMem);
    let mut why: Vec<&str> = Vec::new();
    for m in rows {
        if let Some(r) = m.gpu_memory.reason.as_deref()
            && m.gpu_memory.value.is_none()
            && !why.contains(&r)
        {
            why.push(r);
        }
    }
    if gpu_shown || folded.contains(&Col::GpuMem.header()) {
        for r in why {
            s += &format!("GPU_MEM unknown: {}\n", ck_cgroup::id::shown_message(r));
        }
    }
    // Why a module's cold memory is unknown, each reason once, where COLD is shown.
    if shown.iter().any(|(c, _)| *c == Col::Cold) {
        let mut why: Vec<&str> = Vec::new();
        for m in rows {
            if let Some(r) = m.cold_memory.reason.as_deref()
                && m.cold_memory.value.is_none()
                && !why.contains(&r)
            {
                why.push(r);
            }
        }
        if let Some(w) = rows.first().map(|m| m.cold_memory.window_ms) {
            s += &format!(
                "COLD: anonymous memory not touched for {} s (--cold-window)\n",
                w / 1000
            );
        }
        for r in why {
            s += &format!("COLD unknown: {}\n", ck_cgroup::id::shown_message(r));
        }
    }
    if !folded.is_empty() {
        s += &format!(
            "not shown, unknown for every module: {}\n",
            folded.join(" ")
        );
        if !how.is_empty() {
            s += &format!("  {how}\n");
        }
    }
    // CPU% is `-` before its second reading, which is no file that could not be read.
    let unread = shown
        .iter()
        .any(|(c, v)| *c != Col::CpuRate && c.is_figure() && v.iter().any(|x| x == "-"));
    if unread {
        s += "- could not be read (its controller is not enabled, or no such file here)\n";
    }
    let cell_of = |col: Col, f: &dyn Fn(&str) -> bool| {
        shown
            .iter()
            .any(|(c, v)| *c == col && v.iter().any(|x| f(x)))
    };
    if cell_of(Col::OomKill, &|x| x.contains('?')) {
        s += "? in OOM_KILL: that count could not be read (memory.events oom_kill, user.oomd_kill after +oomd:)\n";
    }
    if cell_of(Col::Module, &|x| x == "-") {
        s += "- in MODULE: a directory of the daemon's whose name does not decode to a module id\n";
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

/// What `status --sort` and `top --sort` order the modules by, the biggest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
    /// Memory in use (MEM: memory.current, or the /proc sum).
    Mem,
    /// Peak memory (PEAK: memory.peak).
    Peak,
    /// CPU: for status the time used since the module was made (CPU_S: cpu.stat usage_usec),
    /// for top the share of a CPU over the last interval (CPU%).
    Cpu,
    /// Tasks (PIDS: pids.current).
    Pids,
    /// Memory pressure (PSI_MEM: memory.pressure some avg10).
    Psi,
}

impl SortKey {
    /// The key as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Mem => "mem",
            SortKey::Peak => "peak",
            SortKey::Cpu => "cpu",
            SortKey::Pids => "pids",
            SortKey::Psi => "psi",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module named `name` whose figures are unknown but those in `known` (field, value).
    fn module(name: &str, known: &[(&str, serde_json::Value)]) -> ModuleStatus {
        let path = format!("subc-modules/{name}");
        let n = ck_cgroup::DirName::new(name).expect("a name");
        let unknown = ModuleStatus::unknown(n.clone(), Some(n), ck_cgroup::Layout::Ck, &path);
        let mut m = serde_json::to_value(unknown).expect("a ModuleStatus serialises");
        for (field, v) in known {
            m[*field]["value"] = v.clone();
        }
        serde_json::from_value(m).expect("a ModuleStatus")
    }

    fn names(rows: &[ModuleStatus]) -> Vec<String> {
        rows.iter().map(|m| m.name.to_string()).collect()
    }

    /// OOM_KILL where systemd-oomd killed and the kernel's count could not be read showed
    /// `-+oomd:3`, a `-` no note explained: the unknown count is `?`, and said under the table.
    #[test]
    fn oom_kill_of_an_unread_kernel_count_beside_oomd_kills_is_a_question_mark_with_its_note() {
        use serde_json::json;
        let events =
            json!({"low": 0, "high": 0, "max": 0, "oom": 0, "oom_kill": 0, "oom_group_kill": 0});
        let unread = module("a", &[("oomd_ooms", json!(1)), ("oomd_kill", json!(3))]);
        let read = module(
            "b",
            &[
                ("oomd_ooms", json!(1)),
                ("oomd_kill", json!(3)),
                ("memory_events", events.clone()),
            ],
        );
        let none = module("c", &[("oomd_ooms", json!(0)), ("memory_events", events)]);
        let cells: Vec<String> = [&unread, &read, &none]
            .iter()
            .map(|m| Col::OomKill.cell(m, None))
            .collect();
        assert_eq!(cells, ["?+oomd:3", "0+oomd:3", "0"]);
        let t = table(&[unread], Columns::All(&[Col::Id, Col::OomKill]));
        assert!(t.contains("? in OOM_KILL: "), "{t}");
        let t = table(&[read], Columns::All(&[Col::Id, Col::OomKill]));
        assert!(
            !t.contains("? in OOM_KILL") && !t.contains("could not be read"),
            "{t}"
        );
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
        daemon.module = Some(ck_cgroup::DirName::new("mcp_3ax").expect("a name"));
        let t = table(&[daemon, module("aft", &[])], Columns::All(STATUS_WIDE));
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
