//! The cgroup2 mount's options (the header prints them) and its remount with or without
//! `favordynmods` (section 1 measures both).

use std::ffi::CString;
use std::fs;
use std::path::Path;

use crate::common::Res;

/// The mount options and the superblock options of the cgroup2 mount at `mount`.
pub fn super_opts(mount: &Path) -> Res<(String, String)> {
    let mi = fs::read_to_string("/proc/self/mountinfo")?;
    let want = mount.to_string_lossy();
    for line in mi.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(dash) = f.iter().position(|w| *w == "-") else {
            continue;
        };
        if f.len() > 5 && f[4] == want && f.get(dash + 1) == Some(&"cgroup2") {
            return Ok((f[5].to_string(), f.get(dash + 3).unwrap_or(&"").to_string()));
        }
    }
    Err(format!("no cgroup2 mount at {want} in /proc/self/mountinfo").into())
}

/// Remount the cgroup2 hierarchy with its superblock options plus (or minus) `favordynmods`,
/// keeping its mount flags. Ok(false): the kernel refused the option (EINVAL).
pub fn remount(mount: &Path, favor: bool) -> Res<bool> {
    let (mopts, sopts) = super_opts(mount)?;
    let mut flags: libc::c_ulong = libc::MS_REMOUNT;
    for o in mopts.split(',') {
        flags |= match o {
            "ro" => libc::MS_RDONLY,
            "nosuid" => libc::MS_NOSUID,
            "nodev" => libc::MS_NODEV,
            "noexec" => libc::MS_NOEXEC,
            "relatime" => libc::MS_RELATIME,
            "noatime" => libc::MS_NOATIME,
            _ => 0,
        };
    }
    let mut data: Vec<&str> = sopts
        .split(',')
        .filter(|o| !matches!(*o, "rw" | "ro" | "favordynmods" | ""))
        .collect();
    if favor {
        data.push("favordynmods");
    }
    let data = CString::new(data.join(","))?;
    let target = CString::new(mount.as_os_str().as_encoded_bytes())?;
    // SAFETY: NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::mount(
            c"cgroup2".as_ptr(),
            target.as_ptr(),
            c"cgroup2".as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINVAL) && favor {
        return Ok(false);
    }
    Err(format!("remount {} with {:?}: {e}", mount.display(), data).into())
}
