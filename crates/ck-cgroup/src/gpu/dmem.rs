//! `dmem.current`, the device-memory controller's (kernel 6.14) figure of a cgroup: one
//! `drm/<PCI address>/<region> <bytes>` line per region (`Documentation/admin-guide/cgroup-v2.rst`,
//! "DMEM Interface Files"). It counts what the cgroup and its descendants hold, charged by the
//! driver when the memory was allocated, so no process needs to be looked at.

use std::collections::BTreeMap;

use super::drm_fdinfo::device_local;

/// The source of a figure read from it.
pub const SOURCE: &str = "dmem.current";

/// The device-local memory of each device in a `dmem.current` text: PCI address (or the region's
/// device part as written) to bytes, the regions that are not device-local (`stolen`, system
/// memory) left out. A line that is not `<name> <bytes>` is skipped.
pub fn parse(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(name), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(bytes) = value.parse::<u64>() else {
            continue;
        };
        // `drm/<device>/<region>`; a device part with `/` in it is kept whole.
        let Some((device, region)) = name.strip_prefix("drm/").and_then(|r| r.rsplit_once('/'))
        else {
            continue;
        };
        if device_local(region) {
            *out.entry(device.to_string()).or_insert(0) += bytes;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vram_is_counted_per_device_and_stolen_is_not() {
        let path = format!(
            "{}/tests/fixtures/gpu/dmem.current",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).unwrap();
        let got = parse(&text);
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [("0000:03:00.0".to_string(), 12550144)]
        );
        assert!(parse("").is_empty());
        assert!(parse("drm/0000:03:00.0/vram0 max\nnonsense\n").is_empty());
    }
}
