//! `ps`: every process of each module, found by membership (a reparented orphan is still its
//! module's, and is marked so), with the figures that answer "which process holds the memory".

mod common;

use ck_cgroup::telemetry::procs::Process;
use common::nobody::{NOBODY, ck_as_nobody};
use common::strict::{Ps, strictly};
use common::*;

fn ps(w: &World, args: &[&str]) -> Ps {
    let mut a = vec!["--json", "ps"];
    a.extend_from_slice(args);
    strictly(&ok(w.run(&a)))
}

/// The process whose command line is `cmd`, in module `id`.
fn by_command<'a>(p: &'a Ps, id: &str, cmd: &[&str]) -> &'a Process {
    let m = p
        .modules
        .iter()
        .find(|m| m.module.as_ref().is_some_and(|n| *n == id))
        .unwrap_or_else(|| panic!("module {id} in ps"));
    m.processes
        .iter()
        .find(|q| q.command.as_deref().is_some_and(|c| c == cmd))
        .unwrap_or_else(|| panic!("{cmd:?} in module {id}"))
}

/// The parent's pid of `pid`, from /proc.
fn ppid(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    ck_cgroup::cgroup::parse::proc_stat(&stat).unwrap().ppid
}

#[test]
fn ps_shows_a_reparented_grandchild_as_an_orphan_of_its_module() {
    let w = World::new();
    // The module's command starts a child that starts the grandchild and exits: the grandchild
    // is reparented away from the module's tree, and is still the module's.
    let script = format!(
        "sleep 601 & echo $! > {c}; (sleep 602 & echo $! > {g}); exec sleep 603",
        c = w.tmp("child").display(),
        g = w.tmp("grandchild").display()
    );
    let mut exec = w
        .ck()
        .args(["exec", "hoarder", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(exec.id());
    let gc = w.pid_from("grandchild");
    let child = w.pid_from("child");
    eventually("the grandchild reparented", || ppid(gc) != exec.id());
    // Each pid is written before its `sleep` is exec'd (and the shell execs its own last): ps
    // reads command lines, so the test waits until all three are `sleep` (under load a shell
    // not yet exec'd was read as `sh -c ...` once).
    for pid in [gc, child, exec.id()] {
        eventually(&format!("{pid} runs sleep"), || {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
        });
    }
    if ppid(gc) != 1 {
        skip("a subreaper above the test takes orphans instead of PID 1");
        ok(w.run(&["kill", "hoarder"]));
        exec.wait().unwrap();
        return;
    }
    let p = ps(&w, &["hoarder"]);
    let top = by_command(&p, "hoarder", &["sleep", "603"]);
    assert_eq!(top.pid, exec.id());
    assert!(
        !top.orphan && !top.parent_in_module,
        "the top: {:?}",
        top.pid
    );
    let c = by_command(&p, "hoarder", &["sleep", "601"]);
    assert_eq!((c.pid, c.ppid), (child, exec.id()));
    assert!(
        c.parent_in_module && !c.orphan,
        "the child is under the top"
    );
    let g = by_command(&p, "hoarder", &["sleep", "602"]);
    assert_eq!((g.pid, g.ppid), (gc, 1));
    assert!(
        g.orphan && !g.parent_in_module,
        "the grandchild is an orphan"
    );
    assert_eq!(g.cgroup, "");
    assert_eq!(g.rss.source, "VmRSS in /proc/<pid>/status");
    assert!(
        g.rss.value.is_some_and(|v| v > 0),
        "a running sleep is resident"
    );

    // The table: the child under the top, the orphan marked, every line whole.
    let text = ok(w.run(&["ps", "hoarder"]));
    assert!(
        text.starts_with("hoarder (hoarder, subc-modules/hoarder): 3 processes\n"),
        "{text}"
    );
    let line = |pid: u32| {
        text.lines()
            .find(|l| l.starts_with(&format!("{pid} ")))
            .unwrap_or_else(|| panic!("{pid} in {text}"))
            .to_string()
    };
    assert!(line(child).ends_with("`- sleep 601"), "{text}");
    assert!(line(gc).ends_with("sleep 602  (orphan)"), "{text}");
    ok(w.run(&["kill", "hoarder"]));
    exec.wait().unwrap();
}

#[test]
fn ps_sort_rss_puts_the_biggest_first_and_answers_which_process() {
    let w = World::new();
    let ready = w.tmp("ready");
    // A small sleep beside a 32 MiB Python hoard, in one module.
    let script = format!(
        "import subprocess, time\nsubprocess.Popen(['sleep', '604'])\nx = bytearray(32 << 20)\nopen('{}', 'w').write('1\\n')\ntime.sleep(600)",
        ready.display()
    );
    let mut c = w
        .ck()
        .args(["exec", "mixed", "--", "python3", "-c", &script])
        .spawn()
        .unwrap();
    w.track(c.id());
    w.line_from("ready");
    let p = ps(&w, &["mixed", "--sort", "rss"]);
    let procs = &p.modules[0].processes;
    assert_eq!(procs.len(), 2, "python and its sleep");
    assert_eq!(procs[0].pid, c.id(), "the hoard first");
    assert!(procs[0].rss.value.unwrap() >= 32 << 20);
    assert!(procs[0].rss.value > procs[1].rss.value);
    // Sorted is a flat list: no process indented under another.
    let text = ok(w.run(&["ps", "mixed", "--sort", "rss"]));
    assert!(!text.contains("`- "), "{text}");
    ok(w.run(&["kill", "mixed"]));
    c.wait().unwrap();
}

#[test]
fn ps_in_runs_pid_namespace_marks_what_the_init_adopted_and_not_the_command() {
    let w = World::new();
    let script = format!(
        "(sleep 605 & read -r p _ < /proc/self/stat; echo $! > {g}); exec sleep 606",
        g = w.tmp("adopted").display()
    );
    let mut run = w
        .ck()
        .args(["run", "ns", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(run.id());
    w.line_from("adopted");
    // Ready when the init, the adopted sleep and the command's own sleep are there: the shell
    // writes the file before it execs `sleep 606`, so three processes alone may still hold it.
    let has = |p: &Ps, cmd: &[&str]| {
        p.modules[0]
            .processes
            .iter()
            .any(|q| q.command.as_deref().is_some_and(|c| c == cmd))
    };
    let mut p = ps(&w, &["ns"]);
    for _ in 0..500 {
        if p.modules[0].processes.len() == 3
            && has(&p, &["sleep", "606"])
            && has(&p, &["sleep", "605"])
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        p = ps(&w, &["ns"]);
    }
    let cmd = by_command(&p, "ns", &["sleep", "606"]);
    let adopted = by_command(&p, "ns", &["sleep", "605"]);
    assert!(!cmd.orphan, "run's command is the init's own child");
    assert!(cmd.parent_in_module, "the init is in the module");
    assert_eq!(adopted.ppid, cmd.ppid, "the init adopted the orphan");
    assert!(adopted.orphan, "an orphan the namespace's init adopted");
    ok(w.run(&["kill", "ns"]));
    run.wait().unwrap();
}

#[test]
fn ps_of_a_missing_module_is_exit_1_and_of_a_bad_name_exit_2() {
    let w = World::new();
    ok(w.run(&["init"]));
    let o = w.run(&["ps", "nosuch"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("ck-cgroup: no module nosuch"));
    let o = w.run(&["ps", "../daemon"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let o = w.run(&["ps", "--sort", "bogus"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(ok(w.run(&["ps"])), "no modules\n");
}

/// A process that names itself with bytes that are not UTF-8 (`/proc/<pid>/comm`, as
/// `prctl(PR_SET_NAME)`) was left out of `ps`, exit 0: its `/proc/<pid>/stat` was read as UTF-8
/// text. Now it is listed, its name held as its bytes (JSON: a NUL and the bytes in hex; the
/// table: `\xNN`), and its command line is exact: an empty argument and one that is not UTF-8
/// are kept, each in its place.
#[test]
fn ps_lists_a_process_whose_name_and_arguments_are_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let w = World::new();
    ok(w.run(&["init"]));
    let dir = w.root().join("subc-modules/odd");
    std::fs::create_dir_all(&dir).unwrap();
    let ready = w.tmp("odd.pid");
    // It places itself before it forks anything: no `sleep` of it runs in the test's cgroup.
    let script = format!(
        "echo $$ > {}; printf '\\377\\376odd' > /proc/$$/comm; echo $$ > {}; while :; do sleep 1; done",
        dir.join("cgroup.procs").display(),
        ready.display()
    );
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(&script)
        .arg("odd-arg0")
        .arg("")
        .arg(std::ffi::OsStr::from_bytes(b"\xff\xfe"));
    let mut child = c.spawn().unwrap();
    w.track(child.id());
    let pid = w.pid_from("odd.pid");
    let p = ps(&w, &["odd"]);
    let q = p.modules[0]
        .processes
        .iter()
        .find(|q| q.pid == pid)
        .unwrap_or_else(|| panic!("pid {pid} left out of ps"));
    assert_eq!(q.name, "\u{0}fffe6f6464", "the name as its bytes");
    let cmd = q.command.clone().expect("its command line");
    assert_eq!(&cmd[3..], ["odd-arg0", "", "\u{0}fffe"], "{cmd:?}");
    let table = ok(w.run(&["ps", "odd"]));
    assert!(
        table.contains("\\xff\\xfeodd") || table.contains("\\xff\\xfe"),
        "{table}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// A sub-cgroup the walk cannot read (mode 000, set by a module's process of the helper's uid)
/// hid its processes and `ps` exited 0; now `ps` lists what it found, names the module and the
/// error in one line, and exits 1.
#[test]
fn ps_says_when_it_could_not_list_every_process_and_exits_1() {
    use std::os::unix::fs::PermissionsExt;
    if !needs_root("the module handed to nobody (chown)") {
        return;
    }
    let w = World::new();
    ok(w.run(&["init"]));
    let o = ck_as_nobody(&w, &["create", "m"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let module = w.root().join("subc-modules/m");
    let mut top = sleep_in_dir(&w, &module.join("top-leaf"));
    let mut hidden = sleep_in_dir(&w, &module.join("hidden"));
    for d in [&module, &module.join("top-leaf"), &module.join("hidden")] {
        std::os::unix::fs::chown(d, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::fs::set_permissions(
        module.join("hidden"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let o = ck_as_nobody(&w, &["ps", "m"]).output().unwrap();
    let json = ck_as_nobody(&w, &["--json", "ps", "m"]).output().unwrap();
    std::fs::set_permissions(
        module.join("hidden"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("not every process could be listed") && e.contains("m:"),
        "{e}"
    );
    assert_eq!(json.status.code(), Some(1), "{}", stderr(&json));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&json)).unwrap_or_else(|_| panic!("{}", stdout(&json)));
    assert!(v["modules"][0]["error"].is_string(), "{v}");
    for c in [&mut top, &mut hidden] {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A command line longer than the cap is cut, and said so (`command_cut`): `ps` of a module
/// whose process has a huge argument list stays within bounded memory.
#[test]
fn a_command_line_past_the_cap_is_cut_and_marked() {
    let w = World::new();
    ok(w.run(&["init"]));
    let big = "x".repeat(100_000);
    // Placed by the helper before sh runs: sh's `sleep` is forked in the module, never in the
    // test runner's cgroup (a spawn moved afterwards could fork it first, and leak it there).
    let mut child = w
        .ck()
        .args(["exec", "big", "--", "sh", "-c", "sleep 600", "big"])
        .args([&big, &big, &big])
        .spawn()
        .unwrap();
    w.track(child.id());
    eventually("sh runs in the module", || {
        std::fs::read(format!("/proc/{}/cmdline", child.id())).is_ok_and(|c| c.starts_with(b"sh\0"))
    });
    let p = ps(&w, &["big"]);
    let q = p.modules[0]
        .processes
        .iter()
        .find(|q| q.pid == child.id())
        .expect("listed");
    assert!(q.command_cut, "{:?}", q.command.as_ref().map(Vec::len));
    // The arguments and the NULs between them (the cut one has none after it).
    let args = q.command.clone().unwrap_or_default();
    let len: usize = args.iter().map(String::len).sum::<usize>() + args.len() - 1;
    assert_eq!(
        len,
        ck_cgroup::telemetry::procs::COMMAND_CAP,
        "cut at the cap"
    );
    ok(w.run(&["kill", "big", "--timeout", "5s"]));
    let _ = child.wait();
}

/// A process whose main thread exited while another thread lives on (a zombie leader: state Z,
/// its command line empty, as `pthread_exit` in `main` leaves it) is still the module's and
/// holds memory: ps lists it by its name, in state Z, in the table too. A walk that skipped
/// zombies, or took an empty command line for a process gone, would hide it.
#[test]
fn ps_lists_a_process_whose_leader_exited_while_a_thread_lives_on() {
    let w = World::new();
    let rdy = w.tmp("zombie-leader");
    let mut c = w
        .ck()
        .args(["exec", "zl", "--", hostile(), "zombie-leader"])
        .arg(&rdy)
        .spawn()
        .unwrap();
    w.track(c.id());
    eventually("the leader exited, its thread on", || rdy.exists());
    let p = ps(&w, &["zl"]);
    let m = &p.modules[0];
    let z = m
        .processes
        .iter()
        .find(|q| q.pid == c.id())
        .unwrap_or_else(|| panic!("pid {} not listed: {:?}", c.id(), m.processes));
    assert_eq!(z.state, "Z", "{z:?}");
    assert_eq!(z.name, "hostile", "{z:?}");
    assert!(z.command.as_deref().is_none_or(|a| a.is_empty()), "{z:?}");
    let text = ok(w.run(&["ps", "zl"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{} ", c.id())) && l.contains("hostile")),
        "{text}"
    );
    ok(w.run(&["kill", "zl", "--timeout", "5s"]));
    c.wait().unwrap();
}

/// `args` of `ck-cgroup` on `w`'s root under `ulimit -v KIB`.
fn under_v(w: &World, kib: u64, args: &str) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {kib} && exec \"$0\" --root \"$1\" {args}"
        ))
        .arg(bin())
        .arg(w.root())
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .unwrap()
}

/// 60 processes with huge command lines: `ps` held up to 256 KiB of each (15 MiB) and the copies
/// its output makes, past the room every command is given (16 MiB beyond what it has mapped at
/// its start), and under a `ulimit -v` that leaves that room the runtime aborted it (SIGABRT,
/// "memory allocation of 262147 bytes failed"). Now all command lines share one budget: `ps`,
/// table and JSON, runs in that room (exit 0) and marks each command line it cut. Their bytes
/// are control bytes, the costliest to show (`\x01` in the table, `\u0001` in JSON).
#[test]
fn ps_of_60_processes_with_huge_command_lines_fits_its_room_not_sigabrt() {
    use ck_cgroup::telemetry::procs::{COMMAND_CAP, COMMANDS_BUDGET};
    use std::os::unix::process::ExitStatusExt;
    let w = World::new();
    ok(w.run(&["init"]));
    // 60 shells, each with 300 KB of arguments (3 of 100 KB: one argument may have 128 KiB), and
    // each its `sleep`; the first shell becomes `sleep 600` itself.
    let arg = "\u{1}".repeat(100_000);
    let script = "i=0; while [ $i -lt 60 ]; do sh -c 'sleep 600; :' big \"$@\" & i=$((i+1)); done; exec sleep 600";
    let mut c = w
        .ck()
        .args(["exec", "huge", "--", "sh", "-c", script, "sh"])
        .args([&arg, &arg, &arg])
        .spawn()
        .unwrap();
    w.track(c.id());
    let procs = w.root().join("subc-modules/huge/cgroup.procs");
    let comm = |pid: &str| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    eventually("60 shells with their sleeps, and the first sleep", || {
        let text = std::fs::read_to_string(&procs).unwrap_or_default();
        let pids: Vec<&str> = text.lines().collect();
        pids.len() == 121
            && pids.iter().filter(|p| comm(p).trim() == "sh").count() == 60
            && comm(&c.id().to_string()).trim() == "sleep"
    });
    // What this build needs (its mapped size at start and the room): the refusal under a limit
    // below it says.
    let need = (8..=64)
        .step_by(2)
        .find_map(|mib| {
            let e = stderr(&under_v(&w, mib << 10, "ps huge"));
            let (_, rest) = e.split_once("ck-cgroup needs ")?;
            rest.split_once(" KiB")?.0.parse::<u64>().ok()
        })
        .expect("a limit under which ps says what it needs");
    // A limit that leaves the room (and 1 MiB for what is mapped at start to differ by).
    let kib = need + 1024;
    let o = under_v(&w, kib, "ps huge");
    assert_eq!(
        (o.status.code(), o.status.signal()),
        (Some(0), None),
        "ps under ulimit -v {kib}: {}",
        stderr(&o)
    );
    let text = stdout(&o);
    assert_eq!(text.lines().filter(|l| l.ends_with("  (cut)")).count(), 60);
    let o = under_v(&w, kib, "--json ps huge");
    assert_eq!(
        (o.status.code(), o.status.signal()),
        (Some(0), None),
        "ps --json under ulimit -v {kib}: {}",
        stderr(&o)
    );
    // `status` and `top` read no command line: they too run in that room.
    for args in ["status huge", "top -n 1"] {
        let o = under_v(&w, kib, args);
        assert_eq!(
            (o.status.code(), o.status.signal()),
            (Some(0), None),
            "{args} under ulimit -v {kib}: {}",
            stderr(&o)
        );
    }
    let p: Ps = strictly(&stdout(&o));
    let all = &p.modules[0].processes;
    assert_eq!(all.len(), 121);
    let cut: Vec<&Process> = all.iter().filter(|q| q.command_cut).collect();
    assert_eq!(cut.len(), 60);
    let held: usize = all
        .iter()
        .flat_map(|q| q.command.iter().flatten())
        .map(|a| a.len() + 1)
        .sum();
    assert!(
        held <= COMMANDS_BUDGET,
        "{held} bytes of command lines held"
    );
    for q in cut {
        let args = q.command.as_deref().unwrap_or_default();
        assert_eq!(
            args[..4],
            ["sh", "-c", "sleep 600; :", "big"],
            "{:?}",
            q.pid
        );
        assert!(args.concat().len() < COMMAND_CAP, "{:?}", q.pid);
    }
    ok(w.run(&["kill", "huge", "--timeout", "10s"]));
    c.wait().unwrap();
}

/// On an 80-column terminal the line of an orphan with a long command line was cut before its
/// `(orphan)`, the mark docs/operations.md sends the operator to: the hog's line read as any
/// other. Now the command is cut and the mark kept, at the end of the line.
#[test]
fn ps_on_an_80_column_terminal_keeps_the_orphan_mark_of_a_long_command() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        skip("script(1) is not installed (util-linux), so ps is not tried on a terminal");
        return;
    }
    let w = World::new();
    // A subshell starts the long-lined shell and exits: the shell is reparented away.
    let script = format!(
        "(sh -c 'sleep 600; :' orphan-{long} & echo $! > {o}); exec sleep 603",
        long = "x".repeat(200),
        o = w.tmp("orphan").display()
    );
    let mut exec = w
        .ck()
        .args(["exec", "narrow", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(exec.id());
    let o = w.pid_from("orphan");
    let procs = w.root().join("subc-modules/narrow/cgroup.procs");
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    // The subshell gone; the orphan, its sleep and the module's own sleep there.
    eventually("the orphan reparented and every process exec'd", || {
        let text = std::fs::read_to_string(&procs).unwrap_or_default();
        text.lines().count() == 3
            && !text.lines().any(|p| p == ppid(o).to_string())
            && comm(exec.id()).trim() == "sleep"
            && std::fs::read(format!("/proc/{o}/cmdline")).is_ok_and(|c| c.starts_with(b"sh\0-c\0"))
    });
    if ppid(o) != 1 {
        skip("a subreaper above the test takes orphans instead of PID 1");
        ok(w.run(&["kill", "narrow"]));
        exec.wait().unwrap();
        return;
    }
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c"])
        .arg(format!(
            "stty cols 80 rows 24; exec '{}' --root '{}' ps narrow",
            bin(),
            w.root().display()
        ))
        .arg("/dev/null")
        .env("SHELL", "/bin/sh")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = stdout(&out).replace('\r', "");
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{o} ")))
        .unwrap_or_else(|| panic!("{o} in {text}"));
    // The command is cut (how much of it shows depends on the widths of the pids), the mark is not.
    assert!(line.contains(" sh -c "), "{text}");
    assert!(line.ends_with("  (orphan)"), "{text}");
    assert_eq!(line.chars().count(), 80, "{text}");
    ok(w.run(&["kill", "narrow"]));
    exec.wait().unwrap();
}
