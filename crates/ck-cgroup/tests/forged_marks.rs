//! A module cannot launder its own death with a mark it raises itself (a red team's shapes, as
//! a module of the daemon's uid: root here, which owns every directory). The module is this test
//! binary run again as the module's command (`forger`, by `CK_FORGE`): it raises
//! `user.ck_cgroup_stops` on its own directory, or `user.oomd_ooms` on `subc-modules/`, as a
//! real module would with `setxattr(2)`, and then crashes, exits with a code, or SIGKILLs
//! itself. The death report charges it and names the mark as unconfirmed; a real stop of this
//! process is known however the process ended; a module with a uid of its own cannot raise the
//! marks at all. The mutation control `marks-believed` (every mark believed as it reads) fails
//! these by name.

use std::path::PathBuf;
use std::time::Duration;

use ck_cgroup::cause::death_cause::Cause;
use ck_cgroup::module::Death;
use ck_cgroup::spawn::ModuleCommand;
use ck_cgroup::stop::StopOptions;
use ck_cgroup::{ModuleId, Root, Sandbox};

fn parent() -> PathBuf {
    match std::env::var_os("CK_CGROUP_TEST_PARENT") {
        Some(p) => PathBuf::from(p),
        None => ck_cgroup::discover::cgroup2_mount().expect("a cgroup2 mount"),
    }
}

fn sh(script: &str) -> ModuleCommand {
    let mut c = ModuleCommand::new("/bin/sh");
    c.args(["-c", script]);
    c
}

/// This test binary as a module's command, playing `role` (see [`forger`]) in the module
/// `name` of the sandbox `sb`: its directory is given to it (a module in a cgroup namespace sees
/// itself at `/`; a real one finds its directory by the pid in `cgroup.procs`).
fn forger_cmd(role: &str, sb: &Sandbox, name: &str) -> ModuleCommand {
    let exe = std::env::current_exe().expect("this test binary");
    let mut c = ModuleCommand::new(exe);
    c.args(["--exact", "forger", "--nocapture", "--test-threads=1"]);
    c.env("CK_FORGE", role);
    c.env("CK_FORGE_DIR", sb.path().join("subc-modules").join(name));
    c
}

/// Raise the counter xattr `name` on `dir` by one, as systemd-oomd and ck-cgroup do.
fn raise(dir: &std::path::Path, name: &str) -> rustix::io::Result<()> {
    let mut buf = [0u8; 32];
    let n = rustix::fs::getxattr(dir, name, &mut buf)
        .ok()
        .and_then(|len| {
            std::str::from_utf8(&buf[..len])
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    rustix::fs::setxattr(
        dir,
        name,
        (n + 1).to_string().as_bytes(),
        rustix::fs::XattrFlags::empty(),
    )
}

/// The module's side, run by [`forger_cmd`] (a no-op in the test run itself): raise a mark,
/// then die as the role says.
#[test]
fn forger() {
    let Ok(role) = std::env::var("CK_FORGE") else {
        return;
    };
    let me = PathBuf::from(std::env::var_os("CK_FORGE_DIR").expect("CK_FORGE_DIR"));
    // Never a mark outside a sandbox's modules.
    let parent = me.parent().expect("subc-modules/").to_path_buf();
    assert!(
        parent.ends_with("subc-modules") && me.to_string_lossy().contains("ck-sandbox-"),
        "{}",
        me.display()
    );
    eprintln!("forger {role} in {}", me.display());
    // The crash of a program that is not this one's runtime (whose SIGSEGV handler would take
    // a SIGSEGV sent by kill(2) for a fault and return): a shell's, as a module's would be.
    let crash = || {
        use std::os::unix::process::CommandExt;
        let e = std::process::Command::new("/bin/sh")
            .args(["-c", "kill -SEGV $$"])
            .exec();
        panic!("exec sh: {e}")
    };
    let die = |sig| {
        let _ = rustix::process::kill_process(rustix::process::getpid(), sig);
        std::thread::sleep(Duration::from_secs(60));
        std::process::exit(99)
    };
    match role.as_str() {
        "stop-segv" => {
            raise(&me, "user.ck_cgroup_stops").expect("raise the stop mark");
            crash()
        }
        "stop-exit3" => {
            raise(&me, "user.ck_cgroup_stops").expect("raise the stop mark");
            std::process::exit(3)
        }
        "ancestor-kill" => {
            raise(&parent, "user.oomd_ooms").expect("raise subc-modules/'s oomd mark");
            die(rustix::process::Signal::KILL)
        }
        // Exit 0 only where every mark was refused.
        "try-marks" => {
            let a = raise(&me, "user.ck_cgroup_stops");
            let b = raise(&me, "user.oomd_ooms");
            let c = raise(&parent, "user.oomd_ooms");
            eprintln!(
                "forger as uid {}: {a:?} {b:?} {c:?}",
                rustix::process::getuid().as_raw()
            );
            std::process::exit(if a.is_err() && b.is_err() && c.is_err() {
                0
            } else {
                1
            })
        }
        other => panic!("unknown role {other}"),
    }
}

/// The forging module's name.
const NAME: &str = "forger";

fn reaped(root: &Root, name: &str, cmd: &ModuleCommand) -> Death {
    let id = ModuleId::new(name).unwrap();
    let mut child = root.spawn(&id, cmd).expect("spawn");
    let r = root
        .reap(&mut child, &StopOptions::default())
        .expect("reap");
    assert!(r.stop.ok(), "{:?}", r.stop);
    r.death
}

#[test]
fn a_forged_stop_mark_then_a_crash_is_charged() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let d = reaped(&root, NAME, &forger_cmd("stop-segv", &sb, NAME));
    assert_eq!(
        d.cause,
        Cause::Signal {
            signal: "SIGSEGV".into()
        },
        "{d:?}"
    );
    assert_eq!(d.charged, Some(true), "{d:?}");
    assert_eq!(d.marks_unconfirmed.len(), 1, "{d:?}");
    assert_eq!(d.marks_unconfirmed[0].mark, "user.ck_cgroup_stops");
    assert!(d.marks_unconfirmed[0].why.contains("SIGSEGV"), "{d:?}");
    // The JSON a supervisor logs names it and parses back.
    let text = serde_json::to_string(&d).unwrap();
    assert!(
        text.contains(r#""marks_unconfirmed":[{"mark":"user.ck_cgroup_stops""#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<Death>(&text).unwrap(), d);
}

#[test]
fn a_forged_stop_mark_then_an_exit_code_is_charged() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let d = reaped(&root, NAME, &forger_cmd("stop-exit3", &sb, NAME));
    assert_eq!(d.cause, Cause::Exited { code: 3 }, "{d:?}");
    assert_eq!(d.charged, Some(true), "{d:?}");
    assert_eq!(d.marks_unconfirmed.len(), 1, "{d:?}");
    assert!(d.marks_unconfirmed[0].why.contains("code 3"), "{d:?}");
}

#[test]
fn a_forged_ancestor_oomd_mark_while_a_sibling_lives_is_not_excused() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    // A sibling under the same ancestor, running before the forger starts: a kill of the
    // ancestor by systemd-oomd would have killed it too.
    let sib = ModuleId::new("sibling").unwrap();
    let mut sibling = root.spawn(&sib, &sh("exec sleep 600")).expect("sibling");
    // Start times are in clock ticks: the forger's spawn is a tick later than the sibling's.
    std::thread::sleep(Duration::from_millis(30));
    let d = reaped(&root, NAME, &forger_cmd("ancestor-kill", &sb, NAME));
    assert!(!matches!(d.cause, Cause::Oomd { .. }), "{d:?}");
    assert_ne!(d.charged, Some(false), "excused: {d:?}");
    let subc = sb.path().join("subc-modules").display().to_string();
    assert_eq!(d.marks_unconfirmed.len(), 1, "{d:?}");
    assert_eq!(d.marks_unconfirmed[0].mark, "user.oomd_ooms");
    assert_eq!(d.marks_unconfirmed[0].on.as_deref(), Some(subc.as_str()));
    assert!(
        d.marks_unconfirmed[0]
            .why
            .contains(&sibling.id().to_string()),
        "{d:?}"
    );
    let r = root
        .stop(&sib, &StopOptions::default())
        .expect("stop the sibling");
    assert!(r.ok(), "{r:?}");
    let _ = sibling.wait();
}

#[test]
fn a_stop_of_this_process_is_known_however_the_process_ended() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let id = ModuleId::new("graceful").unwrap();
    let ready = std::env::temp_dir().join(format!("ck-graceful-{}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    // It catches TERM and exits with 4: no mark says so, the stop is this process's own.
    let mut child = root
        .spawn(
            &id,
            &sh(&format!(
                "trap 'exit 4' TERM; touch {}; while :; do sleep 0.05; done",
                ready.display()
            )),
        )
        .unwrap();
    while !ready.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let opts = StopOptions {
        signal: rustix::process::Signal::TERM,
        grace: Duration::from_secs(20),
        ..StopOptions::default()
    };
    let stop = root.stop(&id, &opts).unwrap();
    assert!(stop.ok(), "{stop:?}");
    let d = root.death(&mut child).unwrap();
    let _ = std::fs::remove_file(&ready);
    assert_eq!(
        (d.cause.clone(), d.exit_code),
        (Cause::Stopped, Some(4)),
        "{d:?}"
    );
    assert_eq!(d.charged, Some(false));
    assert!(d.marks_unconfirmed.is_empty(), "{d:?}");
}

#[test]
fn a_stop_after_the_crash_does_not_excuse_it() {
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let id = ModuleId::new("crashed").unwrap();
    // It crashes and leaves a process behind; the supervisor stops what is left before it
    // reads the death: the stop began after the crash, so it is not the cause.
    let mut child = root.spawn(&id, &sh("sleep 600 & kill -SEGV $$")).unwrap();
    let st = child
        .wait_timeout(Duration::from_secs(60))
        .unwrap()
        .expect("the crash");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&st), Some(11));
    let stop = root.stop(&id, &StopOptions::default()).unwrap();
    assert!(stop.ok() && stop.tree.signalled == 1, "{stop:?}");
    let d = root.death(&mut child).unwrap();
    assert_eq!(
        d.cause,
        Cause::Signal {
            signal: "SIGSEGV".into()
        },
        "{d:?}"
    );
    assert_eq!(d.charged, Some(true));
}

#[test]
fn a_module_with_a_uid_of_its_own_cannot_raise_the_marks() {
    if !ck_testkit::needs_root("the module is started as uid 65534 (CAP_SETUID)") {
        return;
    }
    let sb = Sandbox::create(&parent()).expect("sandbox");
    let root = Root::open(sb.path()).unwrap();
    let mut cmd = forger_cmd("try-marks", &sb, NAME);
    cmd.uid(65534).gid(65534);
    let id = ModuleId::new(NAME).unwrap();
    let mut child = match root.spawn(&id, &cmd) {
        Ok(c) => c,
        Err(e) => panic!("spawn as nobody: {e}"),
    };
    let d = root.death(&mut child).unwrap();
    assert_eq!(
        d.exit_code,
        Some(0),
        "a mark was raised as uid 65534: {d:?}"
    );
    let _ = root.stop(&id, &StopOptions::default());
}
