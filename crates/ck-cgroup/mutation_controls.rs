//! The one parser of `mutation-controls.txt` (beside this file; its header says the format).
//!
//! Read by `build.rs` (the names `check-cfg` accepts, `CK_MUTATION`'s check and the gate's
//! `Control` enum), by `scripts/mutation-list` (what `scripts/mutation-controls` and
//! `scripts/vm-mutation` run) and by `tests/mutation_controls_doc.rs`, each through a `#[path]`
//! module of this file: plain `std`, no dependency, so that a build script can use it.

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
