//! The library's layers (docs/design.md, "Layers"): each top-level module imports only from the
//! layers below it, so there is no import cycle. This reads the sources (their tests and doc
//! links included) for `crate::` paths and fails, naming the import, on one that goes up or
//! sideways. It also holds the one module-file convention (a folder's `mod.rs`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Bottom first. A module may import from a lower rank only.
const LAYERS: &[&[&str]] = &[
    &["mutation"],
    &["error"],
    &["id"],
    &["layout"],
    &["cgroup"],
    // Why a module's processes died, judged from what cgroup/ reads (counters, marks, causes).
    &["cause"],
    &["spawn", "stop", "limits"],
    // gpu beside module: no spawn, stop or other operation of a Root can reach GPU code.
    &["module", "signals", "gpu"],
    &["policy", "telemetry", "discover"],
    &["backend"],
    &["sandbox", "doctor"],
    // The round trips of every JSON type (a test module of the crate's root).
    &["json_tests"],
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The first path segment after each `crate::` of `code`, `crate::{a, b::c}` groups included.
fn imported(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => items.push(std::mem::take(&mut item)),
                    _ => {}
                }
                if depth > 0 || c != ',' {
                    item.push(c);
                }
            }
            items.push(item);
            for it in items {
                let seg: String = it
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !seg.is_empty() {
                    out.insert(seg);
                }
            }
        } else {
            let seg: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(seg);
        }
    }
    out
}

#[test]
fn every_import_goes_down_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("beneath src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|s| s.trim_end_matches(".rs").to_string())
            .expect("a name");
        if top == "lib" {
            continue;
        }
        // Tests and doc links count too: a test of a low layer that needs a high one belongs
        // with the high one (or in crates/ck-cgroup/tests/), and a doc link is an import of
        // the reader's attention.
        let code = std::fs::read_to_string(f).expect("read");
        let Some(mine) = rank(&top) else {
            wrong.push(format!(
                "{}: module {top} is in no layer of LAYERS",
                rel.display()
            ));
            continue;
        };
        for m in imported(&code) {
            if m == top {
                continue;
            }
            match rank(&m) {
                Some(r) if r < mine => {}
                Some(_) => wrong.push(format!("{}: {top} imports crate::{m}", rel.display())),
                None => wrong.push(format!("{}: crate::{m} is in no layer", rel.display())),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that do not go down a layer (docs/design.md, \"Layers\"):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_parser_reads_groups_and_paths() {
    let got = imported("use crate::{a::b, c, d::{e, f}};\nlet x = crate::g::h();");
    let want: BTreeSet<String> = ["a", "c", "d", "g"].iter().map(|s| s.to_string()).collect();
    assert_eq!(got, want);
}

/// One module-file convention (docs/design.md, "Layers"): a module with submodules is a folder
/// with its `mod.rs`, never `x.rs` beside a folder `x/`, so a reader finds a module's file in
/// one place. Fails naming each `x.rs` that has a folder beside it.
#[test]
fn a_module_with_submodules_is_a_folder_with_its_mod_rs() {
    fn both(dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).expect("read src").flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.with_extension("rs").is_file() {
                    out.push(p.with_extension("rs").display().to_string());
                }
                both(&p, out);
            }
        }
    }
    let mut wrong = Vec::new();
    both(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut wrong,
    );
    assert!(
        wrong.is_empty(),
        "files beside a folder of their name (move each to the folder's mod.rs):\n{}",
        wrong.join("\n")
    );
}
