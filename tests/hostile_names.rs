//! Names a module chooses are data, never trusted as text: a module directory or a sub-cgroup
//! whose name is not UTF-8 (a process of the delegated uid can `mkdir` one) is killed, counted
//! and removed by its bytes, not by a lossy spelling that names another directory; it is shown
//! escaped, and found again by that escaped name; and what a process chose for its command line
//! reaches the terminal escaped. Mutation control `names-lossy`.

mod common;

use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use common::*;

const BAD: &[u8] = b"\xff\xfe";

/// A directory named `BAD` under `parent` with a `sleep 600` in it.
fn sleep_in_raw_dir(w: &World, parent: &std::path::Path) -> std::process::Child {
    sleep_in_dir(w, &parent.join(std::ffi::OsStr::from_bytes(BAD)))
}

/// `prune --kill` (the unit's ExecStartPre=) said `��: 0 processes: killed and removed`, exit 0,
/// and the process lived on in the directory it could not spell.
#[test]
fn prune_kill_kills_and_removes_a_module_whose_name_is_not_utf8() {
    let w = World::new();
    ok(w.run(&["init"]));
    let mut s = sleep_in_raw_dir(&w, &w.root().join("subc-modules"));
    let out = ok(w.run(&["prune", "--kill"]));
    assert!(
        out.contains("\\xff\\xfe: 1 process: killed and removed"),
        "{out}"
    );
    s.wait().unwrap();
    let left: Vec<_> = std::fs::read_dir(w.root().join("subc-modules"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(left.is_empty(), "left: {left:?}");
}

/// A module with a sub-cgroup whose name is not UTF-8: `kill` failed with errno 84 (EILSEQ),
/// reported `killed 0`, and nothing could remove the module afterwards.
#[test]
fn kill_counts_and_removes_a_sub_cgroup_whose_name_is_not_utf8() {
    let w = World::new();
    ok(w.run(&["create", "a"]));
    let mut s = sleep_in_raw_dir(&w, &w.module_dir("a"));
    let ps = ok(w.run(&["ps", "a"]));
    assert!(
        ps.contains(&s.id().to_string()) && ps.contains("\\xff\\xfe"),
        "{ps}"
    );
    let r = json(&w.run(&["--json", "kill", "a"]));
    assert_eq!(r["removed"], true, "{r}");
    assert_eq!(r["killed"], 1, "{r}");
    assert_eq!(r["error"], serde_json::Value::Null, "{r}");
    s.wait().unwrap();
    assert!(!w.module_dir("a").exists());
}

/// `list` shows such a module escaped, with its process counted; JSON holds the same shown form
/// (which a script passes back as an argument), parsed back by the library into the name;
/// `kill` by the escaped name finds it.
#[test]
fn such_a_name_is_listed_escaped_counted_and_found_by_that_name() {
    let w = World::new();
    ok(w.run(&["init"]));
    let mut s = sleep_in_raw_dir(&w, &w.root().join("subc-modules"));
    let list = ok(w.run(&["list"]));
    assert!(list.contains("\\xff\\xfe"), "{list}");
    let j = json(&w.run(&["--json", "list"]));
    let m = &j["modules"][0];
    assert_eq!(m["name"], "\\xff\\xfe", "{j}");
    assert_eq!(m["procs"], 1, "{j}");
    // Parsed back into the library's own type, it is the same name.
    let name: ck_cgroup::id::DirName = serde_json::from_value(m["name"].clone()).unwrap();
    assert_eq!(name.to_string(), "\\xff\\xfe");
    let out = ok(w.run(&["kill", "\\xff\\xfe"]));
    assert!(!out.contains("already gone"), "{out}");
    s.wait().unwrap();
}

/// What a process chose reaches the terminal escaped: an ESC sequence (a window title, the
/// clipboard) and a newline (a forged row) in its argv.
#[test]
fn ps_shows_a_command_line_with_control_bytes_escaped() {
    let w = World::new();
    ok(w.run(&["create", "a"]));
    let procs = w.module_dir("a").join("cgroup.procs");
    // The shell stays (its argv holds the bytes); its sleep is its child in the module.
    let mut s = Command::new("sh")
        .arg("-c")
        .arg("echo $$ > \"$1\"; sleep 600; :")
        .arg("\u{1b}]2;owned\u{7}\nforged 1 1 S")
        .arg(&procs)
        .spawn()
        .unwrap();
    w.track(s.id());
    eventually("the shell and its sleep are in the module", || {
        std::fs::read_to_string(&procs).is_ok_and(|p| p.lines().count() == 2)
    });
    let raw = std::fs::read(format!("/proc/{}/cmdline", s.id())).unwrap();
    assert!(raw.contains(&0x1b), "the shell's argv holds the ESC");
    let out = ok(w.run(&["ps", "a"]));
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(
        !out.lines().any(|l| l.starts_with("forged")),
        "a row was forged: {out}"
    );
    ok(w.run(&["kill", "a"]));
    s.wait().unwrap();
}

/// The bytes a terminal acts on: C0 controls but `\n` and `\t`, DEL, C1 controls (as UTF-8),
/// any byte sequence that is not UTF-8; and the characters that hide or reorder text
/// (zero-width, bidi).
fn raw_control(out: &[u8]) -> Option<String> {
    let Ok(text) = std::str::from_utf8(out) else {
        return Some("bytes that are not UTF-8".into());
    };
    text.chars()
        .find(|c| {
            (c.is_control() && *c != '\n' && *c != '\t')
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}')
        })
        .map(|c| format!("U+{:04X}", c as u32))
}

/// Every human output of every command that shows what a module chose (directory names, a
/// decoded daemon-layout id, a sub-cgroup's name, argv, `comm`) is free of raw control bytes and
/// of forged rows: ESC and OSC sequences (a window title, the clipboard), CR, BS, C1 and bytes that
/// are not UTF-8, and a newline in a decoded id.
#[test]
fn no_human_output_carries_a_raw_control_byte_a_module_chose() {
    let w = World::new();
    ok(w.run(&["init"]));
    let nasty: &[u8] = b"e\x1b]2;owned\x07\x1b]52;c;b3duZWQ=\x07\r\x08\xc2\x9b31m\x9b\xff";
    let modules = w.root().join("subc-modules");
    let mut kids = vec![
        sleep_in_dir(&w, &modules.join(std::ffi::OsStr::from_bytes(nasty))),
        // The daemon's layout: the id decodes to "x\x1b]2;owned\x07\nforged".
        sleep_in_dir(
            &w,
            &w.root()
                .join("daemon/subc-modules/m-x_5f1b_5f5d2_5f3bowned_5f07_5f0aforged_5f1"),
        ),
        // A sub-cgroup of a plain module.
        sleep_in_dir(
            &w,
            &modules
                .join("plain")
                .join(std::ffi::OsStr::from_bytes(nasty)),
        ),
    ];
    // A process of the plain module whose argv and name are hostile.
    let procs = modules.join("plain/cgroup.procs");
    let mut s = Command::new("sh")
        .arg("-c")
        .arg("printf 'c\\033]2;x\\007\\233' > /proc/$$/comm; echo $$ > \"$1\"; sleep 600; :")
        .arg(std::ffi::OsStr::from_bytes(
            b"\x1b[2J\rforged 1 1 S\n\xc2\x9b\xff",
        ))
        .arg(&procs)
        .spawn()
        .unwrap();
    w.track(s.id());
    eventually("the shell is in the module", || {
        std::fs::read_to_string(&procs).is_ok_and(|p| p.lines().count() >= 2)
    });
    // A UTF-8 name with ESC and OSC sequences, C1, a zero-width space: UTF-8 names were shown
    // as they are by `list` and `prune`.
    let utf8_nasty = "u\u{1b}[31m\u{1b}]2;owned\u{7}\u{9b}\u{200b}";
    kids.push(sleep_in_dir(&w, &modules.join(utf8_nasty)));
    let shown = "u\\x1b[31m\\x1b]2;owned\\x07\\xc2\\x9b\\xe2\\x80\\x8b";
    let commands: [&[&str]; 12] = [
        &["freeze", shown],
        &["thaw", shown],
        &["remove", shown],
        &["status", shown],
        &["list"],
        &["status"],
        &["status", "--wide"],
        &["ps"],
        &["top", "-n", "1"],
        &["prune", "--dry-run", "--kill"],
        &["doctor"],
        &["status", "--format", "prometheus"],
    ];
    let mut bad = Vec::new();
    for args in commands {
        let o = w.run(args);
        for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            if let Some(what) = raw_control(bytes) {
                bad.push(format!("{args:?} {stream}: {what}"));
            }
            if String::from_utf8_lossy(bytes)
                .lines()
                .any(|l| l.trim_start().starts_with("forged"))
            {
                bad.push(format!("{args:?} {stream}: a forged row"));
            }
        }
    }
    // The stops' own lines name what they stopped.
    let o = w.run(&["prune", "--kill"]);
    for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        if let Some(what) = raw_control(bytes) {
            bad.push(format!("prune --kill {stream}: {what}"));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    for k in &mut kids {
        let _ = k.wait();
    }
    let _ = s.wait();
}

/// Every kind of name a module can make (TAB, ESC, an OSC sequence, a C1 control, a backslash
/// before `x`, bytes that are not UTF-8, a zero-width space, a bidi override, a space, an
/// interface-file prefix, a name longer than an id), each holding a process: the name `status`
/// shows it by (NAME) kills it: the process gone, exit 0, never `already gone`. Before: `kill
/// 'tab\x09x'` said `already gone` and exited 0 while the process ran on.
#[test]
fn the_name_status_shows_kills_that_module_for_every_name_the_kernel_takes() {
    let w = World::new();
    ok(w.run(&["init"]));
    let long = "a".repeat(200);
    let names: [&[u8]; 12] = [
        b"tab\tx",
        b"esc\x1bX",
        b"t\x1b]2;owned\x07",
        "c1\u{9b}31m".as_bytes(),
        b"\\xff\\xfe",
        b"\xff\xfe",
        "web\u{200b}".as_bytes(),
        "\u{202e}bew".as_bytes(),
        b"a b",
        b"memory.evil",
        b"cgroup.x",
        long.as_bytes(),
    ];
    let modules = w.root().join("subc-modules");
    let mut kids: Vec<_> = names
        .iter()
        .map(|n| sleep_in_dir(&w, &modules.join(std::ffi::OsStr::from_bytes(n))))
        .collect();
    let status = ok(w.run(&["status", "--wide"]));
    let shown: Vec<String> = json(&w.run(&["--json", "status"]))["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(shown.len(), names.len(), "{shown:?}");
    let mut distinct = shown.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        names.len(),
        "two names show alike: {shown:?}"
    );
    for name in &shown {
        assert!(
            status
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} is not a NAME of the table:\n{status}"
        );
        let o = w.run(&["kill", "--timeout", "5s", name]);
        assert_eq!(o.status.code(), Some(0), "kill {name}: {}", stderr(&o));
        assert!(
            !stdout(&o).contains("already gone"),
            "kill {name}: {}",
            stdout(&o)
        );
    }
    for k in &mut kids {
        k.wait().unwrap();
    }
    assert_eq!(
        json(&w.run(&["--json", "list"]))["modules"],
        serde_json::json!([])
    );
}

/// The text `\xff\xfe` (backslashes: a name a daemon-layout id can spell) and the bytes it
/// spells are two modules, shown apart, each taken by its own shown name: `kill '\xff\xfe'`
/// removed the empty literal one, exit 0, and left the other running; `prune --keep` compared
/// text, not names, and killed the module it was told to keep; the Prometheus labels of the
/// two were one label set (duplicate series the node exporter serves once).
#[test]
fn the_literal_text_of_an_escape_is_not_the_module_it_spells() {
    let w = World::new();
    ok(w.run(&["init"]));
    let modules = w.root().join("subc-modules");
    let mut raw = sleep_in_raw_dir(&w, &modules);
    // The text `\xff\xfe`: backslash, x, f, f ... (a String: clippy takes the literal's `\\`
    // for a path separator).
    let literal = String::from("\\xff\\xfe");
    let mut text = sleep_in_dir(&w, &modules.join(literal));
    let list = ok(w.run(&["list"]));
    let mut rows: Vec<&str> = list
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    rows.sort();
    assert_eq!(rows, ["\\\\xff\\\\xfe", "\\xff\\xfe"], "{list}");
    let prom = ok(w.run(&["status", "--format", "prometheus"]));
    let series: Vec<&str> = prom.lines().filter(|l| !l.starts_with('#')).collect();
    let mut once = series.clone();
    once.sort();
    once.dedup();
    assert_eq!(once.len(), series.len(), "a series twice:\n{prom}");
    // Keep the raw one: the literal one is killed.
    ok(w.run(&["prune", "--kill", "--keep", "\\xff\\xfe"]));
    text.wait().unwrap();
    assert!(
        alive(raw.id()),
        "prune --keep killed the module it was told to keep"
    );
    // The raw one by its shown name.
    let out = ok(w.run(&["kill", "\\xff\\xfe"]));
    assert!(!out.contains("already gone"), "{out}");
    raw.wait().unwrap();
}

/// A decoy never takes `kill web` from the module that holds its processes: with the daemon's
/// `m-web_5f3` holding one, an empty `subc-modules/web` (or `daemon/subc-modules/web`) made by
/// a module was removed by `kill web` (exit 0) and `m-web_5f3` ran on. A name found in more
/// than one place is refused (exit 2, naming each by its path); each path then names one.
#[test]
fn a_decoy_directory_never_takes_kill_from_the_module_that_holds_processes() {
    for decoy in ["subc-modules/web", "daemon/subc-modules/web"] {
        let w = World::new();
        ok(w.run(&["init"]));
        let daemon = w.root().join("daemon/subc-modules");
        let mut real = sleep_in_dir(&w, &daemon.join("m-web_5f3"));
        std::fs::create_dir(w.root().join(decoy)).unwrap();
        for args in [&["kill", "web"][..], &["remove", "web"], &["freeze", "web"]] {
            let o = w.run(args);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{decoy}: {args:?}: {}",
                stderr(&o)
            );
            let e = stderr(&o);
            assert!(
                e.contains(decoy) && e.contains("daemon/subc-modules/m-web_5f3"),
                "{decoy}: {args:?}: {e}"
            );
            assert!(alive(real.id()), "{decoy}: {args:?} stopped the module");
            assert!(
                w.root().join(decoy).exists(),
                "{decoy}: {args:?} removed it"
            );
        }
        // `--keep web` keeps both: each is web's.
        ok(w.run(&["prune", "--kill", "--keep", "web"]));
        assert!(alive(real.id()) && w.root().join(decoy).exists(), "{decoy}");
        ok(w.run(&["remove", decoy]));
        let out = ok(w.run(&["kill", "web"]));
        assert!(!out.contains("already gone"), "{decoy}: {out}");
        real.wait().unwrap();
    }
}

/// Only the daemon's own spelling of an id is that id's directory: `m-w_65b_5f4` (an `e`
/// written `_65`) was listed as module `web`, and `kill web` took it.
#[test]
fn a_daemon_name_in_another_spelling_is_not_that_module() {
    let w = World::new();
    ok(w.run(&["init"]));
    let mut other = sleep_in_dir(&w, &w.root().join("daemon/subc-modules/m-w_65b_5f4"));
    let list = json(&w.run(&["--json", "list"]));
    assert_eq!(
        list["modules"][0]["module"],
        serde_json::Value::Null,
        "{list}"
    );
    assert!(ok(w.run(&["kill", "web"])).contains("already gone"));
    assert!(alive(other.id()), "kill web stopped m-w_65b_5f4");
    ok(w.run(&["kill", "m-w_65b_5f4"]));
    other.wait().unwrap();
}

/// Names the kernel takes that the helper called impossible: `subc-modules/memory.evil` with a
/// process was listed but `kill memory.evil` was refused (exit 2); an empty `cgroup.x` failed
/// every `prune`, and with it the unit's `ExecStartPre=ck-cgroup prune --kill --if-laid-out`.
#[test]
fn an_interface_file_prefix_is_a_name_like_any_other() {
    let w = World::new();
    ok(w.run(&["init"]));
    let modules = w.root().join("subc-modules");
    let mut evil = sleep_in_dir(&w, &modules.join("memory.evil"));
    let long = "b".repeat(100);
    let mut long_one = sleep_in_dir(&w, &modules.join(&long));
    std::fs::create_dir(modules.join("cgroup.x")).unwrap();
    for args in [
        &["status", "memory.evil"][..],
        &["ps", "memory.evil"],
        &["status", &long],
    ] {
        ok(w.run(args));
    }
    ok(w.run(&["kill", "memory.evil"]));
    evil.wait().unwrap();
    let out = ok(w.run(&["prune", "--kill", "--if-laid-out"]));
    assert!(out.contains("cgroup.x"), "{out}");
    long_one.wait().unwrap();
    assert_eq!(
        json(&w.run(&["--json", "list"]))["modules"],
        serde_json::json!([])
    );
}
