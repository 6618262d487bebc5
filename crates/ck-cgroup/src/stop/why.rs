//! Why a stop did not end, in one line for its error: the tree still holds processes (each
//! one's state read), or it is empty but processes it listed still run outside it.

use crate::cgroup::dir::CgroupDir;

use super::TreeStop;

/// Why the stop of `rel` that gave `tree` (not empty) did not end: [`left_outside`] when the tree
/// reads `populated 0` but processes it listed still run elsewhere, else [`still_populated`].
/// What the module stop, the systemd backend's stop and a sandbox's teardown say.
pub(crate) fn not_ended(dir: &CgroupDir, rel: &str, tree: &TreeStop) -> String {
    if tree.outside.is_empty() {
        still_populated(dir, rel, tree.waited_ms)
    } else {
        left_outside(dir, rel, &tree.outside, tree.waited_ms)
    }
}

/// Why a stop did not end: `rel` still holds processes after `waited_ms`. Each process's state
/// is read (`/proc/<pid>/stat`) before any is named: uninterruptible sleep is blamed only for
/// processes found in it.
pub(crate) fn still_populated(dir: &CgroupDir, rel: &str, waited_ms: f64) -> String {
    let path = dir.display_path(rel);
    match crate::cgroup::tree::members(dir, rel) {
        Ok(p) => {
            let states: Vec<Option<char>> = p
                .iter()
                .map(|pid| {
                    crate::cgroup::procfs::read_text(*pid, "stat")
                        .ok()
                        .and_then(|t| crate::cgroup::parse::proc_stat(&t))
                        .map(|s| s.state)
                })
                .collect();
            format!(
                "{} still holds {} after {waited_ms} ms",
                path.display(),
                describe_left(&states)
            )
        }
        Err(e) => format!(
            "{} still holds processes after {waited_ms} ms (which could not be read: {e})",
            path.display()
        ),
    }
}

/// `3 processes: 2 in state D (uninterruptible sleep: ...), 1 in state R (running)`, from the
/// states read (`None`: gone or unreadable by the time it was read).
fn describe_left(states: &[Option<char>]) -> String {
    let n = states.len();
    if n == 0 {
        return "no process any more (it emptied as the timeout passed: run the command again)"
            .into();
    }
    let mut counts: Vec<(Option<char>, usize)> = Vec::new();
    for s in states {
        match counts.iter_mut().find(|(c, _)| c == s) {
            Some((_, k)) => *k += 1,
            None => counts.push((*s, 1)),
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(s, k)| match s {
            Some(c) => format!("{k} in state {c} ({})", state_name(*c)),
            None => format!("{k} gone or unreadable when read"),
        })
        .collect();
    format!(
        "{n} process{}: {}",
        if n == 1 { "" } else { "es" },
        parts.join(", ")
    )
}

fn state_name(c: char) -> &'static str {
    match c {
        'D' => "uninterruptible sleep: it dies only when its I/O ends",
        'R' => "running",
        'S' => "sleeping",
        'T' => "stopped",
        't' => "stopped by a tracer",
        'Z' => "zombie: exited, not yet reaped",
        'X' | 'x' => "dead",
        'I' => "idle",
        'P' => "parked",
        'W' => "waking",
        _ => "as /proc/<pid>/stat says",
    }
}

/// Why a stop did not end although `rel` reads `populated 0`: processes it listed in the tree
/// still run, outside it (each named with the cgroup `/proc/<pid>/cgroup` gives).
fn left_outside(dir: &CgroupDir, rel: &str, pids: &[u32], waited_ms: f64) -> String {
    let each: Vec<String> = pids
        .iter()
        .map(|pid| {
            let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
                .ok()
                .and_then(|t| crate::cgroup::parse::proc_cgroup_v2(&t));
            match cg {
                Some(c) => format!("{pid} (now in {c})"),
                None => format!("{pid}"),
            }
        })
        .collect();
    format!(
        "{} is empty, but process{} it held still run{} outside it after {waited_ms} ms: {}",
        dir.display_path(rel).display(),
        if pids.len() == 1 { "" } else { "es" },
        if pids.len() == 1 { "s" } else { "" },
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::describe_left;

    #[test]
    pub(super) fn what_is_left_is_described_by_the_states_read_and_d_only_when_read() {
        let s = describe_left(&[Some('S'), Some('R'), Some('S')]);
        assert_eq!(
            s,
            "3 processes: 2 in state S (sleeping), 1 in state R (running)"
        );
        assert!(!s.contains('D'));
        let d = describe_left(&[Some('D'), None]);
        assert!(
            d.starts_with("2 processes: 1 in state D (uninterruptible sleep"),
            "{d}"
        );
        assert!(d.contains("1 gone or unreadable when read"), "{d}");
        assert_eq!(
            describe_left(&[Some('t')]),
            "1 process: 1 in state t (stopped by a tracer)"
        );
        assert!(describe_left(&[]).starts_with("no process any more"));
    }
}
