//! The spawn paths against scratch cgroups of their own (an integration test: it uses a
//! `Sandbox`, which is a layer above `spawn`, so it stays outside the library's import graph).

use ck_cgroup::Signal;
use ck_cgroup::spawn::*;
use ck_cgroup::{CgroupDir, Sandbox};
use std::io;
use std::io::Read;
use std::os::fd::BorrowedFd;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ck_testkit::skip;

use rustix::fs::{Mode, OFlags};

/// A scratch cgroup: the `cmd/` leaf of a [`Sandbox`] of its own, which kills what is left and
/// removes itself when dropped (even on failure).
struct Scratch {
    path: PathBuf,
    /// Path as it appears in /proc/<pid>/cgroup ("0::<rel>").
    rel: String,
    dir: CgroupDir,
    _sandbox: Sandbox,
}

impl Scratch {
    fn new() -> Self {
        // CK_CGROUP_TEST_PARENT (what scripts/test and the guest lane give), else the default
        // parent: the tests' own parent, never found by ambient resolution.
        let parent = match std::env::var_os("CK_CGROUP_TEST_PARENT") {
            Some(p) => PathBuf::from(p),
            None => Sandbox::default_parent().unwrap(),
        };
        let sandbox = Sandbox::create(&parent).unwrap();
        let path = sandbox.dir().join(ck_cgroup::sandbox::CMD_LEAF);
        let dir = CgroupDir::open(&path).unwrap();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let mount = ck_cgroup::cgroup::parse::cgroup2_mounts(&mountinfo)
            .into_iter()
            .next()
            .expect("a cgroup2 mount");
        let below = path.strip_prefix(&mount.mount_point).unwrap();
        let rel = Path::new(&mount.root)
            .join(below)
            .to_string_lossy()
            .into_owned();
        Scratch {
            path,
            rel,
            dir,
            _sandbox: sandbox,
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.dir.fd()
    }

    fn populated(&self) -> bool {
        let events = self.dir.read("cgroup.events").unwrap();
        ck_cgroup::cgroup::parse::events(&events).populated == Some(true)
    }

    fn wait_unpopulated(&self) -> bool {
        ck_cgroup::cgroup::wait::wait_empty(&self.dir, "", Duration::from_secs(5)).unwrap()
            == ck_cgroup::cgroup::wait::Waited::Empty
    }
}

fn pipe() -> (std::fs::File, OwnedFd) {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    (std::fs::File::from(r), w)
}

/// Run `cmd` (stdout to a pipe) in `cg` and reap it; return (output, child).
fn run(cg: &Scratch, mut cmd: ModuleCommand, strategy: Strategy) -> (String, ModuleChild) {
    let (mut r, w) = pipe();
    cmd.stdout(w);
    let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
    drop(cmd);
    let mut out = String::new();
    r.read_to_string(&mut out).unwrap();
    child.wait().unwrap();
    (out, child)
}

fn cgroup_line(out: &str) -> &str {
    out.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or_else(|| panic!("no 0:: line in {out:?}"))
}

/// The child's cgroup as the host sees it: without a cgroup namespace of its own (the
/// placement tests; the namespace has tests of its own).
fn cat_cgroup() -> ModuleCommand {
    let mut cmd = ModuleCommand::new("/bin/sh");
    cmd.args(["-c", "cat /proc/self/cgroup"])
        .cgroup_namespace(false);
    cmd
}

/// Every spawn path (clone3, the pre-exec write, the PID namespace's init) starts the
/// program in a cgroup namespace rooted at its cgroup: it reads `0::/`, its namespace is not
/// ours, and its pid is in the cgroup's `cgroup.procs`.
#[test]
fn every_spawn_path_starts_the_child_in_a_cgroup_namespace_rooted_at_its_cgroup() {
    let own = std::fs::read_link("/proc/self/ns/cgroup").unwrap();
    for (strategy, pidns) in [
        (Strategy::Clone3Only, false),
        (Strategy::PreExecOnly, false),
        (Strategy::Clone3Only, true),
    ] {
        let cg = Scratch::new();
        let mut cmd = ModuleCommand::new("/bin/sh");
        cmd.args([
            "-c",
            &format!(
                "grep '^0::' /proc/self/cgroup; readlink /proc/self/ns/cgroup; grep -cx $$ {}",
                cg.path.join("cgroup.procs").display()
            ),
        ])
        .pid_namespace(pidns);
        assert!(cmd.has_cgroup_namespace(), "on by default");
        let (out, child) = run(&cg, cmd, strategy);
        let what = format!("{strategy:?}, pid namespace {pidns}: {out}");
        let l: Vec<&str> = out.lines().collect();
        assert_eq!(l.len(), 3, "{what}");
        assert_eq!(l[0], "0::/", "{what}");
        assert_ne!(l[1], own.to_string_lossy(), "{what}");
        assert_eq!(l[2], "1", "{what}");
        drop(child);
    }
}

/// A spawner without CAP_SYS_ADMIN (this test's thread drops it from its effective set:
/// capabilities are per thread, and the init takes the spawning thread's) gets its PID namespace
/// through a user namespace mapping its uid and gid to themselves: the program is pid 2 and
/// reads the map, and `user_namespace()` says so; with the capability (where the tests have it)
/// it is `false` and the program reads our own map.
#[test]
fn without_cap_sys_admin_the_pid_namespace_comes_with_a_user_namespace() {
    let uid = rustix::process::geteuid().as_raw();
    let has_cap = rustix::thread::capabilities(None)
        .unwrap()
        .effective
        .contains(rustix::thread::CapabilitySet::SYS_ADMIN);
    let own_map = std::fs::read_to_string("/proc/self/uid_map").unwrap();
    let own_map: Vec<&str> = own_map.split_whitespace().collect();
    for drop_cap in [true, false] {
        if !drop_cap && !has_cap {
            continue; // an unprivileged test run: there is no capability to keep
        }
        let cg = Scratch::new();
        let (out, user_ns) = std::thread::scope(|s| {
            s.spawn(|| {
                if drop_cap {
                    let mut caps = rustix::thread::capabilities(None).unwrap();
                    caps.effective
                        .remove(rustix::thread::CapabilitySet::SYS_ADMIN);
                    rustix::thread::set_capabilities(None, caps).unwrap();
                }
                let mut cmd = ModuleCommand::new("/bin/sh");
                cmd.args(["-c", "echo $$; cat /proc/self/uid_map"])
                    .pid_namespace(true);
                // The init dies with the spawning thread: spawn and wait in this one.
                let (out, child) = run(&cg, cmd, Strategy::Clone3Only);
                (out, child.user_namespace())
            })
            .join()
            .unwrap()
        });
        let what = format!("CAP_SYS_ADMIN dropped: {drop_cap}: {out}");
        let l: Vec<&str> = out.lines().collect();
        assert_eq!(l.first(), Some(&"2"), "{what}");
        assert_eq!(user_ns, drop_cap, "{what}");
        let map: Vec<&str> = l[1].split_whitespace().collect();
        if drop_cap {
            assert_eq!(
                map,
                [uid.to_string(), uid.to_string(), "1".into()],
                "{what}"
            );
        } else {
            assert_eq!(map, own_map, "{what}");
        }
    }
}

#[test]
fn clone3_places_child_in_cgroup() {
    let cg = Scratch::new();
    let (out, mut child) = run(&cg, cat_cgroup(), Strategy::Auto);
    assert_eq!(cgroup_line(&out), cg.rel);
    assert_eq!(child.placement(), Placement::Clone3IntoCgroup);
    assert!(child.wait().unwrap().success());
}

#[test]
fn clone3_only_places_child_in_cgroup() {
    let cg = Scratch::new();
    let (out, child) = run(&cg, cat_cgroup(), Strategy::Clone3Only);
    assert_eq!(cgroup_line(&out), cg.rel);
    assert_eq!(child.placement(), Placement::Clone3IntoCgroup);
}

#[test]
fn pre_exec_places_child_in_cgroup() {
    let cg = Scratch::new();
    let (out, mut child) = run(&cg, cat_cgroup(), Strategy::PreExecOnly);
    assert_eq!(cgroup_line(&out), cg.rel);
    assert_eq!(child.placement(), Placement::PreExecWrite);
    assert!(child.wait().unwrap().success());
}

#[test]
fn exit_code_and_signal() {
    use std::os::unix::process::ExitStatusExt;
    let cg = Scratch::new();
    for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
        let mut cmd = ModuleCommand::new("/bin/sh");
        cmd.args(["-c", "exit 3"]);
        let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(3), "{strategy:?}");
        // Waiting again returns the cached status.
        assert_eq!(child.wait().unwrap().code(), Some(3));

        let mut cmd = ModuleCommand::new("/bin/sleep");
        cmd.arg("100");
        let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
        assert_eq!(child.try_wait().unwrap(), None);
        child.signal(Signal::KILL).unwrap();
        let st = child.wait().unwrap();
        assert_eq!(st.signal(), Some(9), "{strategy:?}");
        assert_eq!(st.code(), None);
        assert!(child.signal(Signal::KILL).is_err());
    }
    assert!(cg.wait_unpopulated());
}

#[test]
fn try_wait_reaps() {
    let cg = Scratch::new();
    let mut cmd = ModuleCommand::new("/bin/sh");
    cmd.args(["-c", "exit 0"]);
    let mut child = spawn_into(cg.fd(), &cmd).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(st.success());
    assert_eq!(child.wait().unwrap(), st);
}

#[test]
fn program_not_found() {
    let cg = Scratch::new();
    for strategy in [Strategy::Auto, Strategy::Clone3Only, Strategy::PreExecOnly] {
        // Not in PATH: rejected in the parent, nothing cloned.
        let cmd = ModuleCommand::new("ck-definitely-not-a-program");
        let err = spawn_into_with(cg.fd(), &cmd, strategy).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{strategy:?}");
        // Full path: fails in the child's execve, reported back and reaped.
        let cmd = ModuleCommand::new("/nonexistent/ck-prog");
        let err = spawn_into_with(cg.fd(), &cmd, strategy).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{strategy:?}");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }
    assert!(!cg.populated());
    let procs = std::fs::read_to_string(cg.path.join("cgroup.procs")).unwrap();
    assert_eq!(procs, "");
}

#[test]
fn program_found_in_path() {
    let cg = Scratch::new();
    for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
        let mut cmd = ModuleCommand::new("sh");
        cmd.args(["-c", "cat /proc/self/cgroup; echo \"$0\""])
            .cgroup_namespace(false);
        let (out, mut child) = run(&cg, cmd, strategy);
        assert_eq!(cgroup_line(&out), cg.rel);
        // argv[0] stays the name as given.
        assert_eq!(out.lines().last(), Some("sh"));
        // The status run reaped, as the child keeps it.
        assert!(child.try_wait().unwrap().unwrap().success());
    }
}

#[test]
fn env_clear_and_set() {
    let cg = Scratch::new();
    for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
        let mut cmd = ModuleCommand::new("/usr/bin/env");
        cmd.env("DROPPED", "x")
            .env_clear()
            .env("A", "b")
            .env("C", "d");
        cmd.env_remove("C");
        let (out, _) = run(&cg, cmd, strategy);
        assert_eq!(out, "A=b\n", "{strategy:?}");
    }
}

#[test]
fn current_dir_is_applied() {
    let cg = Scratch::new();
    let dir = std::env::temp_dir().join(format!("ck-spawn-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let expected = dir.canonicalize().unwrap();
    for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
        let mut cmd = ModuleCommand::new("/bin/readlink");
        cmd.arg("/proc/self/cwd").current_dir(&dir);
        let (out, _) = run(&cg, cmd, strategy);
        assert_eq!(Path::new(out.trim_end()), expected, "{strategy:?}");
    }
    let _ = std::fs::remove_dir(&dir);
    // A missing directory is reported as ENOENT.
    let mut cmd = ModuleCommand::new("/bin/true");
    cmd.current_dir("/nonexistent/ck-dir");
    for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
        let err = spawn_into_with(cg.fd(), &cmd, strategy).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{strategy:?}");
    }
}

#[test]
fn stdin_and_stderr_are_wired() {
    let cg = Scratch::new();
    for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
        let (in_r, in_w) = pipe();
        let (mut err_r, err_w) = pipe();
        let mut w = std::fs::File::from(in_w);
        std::io::Write::write_all(&mut w, b"hello\n").unwrap();
        drop(w);
        let mut cmd = ModuleCommand::new("/bin/sh");
        cmd.args(["-c", "cat >&2"]);
        cmd.stdin(OwnedFd::from(in_r)).stderr(err_w);
        let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
        drop(cmd);
        let mut out = String::new();
        err_r.read_to_string(&mut out).unwrap();
        assert_eq!(out, "hello\n");
        assert!(child.wait().unwrap().success());
    }
}

#[test]
fn parent_death_signal_fires_when_spawning_thread_exits() {
    use std::os::unix::process::ExitStatusExt;
    let cg = Scratch::new();
    for strategy in [Strategy::Clone3Only, Strategy::PreExecOnly] {
        let fd = rustix::io::fcntl_dupfd_cloexec(cg.fd(), 0).unwrap();
        let mut child = std::thread::spawn(move || {
            let mut cmd = ModuleCommand::new("/bin/sleep");
            cmd.arg("100").parent_death_signal(Signal::KILL);
            spawn_into_with(fd.as_fd(), &cmd, strategy).unwrap()
        })
        .join()
        .unwrap();
        let st = child.wait().unwrap();
        assert_eq!(st.signal(), Some(9), "{strategy:?}");
    }
}

#[test]
fn place_before_exec_with_std_command() {
    let cg = Scratch::new();
    let procs = rustix::fs::openat(
        cg.fd(),
        "cgroup.procs",
        OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", "cat /proc/self/cgroup"]);
    cmd.stdout(Stdio::piped());
    place_before_exec(&mut cmd, procs);
    let out = cmd.output().unwrap();
    assert!(out.status.success());
    let out = String::from_utf8(out.stdout).unwrap();
    assert_eq!(cgroup_line(&out), cg.rel);
}

#[test]
fn place_before_exec_write_error_is_returned() {
    let cg = Scratch::new();
    // Read-only fd: the write fails with EBADF, so the child must not exec.
    let procs = rustix::fs::openat(
        cg.fd(),
        "cgroup.procs",
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    let mut cmd = Command::new("/bin/true");
    place_before_exec(&mut cmd, procs);
    let err = cmd.spawn().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EBADF));
}

#[test]
fn auto_surfaces_non_fallback_errors() {
    // A regular file is not a cgroup directory: clone3 fails (EBADF) and
    // the fallback cannot open cgroup.procs under it either.
    let cg = Scratch::new();
    let file = rustix::fs::open(
        cg.path.join("cgroup.procs"),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    let cmd = ModuleCommand::new("/bin/true");
    assert!(spawn_into(file.as_fd(), &cmd).is_err());
    assert!(spawn_into_with(file.as_fd(), &cmd, Strategy::Clone3Only).is_err());
    assert!(!cg.populated());
}

#[test]
fn placement_serializes_kebab_case() {
    // serde_json is a dependency of the crate.
    assert_eq!(
        serde_json::to_string(&Placement::Clone3IntoCgroup).unwrap(),
        "\"clone3-into-cgroup\""
    );
    assert_eq!(
        serde_json::to_string(&Placement::PreExecWrite).unwrap(),
        "\"pre-exec-write\""
    );
    assert_eq!(Strategy::default(), Strategy::Auto);
}

/// The `Uid:`, `Gid:` and `Groups:` lines of `/proc/<pid>/status`.
fn ids_of(status: &str) -> Vec<String> {
    status
        .lines()
        .filter(|l| l.starts_with("Uid:") || l.starts_with("Gid:") || l.starts_with("Groups:"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// `uid`, `gid`, `process_group(0)` and `fd` reach the program on every spawn path (clone3,
/// the pre-exec write, a PID namespace's init): it reports its ids from `/proc/self/status`
/// (supplementary groups emptied), leads the process group whose id is [`ModuleChild::id`]
/// (with a PID namespace the init leads it and the program is in it), and reads what the
/// parent wrote to the fd mapped to 7. A PID namespace's init keeps the caller's identity.
#[test]
fn uid_gid_process_group_and_fds_reach_the_program_on_every_path() {
    let root = rustix::process::geteuid().is_root();
    // Without root only the own ids can be taken.
    let (uid, gid) = if root {
        (65534, 65534)
    } else {
        (
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        )
    };
    for (strategy, pidns) in [
        (Strategy::Clone3Only, false),
        (Strategy::PreExecOnly, false),
        (Strategy::Clone3Only, true),
    ] {
        if pidns && !root {
            // A PID namespace without a user namespace needs CAP_SYS_ADMIN (lane 2's
            // 74-user-suite runs this as a user): that case is skipped, and said.
            skip("the PID namespace case needs root (CAP_SYS_ADMIN)");
            continue;
        }
        if pidns && !root {
            // A PID namespace without a user namespace needs CAP_SYS_ADMIN (lane 2's
            // 74-user-suite runs this as a user): that case is skipped, and said.
            skip("the PID namespace case needs root (CAP_SYS_ADMIN)");
            continue;
        }
        let cg = Scratch::new();
        let (fd_r, fd_w) = pipe();
        let mut cmd = ModuleCommand::new("/bin/sh");
        cmd.args([
            "-c",
            "grep -E '^(Uid|Gid|Groups):' /proc/self/status; \
             read -r _ _ _ _ pg _ < /proc/self/stat; echo \"pgrp $pg\"; cat <&7",
        ])
        .uid(uid)
        .gid(gid)
        .process_group(0)
        .fd(7, OwnedFd::from(fd_r))
        .pid_namespace(pidns);
        let (mut out_r, out_w) = pipe();
        cmd.stdout(out_w);
        let mut child = spawn_into_with(cg.fd(), &cmd, strategy).unwrap();
        drop(cmd);
        let what = format!("{strategy:?}, pid namespace {pidns}");
        if pidns && root {
            // The program blocks on fd 7 until the write end closes: the init is still there.
            let init = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
            assert_eq!(
                ids_of(&init)[0],
                "Uid: 0 0 0 0",
                "{what}: the init stays root"
            );
        }
        std::io::Write::write_all(&mut std::fs::File::from(fd_w), b"mapped\n").unwrap();
        let mut out = String::new();
        out_r.read_to_string(&mut out).unwrap();
        assert!(child.wait().unwrap().success(), "{what}: {out}");
        let groups = if root {
            "Groups:".to_string()
        } else {
            String::new()
        };
        let mut want = vec![
            format!("Uid: {uid} {uid} {uid} {uid}"),
            format!("Gid: {gid} {gid} {gid} {gid}"),
        ];
        if root {
            want.push(groups);
        }
        let got = ids_of(&out);
        assert_eq!(&got[..want.len()], &want[..], "{what}: {out}");
        assert!(
            out.contains(&format!("\npgrp {}\n", child.id())),
            "{what}: pgid not the child's id {}: {out}",
            child.id()
        );
        assert!(out.ends_with("mapped\n"), "{what}: {out}");
    }
}

/// What the child could not do is refused before anything is spawned.
#[test]
fn an_fd_below_3_and_a_foreign_group_in_a_pid_namespace_are_refused() {
    let cg = Scratch::new();
    let (r, _w) = pipe();
    let mut cmd = ModuleCommand::new("/bin/true");
    cmd.fd(1, OwnedFd::from(r));
    let err = spawn_into(cg.fd(), &cmd).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let mut cmd = ModuleCommand::new("/bin/true");
    cmd.pid_namespace(true).process_group(1);
    let err = spawn_into(cg.fd(), &cmd).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(!cg.populated());
}
