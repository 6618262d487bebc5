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
