//! The renderer of `ps`: each module's processes as a tree (a child under its parent when the
//! parent is in the module), or with `--sort` a flat list, the biggest first.

use ck_cgroup::id::shown;
use ck_cgroup::telemetry::procs::{ModuleProcesses, Process};

use super::args::PsSort;
use super::format::{size, table_vec};

/// Each module's processes, in place: the order of `--sort` (unknown figures last, ties by pid),
/// else the tree's (parents before their children, siblings by pid).
pub fn order(mods: &mut [ModuleProcesses], sort: Option<PsSort>) {
    for m in mods {
        let procs = std::mem::take(&mut m.processes);
        m.processes = match sort {
            Some(key) => {
                let mut p = procs;
                let fig = |p: &Process| match key {
                    PsSort::Rss => p.rss.value,
                    PsSort::Swap => p.swap.value,
                };
                // Known figures first, the biggest first; unknown ones after, never as 0.
                p.sort_by(|a, b| {
                    fig(b)
                        .is_some()
                        .cmp(&fig(a).is_some())
                        .then(fig(b).cmp(&fig(a)))
                        .then(a.pid.cmp(&b.pid))
                });
                p
            }
            None => tree(procs).into_iter().map(|(_, p)| p).collect(),
        };
    }
}

/// The processes in tree order, each with its depth: the tops (parent outside the module) by pid,
/// each followed by its children, depth first.
fn tree(mut procs: Vec<Process>) -> Vec<(usize, Process)> {
    procs.sort_by_key(|p| p.pid);
    let mut out = Vec::with_capacity(procs.len());
    let mut stack: Vec<(usize, Process)> = Vec::new();
    let (tops, mut rest): (Vec<Process>, Vec<Process>) =
        procs.into_iter().partition(|p| !p.parent_in_module);
    for top in tops.into_iter().rev() {
        stack.push((0, top));
    }
    while let Some((depth, p)) = stack.pop() {
        let (kids, others): (Vec<Process>, Vec<Process>) =
            rest.into_iter().partition(|c| c.ppid == p.pid);
        rest = others;
        for k in kids.into_iter().rev() {
            stack.push((depth + 1, k));
        }
        out.push((depth, p));
    }
    // A cycle of parents cannot happen, but pids reused while we read could make one: what is
    // left is shown at the top, not lost.
    out.extend(rest.into_iter().map(|p| (0, p)));
    out
}

/// The depth of each process in `procs` (in the order given): the number of its ancestors in
/// the list.
fn depths(procs: &[Process]) -> Vec<usize> {
    procs
        .iter()
        .map(|p| {
            let mut d = 0;
            let mut parent = p.parent_in_module.then_some(p.ppid);
            while let Some(pp) = parent {
                match procs.iter().find(|q| q.pid == pp) {
                    Some(q) if d < procs.len() => {
                        d += 1;
                        parent = q.parent_in_module.then_some(q.ppid);
                    }
                    _ => break,
                }
            }
            d
        })
        .collect()
}

/// `line` onto `s`, cut to `width` (`None`: whole) in its command, before `mark` (the end of the
/// line: the `(orphan)` an operator looks for stays on a narrow terminal).
fn push_cut(s: &mut String, line: &str, mark: &str, width: Option<usize>) {
    match width {
        Some(w) if line.chars().count() > w => {
            let body = line.strip_suffix(mark).unwrap_or(line);
            let keep = w.saturating_sub(mark.chars().count());
            s.extend(body.chars().take(keep).chain(mark.chars()).take(w));
        }
        _ => *s += line,
    }
}

/// The table: one block per module (its name, id and process count), then a line per process.
/// `width` cuts each line to the terminal's width (`None`: not a terminal, whole lines).
pub fn text(mods: &[ModuleProcesses], sorted: bool, width: Option<usize>) -> String {
    let mut s = String::new();
    // GPU_MEM where the host has a GPU (a process's figure is other than "no GPU here").
    let gpu = mods
        .iter()
        .flat_map(|m| &m.processes)
        .any(|p| !p.gpu_memory.no_gpu());
    let mut why: Vec<&str> = Vec::new();
    for (i, m) in mods.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let n = m.processes.len();
        s += &format!(
            "{} ({}, {}): {n} {}\n",
            m.name,
            m.module.as_ref().map_or("-".into(), ToString::to_string),
            m.path,
            if n == 1 { "process" } else { "processes" }
        );
        if n == 0 {
            continue;
        }
        let depth = if sorted {
            vec![0; n]
        } else {
            depths(&m.processes)
        };
        let mut head = vec![
            "PID".to_string(),
            "PPID".into(),
            "S".into(),
            "RSS".into(),
            "SWAP".into(),
        ];
        if gpu {
            head.push("GPU_MEM".into());
        }
        head.extend(["CGROUP".into(), "COMMAND".into()]);
        let mut rows = vec![head];
        // Each row's marks, the end of its command: a line cut to the width keeps them.
        let mut marks = vec![String::new()];
        for (p, d) in m.processes.iter().zip(depth) {
            // What the process chose (its argv, its comm) is shown escaped: a control byte
            // would move the terminal's cursor or forge a row.
            let cmd = match &p.command {
                Some(c) => c.iter().map(|a| shown(a)).collect::<Vec<_>>().join(" "),
                None => format!("[{}]", shown(&p.name)),
            };
            let indent = if d == 0 {
                String::new()
            } else {
                format!("{}`- ", "   ".repeat(d - 1))
            };
            let mark = format!(
                "{}{}{}",
                if p.command_cut { "  (cut)" } else { "" },
                if p.orphan { "  (orphan)" } else { "" },
                if p.init { "  (init)" } else { "" }
            );
            let mut row = vec![
                p.pid.to_string(),
                p.ppid.to_string(),
                p.state.clone(),
                size(p.rss.value),
                size(p.swap.value),
            ];
            if gpu {
                row.push(size(p.gpu_memory.value));
                if let Some(r) = p.gpu_memory.reason.as_deref()
                    && p.gpu_memory.value.is_none()
                    && !why.contains(&r)
                {
                    why.push(r);
                }
            }
            row.extend([
                if p.cgroup.is_empty() {
                    ".".into()
                } else {
                    p.cgroup.split('/').map(shown).collect::<Vec<_>>().join("/")
                },
                format!("{indent}{cmd}{mark}"),
            ]);
            rows.push(row);
            marks.push(mark);
        }
        for (line, mark) in table_vec(&rows)
            .lines()
            .zip(marks.iter().chain(std::iter::repeat(&String::new())))
        {
            push_cut(&mut s, line, mark, width);
            s.push('\n');
        }
    }
    if mods.is_empty() {
        s += "no modules\n";
    }
    for r in why {
        s += &format!("GPU_MEM unknown: {}\n", ck_cgroup::id::shown_message(r));
    }
    s
}
