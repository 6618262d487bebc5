//! The docs agree with the one list of mutation controls, `crates/ck-cgroup/mutation-controls.txt`
//! (build.rs, scripts/mutation-controls and scripts/vm-mutation read it), read through its one
//! parser (the xtask's, `xtask/src/mutation_controls.rs`): docs/design.md's table
//! ("Mutation controls") has one row a control, in the list's order, with the list's description,
//! and no row for a name that is no control; every control a doc or the README names
//! (`CK_MUTATION=NAME`, "mutation control `NAME`") is one; and docs/guest-lane.md names each
//! control that has guest checks (`CK_MUTATION=NAME`) with each of its checks. Every test the list
//! says a control fails is where the list says it is (a rename fails `make test`, not only
//! `make mutation`). The gate build.rs generates (its own reading of the list) has the parser's
//! controls, variant for variant.

use std::path::{Path, PathBuf};

use xtask::mutation_controls::{self, Control};
use xtask::{LIST, TABLE_DOC, TABLE_HEADING};

const GUEST_DOC: &str = "docs/guest-lane.md";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// The list's controls, through its one parser (`cargo xtask mutation-list`'s).
fn controls() -> Vec<Control> {
    let out = mutation_controls::parse(&read(LIST))
        .unwrap_or_else(|problems| panic!("{LIST}:\n{}", problems.join("\n")));
    assert!(!out.is_empty(), "{LIST} lists no control");
    out
}

/// The table's rows under [`TABLE_HEADING`]: (control, description).
fn table(doc: &str) -> Vec<(String, String)> {
    let start = doc
        .find(&format!("\n{TABLE_HEADING}\n"))
        .unwrap_or_else(|| panic!("{TABLE_DOC} has no section {TABLE_HEADING:?}"));
    let mut rows = Vec::new();
    for line in doc[start + 1..].lines().skip(1) {
        if line.starts_with('#') {
            break;
        }
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let (name, rest) = rest.split_once('`').expect("a row's control in backticks");
        let description = rest
            .trim_start()
            .strip_prefix('|')
            .and_then(|r| r.trim_end().strip_suffix('|'))
            .unwrap_or_else(|| panic!("{TABLE_DOC}: the row of `{name}` is not | `NAME` | TEXT |"));
        rows.push((name.to_string(), description.trim().to_string()));
    }
    rows
}

/// Each control a text names: `CK_MUTATION=a,b` (lower-case names; `CK_MUTATION=NAME` is a
/// placeholder) and "mutation control `a`" / "Mutation control: `a`", across line breaks.
fn named(text: &str) -> Vec<String> {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let name_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == ',';
    let mut out = Vec::new();
    for (i, _) in flat.match_indices("CK_MUTATION=") {
        let rest = &flat[i + "CK_MUTATION=".len()..];
        let end = rest.find(|c| !name_char(c)).unwrap_or(rest.len());
        out.extend(
            rest[..end]
                .split(',')
                .filter(|n| !n.is_empty())
                .map(String::from),
        );
    }
    let lower = flat.to_lowercase();
    for (i, _) in lower.match_indices("mutation control") {
        let rest = flat[i + "mutation control".len()..]
            .trim_start_matches('s')
            .trim_start_matches(':')
            .trim_start();
        if let Some(r) = rest.strip_prefix('`')
            && let Some((name, _)) = r.split_once('`')
            && name.chars().all(name_char)
        {
            out.push(name.to_string());
        }
    }
    out
}

fn docs() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.push(repo().join("README.md"));
    files.sort();
    files
}

#[test]
fn design_md_tables_every_control_of_the_list_and_no_other() {
    let list = controls();
    let rows = table(&read(TABLE_DOC));
    let mut problems = Vec::new();
    for c in &list {
        match rows.iter().find(|(n, _)| *n == c.name) {
            None => problems.push(format!("lacks the control `{}`", c.name)),
            Some((_, d)) if *d != c.description => problems.push(format!(
                "describes `{}` as {d:?}, the list as {:?}",
                c.name, c.description
            )),
            Some(_) => {}
        }
    }
    for (n, _) in &rows {
        if !list.iter().any(|c| c.name == *n) {
            problems.push(format!("names `{n}`, which is no control in {LIST}"));
        }
    }
    let order: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
    if problems.is_empty() && order != want {
        problems.push("has the controls in another order than the list (sorted by name)".into());
    }
    let expected = mutation_controls::table_rows(&list);
    assert!(
        problems.is_empty(),
        "{TABLE_DOC}'s table under {TABLE_HEADING:?} and {LIST} disagree:\n  {}\n\
         `cargo xtask mutation-table` writes the table's rows from the list:\n{expected}",
        problems.join("\n  ")
    );
}

#[test]
fn every_control_a_doc_names_is_in_the_list() {
    let list = controls();
    let mut unknown = Vec::new();
    for path in docs() {
        let text = std::fs::read_to_string(&path).expect("read a doc");
        for n in named(&text) {
            if !list.iter().any(|c| c.name == n) {
                let rel = path.strip_prefix(repo()).unwrap_or(Path::new("?"));
                unknown.push(format!("{}: `{n}`", rel.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "docs name mutation controls that {LIST} does not list:\n  {}",
        unknown.join("\n  ")
    );
}

#[test]
fn guest_lane_md_names_each_guest_control_with_its_checks() {
    let doc = read(GUEST_DOC);
    let names = named(&doc);
    let mut problems = Vec::new();
    for c in controls().iter().filter(|c| !c.guest.is_empty()) {
        if !names.contains(&c.name) {
            problems.push(format!("`CK_MUTATION={}` is not named", c.name));
        }
        for check in &c.guest {
            if !doc.contains(&format!("`{check}`")) {
                problems.push(format!(
                    "the check `{check}` (of `{}`) is not named",
                    c.name
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{GUEST_DOC} and the `guest` lines of {LIST} disagree:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn named_finds_both_forms_across_line_breaks() {
    let text = "Mutation control:\n`stop-no-seal`. The mutation control `a-b` and\n\
                CK_MUTATION=x,y-2 but CK_MUTATION=NAME and the mutation controls (`make mutation`).";
    assert_eq!(named(text), ["x", "y-2", "stop-no-seal", "a-b"]);
}

/// Where a test the list names lives: `lib PATH` in the library's module PATH, less `tests::`
/// and the test's name (`cause::oom_cause` is `crates/ck-cgroup/src/cause/oom_cause.rs`, its
/// `mod.rs`, or its `tests.rs`, a `mod tests;` of its own); `bin PATH` the same under `src/`;
/// `cli MOD::NAME` in `tests/cli/MOD.rs`; `ck-cgroup:BIN NAME` in
/// `crates/ck-cgroup/tests/BIN.rs`; any other `BIN NAME` in `tests/BIN.rs`.
fn test_file(target: &str, path: &str) -> Vec<PathBuf> {
    let mut segs: Vec<&str> = path.split("::").collect();
    segs.pop();
    segs.retain(|s| *s != "tests");
    let module = |root: &str| {
        let base = repo().join(root).join(segs.join("/"));
        vec![
            base.with_extension("rs"),
            base.join("mod.rs"),
            base.join("tests.rs"),
        ]
    };
    match target {
        "lib" => module("crates/ck-cgroup/src"),
        "bin" => module("src"),
        "cli" => vec![
            repo()
                .join("tests/cli")
                .join(format!("{}.rs", segs.join("/"))),
        ],
        t => match t.strip_prefix("ck-cgroup:") {
            Some(bin) => vec![repo().join(format!("crates/ck-cgroup/tests/{bin}.rs"))],
            None => vec![repo().join(format!("tests/{t}.rs"))],
        },
    }
}

/// `word` is an identifier of `text` (not part of a longer one): a test's `fn NAME` or a
/// macro's `NAME:` row.
fn has_identifier(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(ident)
            && !text[i + word.len()..].chars().next().is_some_and(ident)
    })
}

/// Every test a control says it fails is where the list says: a test renamed or moved to
/// another module fails here, in `make test`, not only when `make mutation` finds no such test.
#[test]
fn every_test_a_control_names_is_where_the_list_says() {
    let mut missing = Vec::new();
    for (target, path) in controls().iter().flat_map(|c| &c.tests) {
        let (target, path) = (target.as_str(), path.as_str());
        let name = path.rsplit("::").next().unwrap_or(path);
        let files = test_file(target, path);
        let found = files
            .iter()
            .any(|f| std::fs::read_to_string(f).is_ok_and(|text| has_identifier(&text, name)));
        if !found {
            let shown: Vec<String> = files
                .iter()
                .map(|f| f.strip_prefix(repo()).unwrap_or(f).display().to_string())
                .collect();
            missing.push(format!("{target} {path} (not in {})", shown.join(" or ")));
        }
    }
    assert!(
        missing.is_empty(),
        "{LIST} names tests that are not where it says:\n{}",
        missing.join("\n")
    );
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The gate (`crates/ck-cgroup/src/mutation.rs`) is the only source file that names the
/// `ck_mutation` cfg: a mechanism asks `mutation::active(Control::…)`, and an alternative
/// implementation is a file of its own declared with `mutation::alternative_module!`. Every
/// control of the list is asked for somewhere (a control nothing asks for switches nothing off),
/// and every alternative module's file exists.
#[test]
fn only_the_gate_names_the_cfg_and_the_code_asks_for_every_control() {
    const GATE: &str = "crates/ck-cgroup/src/mutation.rs";
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    rust_files(&repo().join("crates/ck-cgroup/src"), &mut files);
    let mut naming = Vec::new();
    let mut code = String::new();
    for f in &files {
        let rel = f.strip_prefix(repo()).unwrap_or(f).display().to_string();
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("read {rel}: {e}"));
        if rel == GATE {
            continue;
        }
        if text.contains("ck_mutation") {
            naming.push(rel.clone());
        }
        // Each alternative module's file is beside the file that declares it (its own
        // directory for a mod.rs or main.rs, else the directory named after it).
        for (i, _) in text.match_indices("mutation::alternative_module!(") {
            let args = &text[i..text[i..].find(')').map_or(text.len(), |j| i + j)];
            let module = args.rsplit(',').next().unwrap_or("").trim();
            let dir = match f.file_name().and_then(|n| n.to_str()) {
                Some("mod.rs" | "main.rs" | "lib.rs") => {
                    f.parent().expect("a parent").to_path_buf()
                }
                _ => f.with_extension(""),
            };
            assert!(
                dir.join(format!("{module}.rs")).is_file(),
                "{rel}: the alternative module {module} has no file {}",
                dir.join(format!("{module}.rs")).display()
            );
        }
        code.push_str(&text);
    }
    assert!(
        naming.is_empty(),
        "only {GATE} may name the ck_mutation cfg; these do: {}",
        naming.join(", ")
    );
    let unasked: Vec<String> = controls()
        .iter()
        .filter(|c| {
            let variant = format!("Control::{}", mutation_controls::variant(&c.name));
            let alternative = format!("\"{}\"", c.name);
            !has_identifier(&code, &variant) && !code.contains(&alternative)
        })
        .map(|c| c.name.clone())
        .collect();
    assert!(
        unasked.is_empty(),
        "controls of {LIST} that no code asks for: {}",
        unasked.join(", ")
    );
}

/// The gate's enum that build.rs generates from the list with a reader of its own (a published
/// crate's build script cannot use the xtask's parser) has the parser's controls, in its order,
/// each with its description: the two readings of the list are one. The CLI's gate is generated by
/// the same script, into this package's `OUT_DIR`.
#[test]
fn the_gate_build_rs_generates_has_the_parsers_controls() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/mutation_controls.rs"));
    let variants: Vec<&str> = generated
        .lines()
        .filter_map(|l| l.strip_prefix("    ")?.strip_suffix(','))
        .filter(|v| v.chars().all(|c| c.is_ascii_alphanumeric()))
        .collect();
    let list = controls();
    let want: Vec<String> = list
        .iter()
        .map(|c| mutation_controls::variant(&c.name))
        .collect();
    assert_eq!(
        variants, want,
        "build.rs's Control enum and {LIST}'s parser"
    );
    for c in &list {
        // The description as build.rs writes it into a doc comment: markdown's <>[] escaped.
        let mut doc = format!("    /// `{}`: ", c.name);
        for ch in c.description.chars() {
            if matches!(ch, '<' | '>' | '[' | ']') {
                doc.push('\\');
            }
            doc.push(ch);
        }
        assert!(
            generated.lines().any(|l| l == doc),
            "build.rs's gate has no line {doc:?}:\n{generated}"
        );
    }
}
