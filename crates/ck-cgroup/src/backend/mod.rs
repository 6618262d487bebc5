//! Backends: who makes and stops a module's cgroup. The cgroupfs backend is [`crate::module::Root`]
//! on a delegated subtree; the systemd backend ([`systemd`], behind the `systemd` feature) makes
//! each module a transient scope over D-Bus.

#[cfg(feature = "systemd")]
pub mod systemd;

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
    /// This build has no D-Bus client: the library without its `systemd` feature.
    NotBuilt,
}
