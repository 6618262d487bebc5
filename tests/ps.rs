//! `ps`: every process of each module, found by membership (a reparented orphan is still its
//! module's, and is marked so), with the figures that answer "which process holds the memory".

mod common;

use common::*;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ps {
    #[serde(deserialize_with = "common::version_1")]
    #[allow(dead_code)]
    version: u32,
    modules: Vec<Module>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Module {
    id: Option<String>,
    name: String,
    module: Option<String>,
    layout: String,
    path: String,
    processes: Vec<Process>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Process {
    pid: u32,
    ppid: u32,
    state: String,
    rss: Figure,
    swap: Figure,
    cgroup: String,
    command: Option<Vec<String>>,
    name: String,
    orphan: bool,
    parent_in_module: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Figure {
    value: Option<u64>,
    source: String,
}

fn ps(w: &World, args: &[&str]) -> Ps {
    let mut a = vec!["--json", "ps"];
    a.extend_from_slice(args);
    serde_json::from_str(&ok(w.run(&a))).expect("ps --json: its documented shape")
}

/// The process whose command line is `cmd`, in module `id`.
fn by_command<'a>(p: &'a Ps, id: &str, cmd: &[&str]) -> &'a Process {
    let m = p
        .modules
        .iter()
        .find(|m| m.id.as_deref() == Some(id))
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
    let mut p = ps(&w, &["ns"]);
    for _ in 0..100 {
        if p.modules[0].processes.len() == 3 {
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
