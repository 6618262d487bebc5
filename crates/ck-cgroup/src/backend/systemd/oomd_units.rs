//! systemd-oomd as `doctor` sees it over D-Bus (never on the spawn or kill path): whether
//! `systemd-oomd.service` is active on the system manager, and `ManagedOOMSwap=` and
//! `ManagedOOMMemoryPressure=` of the service and of each slice above it (the units whose cgroups
//! systemd-oomd monitors: it walks down from those, the service's delegated subtree included).

use zbus::OwnedVariant;

use super::manager::{Manager, unit_interface};
use crate::backend::{Bus, MonitorUnit, OomdUnits};

/// The unit systemd-oomd runs as.
pub const OOMD_UNIT: &str = "systemd-oomd.service";

/// At most this many slices above the service (a chain is a few deep).
const MAX_DEPTH: usize = 16;

/// Ask the managers: the system manager for systemd-oomd's state, the manager on `bus` for the
/// chain from `unit` (the service) up to `-.slice`.
pub fn oomd_units(bus: Bus, unit: &str) -> OomdUnits {
    let active = Manager::connect(Bus::System)
        .map_err(|e| e.to_string())
        .and_then(|m| m.active_state(OOMD_UNIT).map_err(|e| e.to_string()));
    let chain = Manager::connect(bus)
        .map_err(|e| e.to_string())
        .and_then(|m| m.oomd_chain(unit).map_err(|e| e.to_string()));
    OomdUnits { active, chain }
}

impl Manager {
    /// The unit's `ActiveState`; `None` when it is not loaded.
    pub fn active_state(&self, unit: &str) -> crate::error::Result<Option<String>> {
        zbus::block_on(async move {
            let Some(path) = self.unit_path(unit).await? else {
                return Ok(None);
            };
            let v = self
                .get(&path, "org.freedesktop.systemd1.Unit", "ActiveState", unit)
                .await?;
            Ok(String::try_from(v).ok())
        })
    }

    /// `unit` and each slice above it (`Slice` of each), with their `ManagedOOM*` properties.
    pub fn oomd_chain(&self, unit: &str) -> crate::error::Result<Vec<MonitorUnit>> {
        zbus::block_on(async move {
            let mut out = Vec::new();
            let mut name = unit.to_string();
            for _ in 0..MAX_DEPTH {
                let Some(path) = self.unit_path(&name).await? else {
                    break;
                };
                let iface = unit_interface(&name);
                let get = |prop: &'static str| {
                    let (p, n) = (path.clone(), name.clone());
                    async move { self.get(&p, iface, prop, &n).await.ok() }
                };
                let string = |v: Option<OwnedVariant>| v.and_then(|v| String::try_from(v).ok());
                let parent = string(get("Slice").await).unwrap_or_default();
                out.push(MonitorUnit {
                    unit: name.clone(),
                    swap: string(get("ManagedOOMSwap").await),
                    pressure: string(get("ManagedOOMMemoryPressure").await),
                    pressure_limit: get("ManagedOOMMemoryPressureLimit").await.and_then(|v| {
                        u32::try_from(&v)
                            .map(u64::from)
                            .ok()
                            .or_else(|| u64::try_from(v).ok())
                    }),
                });
                if parent.is_empty() || parent == name {
                    break;
                }
                name = parent;
            }
            Ok(out)
        })
    }
}
