//! `top`: the real binary, refreshing. Without a terminal: one plain table per refresh, at the
//! interval asked and no faster. In a real terminal (a detached tmux session): the modules
//! sorted on the screen, and the terminal's settings back as they were after `q`, Ctrl-C and
//! SIGTERM.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

#[test]
fn without_a_terminal_each_refresh_is_a_plain_table() {
    let w = World::new();
    ok(w.run(&["create", "aft"]));
    ok(w.run(&["create", "broca"]));
    let start = Instant::now();
    let out = ok(w.run(&["top", "-n", "2", "--interval", "0.2"]));
    let took = start.elapsed();
    assert!(
        !out.contains('\x1b'),
        "escape codes without a terminal: {out:?}"
    );
    let frames: Vec<&str> = out.split("\n\n").collect();
    assert_eq!(frames.len(), 2, "two tables, a blank line between:\n{out}");
    for f in &frames {
        let lines: Vec<&str> = f.lines().collect();
        let header = lines[0];
        assert!(
            header.contains(&format!("root {}", w.root().display())),
            "{header}"
        );
        assert!(header.contains("2 modules"), "{header}");
        assert!(header.contains("every 0.2 s"), "{header}");
        assert!(header.contains("sorted by mem"), "{header}");
        assert!(
            !header.contains("q quits"),
            "stdin is no terminal: {header}"
        );
        let head: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(head[..3], ["MODULE", "PROCS", "CPU%"], "{f}");
        // Every line of the table fits 80 columns (the header's root may not: it is last).
        for l in &lines[1..] {
            assert!(
                l.chars().count() <= 80,
                "{} columns: {l}\n{f}",
                l.chars().count()
            );
        }
        // Equal memory (none): by name.
        assert!(lines[2].starts_with("aft "), "{f}");
        assert!(lines[3].starts_with("broca "), "{f}");
    }
    // The first CPU% has no interval behind it; the second has one.
    let cpu = |f: &str, row: usize| {
        f.lines()
            .nth(row)
            .unwrap()
            .split_whitespace()
            .nth(2)
            .map(str::to_string)
    };
    assert_eq!(cpu(frames[0], 2).as_deref(), Some("-"), "{out}");
    assert_eq!(cpu(frames[1], 2).as_deref(), Some("0.0"), "{out}");
    // The second table came an interval after the first, not sooner.
    assert!(
        took >= Duration::from_millis(200),
        "two refreshes in {took:?}"
    );
    assert!(took < scaled(Duration::from_secs(5)), "{took:?}");
}

#[test]
fn bad_intervals_and_counts_are_refused() {
    let w = World::new();
    for args in [
        &["top", "--interval", "0.05"][..],
        &["top", "--interval", "0"],
        &["top", "--interval", "abc"],
        &["top", "--interval", "2s"],
        &["top", "--interval", "nan"],
        &["top", "-n", "0"],
        &["top", "--sort", "size"],
        &["--json", "top", "-n", "1"],
    ] {
        let o = w.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
}

#[test]
fn a_root_that_is_no_service_is_refused_and_a_full_stdout_is_exit_1() {
    let w = World::new();
    // A cgroup like an operator's login shell's: refused as every module command refuses it.
    let shell = w.root().join("shell");
    std::fs::create_dir(&shell).unwrap();
    let o = bare()
        .arg("--root")
        .arg(&shell)
        .args(["top", "-n", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a service root"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    // Its output is its result: a stdout that cannot take it is a failure.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = w
        .ck()
        .args(["top", "-n", "1"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("No space left on device"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn q_on_stdin_ends_it_and_sigterm_ends_it_by_that_signal() {
    let w = World::new();
    ok(w.run(&["create", "aft"]));
    // stdin a pipe: `q` is read there too (no terminal settings to touch).
    let mut c = w
        .ck()
        .args(["top", "--interval", "0.2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    w.track(c.id());
    std::thread::sleep(Duration::from_millis(300));
    c.stdin.take().unwrap().write_all(b"q").unwrap();
    let o = c.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("aft"), "{}", stdout(&o));
    // stdin at its end (/dev/null) is no `q`: it goes on until a signal, which ends it by
    // that signal, as an interrupted command ends.
    let out = w.tmp("top.out");
    let c = w
        .ck()
        .args(["top", "--interval", "0.2"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    w.track(c.id());
    eventually("two refreshes", || {
        std::fs::read_to_string(&out).is_ok_and(|s| s.matches("MODULE").count() >= 2)
    });
    assert!(alive(c.id()), "top ended at stdin's end");
    signal(c.id(), rustix::process::Signal::TERM);
    let o = c.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(15), "{:?} {}", o.status, stderr(&o));
}

/// A tmux server of the test's own (its socket in the test's temp dir), killed when dropped.
struct Tmux {
    sock: PathBuf,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .env_remove("CK_CGROUP_ROOT")
            .env_remove("TMUX")
            .output()
            .expect("tmux")
    }

    fn screen(&self) -> String {
        stdout(&self.cmd(&["capture-pane", "-p", "-t", "top"]))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

fn tmux_missing() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .map_or(true, |o| !o.status.success())
}

/// A file the pane's script wrote, once it has a whole line.
fn written(path: &Path) -> String {
    let mut s = String::new();
    eventually(&format!("{}", path.display()), || {
        s = std::fs::read_to_string(path).unwrap_or_default();
        s.ends_with('\n')
    });
    s
}

/// The settings of `stty -a` that `top` changes, as the pane's terminal has them.
fn modes(stty: &str) -> Vec<String> {
    stty.split(|c: char| c.is_whitespace() || c == ';')
        .filter(|t| ["icanon", "-icanon", "echo", "-echo", "isig", "-isig"].contains(t))
        .map(str::to_string)
        .collect()
}

#[test]
fn in_a_terminal_it_shows_the_modules_sorted_and_restores_the_terminal() {
    if tmux_missing() {
        common::skip(
            "tmux is not installed, so top is not tried in a real terminal (apt-get install tmux; .ci/run installs it)",
        );
        return;
    }
    let w = World::new();
    let mut big = hoard(&w, "big", 64);
    let mut small = w.exec_sleep("small");
    let t = |f: &str| w.tmp(f).display().to_string();
    let top = format!(
        "'{}' --root '{}' top --interval 0.2",
        bin(),
        w.root().display()
    );
    // A non-interactive sh puts no terminal settings back itself: what `stty -a` shows after
    // each top is what top left. The trap keeps sh (not top) alive through Ctrl-C.
    let script = format!(
        "unset CK_CGROUP_ROOT; export CK_CGROUP_POLICY=/dev/null\n\
         trap : INT\n\
         stty -a > '{stty0}'\n\
         {top}; echo $? > '{rc1}'; stty -a > '{stty1}'\n\
         {top} --sort cpu; echo $? > '{rc2}'; stty -a > '{stty2}'\n\
         {top} --sort peak; echo $? > '{rc3}'; stty -a > '{stty3}'\n\
         exec sleep 60\n",
        stty0 = t("stty0"),
        rc1 = t("rc1"),
        stty1 = t("stty1"),
        rc2 = t("rc2"),
        stty2 = t("stty2"),
        rc3 = t("rc3"),
        stty3 = t("stty3"),
    );
    std::fs::write(w.tmp("pane.sh"), script).unwrap();
    let tmux = Tmux {
        sock: w.tmp("tmux.sock"),
    };
    let o = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "80",
        "-y",
        "40",
        &format!("sh '{}'", t("pane.sh")),
    ]);
    assert!(o.status.success(), "tmux new-session: {}", stderr(&o));
    let pane_pid: u32 = stdout(&tmux.cmd(&["display-message", "-p", "-t", "top", "#{pane_pid}"]))
        .trim()
        .parse()
        .unwrap();
    let pane_tty = stdout(&tmux.cmd(&["display-message", "-p", "-t", "top", "#{pane_tty}"]))
        .trim()
        .to_string();
    let before = modes(&written(&w.tmp("stty0")));
    assert!(
        before.contains(&"icanon".to_string()) && before.contains(&"echo".to_string()),
        "{before:?}"
    );

    // 1. Sorted by memory: the hoard above the sleep; `q` quits, exit 0.
    let row = |screen: &str, name: &str| {
        screen
            .lines()
            .position(|l| l.starts_with(&format!("{name} ")))
    };
    let mut screen = String::new();
    eventually("big and small on the screen", || {
        screen = tmux.screen();
        row(&screen, "big").is_some() && row(&screen, "small").is_some()
    });
    assert!(row(&screen, "big") < row(&screen, "small"), "{screen}");
    assert!(
        screen.contains("2 modules") && screen.contains("(q quits; m c p P sort)"),
        "{screen}"
    );
    assert!(!screen.contains("\x1b"), "{screen}");
    // In 80 columns the table's lines are whole: its header ends with its last column.
    assert!(
        screen.lines().any(|l| l.trim_end().ends_with("PSI_MEM")),
        "a table line cut at 80 columns:\n{screen}"
    );
    // The sort keys of systemd-cgtop re-sort at once; m puts memory first again.
    for (key, name) in [("c", "cpu"), ("p", "pids"), ("P", "psi"), ("m", "mem")] {
        assert!(tmux.cmd(&["send-keys", "-t", "top", key]).status.success());
        eventually(&format!("sorted by {name} after {key}"), || {
            tmux.screen().contains(&format!("sorted by {name}"))
        });
    }
    let screen = tmux.screen();
    assert!(row(&screen, "big") < row(&screen, "small"), "{screen}");
    // While it runs, the terminal is in cbreak mode (what must be undone).
    let running = Command::new("stty")
        .args(["-a", "-F", &pane_tty])
        .output()
        .unwrap();
    let running = modes(&stdout(&running));
    assert!(
        running.contains(&"-icanon".to_string()) && running.contains(&"-echo".to_string()),
        "{running:?}"
    );
    assert!(tmux.cmd(&["send-keys", "-t", "top", "q"]).status.success());
    assert_eq!(written(&w.tmp("rc1")).trim(), "0");
    assert_eq!(modes(&written(&w.tmp("stty1"))), before, "after q");

    // 2. Ctrl-C: the terminal restored, then top ends by SIGINT (130 in sh).
    eventually("top --sort cpu on the screen", || {
        tmux.screen().contains("sorted by cpu")
    });
    assert!(
        tmux.cmd(&["send-keys", "-t", "top", "C-c"])
            .status
            .success()
    );
    assert_eq!(written(&w.tmp("rc2")).trim(), "130");
    assert_eq!(modes(&written(&w.tmp("stty2"))), before, "after Ctrl-C");

    // 3. SIGTERM (as systemd or a closed ssh session's HUP would send): the same, 143.
    eventually("top --sort peak on the screen", || {
        tmux.screen().contains("sorted by peak")
    });
    let children = std::fs::read_to_string(format!("/proc/{pane_pid}/task/{pane_pid}/children"))
        .unwrap_or_default();
    let top_pid: u32 = children
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no child of the pane's sh: {children:?}"));
    signal(top_pid, rustix::process::Signal::TERM);
    assert_eq!(written(&w.tmp("rc3")).trim(), "143");
    assert_eq!(modes(&written(&w.tmp("stty3"))), before, "after SIGTERM");

    drop(tmux);
    ok(w.run(&["kill", "--timeout", "3s", "big"]));
    ok(w.run(&["kill", "--timeout", "3s", "small"]));
    big.wait().unwrap();
    small.wait().unwrap();
}

/// `watch` at a terminal says on stderr what it follows and that nothing comes until an event
/// (it used to be silent until then); piped, its stderr has no such line (the events and the
/// errors only).
#[test]
fn in_a_terminal_watch_says_what_its_silence_means() {
    if tmux_missing() {
        common::skip(
            "tmux is not installed, so watch is not tried at a terminal (apt-get install tmux)",
        );
        return;
    }
    let w = World::new();
    ok(w.run(&["init"]));
    let tmux = Tmux {
        sock: w.tmp("tmux-watch.sock"),
    };
    let script = format!(
        "exec {} --root '{}' watch > /dev/null",
        bin(),
        w.root().display()
    );
    let o = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "watch",
        "-x",
        "200",
        "-y",
        "20",
        &script,
    ]);
    assert!(o.status.success(), "tmux new-session: {}", stderr(&o));
    let mut screen = String::new();
    eventually("watch's line at the terminal", || {
        // -J: the line whole, however long the root's path (`make test` runs the suite two
        // sandboxes deep, and the line wrapped at 200 columns once).
        screen = stdout(&tmux.cmd(&["capture-pane", "-p", "-J", "-t", "watch"]));
        screen.contains("watch: following the modules under")
    });
    assert!(screen.contains("none until one happens"), "{screen}");
    drop(tmux);
    // Not a terminal: nothing but events and errors on stderr.
    let mut c = w
        .ck()
        .args(["watch"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    w.track(c.id());
    std::thread::sleep(Duration::from_millis(300));
    c.kill().unwrap();
    let out = c.wait_with_output().unwrap();
    assert_eq!(stderr(&out), "", "piped, watch says nothing on stderr");
}
