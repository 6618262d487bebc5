//! What a `run` module keeps resident while its command runs: the helper that waits for it (the
//! parent, which reports and removes the module at the end) and the PID namespace's init (which
//! takes the namespace down with it). Per module: both processes' `Pss_Anon`
//! (`/proc/<pid>/smaps_rollup`: their anonymous memory, what they share with each other counted
//! once), which the goal is for, and their page tables (`VmPTE` of `/proc/<pid>/status`), each
//! summed over the two, at 1, 100 and 1,000 modules of `run rN -- sleep 600` at once.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Res, median};

/// One size: how many modules, and the medians of their KiB (both helpers together).
pub struct Resident {
    pub modules: usize,
    /// `Pss_Anon` of both.
    pub anon_kib: f64,
    /// `VmPTE` of both.
    pub pte_kib: f64,
    /// The medians of the parent's and the init's `Pss_Anon`, KiB.
    pub parent_kib: f64,
    pub init_kib: f64,
}

/// A field of `/proc/<pid>/<file>` in kB (`Pss_Anon:`, `VmPTE:`).
fn kb(pid: u32, file: &str, key: &str) -> Res<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no {key} in /proc/{pid}/{file}").into())
}

/// A process's `Pss_Anon` and page tables, KiB.
fn anon_and_pte(pid: u32) -> Res<(f64, f64)> {
    Ok((
        kb(pid, "smaps_rollup", "Pss_Anon:")? as f64,
        kb(pid, "status", "VmPTE:")? as f64,
    ))
}

/// The child of `pid` (the init `run` made), once there is one with its own child (the command).
fn init_of(pid: u32, deadline: Instant) -> Res<u32> {
    loop {
        let kids =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if let Some(init) = kids.split_whitespace().next().and_then(|k| k.parse().ok()) {
            let grand = std::fs::read_to_string(format!("/proc/{init}/task/{init}/children"))
                .unwrap_or_default();
            if !grand.trim().is_empty() {
                return Ok(init);
            }
        }
        if Instant::now() > deadline {
            return Err(format!("run {pid}: no init with a command after 60 s").into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn stop(children: &mut Vec<Child>) {
    for c in children.iter() {
        if let Some(p) = rustix::process::Pid::from_raw(c.id() as i32) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::TERM);
        }
    }
    for mut c in children.drain(..) {
        let _ = c.wait();
    }
}

/// `n` modules of `run rN -- sleep 600` at once, measured, then stopped (SIGTERM to each
/// helper: `run` relays it to the command and removes the module).
fn one(sandbox: &Path, bin: &Path, n: usize) -> Res<Resident> {
    let mut children = Vec::with_capacity(n);
    let measured = (|| -> Res<Resident> {
        for i in 0..n {
            let c = Command::new(bin)
                .arg("--root")
                .arg(sandbox)
                .args(["run", &format!("r{i:04}"), "--", "sleep", "600"])
                .env_remove("CK_CGROUP_ROOT")
                .env_remove("CK_CGROUP_POLICY")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            children.push(c);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let (mut anons, mut ptes, mut parents, mut inits) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for c in &children {
            let init = init_of(c.id(), deadline)?;
            let ((pa, pp), (ia, ip)) = (anon_and_pte(c.id())?, anon_and_pte(init)?);
            parents.push(pa);
            inits.push(ia);
            anons.push(pa + ia);
            ptes.push(pp + ip);
        }
        Ok(Resident {
            modules: n,
            anon_kib: median(&anons),
            pte_kib: median(&ptes),
            parent_kib: median(&parents),
            init_kib: median(&inits),
        })
    })();
    stop(&mut children);
    measured
}

/// Each size in `sizes`.
pub fn measure(sandbox: &Path, bin: &Path, sizes: &[usize]) -> Res<Vec<Resident>> {
    sizes.iter().map(|&n| one(sandbox, bin, n)).collect()
}
