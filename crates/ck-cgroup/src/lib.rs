//! `ck_cgroup`: module cgroups for the ck-subc supervisor on a cgroup-v2 tree.
//!
//! Each module of the daemon gets its own leaf cgroup `subc-modules/<id>` beside the daemon's
//! leaf `daemon/`, inside the subtree that systemd delegated to the service. A module's process is
//! placed there before it can fork ([`spawn`]), the whole tree is found by membership rather than
//! by parent pid, and it is killed and removed as a set ([`Root::kill`]). A [`Sandbox`] is an
//! isolated root for tests: a fresh cgroup that is emptied and removed when it is dropped.
//!
//! Layers, as folders, each importing only from the layers below it (no import cycle):
//!
//! ```text
//! doctor/, sandbox            checks of a host; isolated roots for tests
//! backend/                    Backend: cgroupfs (a Root) or systemd scopes (feature "systemd")
//! policy, telemetry/, discover  limits from a file; status and watch; finding the service root
//! module/                     Root: a service root's operations (init, create, place, spawn, stop, prune)
//! limits, stop/, spawn/, signals  the limit table; one file per kill mechanism; clone3 and the pre-exec path
//! cgroup/                     CgroupDir (every access beneath it by openat2), parse, tree walks, waits
//! layout, id, error           where modules live and their names; ids; errors
//! ```
//!
//! A new kill mechanism is a file in [`stop`] and an arm of its private `Mechanism`; a new
//! limit is a row of [`limits`] with its parser; a new backend operation is a method of
//! [`backend::Backend`]. The `systemd` feature (off by default) adds the D-Bus backend and zbus.
//!
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html>.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod cgroup;
pub mod discover;
pub mod doctor;
pub mod error;
pub mod id;
pub mod layout;
pub mod limits;
pub mod module;
pub mod policy;
pub mod sandbox;
pub mod spawn;
pub mod stop;
pub mod telemetry;

#[cfg(test)]
mod json_tests;

pub use cgroup::CgroupDir;
pub use error::{Class, Error, ErrorKind, Result};
pub use id::{DirName, ModuleId};
pub use layout::{Layout, ModuleRef};
pub use module::Root;
pub use sandbox::Sandbox;
