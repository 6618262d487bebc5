//! The guides' code is the project's code: docs/daemon-integration.md's Rust block is the
//! library example that `cargo build --examples` compiles, and its list of error kinds is the
//! library's `ErrorKind`, in order.

use std::path::Path;

fn read(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_daemon_integration_rust_block_is_the_spawn_module_example() {
    let example = read("crates/ck-cgroup/examples/spawn_module.rs");
    let region = example
        .split_once("    // guide: start\n")
        .and_then(|(_, r)| r.split_once("    // guide: end\n"))
        .map(|(r, _)| r)
        .expect("spawn_module.rs has its guide: start and guide: end markers");
    let want: String = region
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .map(|l| format!("{l}\n"))
        .collect();
    let guide = read("docs/daemon-integration.md");
    let section = guide
        .split_once("### Through the library (Rust)\n")
        .map(|(_, s)| s)
        .expect("the guide's section");
    let block = section
        .split_once("```rust\n")
        .and_then(|(_, b)| b.split_once("```\n"))
        .map(|(b, _)| b)
        .expect("a rust block in the section");
    assert_eq!(
        block, want,
        "docs/daemon-integration.md's Rust block differs from crates/ck-cgroup/examples/spawn_module.rs between its guide: markers"
    );
}

#[test]
fn the_daemon_integration_error_kinds_are_the_enum() {
    let src = read("crates/ck-cgroup/src/error.rs");
    let body = src
        .split_once("pub enum ErrorKind {")
        .and_then(|(_, b)| b.split_once("\n}"))
        .map(|(b, _)| b)
        .expect("pub enum ErrorKind in error.rs");
    let variants: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with('#') && !l.is_empty())
        .map(|l| l.trim_end_matches(','))
        .collect();
    let guide = read("docs/daemon-integration.md").replace('\n', " ");
    let list = guide
        .split_once("a test checks): ")
        .and_then(|(_, l)| l.split_once("; the errno"))
        .map(|(l, _)| l)
        .expect("the guide's list of error kinds");
    let listed: Vec<&str> = list
        .split(", ")
        .map(|k| k.trim().trim_matches('`'))
        .collect();
    assert_eq!(
        listed, variants,
        "docs/daemon-integration.md's ErrorKind list"
    );
}
