//! `watch` misses no transition: every `appeared`, `populated`, `emptied` and `removed` of every
//! module, in order, counted over hundreds of lifetimes of one id and of four ids at once; and
//! for lifetimes shorter than one read (the watch stopped by SIGSTOP while they come and go),
//! exactly what the kernel lets it justify (docs/design.md, "watch"): each lifetime `appeared`
//! and `removed`, a module removed while last seen populated `emptied` first (`inferred`), and
//! no `populated` invented for a lifetime it could not read.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// A running `watch` whose lines go, by module, to one channel each.
struct Watch {
    child: Child,
    routes: mpsc::Sender<(String, mpsc::Sender<Value>)>,
}

impl Watch {
    /// `watch` on `w` (every module), ready once it reported a module made after it started.
    fn start(w: &World) -> Watch {
        let mut child = w
            .ck()
            .arg("watch")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        w.track(child.id());
        let out = child.stdout.take().unwrap();
        let (routes, new_routes) = mpsc::channel::<(String, mpsc::Sender<Value>)>();
        std::thread::spawn(move || {
            let mut to: HashMap<String, mpsc::Sender<Value>> = HashMap::new();
            // Lines of a module nobody asked for yet wait for their route.
            let mut held: HashMap<String, Vec<Value>> = HashMap::new();
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line).expect("one JSON object per line");
                while let Ok((m, tx)) = new_routes.try_recv() {
                    for v in held.remove(&m).unwrap_or_default() {
                        let _ = tx.send(v);
                    }
                    to.insert(m, tx);
                }
                let m = v["module"].as_str().unwrap_or_default().to_string();
                match to.get(&m) {
                    Some(tx) => {
                        let _ = tx.send(v);
                    }
                    None => held.entry(m).or_default().push(v),
                }
            }
        });
        let watch = Watch { child, routes };
        for n in 0..50 {
            let probe = format!("ready-{n}");
            let rx = watch.events(&probe);
            ok(w.run(&["create", &probe]));
            if rx.0.recv_timeout(Duration::from_millis(300)).is_ok() {
                return watch;
            }
        }
        panic!("watch reported none of 50 modules made after it started");
    }

    /// The events of `module` from now on (and those printed before that nobody took).
    fn events(&self, module: &str) -> Events {
        let (tx, rx) = mpsc::channel();
        self.routes.send((module.to_string(), tx)).unwrap();
        Events(rx)
    }

    fn signal(&self, sig: rustix::process::Signal) {
        signal(self.child.id(), sig);
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Events(mpsc::Receiver<Value>);

impl Events {
    /// The next event's name (`emptied` marked `+inferred` when it is); fails after 60 s.
    fn next(&self, module: &str) -> String {
        let v = self
            .0
            .recv_timeout(scaled(Duration::from_secs(60)))
            .unwrap_or_else(|_| panic!("no event for {module} within 60 s"));
        let name = v["event"].as_str().unwrap().to_string();
        if v["inferred"] == true {
            format!("{name}+inferred")
        } else {
            name
        }
    }

    /// The next `n` events.
    fn take(&self, module: &str, n: usize) -> Vec<String> {
        (0..n).map(|_| self.next(module)).collect()
    }
}

/// The binary on one root, for threads (a `World` stays on the test's thread; what these
/// start is in the sandbox, which its teardown empties).
struct Ck(std::path::PathBuf);

impl Ck {
    fn of(w: &World) -> Ck {
        Ck(w.root().to_path_buf())
    }

    fn cmd(&self) -> std::process::Command {
        let mut c = bare();
        c.arg("--root").arg(&self.0).stdin(Stdio::null());
        c
    }
}

/// `exec ID -- sleep 600`, returned once its process is in the module (not tracked: the ids are
/// cycled hundreds of times, and a tracked pid SIGKILLed after its reuse could hit another's).
fn populate(ck: &Ck, id: &str) -> Child {
    let c = ck
        .cmd()
        .args(["exec", id, "--", "sleep", "600"])
        .spawn()
        .unwrap();
    wait_placed(c.id(), &ck.0.join("subc-modules").join(id));
    c
}

/// `kill ID`: the module stopped and removed.
fn stop(ck: &Ck, id: &str, mut child: Child) {
    ok(ck.cmd().args(["kill", id]).output().unwrap());
    child.wait().unwrap();
}

const LIFETIME: [&str; 4] = ["appeared", "populated", "emptied", "removed"];

/// `cycles` lifetimes of `id`, each waiting for watch to report it populated before it is
/// killed; every lifetime must be reported whole and in order.
fn cycle(ck: &Ck, watch: &Watch, id: &str, cycles: usize) {
    let rx = watch.events(id);
    for i in 0..cycles {
        let child = populate(ck, id);
        let seen = rx.take(id, 2);
        assert_eq!(seen, LIFETIME[..2], "{id}, lifetime {i}");
        stop(ck, id, child);
        // Read, or inferred when the directory went before its cgroup.events could be read.
        let mut seen = rx.take(id, 2);
        if seen[0] == "emptied+inferred" {
            seen[0] = "emptied".into();
        }
        assert_eq!(
            seen,
            LIFETIME[2..],
            "{id}, lifetime {i}: emptied before removed"
        );
    }
}

#[test]
fn one_id_made_populated_emptied_and_removed_200_times_is_reported_200_times_in_order() {
    let w = World::new();
    ok(w.run(&["init"]));
    let watch = Watch::start(&w);
    cycle(&Ck::of(&w), &watch, "c", race_runs(200) as usize);
}

#[test]
fn four_ids_cycled_at_once_are_each_reported_whole_and_in_order() {
    let w = World::new();
    ok(w.run(&["init"]));
    let watch = Watch::start(&w);
    let ck = Ck::of(&w);
    std::thread::scope(|s| {
        for id in ["q0", "q1", "q2", "q3"] {
            let (ck, watch) = (&ck, &watch);
            s.spawn(move || cycle(ck, watch, id, race_runs(60) as usize));
        }
    });
}

#[test]
fn lifetimes_shorter_than_one_read_are_each_reported_and_nothing_is_invented() {
    use rustix::process::Signal;
    let w = World::new();
    ok(w.run(&["init"]));
    let watch = Watch::start(&w);
    let ck = Ck::of(&w);
    // `held` is seen populated; it is killed while watch is stopped.
    let held = watch.events("held");
    let held_child = populate(&ck, "held");
    assert_eq!(held.take("held", 2), LIFETIME[..2]);
    let short = watch.events("s");
    watch.signal(Signal::STOP);
    stop(&ck, "held", held_child);
    // 100 lifetimes of `s` that begin and end while watch sleeps, and a 101st that is alive
    // (populated) when it wakes: the directory under the name then is the last one's.
    let short_lives = race_runs(100);
    for _ in 0..short_lives {
        let c = populate(&ck, "s");
        stop(&ck, "s", c);
    }
    let last = populate(&ck, "s");
    watch.signal(Signal::CONT);
    assert_eq!(
        held.take("held", 2),
        ["emptied+inferred", "removed"],
        "a module removed while last seen populated was emptied first"
    );
    for i in 0..short_lives {
        // Never read: appeared and removed, no populated or emptied invented.
        assert_eq!(short.take("s", 2), ["appeared", "removed"], "lifetime {i}");
    }
    assert_eq!(
        short.take("s", 2),
        LIFETIME[..2],
        "the lifetime alive at the wake-up"
    );
    stop(&ck, "s", last);
    let mut seen = short.take("s", 2);
    if seen[0] == "emptied+inferred" {
        seen[0] = "emptied".into();
    }
    assert_eq!(seen, LIFETIME[2..]);
    // Nothing more of either: a marker made after them comes first.
    let end = watch.events("end");
    ok(w.run(&["create", "end"]));
    assert_eq!(end.next("end"), "appeared");
    for (rx, id) in [(&short, "s"), (&held, "held")] {
        assert!(
            rx.0.try_recv().is_err(),
            "{id}: an event more than its lifetimes"
        );
    }
}
