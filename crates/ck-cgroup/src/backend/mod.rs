//! Backends: who makes and stops a module's cgroup. The cgroupfs backend is [`crate::module::Root`]
//! on a delegated subtree; the systemd backend ([`systemd`], behind the `systemd` feature) makes
//! each module a transient scope over D-Bus.

#[cfg(feature = "systemd")]
pub mod systemd;
