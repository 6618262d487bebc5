//! The library as a daemon uses it, on a real cgroup: a sandbox under the cgroup2 mount
//! (`CK_CGROUP_TEST_PARENT` to choose another parent).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use ck_cgroup::stop::StopOptions;
use ck_cgroup::{ErrorKind, ModuleId, Sandbox};

fn parent() -> PathBuf {
    match std::env::var_os("CK_CGROUP_TEST_PARENT") {
        Some(p) => PathBuf::from(p),
        None => ck_cgroup::discover::cgroup2_mount().expect("a cgroup2 mount"),
    }
}

#[test]
fn procs_fd_places_a_std_command_and_stop_takes_it() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    let id = ModuleId::new("std-cmd").unwrap();
    let mut cmd = Command::new("sleep");
    cmd.arg("600");
    ck_cgroup::spawn::place_before_exec(&mut cmd, root.procs_fd(&id).unwrap());
    let mut child = cmd.spawn().unwrap();
    let cg = std::fs::read_to_string(format!("/proc/{}/cgroup", child.id())).unwrap();
    assert!(cg.trim_end().ends_with("/subc-modules/std-cmd"), "{cg}");
    let listed = root.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].procs, Some(1));
    let r = root
        .stop(id.as_str(), &StopOptions::kill(Duration::from_secs(5)))
        .unwrap();
    assert!(r.ok() && r.removed && r.tree.killed == 1, "{r:?}");
    child.wait().unwrap();
    // Stopped again: already gone, which is success.
    assert!(
        root.kill(id.as_str(), Duration::from_secs(1))
            .unwrap()
            .already_gone
    );
}

#[test]
fn errors_say_their_kind() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    let e = root.status(&["nosuch".to_string()]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoSuchModule, "{e}");
    let e = ModuleId::new("../x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadInput);
    assert_eq!(e.exit_code(), 2);
    let e = root.remove("../x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadInput);
    let e = root
        .place(&ModuleId::new("p").unwrap(), &[u32::MAX - 1])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoSuchProcess, "{e}");
    let e = ck_cgroup::Root::open("/proc".as_ref()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoCgroup2, "{e}");
}

/// An OOM kill's cause is read from the module and every cgroup above it, up to the mount: the
/// module's `memory.events`, each ancestor's `memory.events.local`. Where the memory controller
/// is off (this host), the cause is unknown and says why, never "no OOM".
#[test]
fn oom_counters_read_every_ancestor_and_unknown_is_said() {
    use ck_cgroup::cause::oom_cause::{OomCounters, cause};
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    let id = ModuleId::new("oomc").unwrap();
    let _made = root.create(&id).unwrap();
    let mount = ck_cgroup::discover::cgroup2_mount().unwrap();
    let mdir = ck_cgroup::cgroup::dir::CgroupDir::open(&mount).unwrap();
    let c = OomCounters::read(root.dir(), "subc-modules/oomc", Some(&mdir));
    let paths: Vec<&str> = c.ancestors.iter().map(|(p, _)| p.as_str()).collect();
    let r = root.path().display().to_string();
    assert_eq!(paths[0], format!("{r}/subc-modules"), "{paths:?}");
    assert_eq!(paths[1], r, "{paths:?}");
    // Then each directory above the root, below the mount, the nearest first.
    let above: Vec<String> = root
        .path()
        .ancestors()
        .skip(1)
        .take_while(|p| *p != mount.as_path())
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        &paths[2..],
        above.iter().map(String::as_str).collect::<Vec<_>>(),
        "{paths:?}"
    );
    let memory = std::fs::read_to_string(root.path().join("subc-modules/cgroup.subtree_control"))
        .unwrap_or_default()
        .split_whitespace()
        .any(|c| c == "memory");
    if !memory {
        assert_eq!(c.module_oom_kill, None);
        let e = cause(&c, &c).unwrap_err();
        assert!(e.contains("no memory controller"), "{e}");
    }
}

/// A wait with a timeout gives `None` while the program runs and its status once it exited;
/// `signal_member` reaches a process of the module through a pidfd and refuses one that is not
/// the module's (this test's own pid, a pid no process has).
#[test]
fn wait_timeout_and_signal_member_by_pidfd() {
    use ck_cgroup::spawn::ModuleCommand;
    use std::os::unix::process::ExitStatusExt;
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    let id = ModuleId::new("waited").unwrap();
    let mut cmd = ModuleCommand::new("/bin/sleep");
    cmd.arg("600");
    let mut child = root.spawn(&id, &cmd).unwrap();
    assert_eq!(child.wait_timeout(Duration::from_millis(50)).unwrap(), None);
    for pid in [std::process::id(), u32::MAX / 2] {
        let e = root
            .signal_member("waited", pid, ck_cgroup::Signal::TERM)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoSuchProcess, "{e}");
    }
    let e = root
        .signal_member("nosuch", child.id(), ck_cgroup::Signal::TERM)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoSuchModule, "{e}");
    root.signal_member("waited", child.id(), ck_cgroup::Signal::TERM)
        .unwrap();
    let st = child
        .wait_timeout(Duration::from_secs(30))
        .unwrap()
        .expect("exited on TERM");
    assert_eq!(st.signal(), Some(15));
    let r = root.reap(&mut child, &StopOptions::default()).unwrap();
    assert_eq!(r.death.signal_kind(), Some(ck_cgroup::Signal::TERM));
    assert_eq!(
        r.death.cause,
        ck_cgroup::cause::death_cause::Cause::Signal {
            signal: "SIGTERM".into()
        }
    );
    assert!(r.stop.ok());
}

/// `StopOptions::default()` is the graceful stop: TERM reaches the tree first (a module that
/// traps it says so), with a grace, before any SIGKILL; `StopOptions::kill` is SIGKILL at once.
/// (Before, the default had no grace: SIGKILL at once, and the trap never ran.)
#[test]
fn the_default_stop_sends_term_with_a_grace_and_kill_is_sigkill_at_once() {
    use ck_cgroup::spawn::ModuleCommand;
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    let opts = StopOptions::default();
    assert_eq!(opts.signal, ck_cgroup::Signal::TERM);
    assert_eq!(opts.grace, ck_cgroup::stop::DEFAULT_GRACE);
    assert_eq!(opts.grace, Duration::from_secs(10));
    let dir = tempfile::tempdir().unwrap();
    for (name, opts, want) in [
        ("graceful", StopOptions::default(), true),
        ("killed", StopOptions::kill(Duration::from_secs(10)), false),
    ] {
        let id = ModuleId::new(name).unwrap();
        let said = dir.path().join(name);
        let ready = dir.path().join(format!("{name}.ready"));
        let script = format!(
            "trap 'echo term > {}; exit 0' TERM; : > {}; while :; do sleep 0.05; done",
            said.display(),
            ready.display()
        );
        let mut cmd = ModuleCommand::new("/bin/sh");
        cmd.args(["-c", &script]);
        let mut child = root.spawn(&id, &cmd).unwrap();
        while !ready.exists() {
            assert_eq!(
                child.try_wait().unwrap(),
                None,
                "{name} ended before its trap"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let r = root.stop(&id, &opts).unwrap();
        assert!(r.ok(), "{r:?}");
        assert_eq!(
            said.exists(),
            want,
            "{name}: the trap ran: {}",
            said.exists()
        );
        if want {
            assert_eq!(r.tree.method, None, "the tree ended in the grace: {r:?}");
            assert_eq!(r.signal_kind(), Some(ck_cgroup::Signal::TERM), "{r:?}");
        } else {
            assert_eq!(r.signal_kind(), None, "{r:?}");
        }
        let _ = child.wait();
    }
}

/// What `list()` gives is what `stop` takes: the entry itself names the directory listed, even
/// where a directory of the same name is in the daemon's layout (by the bare name the two are
/// refused as ambiguous), and `&entry.name` is taken too.
#[test]
fn a_listed_module_is_stopped_by_its_entry_even_beside_a_namesake_in_the_daemons_layout() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    let id = ModuleId::new("twin").unwrap();
    let _ = root.create(&id).unwrap();
    // A directory of the same name in the daemon's layout.
    std::fs::create_dir_all(sb.path().join("daemon/subc-modules/twin")).unwrap();
    let listed = root.list().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let ours = listed
        .iter()
        .find(|m| m.layout == ck_cgroup::Layout::Ck)
        .unwrap();
    let e = root
        .stop(&ours.name, &StopOptions::default())
        .expect_err("the bare name names two directories");
    assert_eq!(e.kind(), ErrorKind::BadInput, "{e}");
    let r = root.stop(ours, &StopOptions::default()).unwrap();
    assert!(r.removed, "{r:?}");
    assert!(!sb.path().join("subc-modules/twin").exists());
    assert!(sb.path().join("daemon/subc-modules/twin").exists());
    // Now the name is one directory's: the entry's name alone stops it.
    let theirs = root.list().unwrap().remove(0);
    let r = root.stop(&theirs.name, &StopOptions::default()).unwrap();
    assert!(r.removed, "{r:?}");
}

/// `Modules::All` is every module and `Modules::Named` of no name is none; the older empty
/// slice (`module::ALL`) still means every module.
#[test]
#[allow(deprecated)]
fn modules_all_is_said_and_an_empty_named_list_is_no_module() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    for name in ["one", "two"] {
        let _ = root.create(&ModuleId::new(name).unwrap()).unwrap();
    }
    let names = |rows: Vec<ck_cgroup::telemetry::ModuleStatus>| {
        let mut n: Vec<String> = rows.into_iter().map(|r| r.name.to_string()).collect();
        n.sort();
        n
    };
    assert_eq!(
        names(root.status(&ck_cgroup::Modules::All).unwrap()),
        ["one", "two"]
    );
    assert_eq!(
        names(root.status(ck_cgroup::module::ALL).unwrap()),
        ["one", "two"]
    );
    assert!(
        root.status(&ck_cgroup::Modules::Named(vec![]))
            .unwrap()
            .is_empty()
    );
    let two = ck_cgroup::Modules::named(&["two"]).unwrap();
    assert_eq!(names(root.status(&two).unwrap()), ["two"]);
    assert_eq!(root.processes(&ck_cgroup::Modules::All).unwrap().len(), 2);
    assert!(
        root.processes(&ck_cgroup::Modules::Named(vec![]))
            .unwrap()
            .is_empty()
    );
    // A status row names its module for the calls that act on one.
    let row = root.status(&two).unwrap().remove(0);
    let r = root.stop(&row, &StopOptions::default()).unwrap();
    assert!(r.removed, "{r:?}");
}

/// Under a PID namespace `id()` is the init's pid and `program_pid()` the program's (its child,
/// pid 2 there); `processes()` marks the init, which carries the spawner's name. Without one,
/// the two pids are the same.
#[test]
fn program_pid_is_the_programs_under_a_pid_namespace_and_processes_marks_the_init() {
    use ck_cgroup::spawn::ModuleCommand;
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    let id = ModuleId::new("ns").unwrap();
    let mut cmd = ModuleCommand::new("/bin/sleep");
    cmd.arg("60").pid_namespace(true);
    let mut child = root.spawn(&id, &cmd).unwrap();
    let program = child.program_pid().expect("the program was found");
    assert_ne!(program, child.id());
    let status = std::fs::read_to_string(format!("/proc/{program}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(field("PPid:"), [child.id().to_string()]);
    assert_eq!(field("NSpid:").last().map(String::as_str), Some("2"));
    assert_eq!(field("Name:"), ["sleep"]);
    let procs = root.processes(&[&id]).unwrap().remove(0).processes;
    let init = procs
        .iter()
        .find(|p| p.pid == child.id())
        .expect("the init");
    assert!(init.init, "{init:?}");
    let prog = procs
        .iter()
        .find(|p| p.pid == program)
        .expect("the program");
    assert!(!prog.init && prog.name == "sleep", "{prog:?}");
    child.signal(ck_cgroup::Signal::TERM).unwrap();
    let r = root.reap(&mut child, &StopOptions::default()).unwrap();
    // The init is no survivor of the program's death; the stop that followed counts it.
    assert_eq!(r.death.survivors, Some(vec![]), "{:?}", r.death);
    let plain = ModuleId::new("plain").unwrap();
    let mut cmd = ModuleCommand::new("/bin/sleep");
    cmd.arg("60");
    let mut child = root.spawn(&plain, &cmd).unwrap();
    assert_eq!(child.program_pid(), Some(child.id()));
    let procs = root.processes(&[&plain]).unwrap().remove(0).processes;
    assert!(procs.iter().all(|p| !p.init), "{procs:?}");
    child.signal(ck_cgroup::Signal::KILL).unwrap();
    let _ = root.reap(&mut child, &StopOptions::default());
}

/// `remove_layout` undoes `init`: it refuses (Busy, nothing removed) while a module's directory
/// or a process is in the layout, and then removes what `init` made; `init` lays it out again.
#[test]
fn remove_layout_undoes_init_and_refuses_while_a_module_or_a_process_is_there() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = sb.root();
    let id = ModuleId::new("held").unwrap();
    let _ = root.create(&id).unwrap();
    let e = root.remove_layout().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert!(e.to_string().contains("\"held\""), "{e}");
    assert!(sb.path().join("subc-modules/held").exists());
    let _ = root.remove("held").unwrap();
    // A process in daemon/.
    let mut sleeper = Command::new("sleep").arg("600").spawn().unwrap();
    std::fs::write(
        sb.path().join("daemon/cgroup.procs"),
        sleeper.id().to_string(),
    )
    .unwrap();
    let e = root.remove_layout().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert!(e.to_string().contains("processes"), "{e}");
    assert!(
        sb.path().join("subc-modules").exists(),
        "nothing was removed"
    );
    sleeper.kill().unwrap();
    let _ = sleeper.wait();
    ck_cgroup::cgroup::wait::wait_empty(root.dir(), "daemon", Duration::from_secs(10)).unwrap();
    let removed = root.remove_layout().unwrap();
    assert_eq!(removed, ["subc-modules", "daemon"]);
    assert!(!root.is_service_root().unwrap());
    assert!(
        root.remove_layout().unwrap().is_empty(),
        "nothing left to remove"
    );
    let _ = root.init().unwrap();
    assert!(root.is_service_root().unwrap());
}
