//! The one parser of `crates/ck-cgroup/mutation-controls.txt` (its header says the format).
//!
//! Read by `cargo xtask mutation-list` (what `scripts/mutation-controls` and
//! `scripts/vm-mutation` run), by `cargo xtask mutation-table` (docs/design.md's table) and by
//! `tests/mutation_controls_doc.rs`. The library's build script (`crates/ck-cgroup/build.rs`)
//! reads only each control's name and description, with a reader of its own (a published crate's
//! build script cannot depend on this unpublished one); that test holds its reading to this parser.

/// One control of the list: its block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// `[a-z0-9-]`, as `CK_MUTATION` names it.
    pub name: String,
    /// What a build with it does with the mechanism switched off, one line.
    pub description: String,
    /// The tests that must fail with it: (`TARGET`, `TEST`) as the list writes them.
    pub tests: Vec<(String, String)>,
    /// The lane-2 checks that must fail with it (`guest CHECK` lines).
    pub guest: Vec<String>,
}

/// The controls of the list, in order; or every line that breaks its rules (a name out of order
/// or twice, not `[a-z0-9-]`, without a description, without a test; an indented line outside a
/// control or not `TARGET TEST`), each naming its line.
pub fn parse(text: &str) -> Result<Vec<Control>, Vec<String>> {
    let mut controls: Vec<Control> = Vec::new();
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            let (name, description) = trimmed
                .split_once(char::is_whitespace)
                .map_or((trimmed, ""), |(n, d)| (n, d.trim()));
            if !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                problems.push(format!(
                    "line {n}: {name:?} is not a control name ([a-z0-9-])"
                ));
            }
            if description.is_empty() {
                problems.push(format!("line {n}: {name} has no description"));
            }
            if let Some(last) = controls.last()
                && last.name.as_str() >= name
            {
                problems.push(format!(
                    "line {n}: {name} comes after {}: keep the list sorted, each name once",
                    last.name
                ));
            }
            controls.push(Control {
                name: name.to_string(),
                description: description.to_string(),
                tests: Vec::new(),
                guest: Vec::new(),
            });
            continue;
        }
        let Some(control) = controls.last_mut() else {
            problems.push(format!(
                "line {n}: an indented line before the first control"
            ));
            continue;
        };
        match trimmed.split_whitespace().collect::<Vec<_>>()[..] {
            ["guest", check] => control.guest.push(check.to_string()),
            [target, test] => control.tests.push((target.to_string(), test.to_string())),
            _ => problems.push(format!(
                "line {n}: a test line is `TARGET TEST` or `guest CHECK`, not {trimmed:?}"
            )),
        }
    }
    for c in &controls {
        if c.tests.is_empty() {
            problems.push(format!(
                "{} has no test that must fail with it (a `TARGET TEST` line)",
                c.name
            ));
        }
    }
    if problems.is_empty() {
        Ok(controls)
    } else {
        Err(problems)
    }
}

/// The name of a control's variant of the gate's `Control` enum: `no-kill` is `NoKill`.
pub fn variant(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// docs/design.md's table of the controls, its rows: `| `NAME` | DESCRIPTION |`, in the list's
/// order.
pub fn table_rows(controls: &[Control]) -> String {
    controls
        .iter()
        .map(|c| format!("| `{}` | {} |\n", c.name, c.description))
        .collect()
}

/// `doc` with the rows of the table in its section `heading` (the first table there, after its
/// header and `|---|` lines) replaced by [`table_rows`]; or why there is no such table.
pub fn with_table(doc: &str, heading: &str, controls: &[Control]) -> Result<String, String> {
    let section = doc
        .find(&format!("\n{heading}\n"))
        .ok_or_else(|| format!("no section {heading:?}"))?
        + 1;
    // Byte offsets of the section's lines, up to the next heading.
    let mut lines = Vec::new();
    let mut at = section;
    for (i, line) in doc[section..].split_inclusive('\n').enumerate() {
        if i > 0 && line.starts_with('#') {
            break;
        }
        lines.push((at, line));
        at += line.len();
    }
    let separator = lines
        .iter()
        .position(|(_, l)| l.starts_with("|---"))
        .ok_or_else(|| format!("no table in the section {heading:?}"))?;
    let start = lines.get(separator + 1).map_or(at, |(offset, _)| *offset);
    let end = lines[separator + 1..]
        .iter()
        .find(|(_, l)| !l.starts_with('|'))
        .map_or(at, |(offset, _)| *offset);
    Ok(format!(
        "{}{}{}",
        &doc[..start],
        table_rows(controls),
        &doc[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "# a comment\n\
        a-b  what a-b switches off\n    cli  x::y\n    guest  23-check\n\
        c  what c does\n    ck-cgroup:spawn  z\n";

    #[test]
    fn parse_reads_each_block() {
        let c = parse(LIST).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name, "a-b");
        assert_eq!(c[0].description, "what a-b switches off");
        assert_eq!(c[0].tests, [("cli".into(), "x::y".into())]);
        assert_eq!(c[0].guest, ["23-check"]);
        assert_eq!(c[1].tests, [("ck-cgroup:spawn".into(), "z".into())]);
        assert_eq!(variant("a-b"), "AB");
        assert_eq!(variant("no-kill"), "NoKill");
    }

    #[test]
    fn parse_refuses_each_broken_rule_naming_its_line() {
        let problems = parse("b  x\n    t  u\na  y\nC\n    one\n").unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.contains("line 3: a comes after b")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("line 4: \"C\" is not a control name")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("line 4: C has no description")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("line 5: a test line")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("a has no test")),
            "{problems:?}"
        );
    }

    #[test]
    fn with_table_replaces_the_rows_and_nothing_else() {
        let doc = "# T\n\n### Mutation controls\n\ntext\n\n| control | switched off |\n|---|---|\n\
                   | `old` | gone |\n\nafter\n### Next\n| x | y |\n";
        let out = with_table(doc, "### Mutation controls", &parse(LIST).unwrap()).unwrap();
        assert_eq!(
            out,
            "# T\n\n### Mutation controls\n\ntext\n\n| control | switched off |\n|---|---|\n\
             | `a-b` | what a-b switches off |\n| `c` | what c does |\n\nafter\n### Next\n| x | y |\n"
        );
        assert_eq!(
            with_table(&out, "### Mutation controls", &parse(LIST).unwrap()).unwrap(),
            out
        );
        assert!(with_table(doc, "### Other", &[]).is_err());
    }
}
