//! Directory names that are not UTF-8, kept faithful. cgroupfs takes any bytes `mkdir(2)` takes,
//! so a module (or a hostile process of the delegated uid) can make `subc-modules/\xff\xfe` or a
//! sub-cgroup of that name. Read lossily (U+FFFD) such a name is another name, which is not there:
//! a stop then found the module "already gone" and left its processes running, and a removal
//! failed on a sub-cgroup it could not spell.
//!
//! So a name read from disk that is not UTF-8 is held in the crate's strings as a NUL, which no
//! file name can hold, followed by its bytes in lowercase hex ([`text_of`]); every syscall that
//! takes a path turns such a component back into its bytes ([`bytes_of`]).
//!
//! People see any name by one rule, [`escape`] (`\xff\xfe`, `tab\x09x`, a backslash `\\`),
//! and a name given in that form is read back by the same rule, [`unescape`]: the two are each
//! other's inverse, so the name shown is the name taken.

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

/// The one shown form of bytes a module chose (a directory name, a decoded id, argv, `comm`):
/// terminal-safe and one-to-one. A backslash is `\\`; printable ASCII but the space is itself;
/// a character of another script is itself where it is visible on its own; every other byte (the
/// space, C0 controls, DEL, a C1 control, a byte that is not UTF-8, and each byte of a
/// character that is invisible or reorders text: zero-width and bidi format characters, other
/// spaces, fillers, variation selectors, [`invisible`]) is `\xNN`, two lowercase hex digits.
/// [`unescape`] takes it back: `unescape(&escape(b)) == b` for all bytes.
pub(crate) fn escape(bytes: &[u8], out: &mut String) {
    escape_with(bytes, false, out)
}

/// [`escape`], the space kept as it is where `keep_space` (a message's words, not a name).
pub(crate) fn escape_with(bytes: &[u8], keep_space: bool, out: &mut String) {
    use std::fmt::Write;
    // Mutation: what a module chose reaches the terminal as it is.
    if mutation::active(Control::OutputUnescaped) {
        out.push_str(&String::from_utf8_lossy(bytes));
        return;
    }
    let hex = |out: &mut String, b: &[u8]| {
        for b in b {
            let _ = write!(out, "\\x{b:02x}");
        }
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                // Mutation: a backslash as it is, so that the text `\xff` shows as the byte.
                '\\' if mutation::active(Control::BackslashUndoubled) => out.push(c),
                '\\' => out.push_str("\\\\"),
                '!'..='~' => out.push(c),
                ' ' if keep_space => out.push(c),
                c if (c as u32) < 0x80 || c.is_control() || invisible(c) => {
                    hex(out, c.encode_utf8(&mut [0; 4]).as_bytes())
                }
                c => out.push(c),
            }
        }
        hex(out, chunk.invalid());
    }
}

/// [`escape`] of `bytes`, as a new string.
pub(crate) fn escaped(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    escape(bytes, &mut out);
    out
}

/// Characters that show as nothing, as a space, or change how the text around them is shown:
/// Unicode's format characters (Cf: soft hyphen, zero-width and bidi controls, the BOM, tags),
/// the spaces other than U+0020 (Zs, Zl, Zp), the Hangul fillers and the variation selectors.
/// `web` and `web\u{200b}` look alike on a terminal; escaped they do not.
pub(crate) fn invisible(c: char) -> bool {
    matches!(c as u32,
        0x00a0 | 0x00ad | 0x034f | 0x0600..=0x0605 | 0x061c | 0x06dd | 0x070f | 0x0890..=0x0891
        | 0x08e2 | 0x115f..=0x1160 | 0x1680 | 0x17b4..=0x17b5 | 0x180b..=0x180f
        | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x206f | 0x3000 | 0x3164
        | 0xfe00..=0xfe0f | 0xfeff | 0xffa0 | 0xfff0..=0xfffb | 0x110bd | 0x110cd
        | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a | 0xe0000..=0xe0fff)
}

/// Why a shown form could not be read back ([`unescape`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadEscape {
    /// A backslash followed by neither `\\` nor `x` and two hex digits.
    Backslash,
}

/// The bytes that [`escape`] shows as `shown`: `\\` is a backslash, `\xNN` the byte NN, any other
/// character its UTF-8 bytes. A backslash followed by anything else is not of that form.
pub(crate) fn unescape(shown: &str) -> Result<Vec<u8>, BadEscape> {
    let b = shown.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                out.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'x')) => {
                let h = b.get(i + 2..i + 4).ok_or(BadEscape::Backslash)?;
                let digit = |c: u8| (c as char).to_digit(16).ok_or(BadEscape::Backslash);
                out.push((digit(h[0])? * 16 + digit(h[1])?) as u8);
                i += 4;
            }
            (b'\\', _) => return Err(BadEscape::Backslash),
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The bytes of the crate's text `s`, a name or a path of names ([`bytes_of`]: each component
/// in [`text_of`]'s form turned back into its bytes; any other text is its own bytes).
pub(crate) fn bytes_of_text(s: &str) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    match bytes_of(s) {
        Cow::Borrowed(o) => Cow::Borrowed(o.as_bytes()),
        Cow::Owned(o) => Cow::Owned(o.into_vec()),
    }
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
        assert_eq!(escaped(&bytes_of_text(&t)), "m-\\xff\\xfe\\\\x");
        // A path of such names: each one shown (`doctor` spelled `\x00fffe`).
        assert_eq!(
            escaped(&bytes_of_text(&format!("subc-modules/{t}"))),
            "subc-modules/m-\\xff\\xfe\\\\x"
        );
        assert_eq!(unescape(&escaped(raw)).as_deref(), Ok(&raw[..]));
        // UTF-8 names are themselves, everywhere.
        assert_eq!(text_of(b"web"), "web");
        assert_eq!(bytes_of("a/b"), OsStr::new("a/b"));
        assert_eq!(escaped(b"web"), "web");
        // A NUL that is not our encoding is not decoded.
        for bad in ["\0", "\0f", "\0zz", "\u{0}4142", "\u{0}2f80", "\u{0}00ff"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }

    /// Each kind of byte a module can choose, shown as the rule says.
    #[test]
    fn the_shown_form_of_each_kind_of_byte() {
        for (raw, shown) in [
            (&b"web"[..], "web"),
            (b"tab\tx", "tab\\x09x"),
            (b"esc\x1bX", "esc\\x1bX"),
            (b"new\\x0aline", "new\\\\x0aline"),
            (b"\\xff\\xfe", "\\\\xff\\\\xfe"),
            (b"\xff\xfe", "\\xff\\xfe"),
            (b"a b", "a\\x20b"),
            ("\u{9b}31m".as_bytes(), "\\xc2\\x9b31m"),
            ("web\u{200b}".as_bytes(), "web\\xe2\\x80\\x8b"),
            ("\u{202e}bew".as_bytes(), "\\xe2\\x80\\xaebew"),
            ("h\u{e9}".as_bytes(), "h\u{e9}"),
            (b"\x7f", "\\x7f"),
        ] {
            assert_eq!(escaped(raw), shown, "{raw:?}");
            assert_eq!(unescape(shown).as_deref(), Ok(raw), "{shown}");
        }
        for bad in ["\\", "a\\", "\\x", "\\x4", "\\xg0", "\\n", "\\u{41}"] {
            assert_eq!(unescape(bad), Err(BadEscape::Backslash), "{bad}");
        }
    }
}
