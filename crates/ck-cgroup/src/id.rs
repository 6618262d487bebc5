//! Checked names: [`ModuleId`] for the modules we make, [`DirName`] for any single path component
//! found on disk (the daemon's own `m-<escaped>_<n>` directories), and the decoder of the daemon's
//! naming scheme.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::Error;
use crate::mutation::{self, Control};

pub(crate) mod name_bytes;

/// Longest module id, in bytes.
pub const MAX_ID_LEN: usize = 64;

/// A module id: 1 to 64 characters of `[A-Za-z0-9_-]`, starting with a letter or digit.
///
/// The only way to name a module cgroup that this crate creates. Anything else (`../x`, `a/b`,
/// `.`, an empty string, a name of a cgroup interface file like `cgroup.procs`) is refused before
/// any file is touched.
///
/// Deserialized through [`ModuleId::new`]: a string that is not a valid id is an error.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct ModuleId(String);

impl TryFrom<String> for ModuleId {
    type Error = Error;
    fn try_from(s: String) -> Result<ModuleId, Error> {
        ModuleId::new(&s)
    }
}

impl From<ModuleId> for String {
    fn from(id: ModuleId) -> String {
        id.0
    }
}

impl ModuleId {
    /// Check `s` and wrap it.
    pub fn new(s: &str) -> Result<ModuleId, Error> {
        let bad = |why: &str| {
            Error::bad_input(format!("invalid module id {s:?}: {why}")).with_hint(
                "a module id is 1 to 64 characters of A-Z a-z 0-9 _ -, starting with a letter or digit",
            )
        };
        if s.is_empty() {
            return Err(bad("it is empty"));
        }
        if s.len() > MAX_ID_LEN {
            return Err(bad("it is longer than 64 characters"));
        }
        let first = s.as_bytes()[0];
        if !first.is_ascii_alphanumeric() {
            return Err(bad("it must start with a letter or digit"));
        }
        if let Some(c) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        {
            return Err(bad(&format!("{c:?} is not allowed")));
        }
        Ok(ModuleId(s.to_string()))
    }

    /// The id as a string (also the module's directory name).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for ModuleId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModuleId::new(s)
    }
}

impl fmt::Display for ModuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ModuleId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A single path component naming an existing module directory: not empty, not `.` or `..`, no
/// `/`, no NUL, at most 255 bytes. Used to act on directories found on disk (the daemon's own
/// placement) by the name as found. A name found on disk that is not UTF-8 is held faithfully:
/// a NUL and its bytes in hex (the only NUL a name may hold; `id::name_bytes`), shown
/// escaped (`\xff\xfe`) by its `Display`.
///
/// Deserialized through [`DirName::new`]: a string that is not a valid name is an error.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct DirName(String);

impl TryFrom<String> for DirName {
    type Error = Error;
    fn try_from(s: String) -> Result<DirName, Error> {
        DirName::new(&s)
    }
}

impl From<DirName> for String {
    fn from(n: DirName) -> String {
        n.0
    }
}

impl DirName {
    /// Check `s` and wrap it.
    pub fn new(s: &str) -> Result<DirName, Error> {
        let bad = |why: &str| {
            Error::bad_input(format!("invalid module name {s:?}: {why}"))
                .with_hint("name a module by its id or by its directory name as `list` shows it")
        };
        if s.is_empty() {
            return Err(bad("it is empty"));
        }
        if s == "." || s == ".." {
            return Err(bad("it is not a directory name"));
        }
        if s.contains('/') {
            return Err(bad("it is not a single path component"));
        }
        let encoded = crate::id::name_bytes::decode(s);
        if s.contains('\0') && encoded.is_none() {
            return Err(bad("it contains NUL"));
        }
        if encoded.map_or(s.len(), |b| b.len()) > 255 {
            return Err(bad("it is longer than 255 bytes"));
        }
        Ok(DirName(s.to_string()))
    }

    /// The name as a string (a name that is not UTF-8 in its encoded form; see the type).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the name on disk is not UTF-8 (held encoded; see the type).
    pub fn is_raw_bytes(&self) -> bool {
        self.0.starts_with('\0')
    }
}

impl From<ModuleId> for DirName {
    fn from(id: ModuleId) -> DirName {
        DirName(id.0)
    }
}

impl fmt::Display for DirName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::id::name_bytes::display(&self.0))
    }
}

/// A module's name or id as people see it on a terminal: a name that is not UTF-8 (held
/// encoded, see [`DirName`]) as `\xNN` escapes, and in any name the bytes a terminal would act
/// on (C0 controls, DEL, C1 controls) as `\xNN` / `\u{NN}` escapes, a backslash then as `\\`;
/// a plain name as it is.
pub fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    // Mutation: what a module chose reaches the terminal as it is.
    if mutation::active(Control::OutputUnescaped) {
        return std::borrow::Cow::Borrowed(s);
    }
    let decoded = crate::id::name_bytes::display(s);
    let bad = |c: char| c.is_control();
    if !decoded.chars().any(bad) {
        return decoded;
    }
    let mut out = String::with_capacity(decoded.len() + 8);
    for c in decoded.chars() {
        match c {
            c if (c as u32) < 0x80 && bad(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The controllers whose interface files (`<controller>.<file>`) every cgroup directory may
/// hold beside `cgroup.*`: a directory of that name can never be made there.
const INTERFACE_PREFIXES: [&str; 10] = [
    "cgroup.", "cpu.", "cpuset.", "io.", "memory.", "pids.", "hugetlb.", "rdma.", "misc.", "irq.",
];

/// A name given to act on a module (`kill`, `remove`, `freeze`, `status`, `watch` ...): a
/// [`ModuleId`], or the name of a directory as `list` shows it. Beyond [`DirName::new`], a name
/// that can never be a module is refused as bad input instead of being looked for (and found
/// "already gone"): one with a newline (the kernel refuses it), the name of a cgroup interface
/// file (`cgroup.procs`, `memory.max`: the kernel's own files, never a directory), and one of
/// the id's characters longer than an id that is not a daemon-layout name (`m-...`: a module id
/// is at most [`MAX_ID_LEN`]).
pub fn module_name(s: &str) -> Result<DirName, Error> {
    if ModuleId::new(s).is_ok() {
        return DirName::new(s);
    }
    let name = DirName::new(s)?;
    let bad = |why: String| {
        Error::bad_input(format!("invalid module name {s:?}: {why}"))
            .with_hint("name a module by its id or by its directory name as `list` shows it")
    };
    if s.contains('\n') {
        return Err(bad("it contains a newline".into()));
    }
    if let Some(p) = INTERFACE_PREFIXES.iter().find(|p| s.starts_with(*p)) {
        return Err(bad(format!(
            "it is the name of a cgroup interface file ({p}*), never a module's directory"
        )));
    }
    let id_alphabet = s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if id_alphabet && s.len() > MAX_ID_LEN && !s.starts_with("m-") {
        return Err(bad(format!(
            "it is longer than {MAX_ID_LEN} characters (the longest module id), and not a \
             daemon-layout directory name (m-...)"
        )));
    }
    Ok(name)
}

/// A daemon-layout directory name, decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct DaemonName {
    /// The module id the daemon was given (possibly cut at 64 bytes by the daemon).
    pub module: String,
    /// The daemon's alternate ("swap") slot.
    pub swap: bool,
    /// The launch number that makes each spawn a distinct kill domain.
    pub launch: String,
}

/// Decode a directory name made by subc-daemon 0.39's built-in placement:
/// `m-` + escape(escape(id) [+ `_swap`] + `_` + decimal launch number), where escape keeps
/// `[A-Za-z0-9.-]` and writes every other byte as `_` and two lowercase hex digits.
///
/// Returns `None` where the name does not follow that encoding (it is then listed as found).
pub fn decode_daemon_name(dir: &str) -> Option<DaemonName> {
    let inner = unescape(dir.strip_prefix("m-")?)?;
    let (slot, launch) = inner.rsplit_once('_')?;
    if launch.is_empty() || !launch.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (slot, swap) = match slot.strip_suffix("_swap") {
        Some(s) => (s, true),
        None => (slot, false),
    };
    let module = unescape(slot)?;
    if module.is_empty() {
        return None;
    }
    Some(DaemonName {
        module,
        swap,
        launch: launch.to_string(),
    })
}

fn unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'_' => {
                let hex = s.get(i + 1..i + 3)?;
                if !hex
                    .bytes()
                    .all(|h| h.is_ascii_digit() || (b'a'..=b'f').contains(&h))
                {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            c if c.is_ascii_alphanumeric() || c == b'-' || c == b'.' => {
                out.push(c);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_ids() {
        for ok in ["a", "aft", "Broca_2", "0-x", &"x".repeat(64)] {
            assert!(ModuleId::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "..",
            ".",
            "a/b",
            "-a",
            "_a",
            "a.b",
            "cgroup.procs",
            "a b",
            "é",
            &"x".repeat(65),
        ] {
            let e = ModuleId::new(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn dir_names() {
        for ok in [
            "aft",
            "m-aft_5f1",
            "not.encoded",
            "weird",
            &format!("m-{}", "a".repeat(80)),
        ] {
            assert!(module_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "..",
            "/",
            "a/b",
            "../daemon",
            "cgroup.procs",
            "memory.max",
            "a\nb",
            &"a".repeat(65),
        ] {
            let e = module_name(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
        assert!(DirName::new("m-aft_5f1").is_ok());
        assert!(DirName::new("m-a.b_5f1").is_ok());
        for bad in ["", ".", "..", "a/b", "../x", "a\0b"] {
            assert!(DirName::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn daemon_names_decode() {
        // "aft" launch 123 -> swap name "aft", "aft_123", escaped "m-aft_5f123".
        assert_eq!(
            decode_daemon_name("m-aft_5f123"),
            Some(DaemonName {
                module: "aft".into(),
                swap: false,
                launch: "123".into()
            })
        );
        // "mcp:x" -> "mcp_3ax" -> "mcp_3ax_7" -> "m-mcp_5f3ax_5f7".
        let d = decode_daemon_name("m-mcp_5f3ax_5f7").unwrap();
        assert_eq!(d.module, "mcp:x");
        // The alternate slot.
        let d = decode_daemon_name("m-aft_5fswap_5f9").unwrap();
        assert_eq!((d.module.as_str(), d.swap), ("aft", true));
        // Ids with dots and dashes stay literal.
        assert_eq!(decode_daemon_name("m-a.b-c_5f1").unwrap().module, "a.b-c");
        // Not the daemon's encoding.
        for raw in [
            "aft",
            "m-",
            "m-aft",
            "m-aft_5fx",
            "m-a_zz_5f1",
            "m-_5f1",
            "m-a b_5f1",
        ] {
            assert_eq!(decode_daemon_name(raw), None, "{raw}");
        }
    }
}
