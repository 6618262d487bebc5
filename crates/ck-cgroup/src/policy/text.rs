//! The policy's text, checked in one pass before the TOML parser sees it: a policy is a few
//! lines of tables of scalars, so a file that is not text (a NUL, another control character), a
//! line longer than [`MAX_LINE`] or arrays and inline tables nested deeper than [`MAX_DEPTH`]
//! is refused at once, naming the line, instead of being handed to a parser whose work and
//! memory grow with the nesting (some 250 MiB for a 1 MiB file of nested inline tables) and
//! whose error would quote the offending line in full (a NUL, or a megabyte, on the terminal).
//!
//! The scan knows TOML's comments and four kinds of string, so a `[` or `#` inside a string is
//! text, not structure. It needs no memory of its own and is linear in the file.

/// The deepest nesting of `[` and `{` (a table header `[[a]]` is 2; a policy needs at most 2).
pub const MAX_DEPTH: usize = 8;

/// The longest line, in bytes.
pub const MAX_LINE: usize = 4096;

#[derive(Clone, Copy, PartialEq)]
enum In {
    Code,
    Comment,
    Basic,
    Literal,
    MlBasic,
    MlLiteral,
}

/// `None` when `text` may be handed to the parser; else what is wrong with it, naming the line.
pub fn problem(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let (mut line, mut line_start, mut depth) = (1usize, 0usize, 0usize);
    let mut state = In::Code;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == 0 {
            return Some(format!(
                "it holds a NUL byte (line {line}): a binary file, not TOML text"
            ));
        }
        if (c < 0x20 && c != b'\t' && c != b'\n' && c != b'\r') || c == 0x7f {
            return Some(format!(
                "it holds the control character 0x{c:02x} (line {line}): not TOML text"
            ));
        }
        if c == b'\n' {
            line += 1;
            line_start = i + 1;
            if matches!(state, In::Comment | In::Basic | In::Literal) {
                // A comment ends here; a one-line string that runs on is the parser's error.
                state = In::Code;
            }
            i += 1;
            continue;
        }
        if i - line_start >= MAX_LINE {
            return Some(format!(
                "line {line} is longer than {MAX_LINE} bytes: a policy's lines are short"
            ));
        }
        let three = |q: u8| b.get(i..i + 3) == Some(&[q, q, q][..]);
        match (state, c) {
            (In::Code, b'#') => state = In::Comment,
            (In::Code, b'"') if three(b'"') => {
                state = In::MlBasic;
                i += 2;
            }
            (In::Code, b'"') => state = In::Basic,
            (In::Code, b'\'') if three(b'\'') => {
                state = In::MlLiteral;
                i += 2;
            }
            (In::Code, b'\'') => state = In::Literal,
            (In::Code, b'[' | b'{') => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(format!(
                        "arrays or inline tables nest deeper than {MAX_DEPTH} (line {line}): \
                         a policy is tables of single values"
                    ));
                }
            }
            (In::Code, b']' | b'}') => depth = depth.saturating_sub(1),
            // An escape in a basic string: the next byte is not its end (a newline still
            // counts its line, above, when it is the next byte).
            (In::Basic | In::MlBasic, b'\\') if b.get(i + 1) != Some(&b'\n') => i += 1,
            (In::Basic, b'"') | (In::Literal, b'\'') => state = In::Code,
            (In::MlBasic, b'"') if three(b'"') => {
                state = In::Code;
                i += 2;
            }
            (In::MlLiteral, b'\'') if three(b'\'') => {
                state = In::Code;
                i += 2;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_pass() {
        for ok in [
            "",
            "[defaults]\nmemory_max = \"4G\" # a comment [[[[[[[[[\n",
            "[module.aft]\npids_max = 5\n",
            "[module]\naft = { memory_max = \"8G\", cpus = \"0-3\" }\n",
            "a = \"[[[[[[[[[[{{{{{{{{{\\\"[[[[[[[[[[\"\n",
            "a = '[[[[[[[[[[[['\nb = \"\"\"\n[[[[[[[[[[[[\n\"\"\"\nc = '''[[[[[[[[[[[['''\n",
            "a = \"tab\there\"\r\n",
        ] {
            assert_eq!(problem(ok), None, "{ok:?}");
        }
    }

    #[test]
    fn non_text_and_deep_nesting_are_named_by_line() {
        for (bad, says) in [
            ("a = 1\0", "NUL byte (line 1)"),
            ("[defaults]\n\x01", "control character 0x01 (line 2)"),
            ("a = \"\x1b[31m\"", "0x1b"),
            ("a = [[[[[[[[[1]]]]]]]]]", "deeper than 8 (line 1)"),
            (
                "\n\na = {b = {c = {d = {e = {f = {g = {h = {i = {j = 1}}}}}}}}}",
                "(line 3)",
            ),
        ] {
            let p = problem(bad).unwrap_or_else(|| panic!("{bad:?} passed"));
            assert!(p.contains(says), "{bad:?}: {p}");
        }
        let long = format!("# {}\n", "x".repeat(MAX_LINE));
        assert!(problem(&long).unwrap().contains("line 1 is longer"));
        // The whole bound is a property of the first bytes past it: a megabyte of `[` is
        // refused after nine.
        assert!(problem(&format!("a = {}", "[".repeat(1 << 20))).is_some());
    }
}
