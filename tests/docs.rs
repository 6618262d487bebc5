//! The guides' code is the project's code: docs/daemon-integration.md's Rust block is the
//! library example that `cargo build --examples` compiles, and its list of error kinds is the
//! library's `ErrorKind`, in order.

mod common;

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

/// `ck-cgroup --help`'s exit codes, as `CODE  meaning` pairs.
fn help_exit_codes() -> Vec<(String, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ck-cgroup"))
        .arg("--help")
        .output()
        .expect("run ck-cgroup --help");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    help.split_once("Exit codes:\n")
        .expect("--help has its exit codes")
        .1
        .lines()
        .map_while(|l| l.strip_prefix("  "))
        .filter_map(|l| l.split_once("  "))
        .map(|(c, m)| (c.to_string(), m.to_string()))
        .collect()
}

/// The exit codes table of `file` (its `## Exit codes` section), as `code | meaning` pairs.
fn doc_exit_codes(file: &str) -> Vec<(String, String)> {
    let text = read(file);
    let section = text
        .split_once("## Exit codes\n")
        .unwrap_or_else(|| panic!("{file} has ## Exit codes"))
        .1;
    section
        .lines()
        .skip_while(|l| !l.starts_with("| code |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            (cells.len() == 2).then(|| (cells[0].to_string(), cells[1].to_string()))
        })
        .collect()
}

#[test]
fn readme_help_and_man_page_give_the_same_exit_codes() {
    let help = help_exit_codes();
    assert_eq!(
        help.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(),
        ["0", "1", "2", "126, 127"],
        "--help's exit codes"
    );
    for file in ["README.md", "docs/commands.md"] {
        assert_eq!(
            doc_exit_codes(file),
            help,
            "{file}'s exit codes against --help's"
        );
    }
    // The man page's EXIT STATUS is made from the same lines.
    let page = top_man_page();
    let exit = page
        .split_once(".SH \"EXIT STATUS\"")
        .expect("EXIT STATUS")
        .1;
    for (code, meaning) in &help {
        let roff_code = code.replace('-', "\\-");
        assert!(
            exit.contains(&format!("\\fB{roff_code}\\fR\n")),
            "man: code {code}"
        );
        let first = meaning
            .split('`')
            .next()
            .unwrap_or(meaning)
            .replace('-', "\\-");
        assert!(exit.contains(&first), "man: {code}'s meaning {meaning:?}");
    }
}

/// README.md reads in two minutes: under 120 lines, none over 120 characters (the reference is
/// docs/commands.md).
#[test]
fn readme_is_short_and_its_lines_fit() {
    let readme = read("README.md");
    let n = readme.lines().count();
    assert!(n < 120, "README.md has {n} lines");
    for (i, l) in readme.lines().enumerate() {
        assert!(
            l.chars().count() <= 120,
            "README.md:{}: {} characters",
            i + 1,
            l.chars().count()
        );
    }
}

/// The man page's ENVIRONMENT tags, in order.
fn man_environment() -> Vec<String> {
    let page = top_man_page();
    let env = page
        .split_once(".SH \"ENVIRONMENT\"")
        .expect("ENVIRONMENT")
        .1
        .split("\n.SH ")
        .next()
        .unwrap_or("");
    let lines: Vec<&str> = env.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0] == ".TP")
        .filter_map(|w| {
            w[1].strip_prefix("\\fB")
                .and_then(|t| t.strip_suffix("\\fR"))
                .map(|t| t.replace("\\-", "-"))
        })
        .collect()
}

/// The environment and the root's sources have one story: docs/commands.md's Environment table
/// is the man page's ENVIRONMENT, and its root precedence is `--help`'s.
#[test]
fn commands_md_environment_and_root_order_are_the_helpers() {
    let doc = read("docs/commands.md");
    let section = doc
        .split_once("## Environment\n")
        .expect("docs/commands.md has ## Environment")
        .1;
    let listed: Vec<String> = section
        .lines()
        .skip_while(|l| !l.starts_with("| variable |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1).map(str::to_string))
        .collect();
    assert_eq!(
        listed,
        man_environment(),
        "docs/commands.md's Environment against the man page"
    );

    // The root: the same sources in the same order in --help and docs/commands.md.
    let sources = [
        "--root",
        "--unit",
        "CK_CGROUP_ROOT",
        "CK_CGROUP_UNIT",
        "discovered",
    ];
    let order = |text: &str| -> Vec<&'static str> {
        let mut found: Vec<(usize, &'static str)> = sources
            .iter()
            .filter_map(|s| text.find(s).map(|i| (i, *s)))
            .collect();
        found.sort();
        found.into_iter().map(|(_, s)| s).collect()
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ck-cgroup"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let help_root = help.split_once("Root: ").expect("--help's Root:").1;
    let help_root = help_root.split("\n\n").next().unwrap_or(help_root);
    let doc_root = doc.split_once("## The root\n").expect("## The root").1;
    let doc_root = doc_root
        .trim_start()
        .split("\n\n")
        .next()
        .unwrap_or(doc_root);
    assert_eq!(
        order(help_root),
        sources,
        "--help's root order: {help_root}"
    );
    assert_eq!(
        order(doc_root),
        sources,
        "docs/commands.md's root order: {doc_root}"
    );
}

/// The top-level man page as `ck-cgroup generate man` writes it (roff).
fn top_man_page() -> String {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ck-cgroup"))
        .args(["generate", "man", "--out-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(dir.path().join("ck-cgroup.1")).unwrap()
}

/// docs/commands.md's "What each command promises" is the code's: one row per command that
/// `generate promises` lists, each cell its property in words, in `--help`'s order.
#[test]
fn commands_md_promises_table_is_the_codes() {
    let word = |what: &str, v: &str| -> String {
        match (what, v) {
            ("stdout", "result") => "result",
            ("stdout", "report") => "report",
            ("stdout", "cmd") => "CMD's",
            ("json", "stdout") => "stdout",
            ("json", "stderr") => "last line on stderr",
            ("json", "refused") => "refused",
            ("json", "ignored") => "ignored",
            ("modules", "none") | ("missing", "not_given") | ("cmd", "no") => "-",
            ("modules", "ids") => "module ids",
            ("modules", "names") => "ids or names",
            ("missing", "no_module") => "`no module ID`, exit 1",
            ("missing", "already_gone") => "already gone, exit 0",
            ("missing", "made") => "made",
            ("missing", "awaited") => "awaited",
            ("missing", "ignored") => "nothing to keep",
            ("policy", "default") => "given, else the default",
            ("policy", "when_given") => "given",
            ("cmd", "required") => "required",
            ("cmd", "optional") => "optional",
            ("root", "service") => "service",
            ("root", "lays_out") => "lays it out",
            ("root", "checks") => "checks it",
            ("root", "none") => "none",
            _ => panic!("no words for {what} {v}: add them here and in docs/commands.md"),
        }
        .to_string()
    };
    let mut want = String::new();
    for c in common::commands::every() {
        let stdout = match &c.stdout_unless {
            Some(arg) => format!("{} (not with `{arg}`)", word("stdout", &c.stdout)),
            None => word("stdout", &c.stdout),
        };
        want += &format!(
            "| `{}` | {stdout} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.name,
            word("json", &c.json),
            word("modules", &c.modules),
            word("missing", &c.missing),
            word("policy", &c.policy),
            word("cmd", &c.cmd),
            if c.backend { "yes" } else { "-" },
            word("root", &c.root),
        );
    }
    let doc = read("docs/commands.md");
    let table = doc
        .split_once("<!-- promises: begin (tests/docs.rs) -->\n")
        .and_then(|(_, r)| r.split_once("<!-- promises: end -->"))
        .map(|(t, _)| t)
        .expect("docs/commands.md has its promises: begin and end markers");
    let rows: String = table.lines().skip(2).map(|l| format!("{l}\n")).collect();
    assert!(
        rows == want,
        "docs/commands.md's promises table is not the code's; the rows should be:\n{want}"
    );
}

#[test]
fn the_daemon_integration_supervisor_block_is_the_supervisor_example() {
    let example = read("crates/ck-cgroup/examples/supervisor.rs");
    let want = example
        .split_once("// guide: start\n")
        .and_then(|(_, r)| r.split_once("// guide: end\n"))
        .map(|(r, _)| r)
        .expect("supervisor.rs has its guide: start and guide: end markers");
    let guide = read("docs/daemon-integration.md");
    let block = guide
        .split_once("### Whose fault: the death report and a restart budget\n")
        .and_then(|(_, s)| s.split_once("```rust\n"))
        .and_then(|(_, b)| b.split_once("```\n"))
        .map(|(b, _)| b)
        .expect("a rust block in the guide's death-report section");
    assert_eq!(
        block, want,
        "docs/daemon-integration.md's supervisor block differs from crates/ck-cgroup/examples/supervisor.rs between its guide: markers"
    );
}

/// Every Rust block of docs/daemon-integration.md is compiled: each is the code between the
/// `guide:` markers of one of the library's examples (dedented), which `cargo build --examples`
/// compiles and `crates/ck-cgroup/tests/supervisor.rs` runs. A block added to the guide without
/// its example fails here, naming its first line.
#[test]
fn every_rust_block_of_the_daemon_integration_guide_is_an_examples_compiled_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/ck-cgroup/examples");
    let mut regions = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let Some((_, rest)) = text.split_once("// guide: start\n") else {
            continue;
        };
        let Some((region, _)) = rest.split_once("// guide: end\n") else {
            panic!("{}: guide: start without guide: end", path.display());
        };
        // Up to the end marker's line (its indent is no line of the region).
        let region = region.rsplit_once('\n').map_or("", |(r, _)| r);
        // The region's lines as written, less the indent of its first line.
        let indent = region
            .lines()
            .next()
            .map_or(0, |l| l.len() - l.trim_start().len());
        let dedented: String = region
            .lines()
            .map(|l| {
                l.get(indent..)
                    .filter(|_| l.len() >= indent)
                    .unwrap_or(l.trim_start())
            })
            .map(|l| format!("{}\n", l.trim_end()))
            .collect();
        regions.push(dedented);
    }
    assert!(
        regions.len() >= 2,
        "the examples' guide regions: {regions:?}"
    );
    let guide = read("docs/daemon-integration.md");
    let mut blocks = 0;
    let mut rest = guide.as_str();
    while let Some((_, after)) = rest.split_once("```rust\n") {
        let (block, more) = after.split_once("```\n").expect("a closed rust block");
        blocks += 1;
        let normal: String = block
            .lines()
            .map(|l| format!("{}\n", l.trim_end()))
            .collect();
        assert!(
            regions.contains(&normal),
            "docs/daemon-integration.md's rust block starting {:?} is no example's code between guide: markers (crates/ck-cgroup/examples/): make it one, so that it compiles",
            block.lines().next().unwrap_or("")
        );
        rest = more;
    }
    assert!(blocks >= 2, "the guide's rust blocks: {blocks}");
}
