//! systemd over D-Bus (zbus 6, async API driven by `zbus::block_on`; no Tokio). Used only by
//! `doctor`: nothing on the spawn and kill paths connects to a bus.
//!
//! Interfaces: `org.freedesktop.systemd1.Manager` (`GetUnitByPID`, `GetUnit`, `Version`) and the
//! unit's `org.freedesktop.systemd1.Service` properties; see org.freedesktop.systemd1(5).

use zbus::{OwnedObjectPath, OwnedVariant};

const DEST: &str = "org.freedesktop.systemd1";
const PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";

/// Which manager to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bus {
    /// The system manager, on the system bus.
    System,
    /// The caller's user manager, on the session bus.
    User,
}

/// What systemd says about the unit that runs the service.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct UnitFacts {
    /// systemd's version (`Version`, e.g. `252.38-1~deb12u1`), and its leading number.
    pub version: String,
    /// The unit's name.
    pub unit: String,
    /// `Delegate`.
    pub delegate: Option<bool>,
    /// `DelegateControllers`.
    pub delegate_controllers: Option<Vec<String>>,
    /// `OOMPolicy`.
    pub oom_policy: Option<String>,
    /// `KillMode`.
    pub kill_mode: Option<String>,
    /// `TimeoutStopUSec`.
    pub timeout_stop_usec: Option<u64>,
    /// `ControlGroup`.
    pub control_group: Option<String>,
}

impl UnitFacts {
    /// The major version number (`252`).
    pub fn major(&self) -> Option<u32> {
        self.version
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|v| v.parse().ok())
    }
}

/// Why systemd could not be asked.
#[derive(Debug)]
pub enum Unavailable {
    /// No bus socket: systemd is not on the bus (a container, a host without systemd).
    NoBus(String),
    /// The bus answered with an error.
    Failed(String),
}

/// Ask the manager on `bus` for the unit named `unit`, or for the unit of `pid`.
pub fn unit_facts(bus: Bus, unit: Option<&str>, pid: u32) -> Result<UnitFacts, Unavailable> {
    zbus::block_on(async move {
        let conn = match bus {
            Bus::System => zbus::Connection::system().await,
            Bus::User => zbus::Connection::session().await,
        }
        .map_err(|e| Unavailable::NoBus(e.to_string()))?;
        let failed = |e: zbus::Error| Unavailable::Failed(e.to_string());
        let reply = match unit {
            Some(name) => {
                conn.call_method(Some(DEST), PATH, Some(MANAGER), "GetUnit", &(name,))
                    .await
            }
            None => {
                conn.call_method(Some(DEST), PATH, Some(MANAGER), "GetUnitByPID", &(pid,))
                    .await
            }
        }
        .map_err(failed)?;
        let path: OwnedObjectPath = reply.body().deserialize().map_err(failed)?;
        let get = |p: OwnedObjectPath, iface: &'static str, prop: &'static str| {
            let conn = conn.clone();
            async move {
                let r = conn
                    .call_method(
                        Some(DEST),
                        p.as_str(),
                        Some("org.freedesktop.DBus.Properties"),
                        "Get",
                        &(iface, prop),
                    )
                    .await
                    .ok()?;
                r.body().deserialize::<OwnedVariant>().ok()
            }
        };
        let root =
            OwnedObjectPath::try_from(PATH).map_err(|e| Unavailable::Failed(e.to_string()))?;
        let svc = "org.freedesktop.systemd1.Service";
        let version = get(root, MANAGER, "Version")
            .await
            .and_then(|v| String::try_from(v).ok())
            .unwrap_or_default();
        let unit_name = get(path.clone(), "org.freedesktop.systemd1.Unit", "Id")
            .await
            .and_then(|v| String::try_from(v).ok())
            .unwrap_or_default();
        // Scopes have the same properties on their own interface.
        let iface = if unit_name.ends_with(".scope") {
            "org.freedesktop.systemd1.Scope"
        } else {
            svc
        };
        Ok(UnitFacts {
            version,
            unit: unit_name,
            delegate: get(path.clone(), iface, "Delegate")
                .await
                .and_then(|v| bool::try_from(v).ok()),
            delegate_controllers: get(path.clone(), iface, "DelegateControllers")
                .await
                .and_then(|v| Vec::<String>::try_from(v).ok()),
            oom_policy: get(path.clone(), iface, "OOMPolicy")
                .await
                .and_then(|v| String::try_from(v).ok()),
            kill_mode: get(path.clone(), iface, "KillMode")
                .await
                .and_then(|v| String::try_from(v).ok()),
            timeout_stop_usec: get(path.clone(), iface, "TimeoutStopUSec")
                .await
                .and_then(|v| u64::try_from(v).ok()),
            control_group: get(path, iface, "ControlGroup")
                .await
                .and_then(|v| String::try_from(v).ok()),
        })
    })
}
