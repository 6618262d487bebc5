//! `ck_cgroup`: module cgroups for the ck-subc supervisor on a cgroup-v2 tree.
//!
//! Each module of the daemon gets its own leaf cgroup `subc-modules/<id>` beside the daemon's
//! leaf `daemon/`, inside the subtree that systemd delegated to the service. A module's process is
//! placed there before it can fork ([`spawn`]), the whole tree is found by membership rather than
//! by parent pid, and it is killed and removed as a set ([`Root::kill`]). A [`Sandbox`] is an
//! isolated root for tests: a fresh cgroup that is emptied and removed when it is dropped.
//!
//! Layers, each calling only downwards:
//! [`parse`] (kernel files to types) ← [`root`] (an open cgroup2 directory; every access beneath
//! it through `openat2`) ← [`module`] (operations on a service root) ← the `ck-cgroup` binary.
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

pub use cgroup::CgroupDir;
pub use error::{Class, Error, Result};
pub use id::{DirName, ModuleId};
pub use layout::{Layout, ModuleRef};
pub use module::Root;
pub use sandbox::Sandbox;
