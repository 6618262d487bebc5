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
        out.contains("\\xff\\xfe: 1 processes: killed and removed"),
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

/// `list` shows such a module escaped, with its process counted; JSON keeps the name faithful
/// (a NUL and its bytes in hex); `kill` by the escaped name finds it.
#[test]
fn such_a_name_is_listed_escaped_counted_and_found_by_that_name() {
    let w = World::new();
    ok(w.run(&["init"]));
    let mut s = sleep_in_raw_dir(&w, &w.root().join("subc-modules"));
    let list = ok(w.run(&["list"]));
    assert!(list.contains("\\xff\\xfe"), "{list}");
    let j = json(&w.run(&["--json", "list"]));
    let m = &j["modules"][0];
    assert_eq!(m["name"], "\u{0}fffe", "{j}");
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

/// The bytes a terminal acts on: C0 controls but `\n` and `\t`, DEL, C1 controls (as UTF-8), and
/// any byte sequence that is not UTF-8.
fn raw_control(out: &[u8]) -> Option<String> {
    let Ok(text) = std::str::from_utf8(out) else {
        return Some("bytes that are not UTF-8".into());
    };
    text.chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
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
    let commands: [&[&str]; 8] = [
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
