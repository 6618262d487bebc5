//! Where modules live and what they are called: the layout of a service root, and the names the
//! systemd backend gives a module's slice and scope. Names only; no I/O.
//!
//! ```text
//! <root>/                     the cgroup systemd made for the service (Delegate=)
//! ├── daemon/                 the daemon's leaf
//! │   └── subc-modules/m-…    the daemon's own built-in placement (subc-daemon 0.39), read too
//! └── subc-modules/           controllers enabled in its cgroup.subtree_control
//!     └── <id>/               one leaf per module
//! ```
//!
//! The systemd backend: `module.slice/module-<id>.slice/subc-module-<id>.scope`, names escaped
//! as `systemd-escape` does ([`unit_escape`], undone by one function, [`module_of_scope`]).

use serde::Serialize;

use crate::error::Error;
use crate::id::{DirName, ModuleId, decode_daemon_name};

/// The daemon's leaf, as `DelegateSubgroup=daemon` names it.
pub const DAEMON_LEAF: &str = "daemon";
/// The directory that holds one leaf per module.
pub const MODULES_DIR: &str = "subc-modules";
/// The controllers the helper uses; `init` reports those the root cannot enable.
pub const WANTED_CONTROLLERS: [&str; 4] = ["memory", "pids", "cpu", "io"];
/// Controllers a limit needs that the service may go without (`cpuset`, for `--cpus`): `init`
/// enables them with every other available controller, and a sandbox enables them where its
/// parent has them, but `doctor` does not require them and `init` does not report them missing.
pub const OPTIONAL_CONTROLLERS: [&str; 1] = ["cpuset"];

/// Which placement made a module's cgroup.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Layout {
    /// Ours: `subc-modules/<id>` beside the daemon's leaf.
    Ck,
    /// The daemon's built-in placement: `daemon/subc-modules/m-<escaped>_<n>`.
    Daemon,
    /// The systemd backend: a transient scope
    /// `module.slice/module-<id>.slice/subc-module-<id>.scope` (the systemd backend, `backend::systemd`).
    Systemd,
}

impl Layout {
    /// The name in reports and JSON: `ck`, `daemon`, `systemd`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Ck => "ck",
            Layout::Daemon => "daemon",
            Layout::Systemd => "systemd",
        }
    }

    pub(crate) fn dir(self) -> &'static str {
        match self {
            Layout::Ck => MODULES_DIR,
            Layout::Daemon => "daemon/subc-modules",
            // Not under a service root; see the systemd backend (backend/systemd/).
            Layout::Systemd => MODULES_SLICE,
        }
    }
}

/// An existing module's cgroup, found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ModuleRef {
    /// Which placement made it.
    pub layout: Layout,
    /// Its directory name as found.
    pub name: DirName,
}

impl ModuleRef {
    /// Our module `subc-modules/<id>`.
    pub fn ck(id: &ModuleId) -> ModuleRef {
        ModuleRef {
            layout: Layout::Ck,
            name: DirName::from(id.clone()),
        }
    }

    /// Its path relative to the root.
    pub fn rel(&self) -> String {
        format!("{}/{}", self.layout.dir(), self.name.as_str())
    }

    /// The module name: the id for ours, the decoded id for the daemon's (where it decodes).
    pub fn module_name(&self) -> Option<String> {
        match self.layout {
            Layout::Ck if self.name.is_raw_bytes() => None,
            Layout::Ck => Some(self.name.as_str().to_string()),
            Layout::Daemon => decode_daemon_name(self.name.as_str()).map(|d| d.module),
            Layout::Systemd => module_of_scope(self.name.as_str()),
        }
    }
}

/// The slice that holds every module scope of the systemd backend (`units/module.slice`).
pub const MODULES_SLICE: &str = "module.slice";

/// Escape `s` for use in a unit name, as `systemd-escape` does: `[A-Za-z0-9:_.]` stay (a leading
/// `.` does not), `/` becomes `-`, every other byte `\xNN`. A module id's `-` becomes `\x2d`,
/// so that `module-<id>.slice` stays a direct child of `module.slice` (a `-` in a slice name
/// means nesting; systemd.slice(5)).
pub fn unit_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i == 0 => out.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'.') => {
                out.push(b as char)
            }
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The scope of module `id`: `subc-module-<id>.scope`.
pub fn scope_unit(id: &ModuleId) -> String {
    format!("subc-module-{}.scope", unit_escape(id.as_str()))
}

/// The slice of module `id`: `module-<id>.slice`, a child of [`MODULES_SLICE`].
pub fn slice_unit(id: &ModuleId) -> String {
    format!("module-{}.slice", unit_escape(id.as_str()))
}

/// The module id of a scope's directory name `subc-module-<escaped id>.scope`; `None` for any
/// other name, including another spelling of an id's escape (`a\x32b` for `a2b`): only the
/// name [`scope_unit`] gives an id is that module's scope, the one `kill <id>`
/// stops (found by the `unit_names` fuzz check).
pub fn module_of_scope(name: &str) -> Option<String> {
    let esc = name.strip_prefix("subc-module-")?.strip_suffix(".scope")?;
    let id = ModuleId::new(&unit_unescape(esc)?).ok()?;
    (unit_escape(id.as_str()) == esc).then(|| id.as_str().to_string())
}

/// Undo [`unit_escape`]: `\xNN` becomes the byte, `-` becomes `/`.
fn unit_unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let hex = s.get(i + 2..i + 4)?;
                if b.get(i + 1) != Some(&b'x') {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 4;
            }
            b'-' => {
                out.push(b'/');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The module named on the command line: its id, or its scope's name as `list` shows it.
pub fn module_id(name: &str) -> Result<ModuleId, Error> {
    match module_of_scope(name) {
        Some(id) => ModuleId::new(&id),
        None => ModuleId::new(name),
    }
}
