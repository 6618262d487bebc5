//! A running `ck-cgroup watch` of a test's world, its lines parsed: one helper for every test
//! target that reads `watch` event by event (`tests/watch_counts_every_transition.rs` routes
//! lines per module and keeps its own).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{World, ok, scaled};

/// `watch ARGS` on a world, ready once it reported a module made after it started; killed when
/// dropped.
pub struct Watch {
    child: Child,
    /// The lines as `watch` wrote them (a test of the documented field order reads them raw).
    rx: mpsc::Receiver<String>,
    /// The lines reported before it was ready (of modules there at its start).
    early: RefCell<VecDeque<String>>,
}

impl Watch {
    /// Start `watch ARGS` on `w` and wait until it reports a module made after it started (a
    /// new name each try: a module made before its first scan is never reported as appearing).
    /// Not a sleep: under emulation the start-up takes longer than any fixed pause.
    pub fn start(w: &World, args: &[&str]) -> Watch {
        let mut child = w
            .ck()
            .arg("watch")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        w.track(child.id());
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut early = VecDeque::new();
        for n in 0..50 {
            let probe = format!("watch-ready-{n}");
            ok(w.run(&["create", &probe]));
            let deadline = Instant::now() + Duration::from_millis(200);
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                match rx.recv_timeout(left) {
                    Ok(line) if parse(&line)["module"] == probe.as_str() => {
                        return Watch {
                            child,
                            rx,
                            early: early.into(),
                        };
                    }
                    Ok(line) => early.push_back(line),
                    Err(_) => break,
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("watch reported none of 50 modules made after it started");
    }

    /// The next line, the early ones first, as written and parsed; `None` after `limit`.
    fn line(&self, limit: Duration) -> Option<(String, Value)> {
        let early = self.early.borrow_mut().pop_front();
        let line = early.or_else(|| self.rx.recv_timeout(limit).ok())?;
        let v = parse(&line);
        Some((line, v))
    }

    /// The next event of `module`, skipping others; panics after 30 s (scaled: the host is
    /// loaded).
    pub fn next(&self, module: &str) -> Value {
        self.next_line(module).1
    }

    /// The next event of `module` as `watch` wrote it, and parsed; panics after 30 s.
    pub fn next_line(&self, module: &str) -> (String, Value) {
        let deadline = Instant::now() + scaled(Duration::from_secs(30));
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("no event for {module}"));
            let (line, v) = self
                .line(left)
                .unwrap_or_else(|| panic!("no event for {module}"));
            if v["module"] == module {
                return (line, v);
            }
        }
    }

    /// The next `event` of `module`, skipping others, as the library's type; panics after 20 s.
    /// Parsed strictly: the event serializes back to the very same JSON (no field dropped).
    pub fn wait_for(&self, module: &str, event: &str) -> ck_cgroup::telemetry::watch::WatchEvent {
        let deadline = Instant::now() + scaled(Duration::from_secs(20));
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("no {event} event for {module} within 20 s"));
            let Some((_, v)) = self.line(left) else {
                panic!("no {event} event for {module} within 20 s");
            };
            if v["module"] == module && v["event"] == event {
                // The CLI's line is the library's event plus `version`, `name` and `id`
                // (docs/json.md): without them it round-trips through `WatchEvent` unchanged.
                let mut lib = v.clone();
                let obj = lib.as_object_mut().expect("a JSON object");
                assert_eq!(obj.remove("version"), Some(serde_json::json!(1)), "{v}");
                assert_eq!(obj.remove("name").as_ref(), Some(&v["module"]), "{v}");
                obj.remove("id");
                let e: ck_cgroup::telemetry::watch::WatchEvent =
                    serde_json::from_value(lib.clone()).unwrap_or_else(|e| panic!("{e}: {v}"));
                assert_eq!(serde_json::to_value(&e).unwrap(), lib);
                return e;
            }
        }
    }

    /// Every event that comes within `d`.
    pub fn during(&self, d: Duration) -> Vec<Value> {
        let deadline = Instant::now() + d;
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if let Some((_, v)) = self.line(left) {
                seen.push(v);
            }
        }
        seen
    }

    /// The `watch` process's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One line of `watch`: one JSON object.
fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"))
}
