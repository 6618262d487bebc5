//! Directory names that are not UTF-8, kept faithful. cgroupfs takes any bytes `mkdir(2)` takes,
//! so a module (or a hostile process of the delegated uid) can make `subc-modules/\xff\xfe` or a
//! sub-cgroup of that name. Read lossily (U+FFFD) such a name is another name, which is not there:
//! a stop then found the module "already gone" and left its processes running, and a removal
//! failed on a sub-cgroup it could not spell.
//!
//! So a name read from disk that is not UTF-8 is held in the crate's strings as a NUL, which no
//! file name can hold, followed by its bytes in lowercase hex ([`text_of`]); every syscall that
//! takes a path turns such a component back into its bytes ([`bytes_of`]). People see it escaped
//! (`\xff\xfe`, [`display`]), and a name given in that escaped form is found again
//! ([`from_escaped`]).

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;

use crate::mutation::{self, Control};

/// The crate's text for the directory name `bytes`: itself where it is UTF-8, else a NUL and its
/// bytes in hex.
pub(crate) fn text_of(bytes: &[u8]) -> String {
    // Mutation: the lossy spelling (U+FFFD), which names another directory.
    if mutation::active(Control::NamesLossy) {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut s = String::with_capacity(1 + 2 * bytes.len());
            s.push('\0');
            for b in bytes {
                s.push_str(&format!("{b:02x}"));
            }
            s
        }
    }
}

/// The bytes of one component as [`text_of`] wrote it; `None` where `s` is not of that form (a
/// NUL then hex pairs of bytes that are not UTF-8 and hold no `/` or NUL).
pub(crate) fn decode(s: &str) -> Option<Vec<u8>> {
    let hex = s.strip_prefix('\0')?;
    if hex.is_empty() || hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .filter(|h| h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<_>>()?;
    let fine = std::str::from_utf8(&bytes).is_err() && !bytes.iter().any(|&b| b == b'/' || b == 0);
    fine.then_some(bytes)
}

/// The path `rel` (components joined by `/`) as the kernel is to get it: each component that
/// [`text_of`] encoded turned back into its bytes.
pub(crate) fn bytes_of(rel: &str) -> Cow<'_, OsStr> {
    if !rel.contains('\0') {
        return Cow::Borrowed(OsStr::new(rel));
    }
    let mut out = Vec::with_capacity(rel.len());
    for (i, part) in rel.split('/').enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        match decode(part) {
            Some(b) => out.extend_from_slice(&b),
            // Not our encoding: as it is (the kernel refuses the NUL: EINVAL, never another name).
            None => out.extend_from_slice(part.as_bytes()),
        }
    }
    Cow::Owned(OsString::from_vec(out))
}

/// A name for people and terminals: an encoded name's bytes as `\xNN` where they are not
/// printable ASCII (a backslash as `\\`); any other name as it is.
pub(crate) fn display(s: &str) -> Cow<'_, str> {
    let Some(bytes) = decode(s) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::new();
    for b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    Cow::Owned(out)
}

/// The encoded name that `escaped` shows as [`display`] writes it (`\xff\xfe`), where its
/// escapes give bytes that are not UTF-8; `None` otherwise (then it is the name as it is).
pub(crate) fn from_escaped(escaped: &str) -> Option<String> {
    if !escaped.contains("\\x") {
        return None;
    }
    let b = escaped.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                out.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'x')) => {
                let h = escaped.get(i + 2..i + 4)?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    let text = text_of(&out);
    decode(&text).map(|_| text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_name_that_is_not_utf8_round_trips_and_shows_escaped() {
        let raw = b"m-\xff\xfe\\x";
        let t = text_of(raw);
        assert!(t.starts_with('\0'), "{t:?}");
        assert_eq!(decode(&t).as_deref(), Some(&raw[..]));
        assert_eq!(
            bytes_of(&format!("subc-modules/{t}")).as_bytes(),
            b"subc-modules/m-\xff\xfe\\x"
        );
        assert_eq!(display(&t), "m-\\xff\\xfe\\\\x");
        assert_eq!(from_escaped(&display(&t)), Some(t.clone()));
        // UTF-8 names are themselves, everywhere.
        assert_eq!(text_of(b"web"), "web");
        assert_eq!(bytes_of("a/b"), OsStr::new("a/b"));
        assert_eq!(display("web"), "web");
        assert_eq!(from_escaped("web"), None);
        // Escapes that spell UTF-8 are not this encoding (a literal name).
        assert_eq!(from_escaped("\\x41"), None);
        // A NUL that is not our encoding is not decoded.
        for bad in ["\0", "\0f", "\0zz", "\u{0}4142", "\u{0}2f80", "\u{0}00ff"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }
}
