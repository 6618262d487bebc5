//! `scripts/mutation-list`'s program: the one list of mutation controls
//! (`crates/ck-cgroup/mutation-controls.txt`) through its one parser, for the shell runners.
//!
//!   mutation-list LIST tests [NAME...]  a line a test that must fail: CONTROL TARGET TEST (only
//!                                       the controls named; exit 2 for a name that is none)
//!   mutation-list LIST guest            a line a control with lane-2 checks: CONTROL CHECK...
//!
//! Exit 1 with a line a problem when the list breaks its rules.

#[path = "../crates/ck-cgroup/mutation_controls.rs"]
#[allow(dead_code)] // variant() is build.rs's
mod mutation_controls;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [list, what, names @ ..] = &args[..] else {
        eprintln!("usage: mutation-list LIST tests [NAME...] | mutation-list LIST guest");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(list) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mutation-list: cannot read {list}: {e}");
            return ExitCode::from(2);
        }
    };
    let controls = match mutation_controls::parse(&text) {
        Ok(c) => c,
        Err(problems) => {
            for p in problems {
                eprintln!("mutation-list: {list}: {p}");
            }
            return ExitCode::FAILURE;
        }
    };
    match what.as_str() {
        "tests" => {
            for n in names {
                if !controls.iter().any(|c| &c.name == n) {
                    eprintln!("mutation-list: no control {n}");
                    return ExitCode::from(2);
                }
            }
            for c in &controls {
                if names.is_empty() || names.contains(&c.name) {
                    for (target, test) in &c.tests {
                        println!("{} {target} {test}", c.name);
                    }
                }
            }
        }
        "guest" if names.is_empty() => {
            for c in controls.iter().filter(|c| !c.guest.is_empty()) {
                println!("{} {}", c.name, c.guest.join(" "));
            }
        }
        _ => {
            eprintln!("usage: mutation-list LIST tests [NAME...] | mutation-list LIST guest");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
