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

    /// Its path relative to the root, in the crate's text (for access beneath the root).
    pub(crate) fn rel(&self) -> String {
        format!("{}/{}", self.layout.dir(), self.name.text())
    }

    /// Its path relative to the root as people see it and as a command takes it back
    /// ([`ModuleName`]): the layout's directory and the name's shown form.
    pub fn shown_path(&self) -> String {
        format!("{}/{}", self.layout.dir(), self.name)
    }

    /// The module name: the directory's name for ours, the decoded id for the daemon's (where
    /// it decodes), the id of a systemd scope.
    pub fn module_name(&self) -> Option<DirName> {
        match self.layout {
            Layout::Ck => Some(self.name.clone()),
            Layout::Daemon => decode_daemon_name(&self.name).map(|d| d.module),
            Layout::Systemd => module_of_scope(self.name.text())
                .and_then(|id| ModuleId::new(&id).ok())
                .map(DirName::from),
        }
    }
}

/// What a command names to act on one module: a name as `list` shows it (an id, a directory's
/// name, a daemon-layout module id; [`DirName::parse`]), or one directory's path as `list`
/// shows it (`subc-modules/<name>`, `daemon/subc-modules/<name>`), which names that directory
/// alone. Parsed once ([`ModuleName::parse`]); shown as it was given, by the names' one rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModuleName {
    /// The layout a path named; `None` for a bare name.
    pub layout: Option<Layout>,
    /// The directory's name, or the module id.
    pub name: DirName,
}

impl ModuleName {
    /// Read a module argument: `NAME` or `LAYOUT-DIR/NAME` (`subc-modules/web`,
    /// `daemon/subc-modules/m-web_5f3`), NAME in its shown form. Bad input (exit 2) otherwise.
    pub fn parse(s: &str) -> Result<ModuleName, Error> {
        let Some((dir, name)) = s.rsplit_once('/') else {
            return Ok(ModuleName {
                layout: None,
                name: DirName::parse(s)?,
            });
        };
        let layout = [Layout::Ck, Layout::Daemon]
            .into_iter()
            .find(|l| l.dir() == dir)
            .ok_or_else(|| {
                Error::bad_input(format!(
                    "invalid module name {s:?}: it is not a single path component, nor a \
                     module's path (`{MODULES_DIR}/NAME`, `daemon/{MODULES_DIR}/NAME`)"
                ))
                .with_hint(
                    "name a module by its id or by its name as `ck-cgroup list` shows it \
                     (NAME, or PATH)",
                )
            })?;
        Ok(ModuleName {
            layout: Some(layout),
            name: DirName::parse(name)?,
        })
    }
}

impl ModuleName {
    /// Whether this names module `m`, whose module id is `module`: its path, its directory's
    /// name, or the module id it decodes to (the names' one rule, never other text).
    pub fn names(&self, m: &ModuleRef, module: Option<&DirName>) -> bool {
        match self.layout {
            Some(l) => l == m.layout && self.name == m.name,
            None => self.name == m.name || Some(&self.name) == module,
        }
    }
}

impl From<&ModuleRef> for ModuleName {
    fn from(m: &ModuleRef) -> ModuleName {
        ModuleName {
            layout: Some(m.layout),
            name: m.name.clone(),
        }
    }
}

impl From<DirName> for ModuleName {
    fn from(name: DirName) -> ModuleName {
        ModuleName { layout: None, name }
    }
}

impl std::str::FromStr for ModuleName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModuleName::parse(s)
    }
}

impl std::fmt::Display for ModuleName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.layout {
            Some(l) => write!(f, "{}/{}", l.dir(), self.name),
            None => write!(f, "{}", self.name),
        }
    }
}

impl Serialize for ModuleName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ModuleName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ModuleName::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A name compares equal to its shown form (`name == "daemon/subc-modules/m-web_5f3"`).
impl PartialEq<str> for ModuleName {
    fn eq(&self, shown: &str) -> bool {
        ModuleName::parse(shown).is_ok_and(|n| n == *self)
    }
}

impl PartialEq<&str> for ModuleName {
    fn eq(&self, shown: &&str) -> bool {
        *self == **shown
    }
}

/// What the library's calls that act on one module take: a [`ModuleName`], or what one is
/// made from (a [`ModuleId`], a [`DirName`], a [`ModuleRef`], or text in the shown form,
/// parsed by [`ModuleName::parse`]).
pub trait ToModuleName {
    /// The module name this names; bad input where text is not of the shown form.
    fn to_module_name(&self) -> Result<ModuleName, Error>;
}

impl ToModuleName for str {
    fn to_module_name(&self) -> Result<ModuleName, Error> {
        ModuleName::parse(self)
    }
}

impl ToModuleName for String {
    fn to_module_name(&self) -> Result<ModuleName, Error> {
        ModuleName::parse(self)
    }
}

impl ToModuleName for ModuleName {
    fn to_module_name(&self) -> Result<ModuleName, Error> {
        Ok(self.clone())
    }
}

impl ToModuleName for DirName {
    fn to_module_name(&self) -> Result<ModuleName, Error> {
        Ok(ModuleName::from(self.clone()))
    }
}

impl ToModuleName for ModuleId {
    fn to_module_name(&self) -> Result<ModuleName, Error> {
        Ok(ModuleName::from(DirName::from(self)))
    }
}

impl ToModuleName for ModuleRef {
    fn to_module_name(&self) -> Result<ModuleName, Error> {
        Ok(ModuleName::from(self))
    }
}

impl ModuleName {
    /// The directory `name` of `layout` as a report gives them (`list`'s
    /// `ModuleEntry`, `status`, `ps`): that directory alone, by its
    /// path, so that a name found in both layouts is not refused as two. A systemd scope's
    /// name is bare (its path is not one of this root's).
    pub fn of_dir(layout: Layout, name: &DirName) -> ModuleName {
        let layout = match layout {
            Layout::Ck | Layout::Daemon => Some(layout),
            Layout::Systemd => None,
        };
        ModuleName {
            layout,
            name: name.clone(),
        }
    }
}

impl<T: ToModuleName + ?Sized> ToModuleName for &T {
    fn to_module_name(&self) -> Result<ModuleName, Error> {
        (**self).to_module_name()
    }
}

/// Which modules a call that reads many takes (`Root::status`,
/// `Root::processes`): every one, or those named, said so.
/// `Modules::Named` of no name is no module (an empty answer), never every module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Modules {
    /// Every module of the root, both layouts.
    All,
    /// These, in this order (each as [`ToModuleName`] reads it).
    Named(Vec<ModuleName>),
}

impl Modules {
    /// The modules `names` names: bad input where one is not of the shown form.
    pub fn named<S: ToModuleName>(names: &[S]) -> Result<Modules, Error> {
        names
            .iter()
            .map(ToModuleName::to_module_name)
            .collect::<Result<Vec<_>, _>>()
            .map(Modules::Named)
    }
}

/// What `Root::status` and `Root::processes`
/// take: [`Modules`] (`&Modules::All`, `&Modules::Named(..)`), or a slice, array or `Vec` of
/// names ([`ToModuleName`]), where an empty one means every module (the older spelling, as
/// `module::ALL` is).
pub trait Selection {
    /// The names selected; `None` for every module.
    fn selection(&self) -> Result<Option<Vec<ModuleName>>, Error>;
}

impl Selection for Modules {
    fn selection(&self) -> Result<Option<Vec<ModuleName>>, Error> {
        Ok(match self {
            Modules::All => None,
            Modules::Named(names) => Some(names.clone()),
        })
    }
}

impl<S: ToModuleName> Selection for [S] {
    /// Empty: every module.
    fn selection(&self) -> Result<Option<Vec<ModuleName>>, Error> {
        if self.is_empty() {
            return Ok(None);
        }
        match Modules::named(self)? {
            Modules::Named(n) => Ok(Some(n)),
            Modules::All => Ok(None),
        }
    }
}

impl<S: ToModuleName, const N: usize> Selection for [S; N] {
    fn selection(&self) -> Result<Option<Vec<ModuleName>>, Error> {
        self.as_slice().selection()
    }
}

impl<S: ToModuleName> Selection for Vec<S> {
    fn selection(&self) -> Result<Option<Vec<ModuleName>>, Error> {
        self.as_slice().selection()
    }
}

impl<T: Selection + ?Sized> Selection for &T {
    fn selection(&self) -> Result<Option<Vec<ModuleName>>, Error> {
        (**self).selection()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A module argument is a name or one of the two layouts' paths, shown as it was given and
    /// read back by the same rule; any other path is bad input.
    #[test]
    fn a_module_name_is_a_name_or_a_layouts_path_and_round_trips() {
        for s in [
            "web",
            "tab\\x09x",
            "\\\\xff",
            "subc-modules/web",
            "daemon/subc-modules/m-web_5f3",
            "daemon/subc-modules/\\xff\\xfe",
        ] {
            let n = ModuleName::parse(s).unwrap();
            assert_eq!(n.to_string(), s);
            assert_eq!(ModuleName::parse(&n.to_string()).unwrap(), n);
        }
        let p = ModuleName::parse("daemon/subc-modules/web").unwrap();
        assert_eq!(p.layout, Some(Layout::Daemon));
        let web = ModuleRef {
            layout: Layout::Daemon,
            name: DirName::parse("m-web_5f3").unwrap(),
        };
        let id = web.module_name();
        assert!(ModuleName::parse("web").unwrap().names(&web, id.as_ref()));
        assert!(
            !p.names(&web, id.as_ref()),
            "a path names its directory alone"
        );
        for bad in [
            "/",
            "a/b",
            "subc-modules/",
            "x/subc-modules/a",
            "module.slice/a",
            "../a",
        ] {
            assert_eq!(ModuleName::parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
