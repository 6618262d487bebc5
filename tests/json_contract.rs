//! docs/json.md is the contract of `--json`: every command is driven on a sandbox root, its
//! JSON parsed, and the set of its field paths (recursively: `modules[].stop.method`) compared
//! with the field tables of the command's section in the doc. A field the code prints that the
//! doc does not list fails by name, and so does a documented field the code does not print
//! (unless its parent is `null` or an empty array here, or the doc says it may be absent); a
//! field documented as never `null` that is `null` fails too. Every section must be checked.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::watch::Watch;
use common::*;
use serde_json::Value;

/// One documented field: its type and its null column (`yes`, `no`, `absent`).
#[derive(Clone, Debug)]
struct Field {
    ty: String,
    null: String,
}

/// The doc's sections, by the first backquoted word of their heading, each its fields by path.
fn doc() -> BTreeMap<String, BTreeMap<String, Field>> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md"))
        .expect("docs/json.md");
    let mut raw: BTreeMap<String, Vec<(String, Field)>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = h.split('`').nth(1).map(str::to_string);
            if let Some(c) = &current {
                assert!(!raw.contains_key(c), "docs/json.md: two sections `{c}`");
                raw.insert(c.clone(), Vec::new());
            }
            continue;
        }
        let (Some(section), true) = (&current, line.starts_with("| `")) else {
            continue;
        };
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(
            cells.len() >= 5,
            "docs/json.md: a row of four cells: {line}"
        );
        let field = Field {
            ty: cells[2].to_string(),
            null: cells[3].to_string(),
        };
        assert!(
            ["yes", "no", "absent"].contains(&field.null.as_str()),
            "docs/json.md: null is yes, no or absent: {line}"
        );
        let path = cells[1].trim_matches('`').to_string();
        raw.get_mut(section).expect("section").push((path, field));
    }
    let mut out = BTreeMap::new();
    for name in raw.keys() {
        out.insert(name.clone(), expand(&raw, name, 0));
    }
    out
}

/// A section's rows with `figure` and `object (X)` types expanded into their fields.
fn expand(
    raw: &BTreeMap<String, Vec<(String, Field)>>,
    section: &str,
    depth: usize,
) -> BTreeMap<String, Field> {
    assert!(
        depth < 4,
        "docs/json.md: object (X) nested too deep at {section}"
    );
    let rows = raw
        .get(section)
        .unwrap_or_else(|| panic!("docs/json.md: no section `{section}`"));
    let mut out = BTreeMap::new();
    for (path, f) in rows {
        let of =
            f.ty.strip_prefix("object (")
                .and_then(|t| t.strip_suffix(')'));
        if let Some(other) = of {
            let inner = expand(raw, other, depth + 1);
            let prefix = if path.starts_with('(') {
                String::new()
            } else {
                out.insert(path.clone(), f.clone());
                format!("{path}.")
            };
            for (p, g) in inner.into_iter().filter(|(p, _)| p != "version") {
                out.insert(format!("{prefix}{p}"), g);
            }
        } else if f.ty == "figure" {
            out.insert(path.clone(), f.clone());
            let field = |null: &str| Field {
                ty: String::new(),
                null: null.to_string(),
            };
            out.insert(format!("{path}.value"), field("yes"));
            out.insert(format!("{path}.source"), field("no"));
        } else {
            out.insert(path.clone(), f.clone());
        }
    }
    out
}

/// What one JSON object holds: every field path, the paths whose value is `null`, and the
/// containers looked into (objects, and arrays with an object in them as `x[]`).
#[derive(Default)]
struct Seen {
    paths: BTreeSet<String>,
    nulls: BTreeSet<String>,
    containers: BTreeSet<String>,
}

fn walk(v: &Value, prefix: &str, seen: &mut Seen) {
    let Some(map) = v.as_object() else {
        return;
    };
    for (k, val) in map {
        let p = format!("{prefix}{k}");
        seen.paths.insert(p.clone());
        match val {
            Value::Null => {
                seen.nulls.insert(p);
            }
            Value::Object(_) => {
                seen.containers.insert(p.clone());
                walk(val, &format!("{p}."), seen);
            }
            Value::Array(items) => {
                for item in items.iter().filter(|i| i.is_object()) {
                    seen.containers.insert(format!("{p}[]"));
                    walk(item, &format!("{p}[]."), seen);
                }
            }
            _ => {}
        }
    }
}

/// The parent container of a path: `modules[].stop.method` is in `modules[].stop`.
fn parent_of(path: &str) -> &str {
    path.rsplit_once('.').map_or("", |(p, _)| p)
}

struct Contract {
    doc: BTreeMap<String, BTreeMap<String, Field>>,
    checked: BTreeSet<String>,
    failures: Vec<String>,
    /// The lines the runs printed, by section: what the doc's samples are compared with.
    real: BTreeMap<String, Vec<String>>,
}

impl Contract {
    fn new() -> Contract {
        Contract {
            doc: doc(),
            checked: BTreeSet::new(),
            failures: Vec::new(),
            real: BTreeMap::new(),
        }
    }

    /// `line` (one JSON object) against section `section`; `what` names the run.
    fn check(&mut self, section: &str, what: &str, line: &str) {
        let v: Value = serde_json::from_str(line.trim())
            .unwrap_or_else(|e| panic!("{what}: not one JSON object ({e}): {line}"));
        assert_eq!(v["version"], 1, "{what}: version 1: {line}");
        let Some(fields) = self.doc.get(section) else {
            self.failures
                .push(format!("{what}: docs/json.md has no section `{section}`"));
            return;
        };
        self.checked.insert(section.to_string());
        if what != SAMPLE {
            self.real
                .entry(section.to_string())
                .or_default()
                .push(line.trim().to_string());
        }
        let mut seen = Seen::default();
        walk(&v, "", &mut seen);
        for p in &seen.paths {
            if !fields.contains_key(p) {
                self.failures.push(format!(
                    "{what}: field `{p}` is printed but not documented in section `{section}`"
                ));
            }
        }
        for (p, f) in fields {
            let parent = parent_of(p);
            let required =
                f.null != "absent" && (parent.is_empty() || seen.containers.contains(parent));
            if required && !seen.paths.contains(p) {
                self.failures.push(format!(
                    "{what}: field `{p}` is documented in section `{section}` but not printed"
                ));
            }
            if f.null == "no" && seen.nulls.contains(p) {
                self.failures.push(format!(
                    "{what}: field `{p}` is null but documented as never null in section `{section}`"
                ));
            }
        }
    }

    /// Every JSON sample of docs/json.md, held to what the runs printed: the same field rules
    /// as a real line of its section ([`check`](Self::check): documented, printed, `null` only
    /// where it may be), and its fields in the order the code prints them (the values vary and
    /// are not compared). A `watch` sample is also parsed into the library's `WatchEvent` and
    /// written again: the same fields in the same order.
    fn samples(&mut self) {
        for (doc, section, line) in doc_samples() {
            self.check(&section, SAMPLE, &line);
            let sample_keys = keys_in_order(&line);
            let real = self.real.get(&section).cloned().unwrap_or_default();
            // The real line of the same `event` where there is one (watch), else the first.
            let event = serde_json::from_str::<Value>(&line)
                .ok()
                .map(|v| v["event"].clone());
            let twin = real
                .iter()
                .find(|r| {
                    event.as_ref().is_some_and(|e| !e.is_null())
                        && serde_json::from_str::<Value>(r)
                            .ok()
                            .map(|v| v["event"].clone())
                            == event
                })
                .or(real.first());
            let mut against: Vec<(String, String)> = Vec::new();
            if let Some(r) = twin {
                against.push(("the real line".into(), r.clone()));
            }
            if section == "watch" {
                let ev: ck_cgroup::telemetry::watch::WatchEvent = serde_json::from_str(&line)
                    .unwrap_or_else(|e| {
                        panic!("docs/json.md watch sample is no WatchEvent ({e}): {line}")
                    });
                let mut again = serde_json::to_string(&ev).unwrap();
                again.insert_str(1, "\"version\":1,");
                against.push(("WatchEvent written again".into(), again));
            }
            for (what, other) in against {
                if let Some(why) = out_of_order(&sample_keys, &keys_in_order(&other)) {
                    self.failures.push(format!(
                        "{doc} sample of `{section}`: {why}, unlike {what}: {line}"
                    ));
                }
            }
        }
    }

    fn finish(mut self) {
        self.samples();
        let unchecked: Vec<&String> = self
            .doc
            .keys()
            .filter(|k| !self.checked.contains(*k))
            .collect();
        assert!(
            self.failures.is_empty(),
            "docs/json.md and the JSON differ:\n{}",
            self.failures.join("\n")
        );
        assert!(
            unchecked.is_empty(),
            "sections of docs/json.md no run checked: {unchecked:?}"
        );
    }
}

/// What [`Contract::check`] is told for a line of the doc itself.
const SAMPLE: &str = "a docs sample";

/// Every line of every ```json block in docs/json.md, with its doc and its section (as [`doc`]
/// names it), and those of the other docs whose section their shape tells.
fn doc_samples() -> Vec<(&'static str, String, String)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md"))
        .expect("docs/json.md");
    let mut out = Vec::new();
    // The other docs' samples are watch lines and error objects, held to those sections.
    for doc in ["README.md", "docs/operations.md", "docs/commands.md"] {
        let text =
            std::fs::read_to_string(format!("{}/{doc}", env!("CARGO_MANIFEST_DIR"))).expect(doc);
        let mut in_json = false;
        for line in text.lines() {
            if line == "```json" {
                in_json = true;
            } else if line.starts_with("```") {
                in_json = false;
            } else if in_json && !line.trim().is_empty() {
                let v: Value = serde_json::from_str(line).unwrap_or_else(|e| {
                    panic!("{doc}: a JSON sample that is no JSON ({e}): {line}")
                });
                let section = if v.get("event").is_some() {
                    "watch"
                } else if v.get("error").is_some() {
                    "error"
                } else {
                    panic!(
                        "{doc}: a JSON sample of no known shape (a watch line or an error object): {line}"
                    )
                };
                out.push((doc, section.to_string(), line.to_string()));
            }
        }
    }
    let mut section = None;
    let mut in_json = false;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = h.split('`').nth(1).map(str::to_string);
        } else if line == "```json" {
            in_json = true;
        } else if line.starts_with("```") {
            in_json = false;
        } else if in_json && !line.trim().is_empty() {
            let s = section.clone().expect("a ```json block under a section");
            out.push(("docs/json.md", s, line.to_string()));
        }
    }
    out
}

/// The keys of a JSON object text in the order written, each with the path of the object it is
/// in (`modules[].stop`); an array's objects share one path.
fn keys_in_order(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // The containers open: an object's path, or an array's (its objects are `path[]`).
    let mut stack: Vec<(bool, String)> = Vec::new();
    let mut last_key = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut s = String::new();
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            if let Some(e) = chars.next() {
                                s.push(e);
                            }
                        }
                        '"' => break,
                        _ => s.push(d),
                    }
                }
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if chars.peek() == Some(&':') {
                    let path = stack.last().map(|(_, p)| p.clone()).unwrap_or_default();
                    out.push((path, s.clone()));
                    last_key = s;
                }
            }
            '{' | '[' => {
                let parent = stack.last().cloned();
                let path = match parent {
                    None => String::new(),
                    Some((true, p)) => format!("{p}[]"),
                    Some((false, p)) if p.is_empty() => last_key.clone(),
                    Some((false, p)) => format!("{p}.{last_key}"),
                };
                stack.push((c == '[', path));
            }
            '}' | ']' => {
                stack.pop();
            }
            _ => {}
        }
    }
    out
}

/// Why the keys of `sample` are not in the order of `real` (the keys both have, in each object
/// both have), if they are not.
fn out_of_order(sample: &[(String, String)], real: &[(String, String)]) -> Option<String> {
    let position = |k: &(String, String)| real.iter().position(|r| r == k);
    let mut last: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for k in sample {
        // An array's second object starts its keys over: its first object's order is the one.
        if !seen.insert(k) {
            continue;
        }
        let Some(at) = position(k) else {
            continue;
        };
        if let Some((before, name)) = last.get(k.0.as_str())
            && at < *before
        {
            let obj = if k.0.is_empty() { "the object" } else { &k.0 };
            return Some(format!("in {obj}, `{}` comes after `{name}`", k.1));
        }
        last.insert(k.0.as_str(), (at, k.1.as_str()));
    }
    None
}

/// The last line of stderr: `run`'s and `sandbox`'s result, or an error object.
fn last_err_line(o: &std::process::Output) -> String {
    stderr(o).lines().last().unwrap_or_default().to_string()
}

/// A `sleep` (tracked, so it dies with the test); the caller waits for it once it was killed.
fn sleep(w: &World) -> std::process::Child {
    let c = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    w.track(c.id());
    c
}

#[test]
fn every_json_shape_is_the_one_docs_json_md_documents() {
    let mut c = Contract::new();
    let w = World::new();

    c.check("init", "init", &ok(w.run(&["--json", "init"])));
    let created = ok(w.run(&[
        "--json",
        "create",
        "aft",
        "--pids-max",
        "10",
        "--best-effort",
    ]));
    c.check("create", "create", &created);
    let set = ok(w.run(&["--json", "set", "aft", "--pids-max", "10", "--best-effort"]));
    c.check("set", "set", &set);

    let mut first = sleep(&w);
    let placed = ok(w.run(&["--json", "place", "aft", &first.id().to_string()]));
    c.check("place", "place", &placed);

    // Both layouts, and a daemon directory whose name does not decode (`id` null).
    std::fs::create_dir_all(w.root().join("daemon/subc-modules/m-wernicke_5f42")).unwrap();
    std::fs::create_dir_all(w.root().join("daemon/subc-modules/weird")).unwrap();
    let list = ok(w.run(&["--json", "list"]));
    c.check("list", "list", &list);
    let v: Value = serde_json::from_str(&list).unwrap();
    let by_name = |n: &str| {
        v["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n} listed: {list}"))
    };
    assert_eq!(by_name("m-wernicke_5f42")["id"], "wernicke");
    assert_eq!(by_name("weird")["id"], Value::Null);
    assert_eq!(by_name("aft")["id"], "aft");
    let status = ok(w.run(&["--json", "status"]));
    c.check("status", "status", &status);
    let s: Value = serde_json::from_str(&status).unwrap();
    for m in s["modules"].as_array().unwrap() {
        let l = by_name(m["name"].as_str().unwrap());
        assert_eq!(m["id"], l["id"], "status and list name {} alike", m["name"]);
        assert_eq!(m["module"], m["id"], "status's legacy module is id");
    }
    c.check(
        "status",
        "status --format json",
        &ok(w.run(&["status", "--format", "json", "aft"])),
    );
    c.check("ps", "ps", &ok(w.run(&["--json", "ps"])));
    c.check(
        "ps",
        "ps --sort rss",
        &ok(w.run(&["--json", "ps", "aft", "--sort", "rss"])),
    );

    c.check("freeze", "freeze", &ok(w.run(&["--json", "freeze", "aft"])));
    c.check("freeze", "thaw", &ok(w.run(&["--json", "thaw", "aft"])));

    let policy = w.tmp("policy.toml");
    std::fs::write(&policy, "[defaults]\npids_max = 64\n").unwrap();
    let policy = policy.to_str().unwrap();
    for dry in [true, false] {
        let mut args = vec!["--json", "--policy", policy, "apply", "--best-effort"];
        if dry {
            args.push("--dry-run");
        }
        c.check("apply", &format!("{args:?}"), &ok(w.run(&args)));
    }

    let o = w.run(&["--json", "doctor"]);
    c.check("doctor", "doctor", &stdout(&o));

    watch_lines(&w, &mut c);

    // A stop with a grace, of a populated module.
    c.check(
        "kill",
        "kill --grace",
        &ok(w.run(&["--json", "kill", "--grace", "1s", "aft"])),
    );
    c.check(
        "kill",
        "kill (gone)",
        &ok(w.run(&["--json", "kill", "aft"])),
    );

    // prune --kill of a populated module: a stop in it.
    ok(w.run(&["create", "busy"]));
    let mut second = sleep(&w);
    ok(w.run(&["place", "busy", &second.id().to_string()]));
    c.check(
        "prune",
        "prune --dry-run --kill",
        &ok(w.run(&["--json", "prune", "--dry-run", "--kill"])),
    );
    let pruned = ok(w.run(&["--json", "prune", "--kill"]));
    c.check("prune", "prune --kill", &pruned);
    assert!(pruned.contains("\"stop\":{"), "a stop reported: {pruned}");
    // Both were killed with their modules.
    first.wait().unwrap();
    second.wait().unwrap();

    ok(w.run(&["create", "x"]));
    c.check("remove", "remove", &ok(w.run(&["--json", "remove", "x"])));
    c.check(
        "remove",
        "remove (gone)",
        &ok(w.run(&["--json", "remove", "x"])),
    );

    let o = w.run(&["--json", "run", "r", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    c.check("run", "run", &last_err_line(&o));

    let o = bare()
        .args(["--json", "sandbox", "--parent"])
        .arg(parent())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    c.check("sandbox", "sandbox", &last_err_line(&o));
    // A sandbox whose helper was SIGKILLed: what `sandbox --prune` removes.
    let sweep = w.root().join("sweep");
    std::fs::create_dir(&sweep).unwrap();
    let script = format!("echo $$ > {}; exec sleep 600", w.tmp("sbcmd").display());
    let mut helper = bare()
        .args(["sandbox", "--parent"])
        .arg(&sweep)
        .args(["--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(helper.id());
    w.pid_from("sbcmd");
    helper.kill().unwrap();
    helper.wait().unwrap();
    let o = bare()
        .args(["--json", "sandbox", "--prune", "--parent"])
        .arg(&sweep)
        .output()
        .unwrap();
    let swept = ok(o);
    c.check("sandbox --prune", "sandbox --prune", &swept);
    assert!(
        swept.contains("\"removed\":[{"),
        "a sandbox removed: {swept}"
    );
    std::fs::remove_dir(&sweep).unwrap();

    errors(&w, &mut c);
    c.finish();
}

/// `watch`'s lines: the `appeared` and `removed` of a module made after it started.
fn watch_lines(w: &World, c: &mut Contract) {
    let watch = Watch::start(w, &["--json"]);
    ok(w.run(&["create", "watched"]));
    let (line, v) = watch.next_line("watched");
    c.check("watch", "watch appeared", &line);
    assert_eq!(v["event"], "appeared", "{v}");
    assert_eq!((&v["module"], &v["id"]), (&v["name"], &v["name"]), "{v}");
    ok(w.run(&["remove", "watched"]));
    loop {
        let (line, v) = watch.next_line("watched");
        if v["event"] == "removed" {
            c.check("watch", "watch removed", &line);
            break;
        }
    }
    drop(watch);
    // Watch::start's probes are empty: gone with the world's sandbox, but removed here so that
    // the sections after this one see only their own modules.
    for n in 0..50 {
        let _ = w.run(&["remove", &format!("watch-ready-{n}")]);
    }
}

/// The error object: one line on stderr, nothing else there, the exit code unchanged.
fn errors(w: &World, c: &mut Contract) {
    let cases: [(&[&str], i32, &str); 5] = [
        (&["--json", "freeze", "nosuch"], 1, "no_such_module"),
        (&["--json", "kill", "../x"], 2, "bad_input"),
        (&["--json", "list", "--frob"], 2, "usage"),
        (&["list", "--frob", "--json"], 2, "usage"),
        (
            &["--json", "exec", "e", "--", "/nonexistent/cmd"],
            127,
            "cmd_not_found",
        ),
    ];
    for (args, code, kind) in cases {
        let o = w.run(args);
        let what = format!("{args:?}");
        assert_eq!(o.status.code(), Some(code), "{what}: {}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{what}: one line on stderr: {e}");
        assert!(stdout(&o).is_empty(), "{what}: {}", stdout(&o));
        c.check("error", &what, &e);
        let v: Value = serde_json::from_str(&e).unwrap();
        assert_eq!(v["error"]["kind"], kind, "{what}: {e}");
        assert_eq!(v["error"]["exit"], code, "{what}: {e}");
    }
    // Without --json, or with it after `--` (CMD's), errors stay text.
    let o = w.run(&["freeze", "nosuch"]);
    assert!(stderr(&o).starts_with("ck-cgroup: "), "{}", stderr(&o));
    let o = w.run(&["exec", "e", "--", "/nonexistent/cmd", "--json"]);
    assert_eq!(o.status.code(), Some(127));
    assert!(stderr(&o).starts_with("ck-cgroup: "), "{}", stderr(&o));
    assert!(!w.root().join("subc-modules/e").exists(), "nothing made");
}

/// Every command `--help` lists has its section in docs/json.md (a heading that names it), or is
/// named under "Commands without a JSON result".
#[test]
fn every_command_has_its_section_or_is_said_to_print_no_json() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md"))
        .expect("docs/json.md");
    let mut named = BTreeSet::new();
    let mut without = false;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            without = h == "Commands without a JSON result";
            // `a`, `b`: every odd piece between backquotes, its first word.
            for w in h.split('`').skip(1).step_by(2) {
                named.insert(w.split(' ').next().unwrap_or_default().to_string());
            }
        } else if without {
            for w in line.split('`').skip(1).step_by(2) {
                named.insert(w.split(' ').next().unwrap_or_default().to_string());
            }
        }
    }
    let help = ok(bare().arg("--help").output().unwrap());
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() > 10, "commands in --help: {help}");
    let missing: Vec<&&str> = commands.iter().filter(|c| !named.contains(**c)).collect();
    assert!(
        missing.is_empty(),
        "commands with no section in docs/json.md: {missing:?}"
    );
}
