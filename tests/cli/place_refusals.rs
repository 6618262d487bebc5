//! `place` refuses what must never be moved into a module (PID 1 of its namespace, a kernel
//! thread, a zombie, a thread id, its own pid): exit 2, one line, nothing made, and every pid is
//! checked before any is moved.

use std::process::Command;

use crate::common::*;

/// `place` refused a pid: exit 2, one line on stderr naming the problem and the fix, no module
/// made (the tree as it was).
#[track_caller]
fn place_refused(w: &World, o: &std::process::Output, says: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(e.starts_with("ck-cgroup: refusing to place pid "), "{e}");
    assert!(e.contains(says), "{e}");
    assert_eq!(
        w.tree(),
        vec!["daemon", "subc-modules"],
        "place made something"
    );
}

#[test]
fn place_refuses_pid_1_of_its_pid_namespace() {
    let w = World::new();
    // In a PID namespace of its own (and a /proc for it), PID 1 is a shell of this test, not the
    // machine's init: nothing real is at stake if the refusal is missing.
    let o = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c"])
        .arg("\"$0\" \"$@\"; exit $?")
        .arg(bin())
        .arg("--root")
        .arg(w.root())
        .args(["place", "p", "1"])
        .env_remove("CK_CGROUP_ROOT")
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .unwrap();
    place_refused(&w, &o, "PID 1");
}

#[test]
fn place_refuses_a_kernel_thread() {
    let w = World::new();
    // kthreadd is pid 2 where the kernel's threads are visible; any PF_KTHREAD task will do.
    let kthread = std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let st = ck_cgroup::cgroup::parse::proc_stat(&stat)?;
        st.kernel_thread().then_some(pid)
    });
    let Some(pid) = kthread else {
        skip("no kernel thread visible in this PID namespace: nothing to check");
        return;
    };
    let o = w.run(&["place", "p", &pid.to_string()]);
    place_refused(&w, &o, "kernel thread");
}

#[test]
fn place_refuses_a_zombie() {
    let w = World::new();
    let mut z = Command::new("true").spawn().unwrap();
    eventually("the child to be a zombie", || state(z.id()) == Some('Z'));
    let o = w.run(&["place", "p", &z.id().to_string()]);
    place_refused(&w, &o, "zombie");
    z.wait().unwrap();
}

#[test]
fn place_refuses_a_thread_id_that_is_not_a_process() {
    let w = World::new();
    let ready = w.tmp("ready");
    let script = format!(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\nopen('{}', 'w').write('1\\n')\ntime.sleep(600)",
        ready.display()
    );
    let mut py = Command::new("python3")
        .args(["-c", &script])
        .spawn()
        .unwrap();
    w.track(py.id());
    w.line_from("ready");
    let before = cgroup_of(py.id());
    let tid: u32 = std::fs::read_dir(format!("/proc/{}/task", py.id()))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .find(|&t| t != py.id())
        .expect("a second thread");
    let o = w.run(&["place", "p", &tid.to_string()]);
    place_refused(&w, &o, &format!("a thread of process {}", py.id()));
    assert_eq!(cgroup_of(py.id()), before, "the process was moved");
    py.kill().unwrap();
    py.wait().unwrap();
}

#[test]
fn place_refuses_its_own_pid() {
    let w = World::new();
    // The shell's pid becomes the helper's by exec.
    let o = Command::new("sh")
        .args(["-c", "exec \"$0\" --root \"$1\" place p $$"])
        .arg(bin())
        .arg(w.root())
        .env_remove("CK_CGROUP_ROOT")
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .unwrap();
    place_refused(&w, &o, "this ck-cgroup process");
}

#[test]
fn place_checks_every_pid_before_it_moves_any() {
    let w = World::new();
    let mut s = Command::new("sleep").arg("600").spawn().unwrap();
    w.track(s.id());
    let before = cgroup_of(s.id());
    let mut z = Command::new("true").spawn().unwrap();
    eventually("the child to be a zombie", || state(z.id()) == Some('Z'));
    let o = w.run(&["place", "p", &s.id().to_string(), &z.id().to_string()]);
    place_refused(&w, &o, "zombie");
    assert_eq!(
        cgroup_of(s.id()),
        before,
        "a pid was moved before the last was checked"
    );
    z.wait().unwrap();
    s.kill().unwrap();
    s.wait().unwrap();
}
