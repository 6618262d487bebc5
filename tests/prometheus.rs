//! `status --format prometheus`: the text exposition format (checked line by line), series keyed
//! by the module id and not by the daemon's directory name with its launch number, one metric
//! per limit with its unit and unknown limits left out, and `--output FILE` replacing FILE whole
//! (a new file renamed over it; on a failure FILE as it was and no new file left); and the
//! node exporter serving that file, hostile names and all, every series once.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use ck_cgroup::limits::{LIMITS, Unit};
use common::*;

/// A sample: metric name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

fn is_name(s: &str, colon: bool) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || (colon && f == ':'))
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || (colon && ch == ':'))
}

/// `a="x",b="y\"z"` into its pairs; `Err` on anything the format does not allow.
fn labels(s: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let mut rest = s;
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").ok_or(format!("no =\" in {s:?}"))?;
        if !is_name(name, false) {
            return Err(format!("bad label name {name:?}"));
        }
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?} in {s:?}")),
                },
                Some((i, '"')) => break i,
                Some((_, '\n')) => return Err(format!("raw newline in {s:?}")),
                Some((_, c)) => value.push(c),
                None => return Err(format!("unterminated value in {s:?}")),
            }
        };
        if out.insert(name.to_string(), value).is_some() {
            return Err(format!("label {name} twice in {s:?}"));
        }
        rest = &after[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.is_empty() {
            return Err(format!("junk after a label value in {s:?}"));
        }
    }
    Ok(out)
}

/// Check `text` as the exposition format: every family's HELP then TYPE before its samples, its
/// samples together, no family twice, no series twice, label syntax, values numeric or +-Inf.
/// Returns the samples.
fn check(text: &str) -> Vec<Sample> {
    assert!(text.is_empty() || text.ends_with('\n'), "no final newline");
    let mut samples = Vec::new();
    let mut seen_families = BTreeSet::new();
    let mut series = BTreeSet::new();
    let (mut help, mut typed): (Option<String>, Option<String>) = (None, None);
    for (n, line) in text.lines().enumerate() {
        let at = || format!("line {}: {line:?}\n{text}", n + 1);
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, doc) = rest.split_once(' ').unwrap_or_else(|| panic!("{}", at()));
            assert!(is_name(name, true) && !doc.is_empty(), "{}", at());
            assert!(
                seen_families.insert(name.to_string()),
                "family twice: {}",
                at()
            );
            help = Some(name.to_string());
            typed = None;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("{}", at()));
            assert_eq!(
                help.as_deref(),
                Some(name),
                "TYPE without its HELP: {}",
                at()
            );
            assert!(typed.is_none(), "TYPE twice: {}", at());
            assert!(
                ["gauge", "counter", "untyped"].contains(&kind),
                "type: {}",
                at()
            );
            if kind == "counter" {
                assert!(name.ends_with("_total"), "a counter's name: {}", at());
            }
            typed = Some(name.to_string());
        } else {
            assert!(!line.starts_with('#') && !line.is_empty(), "{}", at());
            let (series_text, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{}", at()));
            let (name, l) = match series_text.split_once('{') {
                Some((name, l)) => (
                    name,
                    labels(l.strip_suffix('}').unwrap_or_else(|| panic!("{}", at())))
                        .unwrap_or_else(|e| panic!("{e}: {}", at())),
                ),
                None => (series_text, BTreeMap::new()),
            };
            assert!(is_name(name, true), "{}", at());
            assert_eq!(
                typed.as_deref(),
                Some(name),
                "sample before its HELP/TYPE: {}",
                at()
            );
            let v = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .unwrap_or_else(|| panic!("value: {}", at())),
            };
            assert!(
                series.insert(series_text.to_string()),
                "series twice: {}",
                at()
            );
            samples.push((name.to_string(), l, v));
        }
    }
    samples
}

#[test]
fn the_checker_refuses_what_the_format_does_not_allow() {
    let ok = "# HELP a_b x\n# TYPE a_b gauge\na_b{m=\"q\\\"\"} +Inf\n";
    assert_eq!(check(ok).len(), 1);
    for bad in [
        "a_b{m=\"q\"} 1\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b{m=q} 1\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b{m=\"q\"} zero\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b{m=\"q\"} 1\na_b{m=\"q\"} 2\n",
        "# HELP a_b x\n# TYPE a_b gauge\na_b 1",
    ] {
        let r = std::panic::catch_unwind(|| check(bad));
        assert!(r.is_err(), "accepted: {bad:?}");
    }
}

/// A module of ours (`aft`) and one in the daemon's layout, at two launches of `mcp:x` and in
/// the alternate slot.
fn modules(w: &World) {
    ok(w.run(&["create", "aft"]));
    for d in [
        "m-mcp_5f3ax_5f7",
        "m-mcp_5f3ax_5f12",
        "m-mcp_5f3ax_5fswap_5f13",
    ] {
        std::fs::create_dir_all(w.root().join("daemon/subc-modules").join(d)).unwrap();
    }
}

fn series_of<'a>(s: &'a [Sample], name: &str) -> Vec<&'a Sample> {
    s.iter().filter(|(n, _, _)| n == name).collect()
}

#[test]
fn series_are_keyed_by_the_module_id_not_the_directory_name() {
    let w = World::new();
    modules(&w);
    let text = ok(w.run(&["status", "--format", "prometheus"]));
    let samples = check(&text);
    let populated = series_of(&samples, "ck_cgroup_module_populated");
    let keys: BTreeSet<(String, String, String)> = populated
        .iter()
        .map(|(_, l, _)| {
            assert_eq!(
                l.keys().collect::<Vec<_>>(),
                ["layout", "module", "slot"],
                "{text}"
            );
            (l["module"].clone(), l["layout"].clone(), l["slot"].clone())
        })
        .collect();
    let want: BTreeSet<(String, String, String)> = [
        ("aft", "ck", "main"),
        ("mcp:x", "daemon", "main"),
        ("mcp:x", "daemon", "swap"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(keys, want, "{text}");
    assert_eq!(populated.len(), 3, "one series per module and slot: {text}");
    // No directory name, nor its launch number, in any label.
    for (n, l, _) in &samples {
        assert!(!l.contains_key("name"), "{n}: {l:?}");
        assert!(l.values().all(|v| !v.starts_with("m-")), "{n}: {l:?}");
    }
    let dirs = series_of(&samples, "ck_cgroup_module_directories");
    let two = dirs
        .iter()
        .find(|(_, l, _)| l["module"] == "mcp:x" && l["slot"] == "main")
        .unwrap();
    assert_eq!(two.2, 2.0, "two launches of mcp:x in the main slot: {text}");
}

/// The name of the metric of a limit: its file with `_` for `.`, `_bytes` for bytes.
fn metric_of(file: &str, unit: Unit) -> String {
    let suffix = if unit == Unit::Bytes { "_bytes" } else { "" };
    format!("ck_cgroup_{}{suffix}", file.replace('.', "_"))
}

#[test]
fn each_limit_is_its_own_metric_and_an_unknown_one_is_left_out() {
    let w = World::new();
    ok(w.run(&["create", "aft"]));
    let text = ok(w.run(&["status", "--format", "prometheus", "aft"]));
    let samples = check(&text);
    let module = w.root().join("subc-modules/aft");
    for spec in LIMITS.iter().filter(|s| s.status) {
        let name = metric_of(spec.file, spec.unit);
        let got = series_of(&samples, &name);
        match std::fs::read_to_string(module.join(spec.file)) {
            // Unknown: no series, and no HELP either (absent is not zero).
            Err(_) => {
                assert!(got.is_empty(), "{name}: {text}");
                assert!(!text.contains(&format!("# HELP {name} ")), "{text}");
            }
            Ok(v) => {
                let want = match v.trim() {
                    "max" => f64::INFINITY,
                    v => v.parse().unwrap(),
                };
                assert_eq!(got.len(), 1, "{name}: {text}");
                assert_eq!(got[0].2, want, "{name}: {text}");
                assert!(text.contains(&format!("# TYPE {name} gauge\n")), "{text}");
            }
        }
    }
    // No metric of every limit labelled by its file: each limit is its own metric.
    for (n, l, _) in &samples {
        assert!(!l.contains_key("file"), "{n}: {l:?}");
    }
}

fn inode(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().ino()
}

/// Every name in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `ck --root ROOT ARGS` from a shell that first runs `prep` (a umask, a ulimit).
fn ck_after(w: &World, prep: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("{prep}; exec \"$0\" \"$@\""))
        .arg(bin())
        .arg("--root")
        .arg(w.root())
        .args(args)
        .env_remove("CK_CGROUP_ROOT")
        .env_remove("CK_CGROUP_UNIT")
        .output()
        .unwrap()
}

#[test]
fn output_replaces_the_file_whole_by_rename() {
    let w = World::new();
    modules(&w);
    let dir = w.tmp("textfile");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("ck-subc.prom");
    std::fs::write(&file, "old\n").unwrap();
    let before = inode(&file);
    let f = file.to_str().unwrap();
    // A umask that would make it unreadable to the node exporter: the mode is 0644 still.
    let o = ck_after(
        &w,
        "umask 077",
        &["status", "--format", "prometheus", "--output", f],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "", "nothing on stdout with --output");
    let text = std::fs::read_to_string(&file).unwrap();
    let samples = check(&text);
    assert!(!series_of(&samples, "ck_cgroup_module_populated").is_empty());
    assert_ne!(
        inode(&file),
        before,
        "FILE was written in place, not replaced"
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o644);
    assert_eq!(names(&dir), ["ck-subc.prom"], "a temp file was left");
    // Again, over the file it made: replaced again.
    let first = inode(&file);
    ok(w.run(&["status", "--format", "prometheus", "--output", f]));
    assert_ne!(inode(&file), first);
    assert_eq!(names(&dir), ["ck-subc.prom"]);
    // --format json too.
    ok(w.run(&["status", "--format", "json", "--output", f]));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
        .expect("--format json --output writes JSON");
    assert_eq!(v["modules"].as_array().unwrap().len(), 4);
}

#[test]
fn output_failure_leaves_the_file_as_it_was_and_no_temp_file() {
    let w = World::new();
    modules(&w);
    let dir = w.tmp("textfile");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("ck-subc.prom");
    std::fs::write(&file, "old\n").unwrap();
    let before = inode(&file);
    // No byte may be written (RLIMIT_FSIZE 0, SIGXFSZ ignored: write fails with EFBIG), even by
    // root, whom no directory mode stops.
    let o = ck_after(
        &w,
        "trap '' XFSZ; ulimit -f 0",
        &[
            "status",
            "--format",
            "prometheus",
            "--output",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("too large"), "the errno: {err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n");
    assert_eq!(inode(&file), before);
    assert_eq!(names(&dir), ["ck-subc.prom"], "the temp file was left");
    // A directory where no file can be made, whoever asks (/proc): exit 1, naming the errno.
    let o = w.run(&["status", "--output", "/proc/ck-cgroup-test.prom"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("failed to create") && err.contains("ENOENT"),
        "{err}"
    );
}

#[test]
fn output_into_a_missing_directory_or_onto_a_directory_is_refused() {
    let w = World::new();
    modules(&w);
    let missing = w.tmp("nope").join("ck-subc.prom");
    let o = w.run(&[
        "status",
        "--format",
        "prometheus",
        "--output",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("does not exist") && err.contains("mkdir -p"),
        "{err}"
    );
    assert!(!w.tmp("nope").exists());
    let before = names(w.tmp.path());
    for bad in [
        w.tmp.path().to_str().unwrap().to_string(),
        format!("{}/", w.tmp("x.prom").display()),
    ] {
        let o = w.run(&["status", "--output", &bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
    assert_eq!(names(w.tmp.path()), before, "nothing made");
}

#[test]
fn a_reader_never_sees_a_part_of_the_file() {
    let w = World::new();
    modules(&w);
    let dir = w.tmp("textfile");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("ck-subc.prom");
    let f = file.to_str().unwrap().to_string();
    ok(w.run(&["status", "--format", "prometheus", "--output", &f]));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (file, stop) = (file.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let text = std::fs::read_to_string(&file).unwrap();
                assert!(text.ends_with("\n"), "a part of the file: {text:?}");
                check(&text);
                reads += 1;
            }
            reads
        })
    };
    for _ in 0..20 {
        ok(w.run(&["status", "--format", "prometheus", "--output", &f]));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader
        .join()
        .expect("the reader saw the file whole every time");
    assert!(reads > 0);
}

/// Under `ulimit -f 1` with SIGXFSZ at its default (a shell's, not a test's `trap '' XFSZ`), the
/// write past the limit killed the helper (exit 153) and left its temporary file; the signal is
/// blocked for the write, so it fails as the docs say: exit 1, one line, no temporary file.
#[test]
fn output_past_a_file_size_limit_is_exit_1_and_no_temp_file_not_sigxfsz() {
    let w = World::new();
    modules(&w);
    let dir = w.tmp("textfile-xfsz");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("ck-subc.prom");
    let o = ck_after(
        &w,
        "ulimit -f 1",
        &[
            "status",
            "--format",
            "prometheus",
            "--output",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{:?}: {}", o.status, stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(names(&dir).is_empty(), "left: {:?}", names(&dir));
}

/// A module killed and removed before the next scrape took its own counters with it; the
/// modules' parent directory's counters outlive it and are series of their own, by layout:
/// here systemd-oomd's marks on `subc-modules/` (its `memory.events`, where the memory
/// controller is on, beside them; none here is never 0).
#[test]
fn the_parents_counters_outlive_the_modules() {
    let w = World::new();
    modules(&w);
    let parent = w.root().join("subc-modules");
    for (name, value) in [("user.oomd_ooms", "2"), ("user.oomd_kill", "5")] {
        rustix::fs::setxattr(
            &parent,
            name,
            value.as_bytes(),
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap_or_else(|e| panic!("setxattr {name}: {e}"));
    }
    ok(w.run(&["kill", "aft"]));
    let text = ok(w.run(&["status", "--format", "prometheus"]));
    let samples = check(&text);
    let of = |name: &str, layout: &str| {
        series_of(&samples, name)
            .into_iter()
            .find(|(_, l, _)| l.get("layout").map(String::as_str) == Some(layout))
            .map(|(_, l, v)| (l.keys().cloned().collect::<Vec<_>>(), *v))
    };
    assert_eq!(
        of("ck_cgroup_modules_oomd_kills_total", "ck"),
        Some((vec!["layout".to_string()], 2.0)),
        "{text}"
    );
    assert_eq!(
        of("ck_cgroup_modules_oomd_killed_processes_total", "ck"),
        Some((vec!["layout".to_string()], 5.0)),
        "{text}"
    );
    // daemon/subc-modules/ exists: its marks are absent, read as 0.
    assert_eq!(
        of("ck_cgroup_modules_oomd_kills_total", "daemon"),
        Some((vec!["layout".to_string()], 0.0)),
        "{text}"
    );
    // aft is gone: no series of its own.
    assert!(!text.contains("module=\"aft\""), "{text}");
    let has_memory = std::fs::read_to_string(w.root().join("cgroup.subtree_control"))
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"));
    assert_eq!(
        text.contains("ck_cgroup_modules_memory_events_total{layout=\"ck\",event=\"oom_kill\"}"),
        has_memory,
        "memory.events of subc-modules/ is a series where the memory controller is on: {text}"
    );
}

/// Debian's node exporter (scripts/fetch-node-exporter puts it in ~/.cache), or
/// `CK_NODE_EXPORTER`.
fn node_exporter() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("CK_NODE_EXPORTER") {
        return Some(p.into());
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
    let bin = cache.join("ck-cgroup/node-exporter/usr/bin/prometheus-node-exporter");
    bin.is_file().then_some(bin)
}

/// A series: its metric name and labels.
type Key = (String, BTreeMap<String, String>);

/// The samples of the families named `ck_cgroup_*` in a scrape: (name, labels) and value.
fn scraped(text: &str) -> Vec<(Key, String)> {
    text.lines()
        .filter(|l| l.starts_with("ck_cgroup_"))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample");
            let (name, l) = match series.split_once('{') {
                Some((n, l)) => (
                    n,
                    labels(l.strip_suffix('}').expect("labels end")).expect("labels"),
                ),
                None => (series, BTreeMap::new()),
            };
            ((name.to_string(), l), value.to_string())
        })
        .collect()
}

/// One scrape of the node exporter's textfile collector on `dir`: the body, and its log.
fn serve(exporter: &Path, dir: &Path, log: &Path) -> (String, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut child = Command::new(exporter)
        .args([
            "--collector.disable-defaults",
            "--collector.textfile",
            &format!("--collector.textfile.directory={}", dir.display()),
            &format!("--web.listen-address=127.0.0.1:{port}"),
        ])
        .stdout(std::fs::File::create(log).unwrap())
        .stderr(std::fs::File::options().append(true).open(log).unwrap())
        .spawn()
        .unwrap();
    let get = || -> Option<String> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .ok()?;
        let mut body = String::new();
        s.read_to_string(&mut body).ok()?;
        body.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
    };
    let mut body = None;
    eventually("the node exporter answers", || {
        body = get();
        body.is_some()
    });
    let _ = child.kill();
    let _ = child.wait();
    (
        body.unwrap_or_default(),
        std::fs::read_to_string(log).unwrap(),
    )
}

/// The real client: the node exporter's textfile collector reads the helper's file, with names
/// that showed alike before the names rewrite (`\xff\xfe` as bytes and as text, a tab and the
/// text `\x09`), a quote, a space, and the daemon's layout, and serves every series once, with
/// its labels and value: no series dropped or twice (it logged an error at every scrape, served
/// one of each pair, and `node_textfile_scrape_error` stayed 0: promtool did not see it), no
/// scrape error, no error in its log.
#[test]
fn the_node_exporter_serves_every_series_once_with_hostile_names() {
    let Some(exporter) = node_exporter() else {
        return skip(
            "no node exporter (scripts/fetch-node-exporter could not fetch Debian's prometheus-node-exporter; CK_NODE_EXPORTER=PATH)",
        );
    };
    let w = World::new();
    modules(&w);
    let subc = w.root().join("subc-modules");
    for name in [
        std::ffi::OsStr::from_bytes(b"\xff\xfe"),
        std::ffi::OsStr::from_bytes(b"\\xff\\xfe"),
        std::ffi::OsStr::from_bytes(b"new\tline"),
        std::ffi::OsStr::from_bytes(b"new\\x09line"),
        std::ffi::OsStr::new("a\"quote"),
        std::ffi::OsStr::new("sp ace"),
    ] {
        std::fs::create_dir(subc.join(name)).unwrap();
    }
    let dir = w.tmp("textfile");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ck-subc.prom");
    ok(w.run(&[
        "status",
        "--format",
        "prometheus",
        "--output",
        file.to_str().unwrap(),
    ]));
    let written = std::fs::read_to_string(&file).unwrap();
    let want: BTreeMap<Key, f64> = check(&written)
        .into_iter()
        .map(|(n, l, v)| ((n, l), v))
        .collect();
    assert!(want.len() > 50, "{written}");

    // The control: a file that holds one series twice (what two names with one label set
    // made) must show in the log, or this test could not see it.
    let ctl = w.tmp("textfile-control");
    std::fs::create_dir_all(&ctl).unwrap();
    let twice = "# HELP ck_cgroup_module_populated x\n# TYPE ck_cgroup_module_populated gauge\nck_cgroup_module_populated{module=\"a\"} 1\nck_cgroup_module_populated{module=\"a\"} 0\n";
    std::fs::write(ctl.join("ck-subc.prom"), twice).unwrap();
    let (_, ctl_log) = serve(&exporter, &ctl, &w.tmp("node-exporter-control.log"));
    assert!(
        ctl_log.contains("level=error"),
        "a series twice is no error in the node exporter's log: this test cannot see one:\n{ctl_log}"
    );
    let (body, log) = serve(&exporter, &dir, &w.tmp("node-exporter.log"));
    assert!(
        body.contains("\nnode_textfile_scrape_error 0\n"),
        "the collector's error:\n{body}\n{log}"
    );
    // An error or a warning, but the one of running as root (this suite runs as root).
    let bad: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("level=error") || l.contains("level=warn"))
        .filter(|l| !l.contains("running as root"))
        .collect();
    assert!(bad.is_empty(), "the node exporter's log:\n{log}");
    let got = scraped(&body);
    let mut served: BTreeMap<Key, f64> = BTreeMap::new();
    for (key, value) in &got {
        let v = match value.as_str() {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap(),
        };
        assert!(
            served.insert(key.clone(), v).is_none(),
            "served twice: {key:?}\n{body}"
        );
    }
    let dropped: Vec<_> = want.keys().filter(|k| !served.contains_key(*k)).collect();
    assert!(dropped.is_empty(), "dropped: {dropped:?}\n{body}\n{log}");
    assert_eq!(served, want, "the served series differ from the file's");
    // The hostile names are there, each its own label value.
    for shown in [
        "\\xff\\xfe",
        "\\\\xff\\\\xfe",
        "new\\x09line",
        "new\\\\x09line",
    ] {
        assert!(
            served
                .keys()
                .any(|(n, l)| n == "ck_cgroup_module_populated" && l["module"] == shown),
            "{shown}: {body}"
        );
    }
}
