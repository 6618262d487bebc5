//! Section 5: memory. The peak RSS of `exec`, `run`, `list` and `status` (wait4's `ru_maxrss`
//! through `peakrss`, which keeps the peak across `execve`, and `VmHWM` while `run` is
//! resident), with the rows sections 3 and 4 recorded.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{Res, reap_all};
use crate::config::{Ctx, TIMEOUT};
use crate::helpers::{ck, peak_rss, status_kib, wait4};

pub fn section_memory(ctx: &mut Ctx) -> Res<()> {
    let mut rows: Vec<(String, Option<u64>, &'static str)> = Vec::new();
    const HOW: &str = "peakrss (wait4 ru_maxrss)";
    match peak_rss(ctx, Some(Path::new("/bin/true")), &[])? {
        None => println!("\n(section 5: no peakrss tool: only the VmHWM figures)"),
        Some(kib) => {
            rows.push(("/bin/true (reference)".into(), Some(kib), HOW));
            let kib = peak_rss(ctx, None, &["--version"])?;
            rows.push(("ck-cgroup --version".into(), kib, HOW));
            let kib = peak_rss(ctx, None, &["exec", "r-exec", "--", "/bin/true"])?;
            let _ = ctx.root.remove("r-exec")?;
            rows.push((
                "ck-cgroup exec -- /bin/true".into(),
                kib,
                "peakrss (ru_maxrss, kept across execve)",
            ));
        }
    }
    // run: resident for the module's life.
    let mut child = ck(ctx, &["run", "r-run", "--", "/bin/sleep", "600"]).spawn()?;
    let pid = child.id();
    let events = ctx.rpath.join("subc-modules/r-run/cgroup.procs");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let procs = fs::read_to_string(&events).unwrap_or_default();
        let sleeping = procs.lines().any(|p| {
            fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
        });
        if sleeping {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err("run's sleep did not start".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let hwm = status_kib(pid, "VmHWM")?;
    let now = status_kib(pid, "VmRSS")?;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).ok_or("pid 0")?,
        rustix::process::Signal::TERM,
    )?;
    let _ = wait4(pid as i32)?;
    drop(child);
    rows.push((
        "ck-cgroup run (resident, module alive)".into(),
        Some(hwm),
        "VmHWM of the helper",
    ));
    rows.push((
        "ck-cgroup run (resident, now)".into(),
        Some(now),
        "VmRSS of the helper",
    ));
    rows.append(&mut ctx.rss);
    println!();
    println!("section 5: peak RSS");
    println!("{:<52} {:>10}   read from", "process", "KiB");
    for (what, kib, how) in &rows {
        let kib = kib.map_or_else(|| "-".to_string(), |k| k.to_string());
        println!("{what:<52} {kib:>10}   {how}");
    }
    println!("goal: none given; the figures are recorded in docs/performance.md");
    reap_all();
    Ok(())
}
