//! The guest bench's knobs (`VM_BENCH_*`, read once into [`Cfg`]) and what its sections share
//! ([`Ctx`], [`TIMEOUT`]).

use std::path::PathBuf;
use std::time::Duration;

use ck_cgroup::Root;

use crate::common::Res;

/// Longest wait for anything the bench waits on.
pub const TIMEOUT: Duration = Duration::from_secs(60);

pub struct Cfg {
    pub spawns: usize,
    pub lives: usize,
    pub at_once: usize,
    pub sizes: Vec<usize>,
    pub reps: usize,
    pub big: usize,
    pub big_reps: usize,
    pub watch_at: usize,
    pub watch_secs: u64,
    pub watch_events: usize,
    pub sections: Vec<usize>,
}

fn env_num(name: &str, default: usize) -> Res<usize> {
    match std::env::var(name) {
        Ok(v) => Ok(v.trim().parse().map_err(|e| format!("{name}={v}: {e}"))?),
        Err(_) => Ok(default),
    }
}

fn env_list(name: &str, default: &str) -> Res<Vec<usize>> {
    let v = std::env::var(name).unwrap_or_else(|_| default.to_string());
    let mut out = Vec::new();
    for w in v.split_whitespace() {
        out.push(w.parse().map_err(|e| format!("{name}={v}: {e}"))?);
    }
    Ok(out)
}

impl Cfg {
    pub fn from_env() -> Res<Cfg> {
        let mut sizes = env_list("VM_BENCH_SIZES", "100 1000 10000")?;
        sizes.sort_unstable();
        sizes.dedup();
        Ok(Cfg {
            spawns: env_num("VM_BENCH_SPAWNS", 15)?.max(1),
            lives: env_num("VM_BENCH_LIVES", 10)?.max(1),
            at_once: env_num("VM_BENCH_AT_ONCE", 50)?.max(1),
            sizes,
            reps: env_num("VM_BENCH_REPS", 3)?.max(1),
            big: env_num("VM_BENCH_BIG", 10_000)?,
            big_reps: env_num("VM_BENCH_BIG_REPS", 1)?.max(1),
            watch_at: env_num("VM_BENCH_WATCH_AT", 1000)?,
            watch_secs: env_num("VM_BENCH_WATCH_SECS", 60)? as u64,
            watch_events: env_num("VM_BENCH_WATCH_EVENTS", 10)?.max(1),
            sections: env_list("VM_BENCH_SECTIONS", "1 2 3 4 5")?,
        })
    }

    pub fn on(&self, s: usize) -> bool {
        self.sections.contains(&s)
    }
}

/// What the sections share.
pub struct Ctx<'a> {
    pub cfg: Cfg,
    pub root: &'a Root,
    /// The sandbox's isolated root (`--root` for the helper).
    pub rpath: PathBuf,
    pub bin: PathBuf,
    pub mount: PathBuf,
    /// Peak RSS figures for section 5: (what, KiB, how it was read).
    /// Peak RSS rows (KiB; `None`: could not be read, printed `-`).
    pub rss: Vec<(String, Option<u64>, &'static str)>,
}
