//! `watch`: JSON Lines as things happen; it reports and never kills.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use serde_json::Value;

struct Watch {
    child: Child,
    rx: mpsc::Receiver<Value>,
}

impl Watch {
    fn start(w: &World, args: &[&str]) -> Watch {
        let mut child = w
            .ck()
            .arg("watch")
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        w.track(child.id());
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line).expect("one JSON object per line");
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        // Ready when it reports a module made after it started (a new name each try: a module
        // made before its first scan is never reported as appearing). Not a sleep: under
        // emulation the start-up takes longer than any fixed pause.
        for n in 0..50 {
            let probe = format!("watch-ready-{n}");
            ok(w.run(&["create", &probe]));
            let deadline = std::time::Instant::now() + Duration::from_millis(200);
            while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
                match rx.recv_timeout(left) {
                    Ok(v) if v["module"] == probe.as_str() => return Watch { child, rx },
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("watch reported none of 50 modules made after it started");
    }

    /// The next event of `module`, skipping others; panics after 10 s.
    fn next(&self, module: &str) -> Value {
        loop {
            let v = self
                .rx
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("no event for {module} within 10 s"));
            if v["module"] == module {
                return v;
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_reports_a_module_appearing_filling_emptying_and_going() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    ok(w.run(&["create", "seen"]));
    assert_eq!(watch.next("seen")["event"], "appeared");
    ok(w.run(&["exec", "seen", "--", "sh", "-c", "sleep 0.2"]));
    assert_eq!(watch.next("seen")["event"], "populated");
    assert_eq!(watch.next("seen")["event"], "emptied");
    ok(w.run(&["remove", "seen"]));
    let gone = watch.next("seen");
    assert_eq!(gone["event"], "removed");
    assert!(gone["ts"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn watch_reports_memory_above_the_threshold_and_kills_nothing() {
    let w = World::new();
    let watch = Watch::start(&w, &["--report-above", "10M"]);
    let script = format!(
        "import time\nx = bytearray(30 << 20)\nopen('{}', 'w').write('1\\n')\ntime.sleep(600)",
        w.tmp("ready").display()
    );
    let mut c = w
        .ck()
        .args(["exec", "big", "--", "python3", "-c", &script])
        .spawn()
        .unwrap();
    w.track(c.id());
    w.line_from("ready");
    let mut seen = Vec::new();
    let above = loop {
        let e = watch.next("big");
        seen.push(e["event"].clone());
        if e["event"] == "memory_above" {
            break e;
        }
    };
    assert!(above["value"].as_u64().unwrap() > 10 << 20, "{above}");
    assert_eq!(above["threshold"], 10 << 20);
    assert!(alive(c.id()), "watch must never kill: {seen:?}");
    ok(w.run(&["kill", "--timeout", "3s", "big"]));
    c.wait().unwrap();
}

/// A module removed and made again under the same id before `watch` looks again is another
/// module: each time `removed` then `appeared`, and the new one's own events (not the stale
/// state of the old one, whose files' watches ended with it).
#[test]
fn watch_follows_a_module_removed_and_made_again_under_the_same_id() {
    let w = World::new();
    let watch = Watch::start(&w, &[]);
    ok(w.run(&["create", "again"]));
    assert_eq!(watch.next("again")["event"], "appeared");
    let dir = w.root().join("subc-modules/again");
    for cycle in 0..30 {
        // rmdir and mkdir back to back: no rescan can fall between them.
        std::fs::remove_dir(&dir).unwrap();
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(watch.next("again")["event"], "removed", "cycle {cycle}");
        assert_eq!(watch.next("again")["event"], "appeared", "cycle {cycle}");
        let mut c = w
            .ck()
            .args(["exec", "again", "--", "sleep", "600"])
            .spawn()
            .unwrap();
        w.track(c.id());
        assert_eq!(watch.next("again")["event"], "populated", "cycle {cycle}");
        c.kill().unwrap();
        c.wait().unwrap();
        assert_eq!(watch.next("again")["event"], "emptied", "cycle {cycle}");
    }
    ok(w.run(&["remove", "again"]));
    assert_eq!(watch.next("again")["event"], "removed");
}
