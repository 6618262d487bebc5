//! NVIDIA's per-process device memory, from the driver's own tool:
//! `nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv,noheader,nounits`,
//! one line per process and GPU: its pid (in the host's PID namespace), the GPU's PCI bus id, and
//! the memory it holds on that GPU in MiB (`[N/A]` where the driver does not give it).
//!
//! Why a program and not the library behind it: the helper is a static binary, and a static
//! glibc cannot reliably `dlopen` `libnvidia-ml.so`; `nvidia-smi` ships with the driver and is
//! the driver's accounting as the driver reports it (docs/design.md, "Device memory").

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The source of a figure read from it.
pub const SOURCE: &str = "nvidia-smi --query-compute-apps used_memory";

/// The arguments of the query.
pub const ARGS: [&str; 2] = [
    "--query-compute-apps=pid,gpu_bus_id,used_memory",
    "--format=csv,noheader,nounits",
];

/// How long `nvidia-smi` may take before it is killed and the figures are unknown: a driver
/// that hangs must not hang `status` (or `top`, or a scrape).
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// One process's memory on one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputeApp {
    /// Its pid, in the host's PID namespace.
    pub pid: u32,
    /// The GPU's PCI address, as the kernel writes it (`0000:3b:00.0`).
    pub device: String,
    /// Bytes it holds there; `None` where the driver said `[N/A]` (or another bracketed word).
    pub bytes: Option<u64>,
}

/// A PCI bus id as `nvidia-smi` writes it (`00000000:3B:00.0`) as the kernel does
/// (`0000:3b:00.0`), so that it names the same device as `drm-pdev` and `dmem.current` do.
pub fn pci_address(bus_id: &str) -> String {
    let lower = bus_id.trim().to_ascii_lowercase();
    match lower.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 && domain.chars().all(|c| c == '0') => {
            format!("0000:{rest}")
        }
        _ => lower,
    }
}

/// The processes in the query's output; `Err` naming the first line that is not one (the tool
/// changed, or printed an error on stdout). No line, or NVIDIA's "No running processes found", is
/// none.
pub fn parse(text: &str) -> Result<Vec<ComputeApp>, String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("No running") {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = || format!("nvidia-smi printed a line that is not pid, bus id, MiB: {line:?}");
        let [pid, bus, mib] = fields[..] else {
            return Err(bad());
        };
        let pid: u32 = pid.parse().map_err(|_| bad())?;
        let bytes = if mib.starts_with('[') {
            None
        } else {
            Some(
                mib.parse::<u64>()
                    .ok()
                    .and_then(|m| m.checked_mul(1 << 20))
                    .ok_or_else(bad)?,
            )
        };
        out.push(ComputeApp {
            pid,
            device: pci_address(bus),
            bytes,
        });
    }
    Ok(out)
}

/// Each pid's entries.
pub fn by_pid(apps: Vec<ComputeApp>) -> BTreeMap<u32, Vec<ComputeApp>> {
    let mut out: BTreeMap<u32, Vec<ComputeApp>> = BTreeMap::new();
    for a in apps {
        out.entry(a.pid).or_default().push(a);
    }
    out
}

/// Run the query with `program`, killed after `timeout`; its stdout, or why there is none (one
/// line: could not run, killed at the timeout, exited non-zero with its first stderr line).
pub fn query(program: &Path, timeout: Duration) -> Result<String, String> {
    let shown = program.display();
    let mut child = Command::new(program)
        .args(ARGS)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{shown} could not be run: {e}"))?;
    // The pidfd before anything can reap it: the kill at the timeout reaches this child only.
    let pidfd = rustix::process::Pid::from_raw(child.id() as i32)
        .map(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()));
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut err = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut out);
        }
        if let Some(s) = stderr.as_mut() {
            let _ = s.take(4096).read_to_end(&mut err);
        }
        let _ = tx.send((out, err));
    });
    let got = rx.recv_timeout(timeout);
    if got.is_err()
        && let Some(Ok(fd)) = &pidfd
    {
        let _ = rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
    }
    let status = child.wait();
    // At the timeout the reader is left to end on its own: a process the tool started may
    // hold its pipes open after it was killed.
    if got.is_ok() {
        let _ = reader.join();
    }
    let (out, err) = got.map_err(|_| {
        format!(
            "{shown} did not answer within {} s and was killed (is the driver hung?)",
            timeout.as_secs()
        )
    })?;
    match status {
        Ok(s) if s.success() => Ok(String::from_utf8_lossy(&out).into_owned()),
        Ok(s) => {
            let err = String::from_utf8_lossy(&err);
            let out = String::from_utf8_lossy(&out);
            let first = err
                .lines()
                .chain(out.lines())
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("no message");
            Err(format!(
                "{shown} failed ({s}): {}",
                crate::id::shown_message(first)
            ))
        }
        Err(e) => Err(format!("{shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_output_is_read_per_process_and_gpu() {
        let path = format!(
            "{}/tests/fixtures/gpu/nvidia-smi-compute-apps.csv",
            env!("CARGO_MANIFEST_DIR")
        );
        let apps = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(apps.len(), 4);
        assert_eq!(
            apps[0],
            ComputeApp {
                pid: 4242,
                device: "0000:3b:00.0".into(),
                bytes: Some(2210 << 20)
            }
        );
        assert_eq!(apps[3].bytes, None, "[N/A] is unknown, never 0");
        let by = by_pid(apps);
        assert_eq!(by[&4243].len(), 2, "one process on two GPUs");
    }

    #[test]
    fn nothing_running_is_none_and_a_changed_format_is_an_error() {
        assert_eq!(parse(""), Ok(vec![]));
        assert_eq!(parse("No running processes found\n"), Ok(vec![]));
        let e = parse("pid, gpu_bus_id, used_gpu_memory [MiB]\n").unwrap_err();
        assert!(e.contains("not pid, bus id, MiB"), "{e}");
        assert!(parse("1, 00000000:01:00.0, 12 MiB\n").is_err());
        assert!(parse("1, 00000000:01:00.0\n").is_err());
    }

    #[test]
    fn bus_ids_are_written_as_the_kernel_writes_them() {
        assert_eq!(pci_address("00000000:3B:00.0"), "0000:3b:00.0");
        assert_eq!(pci_address("00000001:3B:00.0"), "00000001:3b:00.0");
        assert_eq!(pci_address("0000:3b:00.0"), "0000:3b:00.0");
    }

    #[test]
    fn a_tool_that_fails_hangs_or_is_missing_is_one_line() {
        let sh = |script: &str| {
            let dir = std::env::temp_dir().join(format!(
                "ck-nvidia-smi-{}-{}",
                std::process::id(),
                script.len()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join("nvidia-smi");
            std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            (dir, p)
        };
        let (d1, fails) = sh(
            "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2; exit 9",
        );
        let e = query(&fails, TIMEOUT).unwrap_err();
        assert!(e.contains("could not communicate"), "{e}");
        let (d2, hangs) = sh("exec sleep 600");
        let e = query(&hangs, Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("did not answer within"), "{e}");
        let (d3, ok) = sh("echo \"$1\"; echo \"$2\"");
        assert_eq!(
            query(&ok, TIMEOUT).unwrap(),
            format!("{}\n{}\n", ARGS[0], ARGS[1])
        );
        let e = query(Path::new("/nonexistent/nvidia-smi"), TIMEOUT).unwrap_err();
        assert!(e.contains("could not be run"), "{e}");
        for d in [d1, d2, d3] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
