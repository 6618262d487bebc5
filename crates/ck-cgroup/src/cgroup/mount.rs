//! Where cgroup2 is mounted, from `/proc/self/mountinfo`.

use std::path::PathBuf;

use crate::cgroup::parse;
use crate::error::{Error, Result};

/// The cgroup2 mount point, from `/proc/self/mountinfo` (the first cgroup2 mount).
pub fn cgroup2_mount() -> Result<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| Error::failed(format!("failed to read /proc/self/mountinfo: {e}")))?;
    parse::cgroup2_mounts(&text)
        .into_iter()
        .next()
        .map(|m| m.mount_point)
        .ok_or_else(no_cgroup2)
}

/// Whether a cgroup v1 hierarchy holds `controller` (a hybrid host: then no cgroup2 directory
/// can enable it), from the super options of the v1 mounts in `/proc/self/mountinfo`. `false`
/// where that cannot be read.
pub fn controller_on_v1(controller: &str) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|t| {
        parse::cgroup1_controllers(&t)
            .iter()
            .any(|c| c == controller)
    })
}

pub(crate) fn no_cgroup2() -> Error {
    Error::bad_input("no cgroup2 filesystem is mounted (a cgroup-v1-only host)").with_hint(
        "boot with systemd.unified_cgroup_hierarchy=1, or mount cgroup2 (mount -t cgroup2 none /sys/fs/cgroup/unified)",
    )
    .with_kind(crate::error::ErrorKind::NoCgroup2)
}
