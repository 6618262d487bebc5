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

/// A module's directory name: the one type for a name a module controls, from the kernel's bytes
/// to every output and back. A single path component: not empty, not `.` or `..`, no `/`, no NUL,
/// no newline (the kernel refuses one in a cgroup's name), at most 255 bytes; any other bytes,
/// UTF-8 or not, as the kernel holds them.
///
/// Made only from the kernel's bytes ([`DirName::from_bytes`], a directory read) or by parsing
/// the shown form ([`DirName::parse`]). Its one [`Display`](fmt::Display) is that shown form,
/// terminal-safe and one-to-one: a backslash is `\\`; the space, every C0 and C1 control, DEL,
/// a byte that is not UTF-8 and each byte of an invisible or bidi character is `\xNN`; anything
/// else is itself (`web`, `tab\x09x`, `\xff\xfe`). `parse` reads that form back, so
/// `DirName::parse(&n.to_string()) == n` for every name: the name a table shows is the name a
/// command takes. Serialized (JSON) as the shown form too, and deserialized by `parse`. The type
/// hands out no text of its own but that form; [`DirName::to_bytes`] gives the bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DirName(String);

impl Serialize for DirName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for DirName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DirName::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl DirName {
    /// The name shown as `shown` ([`DirName::parse`]); a module id is its own shown form.
    pub fn new(shown: &str) -> Result<DirName, Error> {
        DirName::parse(shown)
    }

    /// Read the shown form back: `\\` is a backslash, `\xNN` the byte NN, any other character
    /// itself. Bad input (exit 2, naming the problem) where it is not of that form or does not
    /// name a single directory.
    pub fn parse(shown: &str) -> Result<DirName, Error> {
        let bytes = name_bytes::unescape(shown).map_err(|_| {
            bad_name(
                shown,
                "a backslash starts `\\\\` (a backslash) or `\\xNN` (a byte), as names are shown",
            )
        })?;
        DirName::checked(&bytes).map_err(|why| bad_name(shown, why))
    }

    /// The name of a directory whose name is `bytes`, as the kernel gave it.
    pub fn from_bytes(bytes: &[u8]) -> Result<DirName, Error> {
        DirName::checked(bytes).map_err(|why| bad_name(&name_bytes::escaped(bytes), why))
    }

    fn checked(bytes: &[u8]) -> Result<DirName, &'static str> {
        if bytes.is_empty() {
            return Err("it is empty");
        }
        if bytes == b"." || bytes == b".." {
            return Err("it is not a directory name");
        }
        if bytes.contains(&b'/') {
            return Err("it is not a single path component");
        }
        if bytes.contains(&0) {
            return Err("it contains NUL");
        }
        if bytes.contains(&b'\n') {
            return Err("it contains a newline, which the kernel refuses in a cgroup's name");
        }
        if bytes.len() > 255 {
            return Err("it is longer than 255 bytes");
        }
        Ok(DirName(name_bytes::text_of(bytes)))
    }

    /// The name held in the crate's text (a directory read, `name_bytes::text_of`).
    pub(crate) fn from_text(text: &str) -> Result<DirName, Error> {
        DirName::from_bytes(&name_bytes::bytes_of_text(text))
    }

    /// The name in the crate's text, for paths (`name_bytes::bytes_of` turns it into the
    /// kernel's bytes); never for output, which is [`Display`](fmt::Display).
    pub(crate) fn text(&self) -> &str {
        &self.0
    }

    /// The name's bytes, as the kernel holds them.
    pub fn to_bytes(&self) -> Vec<u8> {
        name_bytes::bytes_of_text(&self.0).into_owned()
    }

    /// The module id this name spells, where it is one.
    pub fn as_id(&self) -> Option<ModuleId> {
        ModuleId::new(&self.0).ok()
    }
}

impl FromStr for DirName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DirName::parse(s)
    }
}

impl From<ModuleId> for DirName {
    fn from(id: ModuleId) -> DirName {
        DirName(id.0)
    }
}

impl From<&ModuleId> for DirName {
    fn from(id: &ModuleId) -> DirName {
        DirName(id.0.clone())
    }
}

impl fmt::Display for DirName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.starts_with('\0') && self.0.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') {
            return f.write_str(&self.0);
        }
        f.write_str(&name_bytes::escaped(&name_bytes::bytes_of_text(&self.0)))
    }
}

/// A name compares equal to its shown form (`name == "tab\\x09x"`).
impl PartialEq<str> for DirName {
    fn eq(&self, shown: &str) -> bool {
        DirName::parse(shown).is_ok_and(|n| n == *self)
    }
}

impl PartialEq<&str> for DirName {
    fn eq(&self, shown: &&str) -> bool {
        *self == **shown
    }
}

fn bad_name(shown: &str, why: &str) -> Error {
    Error::bad_input(format!("invalid module name {shown:?}: {why}")).with_hint(
        "name a module by its id or by its name as `ck-cgroup list` shows it (NAME, or PATH)",
    )
}

/// Text a module chose that is not a name (argv, `comm`, a reader's message), held in the
/// crate's text (`name_bytes::text_of`), shown by the same rule as a [`DirName`]: escaped,
/// terminal-safe and one-to-one.
pub fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.starts_with('\0') && s.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(name_bytes::escaped(&name_bytes::bytes_of_text(s)))
}

/// A message a program other than ours wrote (a reader's error line, a reason from a tool), by
/// the rule of [`shown`] with its spaces kept: terminal-safe, its words readable.
pub fn shown_message(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.starts_with('\0')
        && s.bytes()
            .all(|b| (b.is_ascii_graphic() && b != b'\\') || b == b' ')
    {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    name_bytes::escape_with(&name_bytes::bytes_of_text(s), true, &mut out);
    std::borrow::Cow::Owned(out)
}

/// A name given to act on a module (`kill`, `remove`, `freeze`, `status`, `watch` ...): a
/// [`ModuleId`], or the name of a directory as `list` shows it ([`DirName::parse`]). Every
/// directory the kernel lets a module make is nameable this way; `ModuleName` (beside the
/// layouts) takes a directory's path (`daemon/subc-modules/<name>`) too.
pub fn module_name(s: &str) -> Result<DirName, Error> {
    DirName::parse(s)
}

/// A daemon-layout directory name, decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct DaemonName {
    /// The module id the daemon was given (possibly cut at 64 bytes by the daemon).
    pub module: DirName,
    /// The daemon's alternate ("swap") slot.
    pub swap: bool,
    /// The launch number that makes each spawn a distinct kill domain.
    pub launch: String,
}

/// Decode a directory name made by subc-daemon 0.39's built-in placement:
/// `m-` + escape(escape(id) [+ `_swap`] + `_` + decimal launch number), where escape keeps
/// `[A-Za-z0-9.-]` and writes every other byte as `_` and two lowercase hex digits.
///
/// Returns `None` where the name is not what that encoding gives some id (it is then listed as
/// found): another spelling of an id (`m-w_65b_5f4`, an `e` written `_65`) is not that id's
/// directory, as only the daemon's own spelling is, so that a module cannot make a directory
/// that a command given the id takes for the daemon's.
pub fn decode_daemon_name(dir: &DirName) -> Option<DaemonName> {
    let rest = dir.text().strip_prefix("m-")?;
    let inner = daemon_unescape(rest)?;
    // Mutation: any `_XX` spelling of a byte decodes, as the daemon's own does.
    if !mutation::active(Control::DaemonNameAnySpelling) && daemon_escape(&inner) != rest {
        return None;
    }
    let inner = std::str::from_utf8(&inner).ok()?;
    let (slot, launch) = inner.rsplit_once('_')?;
    if launch.is_empty() || !launch.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (slot, swap) = match slot.strip_suffix("_swap") {
        Some(s) => (s, true),
        None => (slot, false),
    };
    let module = daemon_unescape(slot)?;
    if !mutation::active(Control::DaemonNameAnySpelling) && daemon_escape(&module) != slot {
        return None;
    }
    Some(DaemonName {
        module: DirName::from_bytes(&module).ok()?,
        swap,
        launch: launch.to_string(),
    })
}

/// The daemon's escape: `[A-Za-z0-9.-]` as they are, every other byte `_` and two lowercase
/// hex digits.
fn daemon_escape(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &c in b {
        if c.is_ascii_alphanumeric() || c == b'-' || c == b'.' {
            out.push(c as char);
        } else {
            out.push_str(&format!("_{c:02x}"));
        }
    }
    out
}

fn daemon_unescape(s: &str) -> Option<Vec<u8>> {
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
    Some(out)
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

    /// Every name the kernel takes is a name: the interface-file prefixes (`memory.evil`), long
    /// names of the id's characters, anything but `/`, NUL and a newline.
    #[test]
    fn dir_names() {
        for ok in [
            "aft",
            "m-aft_5f1",
            "not.encoded",
            "memory.evil",
            "cgroup.x",
            "io.x",
            "\\xff\\xfe",
            "tab\\x09x",
            &"a".repeat(65),
            &"a".repeat(255),
            &format!("m-{}", "a".repeat(80)),
        ] {
            assert!(module_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "..",
            ".",
            "/",
            "a/b",
            "../daemon",
            "a\nb",
            "a\\x0ab",
            "a\\x2fb",
            "a\\x00b",
            "a\0b",
            "a\\b",
            "a\\",
            &"a".repeat(256),
        ] {
            let e = module_name(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }

    /// The shown form is the name: `parse(display(n)) == n` over arbitrary bytes, and two
    /// names never show alike (a parse of the shown form gives the name back, so it is
    /// injective); the shown form holds no control character, no space, no invisible one.
    #[test]
    fn parse_of_display_is_the_name_for_arbitrary_bytes() {
        // xorshift64: the same arbitrary bytes every run.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet: Vec<u8> =
            b"\\x0aAfz.-_ \t\x1b\x7f\xc2\x9b\xe2\x80\x8b\xae\xff\xfe\x80".to_vec();
        let mut seen = std::collections::HashMap::new();
        for round in 0..20_000 {
            let len = 1 + (next() % 12) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    if round % 2 == 0 {
                        alphabet[(next() % alphabet.len() as u64) as usize]
                    } else {
                        next() as u8
                    }
                })
                .collect();
            let Ok(n) = DirName::from_bytes(&bytes) else {
                continue;
            };
            assert_eq!(n.to_bytes(), bytes);
            let shown = n.to_string();
            assert_eq!(DirName::parse(&shown).ok().as_ref(), Some(&n), "{shown}");
            assert!(
                !shown
                    .chars()
                    .any(|c| c.is_control() || c == ' ' || name_bytes::invisible(c)),
                "{shown:?}"
            );
            if let Some(other) = seen.insert(shown.clone(), bytes.clone()) {
                assert_eq!(other, bytes, "two names show as {shown}");
            }
            let json = serde_json::to_string(&n).unwrap();
            assert_eq!(serde_json::from_str::<DirName>(&json).unwrap(), n);
        }
    }

    /// The collisions of the old rule: a literal backslash-x text and the bytes it spelled.
    #[test]
    fn names_that_showed_alike_show_apart() {
        for (a, b) in [
            (&b"new\\x0aline"[..], &b"new\x0bline"[..]),
            (b"\\xff\\xfe", b"\xff\xfe"),
            (b"tab\\x09x", b"tab\tx"),
            (b"esc\\x1bX", b"esc\x1bX"),
        ] {
            let (a, b) = (
                DirName::from_bytes(a).unwrap(),
                DirName::from_bytes(b).unwrap(),
            );
            assert_ne!(a.to_string(), b.to_string());
            assert_eq!(DirName::parse(&a.to_string()).unwrap(), a);
            assert_eq!(DirName::parse(&b.to_string()).unwrap(), b);
        }
        assert_eq!(
            DirName::from_bytes(b"tab\tx").unwrap().to_string(),
            "tab\\x09x"
        );
        assert_eq!(
            DirName::from_bytes(b"\\xff\\xfe").unwrap().to_string(),
            "\\\\xff\\\\xfe"
        );
    }

    #[test]
    fn daemon_names_decode() {
        let name = |s: &str| DirName::parse(s).unwrap();
        // "aft" launch 123 -> swap name "aft", "aft_123", escaped "m-aft_5f123".
        assert_eq!(
            decode_daemon_name(&name("m-aft_5f123")),
            Some(DaemonName {
                module: name("aft"),
                swap: false,
                launch: "123".into()
            })
        );
        // "mcp:x" -> "mcp_3ax" -> "mcp_3ax_7" -> "m-mcp_5f3ax_5f7".
        let d = decode_daemon_name(&name("m-mcp_5f3ax_5f7")).unwrap();
        assert_eq!(d.module, "mcp:x");
        // The alternate slot.
        let d = decode_daemon_name(&name("m-aft_5fswap_5f9")).unwrap();
        assert_eq!((d.module.to_string().as_str(), d.swap), ("aft", true));
        // Ids with dots and dashes stay literal.
        assert_eq!(
            decode_daemon_name(&name("m-a.b-c_5f1")).unwrap().module,
            "a.b-c"
        );
        // Not the daemon's encoding, or not its spelling of the id (`e` as `_65`).
        for raw in [
            "aft",
            "m-",
            "m-aft",
            "m-aft_5fx",
            "m-a_zz_5f1",
            "m-_5f1",
            "m-a\\x20b_5f1",
            "m-w_65b_5f4",
            "m-web_5F4",
            "m-web_5f_34",
        ] {
            assert_eq!(decode_daemon_name(&name(raw)), None, "{raw}");
        }
    }
}
