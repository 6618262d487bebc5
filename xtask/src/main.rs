//! `cargo xtask`: the repository's own tasks (the alias is in .cargo/config.toml; without it,
//! `cargo run -p xtask -- ...`).
//!
//!   mutation-list tests [NAME...]  a line a test that must fail: CONTROL TARGET TEST, of the
//!                                  controls named (else all; exit 2 for a name that is none);
//!                                  scripts/mutation-controls runs them
//!   mutation-list guest            a line a control with lane-2 checks: CONTROL CHECK...;
//!                                  scripts/vm-mutation runs them
//!   mutation-table                 writes docs/design.md's table of the controls from the list
//!                                  (tests/mutation_controls_doc.rs holds it to the list)
//!
//! Exit 1 with a line a problem when the list (crates/ck-cgroup/mutation-controls.txt) breaks its
//! rules, 2 for a usage error.

use std::io::Write as _;
use std::process::ExitCode;

use xtask::mutation_controls::{self, Control};
use xtask::{LIST, TABLE_DOC, TABLE_HEADING, repo};

const USAGE: &str = "usage: cargo xtask mutation-list tests [NAME...] | cargo xtask mutation-list guest | cargo xtask mutation-table";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["mutation-list", "tests", ref names @ ..] => with_controls(|c| tests(c, names)),
        ["mutation-list", "guest"] => with_controls(guest),
        ["mutation-table"] => with_controls(table),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `task` over the list's controls, or the list's problems (exit 1).
fn with_controls(task: impl FnOnce(&[Control]) -> ExitCode) -> ExitCode {
    let path = repo().join(LIST);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("xtask: cannot read {LIST}: {e}");
            return ExitCode::from(2);
        }
    };
    match mutation_controls::parse(&text) {
        Ok(controls) => task(&controls),
        Err(problems) => {
            for p in problems {
                eprintln!("xtask: {LIST}: {p}");
            }
            ExitCode::FAILURE
        }
    }
}

fn tests(controls: &[Control], names: &[&str]) -> ExitCode {
    for n in names {
        if !controls.iter().any(|c| c.name == *n) {
            eprintln!("xtask: no control {n} in {LIST}");
            return ExitCode::from(2);
        }
    }
    let mut out = String::new();
    for c in controls {
        if names.is_empty() || names.contains(&c.name.as_str()) {
            for (target, test) in &c.tests {
                out.push_str(&format!("{} {target} {test}\n", c.name));
            }
        }
    }
    print(&out)
}

fn guest(controls: &[Control]) -> ExitCode {
    let out: String = controls
        .iter()
        .filter(|c| !c.guest.is_empty())
        .map(|c| format!("{} {}\n", c.name, c.guest.join(" ")))
        .collect();
    print(&out)
}

/// `out` on stdout; a failed write is exit 1 naming it (a runner that read a cut list would run
/// fewer controls and pass), not a panic.
fn print(out: &str) -> ExitCode {
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: cannot write the list to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

fn table(controls: &[Control]) -> ExitCode {
    let path = repo().join(TABLE_DOC);
    let written = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {TABLE_DOC}: {e}"))
        .and_then(|doc| {
            let new = mutation_controls::with_table(&doc, TABLE_HEADING, controls)
                .map_err(|e| format!("{TABLE_DOC}: {e}"))?;
            if new == doc {
                return Ok(false);
            }
            std::fs::write(&path, new).map_err(|e| format!("cannot write {TABLE_DOC}: {e}"))?;
            Ok(true)
        });
    match written {
        Ok(true) => eprintln!(
            "xtask: wrote the table of {TABLE_DOC} ({} controls)",
            controls.len()
        ),
        Ok(false) => eprintln!("xtask: the table of {TABLE_DOC} is the list's already"),
        Err(e) => {
            eprintln!("xtask: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
