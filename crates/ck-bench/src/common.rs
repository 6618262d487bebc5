//! What the benchmarks share: the machine line of the header, the statistics, the child reaping
//! of a subreaper, and the check that no sandbox is left.

use std::error::Error;
use std::fs::{self, File};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::process::WaitOptions;

pub type Res<T> = Result<T, Box<dyn Error>>;

/// Print `title` and the machine: cpus, cpu model, kernel.
pub fn print_machine(title: &str) -> Res<()> {
    let cpus =
        std::thread::available_parallelism().map_or("unknown".to_string(), |n| n.to_string());
    let cpuinfo = fs::read_to_string("/proc/cpuinfo")?;
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown", |(_, m)| m.trim());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")?;
    println!("{title}");
    println!("machine: {cpus} cpus, {model}");
    println!("kernel:  {}", kernel.trim());
    Ok(())
}

/// `/dev/null` for a child's stdio.
pub fn dev_null() -> Res<OwnedFd> {
    Ok(File::options()
        .read(true)
        .write(true)
        .open("/dev/null")?
        .into())
}

/// The process runs `sleep` (the shell that forked it is done with it).
pub fn is_sleep(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == "sleep")
}

/// Make the modules `names(i)` for `i` in `range` (those that exist are kept), spawn a `sleep
/// 600` into every `every`th (by `i`), and wait at most `timeout` until each is `sleep`. Returns
/// how many were spawned; they are reaped with everything else once the sandbox is destroyed.
pub fn populate(
    root: &ck_cgroup::Root,
    range: std::ops::Range<usize>,
    names: impl Fn(usize) -> String,
    every: usize,
    timeout: std::time::Duration,
) -> Res<usize> {
    let mut pids = Vec::new();
    for i in range {
        let id = ck_cgroup::ModuleId::new(&names(i))?;
        let _made = root.create(&id)?;
        if i % every == 0 {
            let mut cmd = ck_cgroup::spawn::ModuleCommand::new("/bin/sleep");
            cmd.arg("600")
                .stdin(dev_null()?)
                .stdout(dev_null()?)
                .stderr(dev_null()?);
            pids.push(root.spawn(&id, &cmd)?.id());
        }
    }
    let deadline = std::time::Instant::now() + timeout;
    while !pids.iter().all(|p| is_sleep(*p)) {
        if std::time::Instant::now() >= deadline {
            return Err(
                format!("the spawned processes are not all `sleep` after {timeout:?}").into(),
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Ok(pids.len())
}

/// Reap every exited child (the bench is a subreaper, so orphans of its trees are its children).
pub fn reap_all() {
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

pub fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Say that the sandbox and every module in it are gone, or name what is left and fail.
pub fn report_cleanup(mount: &Path, sandbox: &Path) -> Res<()> {
    let left = leftovers(mount, sandbox)?;
    println!();
    if left.is_empty() {
        println!(
            "cleanup: the sandbox {} and every module in it are gone",
            sandbox.display()
        );
        return Ok(());
    }
    for p in &left {
        println!("cleanup: LEFT BEHIND {}", p.display());
    }
    Err("the run left cgroup directories behind".into())
}

/// The sandbox, if it is still there, and any other sandbox of this process under `mount`.
fn leftovers(mount: &Path, sandbox: &Path) -> Res<Vec<PathBuf>> {
    let mut left = Vec::new();
    if sandbox.exists() {
        left.push(sandbox.to_path_buf());
    }
    let prefix = format!("{}{}-", ck_cgroup::sandbox::PREFIX, std::process::id());
    for entry in fs::read_dir(mount)?.flatten() {
        let p = entry.path();
        if entry.file_name().to_string_lossy().starts_with(&prefix) && !left.contains(&p) {
            left.push(p);
        }
    }
    Ok(left)
}

/// The helper to time: `CK_CGROUP_BIN` when set, else `built`, the one cargo built beside the
/// bench (its `env!("CARGO_BIN_EXE_ck-cgroup")`).
pub fn binary(built: &str) -> PathBuf {
    std::env::var_os("CK_CGROUP_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(built))
}

/// Print the header's cgroup2 line (the mount and its controllers) and the binary's.
pub fn print_cgroup_and_binary(mount: &Path, bin: &Path) -> Res<()> {
    let controllers = fs::read_to_string(mount.join("cgroup.controllers"))?;
    println!(
        "cgroup2: {} (controllers: {})",
        mount.display(),
        if controllers.trim().is_empty() {
            "none"
        } else {
            controllers.trim()
        }
    );
    println!("binary:  {}", bin.display());
    Ok(())
}

/// Milliseconds since `t0`.
pub fn ms_since(t0: std::time::Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

/// wait4(pid): the raw wait status and ru_maxrss (KiB).
pub fn wait4(pid: i32) -> Res<(i32, u64)> {
    wait4_usage(pid).map(|(status, u)| (status, u.kib))
}

/// What `wait4` says a process used: peak RSS, page faults, CPU time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// `ru_maxrss`, KiB.
    pub kib: u64,
    /// `ru_minflt + ru_majflt`.
    pub faults: u64,
    /// `ru_utime + ru_stime`, milliseconds (the kernel's task clock, at its accounting grain).
    pub cpu_ms: f64,
}

/// wait4(pid): the raw wait status and what the process used.
pub fn wait4_usage(pid: i32) -> Res<(i32, Usage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    loop {
        // SAFETY: valid pointers to locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            let u = Usage {
                kib: ru.ru_maxrss as u64,
                faults: (ru.ru_minflt + ru.ru_majflt) as u64,
                cpu_ms: ms(ru.ru_utime) + ms(ru.ru_stime),
            };
            return Ok((status, u));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(format!("wait4 {pid}: {e}").into());
        }
    }
}
