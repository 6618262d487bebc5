//! Parsers of kernel files: pure functions from text to types, no I/O.
//!
//! Unknown keys are kept or ignored, never an error. Each parser names the file it reads; the
//! formats are those of the kernel's cgroup-v2 document
//! (<https://docs.kernel.org/admin-guide/cgroup-v2.html>) and proc(5).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// `cgroup.events`: `populated` (this cgroup or a descendant holds a live process) and `frozen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Events {
    /// `populated 1`: a process is in this cgroup or below. `None` when the key is absent.
    pub populated: Option<bool>,
    /// `frozen 1` (kernel 5.2 and later). `None` when the key is absent.
    pub frozen: Option<bool>,
}

/// Parse `cgroup.events`.
pub fn events(text: &str) -> Events {
    let keys = flat_keyed(text);
    Events {
        populated: keys.get("populated").map(|v| *v != 0),
        frozen: keys.get("frozen").map(|v| *v != 0),
    }
}

/// A flat-keyed file (`key value` per line: `cgroup.events`, `memory.events`, `cpu.stat`,
/// `memory.stat`, `pids.events`). Lines that do not parse are skipped.
pub fn flat_keyed(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (k, v) = line.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// One key of a flat-keyed file, as [`flat_keyed`] reads it, without building the map (for
/// the keys `status` reads of every module: `cpu.stat` has a dozen, `memory.stat` forty).
pub fn flat_key(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        if k == key {
            v.trim().parse().ok()
        } else {
            None
        }
    })
}

/// `cgroup.procs` / `cgroup.threads`: one pid per line. Lines that do not parse are skipped.
pub fn pids(text: &str) -> Vec<u32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// `cgroup.controllers` / `cgroup.subtree_control`: space-separated controller names.
pub fn controllers(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// `/proc/<pid>/cgroup`: the cgroup-v2 path, from the `0::<path>` line. `None` on a v1-only host.
///
/// On a hybrid host the file also has v1 lines (`4:memory:/x`); they are ignored.
pub fn proc_cgroup_v2(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim_end().to_string())
}

/// One line of `/proc/self/mountinfo` (proc(5)): the fields this crate needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Field 4: the path within the filesystem that is the root of this mount (`/` usually).
    pub root: String,
    /// Field 5: where it is mounted, with `\040`-style escapes decoded.
    pub mount_point: PathBuf,
    /// The filesystem type after the ` - ` separator (`cgroup2`, `cgroup`, `tmpfs`).
    pub fs_type: String,
}

/// Parse `/proc/self/mountinfo`. Lines that do not parse are skipped.
pub fn mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (pre, post) = line.split_once(" - ")?;
            let fields: Vec<&str> = pre.split(' ').collect();
            let root = unescape_octal(fields.get(3)?);
            let mount_point = PathBuf::from(unescape_octal(fields.get(4)?));
            let fs_type = post.split(' ').next()?.to_string();
            Some(Mount {
                root,
                mount_point,
                fs_type,
            })
        })
        .collect()
}

/// Whether the cgroup2 hierarchy is mounted with `nsdelegate` (a super option, the same on every
/// cgroup2 mount: the first one's options after ` - cgroup2 <source> `); `None` without cgroup2.
pub fn cgroup2_nsdelegate(text: &str) -> Option<bool> {
    cgroup2_has_option(text, "nsdelegate")
}

/// Whether the first cgroup2 mount in `mountinfo` has the super option `option` (`nsdelegate`,
/// `favordynmods`, `memory_recursiveprot`); `None` without a cgroup2 mount.
pub fn cgroup2_has_option(text: &str, option: &str) -> Option<bool> {
    text.lines().find_map(|line| {
        let (_, post) = line.split_once(" - ")?;
        let mut f = post.split(' ');
        (f.next()? == "cgroup2").then(|| {
            f.nth(1)
                .is_some_and(|opts| opts.split(',').any(|o| o == option))
        })
    })
}

/// The controllers that cgroup v1 hierarchies hold (their mounts' super options: `memory`,
/// `pids`, `cpu`, ...; v1's `blkio` is cgroup2's `io`), in the order found, each once. A
/// controller a v1 hierarchy holds is not available to cgroup2 (a hybrid host).
pub fn cgroup1_controllers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some((_, post)) = line.split_once(" - ") else {
            continue;
        };
        let mut f = post.split(' ');
        if f.next() != Some("cgroup") {
            continue;
        }
        for o in f.nth(1).unwrap_or("").split(',') {
            let c = if o == "blkio" { "io" } else { o };
            let generic = matches!(
                c,
                "rw" | "ro" | "clone_children" | "noprefix" | "xattr" | "cpuset_v2_mode"
            ) || c.contains('=');
            if !generic && !c.is_empty() && !out.iter().any(|x| x == c) {
                out.push(c.to_string());
            }
        }
    }
    out
}

/// The cgroup2 mounts in `mountinfo`, in order.
pub fn cgroup2_mounts(text: &str) -> Vec<Mount> {
    mountinfo(text)
        .into_iter()
        .filter(|m| m.fs_type == "cgroup2")
        .collect()
}

fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A nested-keyed pressure file (`memory.pressure`, `cpu.pressure`, `io.pressure`):
/// `some avg10=0.00 avg60=0.00 avg300=0.00 total=0` and a `full …` line.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pressure {
    /// `some avg10`: the share of the last 10 s in which some task stalled, in percent.
    pub some_avg10: Option<f64>,
    /// `full avg10`: the share in which all non-idle tasks stalled (absent for `cpu` before 5.13).
    pub full_avg10: Option<f64>,
    /// `some total`: microseconds in which some task stalled, since the cgroup was made.
    pub some_total: Option<u64>,
    /// `full total`: microseconds in which all non-idle tasks stalled.
    pub full_total: Option<u64>,
}

/// Parse a PSI file. Unknown fields are ignored.
pub fn pressure(text: &str) -> Pressure {
    let mut p = Pressure::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let kind = it.next();
        let fields: Vec<&str> = it.collect();
        let field = |k: &str| fields.iter().find_map(|f| f.strip_prefix(k));
        let avg10 = field("avg10=").and_then(|v| v.parse().ok());
        let total = field("total=").and_then(|v| v.parse().ok());
        match kind {
            Some("some") => (p.some_avg10, p.some_total) = (avg10, total),
            Some("full") => (p.full_avg10, p.full_total) = (avg10, total),
            _ => {}
        }
    }
    p
}

/// A single-value limit file (`memory.max`, `pids.max`, `memory.high`, `cpu.weight`,
/// `memory.oom.group`): `max` or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No limit.
    Max,
    /// A number (bytes, processes, a weight, or 0/1).
    Value(u64),
}

impl serde::Serialize for Limit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Limit::Max => s.serialize_str("max"),
            Limit::Value(v) => s.serialize_u64(*v),
        }
    }
}

/// `"max"` or a number, as it is serialized.
impl<'de> serde::Deserialize<'de> for Limit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Limit;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"max\" or a non-negative integer")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Limit, E> {
                Ok(Limit::Value(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Limit, E> {
                u64::try_from(v)
                    .map(Limit::Value)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Limit, E> {
                match v {
                    "max" => Ok(Limit::Max),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Parse a single-value limit file. `None` when it is neither `max` nor a number.
pub fn limit(text: &str) -> Option<Limit> {
    match text.trim() {
        "max" => Some(Limit::Max),
        v => v.parse().ok().map(Limit::Value),
    }
}

/// A single number (`memory.current`, `memory.peak`, `pids.current`).
pub fn number(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// From `/proc/<pid>/status` (proc(5)): `VmRSS` and `VmSwap` in bytes. Kernel threads and
/// zombies have neither: `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcMemory {
    /// `VmRSS`, bytes.
    pub rss: Option<u64>,
    /// `VmSwap`, bytes.
    pub swap: Option<u64>,
}

/// Parse `/proc/<pid>/status` for `VmRSS` and `VmSwap` (`kB` units).
pub fn proc_status_memory(text: &str) -> ProcMemory {
    let kb = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|v| v * 1024)
    };
    ProcMemory {
        rss: kb("VmRSS:"),
        swap: kb("VmSwap:"),
    }
}

/// From `/proc/<pid>/stat` (proc(5)): what `place` checks before it moves a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Field 3, the state: `R`, `S`, `D`, `Z` (zombie), `X` (dead), `T`, `t`, `I`, ...
    pub state: char,
    /// Field 4, the parent's pid.
    pub ppid: u32,
    /// Field 9, the kernel's `PF_*` flags.
    pub flags: u64,
}

/// `PF_KTHREAD` in [`ProcStat::flags`]: a kernel thread (`include/linux/sched.h`).
pub const PF_KTHREAD: u64 = 0x0020_0000;

impl ProcStat {
    /// A kernel thread (`PF_KTHREAD`).
    pub fn kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }

    /// A zombie (`Z`) or dead (`X`) task: it runs no more.
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parse `/proc/<pid>/stat`. The command name (field 2) may hold spaces and parentheses, so the
/// fields are counted after its last `)`. `None` when the line does not have them.
pub fn proc_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    // pgrp, session, tty_nr, tpgid, then flags.
    let flags = f.nth(4)?.parse().ok()?;
    Some(ProcStat { state, ppid, flags })
}

/// Field 52 of `/proc/<pid>/stat`, `exit_code` (Linux 3.5+): the wait status a zombie leaves
/// for its parent (`waitpid(2)`'s form); `None` when the line has fewer fields.
pub fn proc_stat_exit_code(text: &str) -> Option<i32> {
    let rest = &text[text.rfind(')')? + 1..];
    // Field 3 (the state) is the first after the name; field 52 is the 50th.
    rest.split_whitespace().nth(49)?.parse().ok()
}

/// The number after `key` (`PPid:`, `Tgid:`, ...) on its line of `/proc/<pid>/status`; `None`
/// when the line is not there or holds no number.
pub fn proc_status_number(text: &str, key: &str) -> Option<u32> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
}

/// `TracerPid:` of `/proc/<pid>/status`: the process that traces it; `None` for 0 (none) or a
/// line that is not there.
pub fn proc_status_tracer(text: &str) -> Option<u32> {
    proc_status_number(text, "TracerPid:").filter(|&p| p != 0)
}

/// `Tgid:` of `/proc/<pid>/status`: the thread group (process) a task belongs to; a thread id
/// whose `Tgid` is not itself names a thread, not a process.
pub fn proc_status_tgid(text: &str) -> Option<u32> {
    proc_status_number(text, "Tgid:")
}

/// Whether the task of a `/proc/<pid>/status` text is dying: `SIGKILL` pending for it or its
/// thread group (`SigPnd:`/`ShdPnd:`, bit 8 of the hexadecimal mask), or exiting (`State:` `Z`
/// or `X`).
pub fn proc_status_dying(text: &str) -> bool {
    const SIGKILL_BIT: u64 = 1 << 8;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
    };
    let pending = |key: &str| {
        field(key)
            .and_then(|m| u64::from_str_radix(m, 16).ok())
            .is_some_and(|m| m & SIGKILL_BIT != 0)
    };
    let exiting = field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X'));
    pending("SigPnd:") || pending("ShdPnd:") || exiting
}

/// The pid in the innermost PID namespace, from `NSpid:` of `/proc/<pid>/status`, when the
/// process is in a namespace below the reader's (the line has more than one field).
pub fn proc_status_nspid_inner(text: &str) -> Option<u32> {
    let line = text.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 2 {
        return None;
    }
    f.last()?.parse().ok()
}

#[cfg(test)]
mod tests;
