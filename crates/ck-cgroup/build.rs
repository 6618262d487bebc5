//! Mutation controls (scripts/mutation-controls, scripts/vm-mutation): `CK_MUTATION=a,b` at build
//! time activates the controls `a` and `b` in the gates (the library's `src/mutation.rs`, the CLI's
//! `src/cli/mutation.rs`): each
//! switches one mechanism off so that the tests guarding it fail by name. The gate reads the
//! generated list of active controls, and `--cfg ck_mutation="a" --cfg ck_mutation="b"` for its
//! alternative modules. A cfg, not a Cargo feature: features unify across a dependency graph, so
//! an `--all-features` build would ship a helper whose kill does nothing. Without the variable the
//! list is empty and no cfg is emitted but the names `check-cfg` accepts. The CLI crate uses this
//! same file as its build script.
//!
//! The controls are the one list `mutation-controls.txt` beside this file (its header says the
//! format): a control's name, what it switches off, and the tests (and guest checks) that must
//! fail with it. This script writes the gate's `Control` enum (a variant a control, its description
//! as its doc) and the controls this build has active into `OUT_DIR/mutation_controls.rs`, which
//! each package's crate-private gate includes (the library's `src/mutation.rs`, the CLI's
//! `src/cli/mutation.rs`): test machinery is no part of the library's public API.
//!
//! It reads only what it needs, each control's name and description (a line that starts a
//! control: not indented, not blank, not a comment), with a reader of its own ([`controls`]).
//! The list's one parser, which holds it to its rules (sorted, each name once, each control with
//! a test), is the xtask's (`xtask/src/mutation_controls.rs`: `cargo xtask mutation-list`, which
//! the runners use, and `tests/mutation_controls_doc.rs`). It cannot be this script's: this is
//! the build script of the published library, which can depend on no unpublished crate and
//! include no file outside its package (`cargo package` would leave it out). That test holds this
//! reading to the parser: the generated enum has the parser's controls, variant for variant.

use std::fmt::Write as _;
use std::path::Path;

/// A control as this script reads it: its name and its description.
struct Control<'a> {
    name: &'a str,
    description: &'a str,
}

/// The controls of the list, in order: each line that starts a control (not indented, not blank,
/// not a `#` comment), its first word the name and the rest the description. The rest of the
/// format is the xtask's parser's (see the header).
fn controls(text: &str) -> Vec<Control<'_>> {
    text.lines()
        .filter(|l| !l.starts_with(char::is_whitespace) && !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, description) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            Control {
                name,
                description: description.trim(),
            }
        })
        .collect()
}

/// The name of a control's variant of the gate's `Control` enum: `no-kill` is `NoKill`.
fn variant(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

fn main() {
    println!("cargo::rerun-if-env-changed=CK_MUTATION");
    // This file is the build script of both packages, and cargo runs it from the manifest
    // directory of the one being built: name it and the list from there, or cargo finds a path
    // that does not exist, counts the script stale and rebuilds the helper on every `cargo build`.
    let dir = if Path::new("build.rs").exists() {
        ""
    } else {
        "crates/ck-cgroup/"
    };
    println!("cargo::rerun-if-changed={dir}build.rs");
    let list = format!("{dir}mutation-controls.txt");
    println!("cargo::rerun-if-changed={list}");
    let text = match std::fs::read_to_string(&list) {
        Ok(t) => t,
        Err(e) => {
            println!("cargo::error=cannot read the mutation controls' list {list}: {e}");
            return;
        }
    };
    let controls = controls(&text);
    for c in &controls {
        if !c
            .name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            println!(
                "cargo::error={list}: {:?} is not a control name ([a-z0-9-]; `cargo xtask mutation-list tests` says what else is wrong)",
                c.name
            );
            return;
        }
    }
    let names: Vec<&str> = controls.iter().map(|c| c.name).collect();
    let values: Vec<String> = names.iter().map(|c| format!("\"{c}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(ck_mutation, values({}))",
        values.join(", ")
    );
    let wanted = std::env::var("CK_MUTATION").unwrap_or_default();
    let mut active = Vec::new();
    for name in wanted.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !names.contains(&name) {
            println!(
                "cargo::error=CK_MUTATION names {name:?}, which is no mutation control; the controls are: {}",
                names.join(", ")
            );
            continue;
        }
        println!("cargo::warning=built with mutation control {name}: this build must never ship");
        println!("cargo::rustc-cfg=ck_mutation=\"{name}\"");
        active.push(name);
    }
    let gate = gate(&controls, &active);
    let out =
        Path::new(&std::env::var_os("OUT_DIR").unwrap_or_default()).join("mutation_controls.rs");
    if let Err(e) = std::fs::write(&out, gate) {
        println!("cargo::error=cannot write {}: {e}", out.display());
    }
}

/// The gate's generated part: `enum Control`, a variant a control with its description as its
/// doc, and `active`, true for the controls `CK_MUTATION` named (the literal
/// `false` in a build that ships).
fn gate(controls: &[Control], active: &[&str]) -> String {
    let mut s = String::from(
        "/// A mutation control of `crates/ck-cgroup/mutation-controls.txt`: a mechanism the tests must\n\
         /// be shown to guard (generated by build.rs from the list). Both packages' gates (the\n\
         /// library's and the CLI's, each crate-private) have every control; each asks for its own.\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq)]\n\
         #[allow(dead_code)]\n\
         pub enum Control {\n",
    );
    for c in controls {
        let _ = writeln!(
            s,
            "    /// `{}`: {}\n    {},",
            c.name,
            markdown_text(c.description),
            variant(c.name)
        );
    }
    s.push_str("}\n\n");
    // The gate itself: the literal `false` in a build with no control active (every build that
    // ships), so that each `if mutation::active(...)` is `if false`, which the compiler removes.
    s.push_str(
        "/// Whether this build has `control` active: the mechanism it names is switched off\n\
         /// (`CK_MUTATION` at build time). The literal `false` in every build that ships.\n\
         #[inline(always)]\n\
         pub const fn active(control: Control) -> bool {\n",
    );
    if active.is_empty() {
        s.push_str("    let _ = control;\n    false\n}\n");
    } else {
        let list: Vec<String> = active
            .iter()
            .map(|n| format!("Control::{}", variant(n)))
            .collect();
        let _ = writeln!(s, "    matches!(control, {})\n}}", list.join(" | "));
    }
    s
}

/// `text` as a doc comment's plain text: markdown's `<`, `>`, `[` and `]` escaped (a description
/// such as `m-<id>_<n>` is no HTML tag, nor a link).
fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '<' | '>' | '[' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
