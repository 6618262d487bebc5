//! `ck_cgroup`: module cgroups for the ck-subc supervisor on a cgroup-v2 tree.
//!
//! Each module of the daemon gets its own leaf cgroup `subc-modules/<id>` beside the daemon's
//! leaf `daemon/`, inside the subtree that systemd delegated to the service. A module's process is
//! placed there before it can fork ([`Root::spawn`], or [`Root::procs_fd`] with
//! [`spawn::place_before_exec`] for a [`std::process::Command`] of the daemon's own), the whole
//! tree is found by membership rather than by parent pid, and it is killed and removed as a set
//! ([`Root::stop`], [`Root::kill`]). A [`Sandbox`] is an isolated root for tests: a fresh cgroup
//! that is emptied and removed when it is dropped.
//!
//! ```no_run
//! use std::time::Duration;
//! use ck_cgroup::spawn::ModuleCommand;
//! use ck_cgroup::{ModuleId, Root};
//!
//! # fn main() -> ck_cgroup::Result<()> {
//! let root = Root::open(&ck_cgroup::discover::discover()?)?;
//! let _init = root.init()?;
//! let id = ModuleId::new("worker-1")?;
//! let mut child = root.spawn(&id, ModuleCommand::new("/usr/bin/worker").arg("--serve"))?;
//! // … later: the whole tree, whatever it forked, and the module's directory.
//! let report = root.kill(id.as_str(), Duration::from_secs(10))?;
//! assert!(report.ok());
//! let _ = child.wait();
//! # Ok(())
//! # }
//! ```
//!
//! An async daemon awaits a module's exit on its pidfd and runs the (blocking) stop on its
//! blocking pool: see `examples/tokio_supervisor.rs` in this crate (tokio's `AsyncFd`,
//! `spawn_blocking`).
//!
//! Errors are one type, [`Error`]: match on [`Error::kind`] ([`ErrorKind`]); a stop that did not
//! end is an error of kind [`ErrorKind::StillPopulated`] that carries its [`module::StopReport`].
//! Every report the `ck-cgroup` binary prints with `--json` is a type here that implements
//! `serde::Deserialize`, so a daemon in another process parses the helper's output with these
//! types.
//!
//! Layers, as folders, each importing only from the layers below it (no import cycle):
//!
//! ```text
//! doctor/, sandbox            checks of a host; isolated roots for tests
//! backend/                    Backend: cgroupfs (a Root) or systemd (Scopes, feature "systemd")
//! policy, telemetry/, discover  limits from a file; status and watch; finding the service root
//! module/, signals, gpu/      Root: a service root's operations (init, create, place, spawn, stop, prune); run's relay; device memory per process
//! limits, stop/, spawn/        the limit table; one file per kill mechanism; clone3 and the pre-exec path
//! cause/                      why a module died: kill and stop counters, death and OOM causes, attribution
//! cgroup/                     CgroupDir (every access beneath it by openat2), parse, tree walks, waits, marks
//! layout, id, error           where modules live and their names; ids; errors
//! ```
//!
//! A new kill mechanism is a file in [`stop`] and an arm of its private `Mechanism`; a new
//! limit is a row of [`limits`] with its parser; a new backend operation is a method of
//! [`Root`] and of the systemd backend's `Scopes`, and one method of [`backend::Backend`] whose
//! `match` calls each. The
//! `systemd` feature (off by default) adds the D-Bus backend and zbus.
//!
//! # rustix types
//!
//! The public API uses a few types of [`rustix`](https://docs.rs/rustix) 1.x. They are
//! re-exported here, so that a caller needs no rustix of its own at a matching version:
//! [`Signal`] (the graceful signal of [`stop::StopOptions`], [`spawn::ModuleCommand`]'s parent
//! death signal, [`spawn::ModuleChild::signal`]), [`Errno`] ([`Error::errno`],
//! [`CgroupDir`]'s raw accessors) and [`OFlags`] ([`CgroupDir::open_beneath`]).
//!
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html>.

#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod backend;
pub mod cause;
pub mod cgroup;
pub mod discover;
pub mod doctor;
pub mod error;
pub mod gpu;
pub mod id;
pub mod layout;
pub mod limits;
pub mod module;
pub mod policy;
pub mod sandbox;
pub mod signals;
pub mod spawn;
pub mod stop;
pub mod telemetry;

#[cfg(test)]
mod json_tests;
// The mutation gate (`make mutation`): test machinery, so crate-private, no part of the API a
// daemon links. The CLI has a gate of its own from the same build script (src/cli/mutation.rs).
mod mutation;

pub use cgroup::CgroupDir;
pub use error::{Class, Error, ErrorKind, Result};
pub use id::{DirName, ModuleId};
pub use layout::{Layout, ModuleName, ModuleRef, Modules, Selection, ToModuleName};
pub use module::Root;
pub use sandbox::Sandbox;

/// A signal number: the graceful signal of a stop, a parent death signal
/// (`rustix::process::Signal`, re-exported).
pub use rustix::process::Signal;

/// An errno of a failed system call: [`Error::errno`] (`rustix::io::Errno`, re-exported).
pub use rustix::io::Errno;

/// Open flags for [`CgroupDir::open_beneath`] (`rustix::fs::OFlags`, re-exported).
pub use rustix::fs::OFlags;
