//! The memory a DRM client holds, from `/proc/<pid>/fdinfo/<fd>` of its DRM (or accel) file, as
//! the kernel's `Documentation/gpu/drm-usage-stats.rst` specifies it: `key: value` lines,
//! `drm-driver` (mandatory), `drm-client-id` (one per `struct drm_file`: a file shared by `dup`,
//! `fork` or fd passing shows the same id, so it is counted once), `drm-pdev` (the PCI address),
//! and per memory region `drm-resident-<region>` (or the deprecated `drm-memory-<region>`), a
//! number with an optional `KiB`/`MiB` unit.
//!
//! Only device-local regions are counted (amdgpu and xe `vram*`, i915 `local*`): the other
//! regions (`system*`, `gtt`, `cpu`, `stolen-*`) are host memory, which `memory.current` (or the
//! RSS sum) already counts.

use std::collections::BTreeMap;
use std::io;

/// One DRM client (one open DRM file) and the device memory it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrmClient {
    /// `drm-driver`.
    pub driver: String,
    /// `drm-pdev`, else `None` (a device that is not PCI).
    pub pdev: Option<String>,
    /// `drm-client-id`, else `None` (a driver before the key: each file counted on its own).
    pub client_id: Option<u64>,
    /// Bytes resident in each device-local region (`drm-resident-<region>`, else
    /// `drm-memory-<region>`).
    pub regions: BTreeMap<String, u64>,
}

impl DrmClient {
    /// The device it is on: its PCI address, else its driver's name.
    pub fn device(&self) -> String {
        self.pdev.clone().unwrap_or_else(|| self.driver.clone())
    }

    /// Its device memory, every device-local region together.
    pub fn bytes(&self) -> u64 {
        self.regions.values().sum()
    }
}

/// Whether a region of a driver's fdinfo (or of `dmem.current`) is the device's own memory.
pub fn device_local(region: &str) -> bool {
    region.starts_with("vram") || region.starts_with("local")
}

/// A number of the spec (`<uint>` with an optional unit `KiB`, `MiB`, `GiB`), in bytes; `None`
/// for anything else.
fn bytes_of(value: &str) -> Option<u64> {
    let mut parts = value.split_whitespace();
    let n: u64 = parts.next()?.parse().ok()?;
    let unit = match parts.next() {
        None => 1,
        Some("KiB") => 1 << 10,
        Some("MiB") => 1 << 20,
        Some("GiB") => 1 << 30,
        Some(_) => return None,
    };
    if parts.next().is_some() {
        return None;
    }
    n.checked_mul(unit)
}

/// The client in one fdinfo text; `None` where it is not a DRM client's (no `drm-driver`).
pub fn parse(text: &str) -> Option<DrmClient> {
    let mut driver = None;
    let mut pdev = None;
    let mut client_id = None;
    let mut resident = BTreeMap::new();
    let mut legacy = BTreeMap::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "drm-driver" => driver = Some(value.to_string()),
            "drm-pdev" => pdev = Some(value.to_string()),
            "drm-client-id" => client_id = value.parse().ok(),
            _ => {
                let (map, region) = if let Some(r) = key.strip_prefix("drm-resident-") {
                    (&mut resident, r)
                } else if let Some(r) = key.strip_prefix("drm-memory-") {
                    (&mut legacy, r)
                } else {
                    continue;
                };
                if device_local(region)
                    && let Some(b) = bytes_of(value)
                {
                    map.insert(region.to_string(), b);
                }
            }
        }
    }
    // `drm-resident-` where the driver gives it (the spec's), else the deprecated key.
    let regions = if resident.is_empty() {
        legacy
    } else {
        resident
    };
    Some(DrmClient {
        driver: driver?,
        pdev,
        client_id,
        regions,
    })
}

/// Whether a file a process holds open is a DRM or accel device node.
fn is_drm_node(target: &std::path::Path) -> bool {
    target.starts_with("/dev/dri/") || target.starts_with("/dev/accel/")
}

/// The DRM clients process `pid` holds open: each of its files (`/proc/<pid>/fd`) that is a DRM
/// or accel device node, read from `/proc/<pid>/fdinfo/<fd>`. `Err` where its files cannot be
/// listed (`NotFound`: it exited; `PermissionDenied`: another user's process, read without
/// `CAP_SYS_PTRACE`); a file closed while it is read is skipped.
pub fn clients_of(pid: u32) -> io::Result<Vec<DrmClient>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let e = e?;
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        if !is_drm_node(&target) {
            continue;
        }
        let fd = e.file_name();
        let Ok(text) =
            std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.to_string_lossy()))
        else {
            continue;
        };
        out.extend(parse(&text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/gpu/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn amdgpu_vram_is_counted_and_gtt_and_cpu_are_not() {
        let c = parse(&fixture("amdgpu.fdinfo")).unwrap();
        assert_eq!(c.driver, "amdgpu");
        assert_eq!(c.device(), "0000:03:00.0");
        assert_eq!(c.client_id, Some(11));
        assert_eq!(c.regions.keys().collect::<Vec<_>>(), ["vram"]);
        // drm-resident-vram (2150 MiB), not the deprecated drm-memory-vram beside it.
        assert_eq!(c.bytes(), 2150 << 20);
    }

    #[test]
    fn i915_local_memory_is_counted_and_system_memory_is_not() {
        let c = parse(&fixture("i915.fdinfo")).unwrap();
        assert_eq!((c.driver.as_str(), c.client_id), ("i915", Some(7)));
        assert_eq!(c.regions.keys().collect::<Vec<_>>(), ["local0"]);
        assert_eq!(c.bytes(), 512 << 10);
    }

    #[test]
    fn xe_vram0_in_kib() {
        let c = parse(&fixture("xe.fdinfo")).unwrap();
        assert_eq!(c.device(), "0000:03:00.0");
        assert_eq!(c.bytes(), 23992 << 10);
    }

    #[test]
    fn a_driver_with_the_deprecated_key_only_is_read_from_it() {
        let c = parse(&fixture("legacy.fdinfo")).unwrap();
        assert_eq!(c.client_id, Some(3));
        assert_eq!(c.bytes(), 1048576 << 10);
    }

    #[test]
    fn a_file_that_is_no_drm_client_and_values_out_of_the_spec() {
        // A socket's or a pipe's fdinfo: no drm-driver.
        assert_eq!(parse("pos:\t0\nflags:\t02\nmnt_id:\t9\n"), None);
        // A unit the spec does not have, a second word, a number that overflows: not counted.
        let c = parse(
            "drm-driver: x\ndrm-resident-vram: 5 TiB\ndrm-resident-vram1: 5 KiB x\n\
             drm-resident-vram2: 18446744073709551615 KiB\ndrm-resident-vram3: 7\n",
        )
        .unwrap();
        assert_eq!(
            c.regions.into_iter().collect::<Vec<_>>(),
            [("vram3".to_string(), 7)]
        );
        assert_eq!(c.pdev, None);
        assert_eq!(c.client_id, None);
    }

    #[test]
    fn this_process_holds_no_drm_client() {
        assert_eq!(clients_of(std::process::id()).unwrap(), Vec::new());
    }
}
