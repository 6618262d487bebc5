//! Mutation controls (scripts/mutation-controls, scripts/vm-mutation): `CK_MUTATION=a,b` at build
//! time becomes `--cfg ck_mutation="a" --cfg ck_mutation="b"`, each switching one mechanism off so
//! that the tests guarding it fail by name. A cfg, not a Cargo feature: features unify across a
//! dependency graph, so an `--all-features` build would ship a helper whose kill does nothing.
//! Without the variable nothing is emitted but the names `check-cfg` accepts. The CLI crate uses
//! this same file as its build script.
//!
//! The controls are the one list `mutation-controls.txt` beside this file (its header says the
//! format): a control's name, what it switches off, and the tests (and guest checks) that must
//! fail with it. This script takes the names from it and refuses a list that breaks its rules.

use std::path::Path;

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
    let controls = match parse(&text) {
        Ok(c) => c,
        Err(problems) => {
            for p in problems {
                println!("cargo::error={list}: {p}");
            }
            return;
        }
    };
    let values: Vec<String> = controls.iter().map(|c| format!("\"{c}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(ck_mutation, values({}))",
        values.join(", ")
    );
    let Ok(wanted) = std::env::var("CK_MUTATION") else {
        return;
    };
    for name in wanted.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !controls.contains(&name) {
            println!(
                "cargo::error=CK_MUTATION names {name:?}, which is no mutation control; the controls are: {}",
                controls.join(", ")
            );
            continue;
        }
        println!("cargo::warning=built with mutation control {name}: this build must never ship");
        println!("cargo::rustc-cfg=ck_mutation=\"{name}\"");
    }
}

/// The control names of the list, in order; or every line that breaks its rules (a name out of
/// order or twice, not `[a-z0-9-]`, without a description, without a test; a test line outside a
/// control or not `TARGET TEST`).
fn parse(text: &str) -> Result<Vec<&str>, Vec<String>> {
    let mut names: Vec<&str> = Vec::new();
    let mut tests: Vec<usize> = Vec::new();
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        if !line.starts_with(char::is_whitespace) {
            let name = words[0];
            if !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                problems.push(format!(
                    "line {n}: {name:?} is not a control name ([a-z0-9-])"
                ));
            }
            if words.len() < 2 {
                problems.push(format!("line {n}: {name} has no description"));
            }
            if let Some(last) = names.last()
                && *last >= name
            {
                problems.push(format!(
                    "line {n}: {name} comes after {last}: keep the list sorted, each name once"
                ));
            }
            names.push(name);
            tests.push(0);
            continue;
        }
        let Some(count) = tests.last_mut() else {
            problems.push(format!(
                "line {n}: an indented line before the first control"
            ));
            continue;
        };
        if words.len() != 2 {
            problems.push(format!(
                "line {n}: a test line is `TARGET TEST` or `guest CHECK`, not {trimmed:?}"
            ));
        } else if words[0] != "guest" {
            *count += 1;
        }
    }
    for (name, count) in names.iter().zip(&tests) {
        if *count == 0 {
            problems.push(format!(
                "{name} has no test that must fail with it (a `TARGET TEST` line)"
            ));
        }
    }
    if problems.is_empty() {
        Ok(names)
    } else {
        Err(problems)
    }
}
