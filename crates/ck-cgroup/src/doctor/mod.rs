//! `doctor`: is this host and this service ready for per-module cgroups? One check per line,
//! and for each failure the fix.
//!
//! Two steps: [`gather`] reads the machine into a [`Facts`] (the only I/O), [`judge`] turns the
//! facts into [`Check`]s without any, so that each check is tested on facts built by hand.

use std::path::Path;

use serde::Serialize;

pub mod gather;
pub mod judge;
pub mod oomd_checks;

pub use gather::Facts;
pub use judge::nsdelegate_check;

use gather::Bus;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Passed.
    Ok,
    /// Failed: the service is not ready.
    Fail,
    /// Could not be checked, or a limitation that does not stop the service (no systemd on the
    /// bus, an old kernel with a fall-back).
    Warn,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// How it came out.
    pub outcome: Outcome,
    /// What was found.
    pub detail: String,
    /// What to change, for a failure or a warning.
    pub fix: Option<String>,
}

/// Every check, and whether the service is ready (no failure).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The checks, in order.
    pub checks: Vec<Check>,
    /// No check failed.
    pub ready: bool,
}

impl Report {
    /// The report of `checks`: ready when none failed.
    pub fn new(checks: Vec<Check>) -> Report {
        let ready = checks.iter().all(|c| c.outcome != Outcome::Fail);
        Report { checks, ready }
    }
}

/// Run every check. `root`: the explicit root, else discovered; `unit`: the unit to ask systemd
/// about, else the unit of the calling process.
pub fn doctor(root: Option<&Path>, unit: Option<&str>) -> Report {
    doctor_for(root, unit, None)
}

/// [`doctor`] for a backend: with `scopes` (the systemd backend and its manager), the service's
/// own cgroup is not the modules' root, so instead of the root checks it checks that the manager
/// answers and which controllers it can give the module scopes, and `Delegate=no` is fine.
pub fn doctor_for(root: Option<&Path>, unit: Option<&str>, scopes: Option<Bus>) -> Report {
    Report::new(judge::judge(&gather::gather(root, unit, scopes)))
}
