//! Cold memory: what a module holds and has not touched within a window, from the multi-gen
//! LRU's working-set estimation (kernel docs, admin-guide/mm/multigen_lru.rst, "Working set
//! estimation"; the debugfs file `lru_gen`, Linux 6.1 and later with `CONFIG_LRU_GEN`).
//!
//! Reading `/sys/kernel/debug/lru_gen` gives, per memory cgroup (its id and its path from the
//! cgroup2 root) and NUMA node, each generation of its pages from the oldest to the youngest:
//! `SEQ AGE_MS ANON_PAGES FILE_PAGES`. Writing `+ MEMCG_ID NODE_ID MAX_SEQ 1 1` starts a new
//! generation: the kernel walks the page tables of the cgroup's processes and moves every page
//! accessed since the last walk into it. So a page still in generation `k` was not accessed
//! between the birth of generation `k + 1` and the last walk (the youngest generation's birth):
//! it is cold for at least `age(k + 1) - age(youngest)`.
//!
//! A module's cold memory over a window `W` is the pages of the generations whose successor is
//! at least `W` older than the youngest, over the module's cgroup and its sub-cgroups, every
//! node. It is unknown (with the reason), never 0, where `lru_gen` cannot be read (no MGLRU, it
//! is off, no debugfs, not root), where the module's cgroup is not in it (no memory controller),
//! where nothing aged it within the window (the youngest generation is older than `W`: pages
//! touched since are not known), and where its generations span less than `W`.
//!
//! Only [`ColdCensus::age`] writes (a generation per module cgroup and node whose youngest is
//! older than half the window, so that two agings span the window); `status --age-cold` asks
//! for it, the metrics timer's runs pass it. Nothing on the spawn or kill paths ages.

use std::time::Instant;

use serde::Serialize;

use crate::mutation::{self, Control};

/// Where the kernel's multi-gen LRU reads and takes aging commands (debugfs, root only).
pub const LRU_GEN: &str = "/sys/kernel/debug/lru_gen";
/// The multi-gen LRU's switch (bit 0x0001: on).
pub const LRU_GEN_ENABLED: &str = "/sys/kernel/mm/lru_gen/enabled";
/// The default window: memory not touched for this long is cold.
pub const DEFAULT_WINDOW_MS: u64 = 10 * 60 * 1000;
/// The source of a figure read from [`LRU_GEN`].
pub const SOURCE: &str = "/sys/kernel/debug/lru_gen (multi-gen LRU generations)";

/// One generation of one memory cgroup on one node, as `lru_gen` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Generation {
    /// The generation's sequence number.
    pub seq: u64,
    /// Milliseconds since it was born.
    pub age_ms: u64,
    /// Anonymous pages in it.
    pub anon_pages: u64,
    /// File pages in it.
    pub file_pages: u64,
}

/// One memory cgroup's generations on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lruvec {
    /// The memory cgroup's id (`memcg_id`, what an aging command names).
    pub memcg_id: u64,
    /// Its path from the cgroup2 root (`/` the root; empty without the memory controller).
    pub path: String,
    /// The NUMA node.
    pub node: u64,
    /// Its generations, the oldest first.
    pub gens: Vec<Generation>,
}

impl Lruvec {
    /// The youngest generation (the one an aging command names).
    fn youngest(&self) -> Option<&Generation> {
        self.gens.last()
    }
}

/// Parse `lru_gen`'s text: `memcg ID PATH` lines, each followed by ` node ID` lines, each by
/// its generations ` SEQ AGE_MS ANON FILE` (the full file, `lru_gen_full`, marks a count with
/// `x` and adds lines of statistics: those are skipped). Lines that do not parse are skipped; a
/// generation before any node is skipped. A path is the rest of its line after the id (a path
/// may hold spaces).
pub fn parse(text: &str) -> Vec<Lruvec> {
    let mut out: Vec<Lruvec> = Vec::new();
    let mut memcg: Option<(u64, String)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = line.strip_prefix("memcg ") {
            let rest = rest.trim_start();
            let (id, path) = rest.split_once(' ').unwrap_or((rest, ""));
            memcg = id
                .parse()
                .ok()
                .map(|id| (id, path.trim_start().to_string()));
            continue;
        }
        if let Some(rest) = t.strip_prefix("node ") {
            if let (Some((id, path)), Ok(node)) = (&memcg, rest.trim().parse()) {
                out.push(Lruvec {
                    memcg_id: *id,
                    path: path.clone(),
                    node,
                    gens: Vec::new(),
                });
            }
            continue;
        }
        let f: Vec<&str> = t.split_whitespace().collect();
        let num = |s: &str| s.trim_end_matches('x').parse::<u64>().ok();
        if f.len() != 4 {
            continue;
        }
        let (Some(seq), Some(age_ms), Some(anon_pages), Some(file_pages)) =
            (num(f[0]), num(f[1]), num(f[2]), num(f[3]))
        else {
            continue;
        };
        if let Some(v) = out.last_mut() {
            v.gens.push(Generation {
                seq,
                age_ms,
                anon_pages,
                file_pages,
            });
        }
    }
    out
}

/// The cold pages of one node's generations over a window: `(anon, file, untouched_ms)`, the
/// pages of the generations whose successor is at least `window_ms` older than the youngest,
/// and the shortest time those pages are known untouched; `Err` with why it cannot be told.
pub fn cold_pages(gens: &[Generation], window_ms: u64) -> Result<(u64, u64, u64), String> {
    let Some(youngest) = gens.last() else {
        return Err("no generations listed".into());
    };
    let total: u64 = gens.iter().map(|g| g.anon_pages + g.file_pages).sum();
    if total == 0 {
        return Ok((0, 0, 0));
    }
    // Mutation: every page is cold, whatever its generation's age.
    if mutation::active(Control::ColdEveryPage) {
        let anon = gens.iter().map(|g| g.anon_pages).sum();
        let file = gens.iter().map(|g| g.file_pages).sum();
        return Ok((anon, file, window_ms));
    }
    if youngest.age_ms > window_ms {
        return Err(format!(
            "not aged within the window: the youngest generation is {} s old, the window {} s \
             (`ck-cgroup status --age-cold` ages; the metrics timer's runs do)",
            youngest.age_ms / 1000,
            window_ms / 1000
        ));
    }
    let mut anon = 0;
    let mut file = 0;
    let mut untouched: Option<u64> = None;
    for (k, g) in gens.iter().enumerate() {
        let Some(next) = gens.get(k + 1) else { break };
        let span = next.age_ms.saturating_sub(youngest.age_ms);
        if span >= window_ms {
            anon += g.anon_pages;
            file += g.file_pages;
            untouched = Some(untouched.map_or(span, |u: u64| u.min(span)));
        }
    }
    match untouched {
        Some(u) => Ok((anon, file, u)),
        None => {
            let span = gens
                .get(1)
                .map_or(0, |g| g.age_ms.saturating_sub(youngest.age_ms));
            Err(format!(
                "the generations span {} s since the last aging, less than the window {} s \
                 (aged more often than every half window, or by reclaim)",
                span / 1000,
                window_ms / 1000
            ))
        }
    }
}

/// A module's cold memory, from the multi-gen LRU: unknown, with [`reason`](Self::reason),
/// where it cannot be told (never 0 then).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ColdMemory {
    /// Anonymous memory, bytes, not touched within the window: in the old generations of the
    /// module's cgroup and its sub-cgroups, every node. What a hoard grows in.
    pub value: Option<u64>,
    /// File pages (page cache), bytes, not touched within the window.
    pub file: Option<u64>,
    /// Where it came from.
    pub source: String,
    /// The window, milliseconds: memory not touched for this long is cold.
    pub window_ms: u64,
    /// The shortest time the counted pages are known untouched, milliseconds (at least the
    /// window: generations are coarse).
    pub untouched_ms: Option<u64>,
    /// How long ago the module's memory was last aged (the youngest generation's age),
    /// milliseconds: what was touched since is not known.
    pub aged_ms_ago: Option<u64>,
    /// Microseconds this run spent aging the module (the kernel's page-table walk of its
    /// processes); `None` where this run did not age it.
    pub aging_us: Option<u64>,
    /// Why [`value`](Self::value) is unknown; `None` when it is known.
    pub reason: Option<String>,
}

impl ColdMemory {
    /// Unknown, for `reason`.
    pub fn unknown(window_ms: u64, reason: impl Into<String>) -> ColdMemory {
        ColdMemory {
            value: None,
            file: None,
            source: SOURCE.into(),
            window_ms,
            untouched_ms: None,
            aged_ms_ago: None,
            aging_us: None,
            reason: Some(reason.into()),
        }
    }
}

impl Default for ColdMemory {
    /// A report that does not carry it (an older helper's): unknown.
    fn default() -> ColdMemory {
        ColdMemory::unknown(DEFAULT_WINDOW_MS, "not in this report")
    }
}

/// Why cold memory is not read by a command that does not ask for it (`top`).
pub const NOT_READ: &str = "cold memory is not read by this command";

/// `lru_gen` read once for a `status`, with the window its figures are over.
#[derive(Debug, Clone)]
pub struct ColdCensus {
    window_ms: u64,
    lruvecs: Result<Vec<Lruvec>, String>,
    page_size: u64,
    /// Per memcg id: microseconds spent aging it in this run.
    aged_us: Vec<(u64, u64)>,
}

impl ColdCensus {
    /// Read [`LRU_GEN`] for figures over `window_ms`.
    pub fn read(window_ms: u64) -> ColdCensus {
        let lruvecs = match std::fs::read_to_string(LRU_GEN) {
            Ok(t) => Ok(parse(&t)),
            Err(e) => Err(why_unreadable(&e)),
        };
        ColdCensus::recorded(window_ms, lruvecs)
    }

    /// A census from `lru_gen`'s parsed text, or why it could not be read.
    pub fn recorded(window_ms: u64, lruvecs: Result<Vec<Lruvec>, String>) -> ColdCensus {
        ColdCensus {
            window_ms,
            lruvecs,
            page_size: rustix::param::page_size() as u64,
            aged_us: Vec::new(),
        }
    }

    /// Nothing read: every figure unknown with [`NOT_READ`].
    pub fn not_read() -> ColdCensus {
        ColdCensus::recorded(DEFAULT_WINDOW_MS, Err(NOT_READ.into()))
    }

    /// The window, milliseconds.
    pub fn window_ms(&self) -> u64 {
        self.window_ms
    }

    /// Start a generation for each memory cgroup at or beneath `path` (from the cgroup2 root)
    /// and each node whose youngest generation is older than half the window, then read
    /// `lru_gen` again. What each write cost is kept for the modules' figures
    /// ([`ColdMemory::aging_us`]). Errors of single writes are left out (a cgroup removed
    /// meanwhile); `Err` only where `lru_gen` cannot be written at all.
    pub fn age(&mut self, path: &str) -> Result<(), String> {
        let Ok(vecs) = &self.lruvecs else {
            return Ok(());
        };
        let half = self.window_ms / 2;
        let due: Vec<(u64, u64, u64)> = vecs
            .iter()
            .filter(|v| beneath(&v.path, path))
            .filter_map(|v| {
                let y = v.youngest()?;
                (v.memcg_id != 0 && y.age_ms >= half).then_some((v.memcg_id, v.node, y.seq))
            })
            .collect();
        let mut failed = None;
        let mut wrote = 0;
        for (id, node, seq) in due {
            let t = Instant::now();
            // `1 1`: can_swap (6.1; swappiness in later kernels, where 0 would leave anonymous
            // pages unaged) so that anonymous pages are aged whether or not there is swap, and
            // force_scan, so that every process's page tables are walked (the kernel's default).
            match std::fs::write(LRU_GEN, format!("+ {id} {node} {seq} 1 1\n")) {
                Ok(()) => {
                    wrote += 1;
                    let us = t.elapsed().as_micros() as u64;
                    match self.aged_us.iter_mut().find(|(m, _)| *m == id) {
                        Some((_, u)) => *u += us,
                        None => self.aged_us.push((id, us)),
                    }
                }
                Err(e) => failed = Some(format!("failed to write {LRU_GEN}: {e}")),
            }
        }
        let aged = std::mem::take(&mut self.aged_us);
        *self = ColdCensus::read(self.window_ms);
        self.aged_us = aged;
        match failed {
            Some(e) if wrote == 0 => Err(e),
            _ => Ok(()),
        }
    }

    /// The cold memory of the module whose cgroup is `path` (from the cgroup2 root; `None`
    /// where it could not be told), its sub-cgroups' included.
    pub fn of_module(&self, path: Option<&str>) -> ColdMemory {
        let w = self.window_ms;
        let vecs = match &self.lruvecs {
            Ok(v) => v,
            Err(why) => return ColdMemory::unknown(w, why.clone()),
        };
        let Some(path) = path else {
            return ColdMemory::unknown(w, "the module's path from the cgroup2 root is not known");
        };
        let mine: Vec<&Lruvec> = vecs.iter().filter(|v| beneath(&v.path, path)).collect();
        if mine.is_empty() {
            return ColdMemory::unknown(
                w,
                format!("{path} is not in {LRU_GEN} (the memory controller is not enabled for it)"),
            );
        }
        let (mut anon, mut file) = (0, 0);
        let mut untouched: Option<u64> = None;
        let mut aged: Option<u64> = None;
        for v in &mine {
            if let Some(y) = v.youngest() {
                aged = Some(aged.map_or(y.age_ms, |a: u64| a.max(y.age_ms)));
            }
            match cold_pages(&v.gens, w) {
                Ok((a, f, u)) => {
                    anon += a;
                    file += f;
                    if a + f > 0 {
                        untouched = Some(untouched.map_or(u, |x: u64| x.min(u)));
                    }
                }
                Err(why) => {
                    let mut c =
                        ColdMemory::unknown(w, format!("{} node {}: {why}", v.path, v.node));
                    c.aged_ms_ago = aged;
                    c.aging_us = self.aging_us(&mine);
                    return c;
                }
            }
        }
        ColdMemory {
            value: Some(anon * self.page_size),
            file: Some(file * self.page_size),
            source: SOURCE.into(),
            window_ms: w,
            untouched_ms: untouched.or(Some(w)),
            aged_ms_ago: aged,
            aging_us: self.aging_us(&mine),
            reason: None,
        }
    }

    fn aging_us(&self, mine: &[&Lruvec]) -> Option<u64> {
        let mut ids: Vec<u64> = mine.iter().map(|v| v.memcg_id).collect();
        ids.dedup();
        let spent: Vec<u64> = self
            .aged_us
            .iter()
            .filter(|(id, _)| ids.contains(id))
            .map(|(_, us)| *us)
            .collect();
        (!spent.is_empty()).then(|| spent.iter().sum())
    }
}

/// The path of the cgroup directory `abs` from the root of the cgroup2 hierarchy (as `lru_gen`
/// names memory cgroups): beneath the cgroup2 mount it is in, that mount's root before it
/// (`/proc/self/mountinfo`). `None` where no cgroup2 mount holds it.
pub fn hierarchy_path(abs: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mounts = crate::cgroup::parse::cgroup2_mounts(&text);
    let m = mounts
        .iter()
        .filter(|m| abs.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len())?;
    let rel = abs.strip_prefix(&m.mount_point).ok()?.to_str()?;
    let root = m.root.trim_end_matches('/');
    Some(if rel.is_empty() {
        if root.is_empty() {
            "/".into()
        } else {
            root.into()
        }
    } else {
        format!("{root}/{rel}")
    })
}

/// Whether `path` is `top` or beneath it.
fn beneath(path: &str, top: &str) -> bool {
    let top = top.trim_end_matches('/');
    path == top || path.strip_prefix(top).is_some_and(|r| r.starts_with('/'))
}

/// Why `lru_gen` could not be read, and what would fix it.
pub fn why_unreadable(e: &std::io::Error) -> String {
    let enabled = std::fs::read_to_string(LRU_GEN_ENABLED);
    match (e.kind(), enabled) {
        (_, Err(_)) => format!(
            "no multi-gen LRU in this kernel ({LRU_GEN_ENABLED} is absent: CONFIG_LRU_GEN is not set)"
        ),
        (_, Ok(t)) if !lru_gen_on(&t) => format!(
            "the multi-gen LRU is off ({LRU_GEN_ENABLED} is {}): `echo y > {LRU_GEN_ENABLED}`, or lru_gen.enabled=y on the kernel command line",
            t.trim()
        ),
        (std::io::ErrorKind::PermissionDenied, _) => {
            format!("{LRU_GEN} cannot be read: debugfs is root's (run as root)")
        }
        (std::io::ErrorKind::NotFound, _) => format!(
            "{LRU_GEN} is absent: debugfs is not mounted (`mount -t debugfs none /sys/kernel/debug`)"
        ),
        _ => format!("failed to read {LRU_GEN}: {e}"),
    }
}

/// Whether the text of [`LRU_GEN_ENABLED`] (`0x0007`, `y`, `n`) says the multi-gen LRU is on
/// (bit 0x0001).
pub fn lru_gen_on(text: &str) -> bool {
    let t = text.trim();
    let n = t
        .strip_prefix("0x")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .or_else(|| t.parse().ok());
    n.is_some_and(|n| n & 1 == 1) || t == "y"
}

#[cfg(test)]
mod tests;
