//! The second try at removing the sandbox, when `Sandbox::destroy` failed under load.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::reap_all;

/// How long the second try at removing the sandbox may take.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The second try at removing the sandbox (and only it): `cgroup.kill`, then, once it is empty,
/// its directories deepest first; for at most [`CLEANUP_TIMEOUT`]. What is left after that is
/// named by `report_cleanup`.
pub fn remove_again(sandbox: &Path) {
    let deadline = Instant::now() + CLEANUP_TIMEOUT;
    while Instant::now() < deadline {
        reap_all();
        let _ = fs::write(sandbox.join("cgroup.kill"), "1");
        let empty = fs::read_to_string(sandbox.join("cgroup.events"))
            .is_ok_and(|e| e.lines().any(|l| l == "populated 0"));
        if empty && remove_deepest_first(sandbox).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn remove_deepest_first(dir: &Path) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_deepest_first(&entry.path())?;
        }
    }
    fs::remove_dir(dir)
}
