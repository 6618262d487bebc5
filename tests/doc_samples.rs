//! The samples of README.md, docs/operations.md, docs/commands.md and docs/json.md are the
//! tool's, checked here (the JSON samples by tests/json_contract.rs, against real lines):
//!
//! - every `ck-cgroup` command line of a code block is accepted by the helper's parser: it is run
//!   with `--help` put before its `--` (or at its end), so clap parses each flag and value before
//!   it and prints the help (exit 0), and a flag or value that does not exist is a usage error;
//! - every output sample is compared with what the tool prints, ignoring what varies (figures,
//!   pids, paths): `list`'s header, `doctor`'s check names and its last line;
//! - a code block that is neither (a diagram, a query for another tool) is marked
//!   `<!-- illustrative -->` on the line before it, and a block with output lines that no check
//!   here knows fails by name.

mod common;

use common::*;

const DOCS: [&str; 4] = [
    "README.md",
    "docs/operations.md",
    "docs/commands.md",
    "docs/json.md",
];

/// One fenced code block: its doc, its first line's number, its language, whether the line
/// before it marks it illustrative, and its lines.
struct Block {
    doc: &'static str,
    line: usize,
    lang: String,
    illustrative: bool,
    lines: Vec<String>,
}

fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for doc in DOCS {
        let text = std::fs::read_to_string(format!("{}/{doc}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{doc}: {e}"));
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            if let Some(lang) = lines[i].strip_prefix("```") {
                let start = i;
                let mut body = Vec::new();
                i += 1;
                while i < lines.len() && !lines[i].starts_with("```") {
                    body.push(lines[i].to_string());
                    i += 1;
                }
                out.push(Block {
                    doc,
                    line: start + 1,
                    lang: lang.to_string(),
                    illustrative: start > 0 && lines[start - 1].trim() == "<!-- illustrative -->",
                    lines: body,
                });
            }
            i += 1;
        }
    }
    out
}

/// A shell line without its comment (a `#` after whitespace, outside quotes).
fn uncommented(line: &str) -> &str {
    let mut quote = None;
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev_space => return line[..i].trim_end(),
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    line.trim_end()
}

/// The block's logical lines: continuations (`\` at the end) joined, comments cut.
fn logical_lines(b: &Block) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in &b.lines {
        let l = uncommented(l);
        if let Some(head) = l.strip_suffix('\\') {
            cur += head;
            cur.push(' ');
            continue;
        }
        cur += l;
        out.push(std::mem::take(&mut cur));
    }
    out
}

/// The arguments of a `ck-cgroup` command line (after `ck-cgroup`, up to a pipe, a redirection
/// or a `;`), quotes taken off and shell variables given a value; `None` for a line that is no
/// such command.
fn command_args(line: &str) -> Option<Vec<String>> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = match words.first() {
        Some(&"ck-cgroup") => 0,
        Some(&"ssh") | Some(&"sudo") => words.iter().position(|w| *w == "ck-cgroup")?,
        _ => return None,
    };
    let mut args = Vec::new();
    for w in &words[at + 1..] {
        if ["|", ">", ">>", ";", "&&", "||", "&"].contains(w) {
            break;
        }
        let w = w.trim_matches(|c| c == '"' || c == '\'');
        args.push(if w.starts_with('$') {
            "/sys/fs/cgroup/ck-subc.service".to_string()
        } else {
            w.to_string()
        });
    }
    Some(args)
}

/// Whether a line of a sh block is a line of a command (a command, a variable, a comment) rather
/// than the output of one.
fn is_shell(line: &str) -> bool {
    let t = line.trim_start();
    let first = t.split_whitespace().next().unwrap_or("");
    t.is_empty()
        || t.starts_with('#')
        || first.contains('=')
        || [
            "ck-cgroup",
            "ssh",
            "sudo",
            "make",
            "man",
            "systemctl",
            "journalctl",
            "cat",
            "export",
            "--pressure",
        ]
        .contains(&first)
}

#[test]
fn every_command_line_of_the_docs_is_accepted_by_the_parser() {
    let mut failures = Vec::new();
    let mut n = 0;
    for b in blocks().iter().filter(|b| !b.illustrative) {
        for l in logical_lines(b) {
            let Some(mut args) = command_args(&l) else {
                continue;
            };
            let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
            args.insert(at, "--help".into());
            let o = bare().args(&args).output().expect("run ck-cgroup");
            n += 1;
            if o.status.code() != Some(0) || !stdout(&o).contains("Usage:") {
                failures.push(format!(
                    "{}:{}: `ck-cgroup {}` is refused: {}",
                    b.doc,
                    b.line,
                    l.split_once("ck-cgroup ").map_or(l.as_str(), |(_, r)| r),
                    stderr(&o).lines().next().unwrap_or_default()
                ));
            }
        }
    }
    assert!(
        n > 30,
        "only {n} command lines found: the parse of the docs broke"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The output a block shows after its command, as lines.
fn outputs(b: &Block) -> Vec<&str> {
    b.lines
        .iter()
        .map(String::as_str)
        .filter(|l| !is_shell(l))
        .collect()
}

#[test]
fn the_output_samples_are_what_the_tool_prints() {
    let w = World::new();
    ok(w.run(&["init"]));
    ok(w.run(&["create", "aft"]));
    let list = ok(w.run(&["list"]));
    let doctor = w.run(&["doctor"]);
    let doctor_json: serde_json::Value =
        serde_json::from_str(&stdout(&w.run(&["--json", "doctor"]))).expect("doctor --json");
    let names: Vec<&str> = doctor_json["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for b in blocks()
        .iter()
        .filter(|b| !b.illustrative && b.lang == "sh")
    {
        let out = outputs(b);
        let at = format!("{}:{}", b.doc, b.line);
        let first_cmd = b.lines.iter().find_map(|l| command_args(uncommented(l)));
        let verb = first_cmd
            .as_ref()
            .and_then(|a| a.iter().find(|w| !w.starts_with('-') && !w.contains('/')))
            .cloned();
        match (out.is_empty(), verb.as_deref()) {
            (true, _) => {}
            (false, Some("list")) => {
                checked += 1;
                let want: Vec<&str> = out[0].split_whitespace().collect();
                let got: Vec<&str> = list.lines().next().unwrap_or("").split_whitespace().collect();
                if want != got {
                    failures.push(format!("{at}: list's header is {got:?}, the doc shows {want:?}"));
                }
            }
            (false, Some("doctor")) => {
                checked += 1;
                for l in &out {
                    let Some((outcome, rest)) = l.split_once(char::is_whitespace) else {
                        continue;
                    };
                    if !["ok", "warn", "FAIL"].contains(&outcome) {
                        continue;
                    }
                    let name = rest.trim_start().split(':').next().unwrap_or("");
                    if !names.contains(&name) {
                        failures.push(format!(
                            "{at}: doctor has no check {name:?} (its checks: {names:?})"
                        ));
                    }
                }
                // The sample is of a host that is not ready: compared where this one is not.
                let last = out.last().copied().unwrap_or("");
                let real = stdout(&doctor);
                if doctor.status.code() == Some(1) && !real.lines().any(|r| r == last) {
                    failures.push(format!(
                        "{at}: doctor's last line {last:?} is not one it prints ({:?})",
                        real.lines().last()
                    ));
                }
            }
            (false, v) => failures.push(format!(
                "{at}: output lines of `{}` that no check here compares ({:?}): compare them here or mark the block <!-- illustrative -->",
                v.unwrap_or("?"),
                out.first()
            )),
        }
    }
    assert!(checked >= 2, "the list and doctor samples were not found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A PromQL sample names only the recording rules the shipped rules file records.
#[test]
fn the_promql_samples_name_the_shipped_recording_rules() {
    let rules = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/packaging/prometheus/ck-cgroup.rules.yml"
    ))
    .expect("the rules file");
    let mut n = 0;
    for b in blocks().iter().filter(|b| b.lang == "promql") {
        for l in &b.lines {
            for name in l
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .filter(|w| w.starts_with("ck_cgroup:"))
            {
                n += 1;
                assert!(
                    rules.contains(&format!("record: {name}")),
                    "{}:{}: {name} is no recording rule of ck-cgroup.rules.yml",
                    b.doc,
                    b.line
                );
            }
        }
    }
    assert!(n > 0, "no PromQL sample found");
}

/// A block that is not a shell, JSON, Rust or PromQL block (each checked) is marked
/// illustrative, so that nothing in the docs looks checked that is not.
#[test]
fn every_other_block_is_marked_illustrative() {
    let unmarked: Vec<String> = blocks()
        .iter()
        .filter(|b| !b.illustrative && !["sh", "json", "rust", "promql"].contains(&b.lang.as_str()))
        .map(|b| format!("{}:{} (```{})", b.doc, b.line, b.lang))
        .collect();
    assert!(
        unmarked.is_empty(),
        "blocks neither checked nor marked <!-- illustrative -->: {unmarked:?}"
    );
}
