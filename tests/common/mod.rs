//! Shared test harness: a sandbox per test under an explicit parent, the real binary, and a
//! guard that kills processes a failing test (or a mutation run) left behind.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use ck_cgroup::Sandbox;

pub mod commands;
#[allow(unused_imports)] // each test binary uses what it needs of common
pub use ck_testkit::{needs_root, skip};
pub mod kids;
pub mod nobody;
pub mod started;
pub mod strict;
pub mod watch;

#[allow(unused_imports)] // not every test target starts a module or traps a signal
pub use started::{trapping_sh, wait_placed};

/// A `sleep 600` moved into the cgroup directory `dir` (made, with its parents, where it is not
/// there), tracked by `w`: a module's process in a directory the test names itself (the daemon's
/// own layout, a name that is not UTF-8).
pub fn sleep_in_dir(w: &World, dir: &Path) -> std::process::Child {
    std::fs::create_dir_all(dir).unwrap();
    let s = Command::new("sleep").arg("600").spawn().unwrap();
    w.track(s.id());
    std::fs::write(dir.join("cgroup.procs"), s.id().to_string()).unwrap();
    s
}

/// The parent of every test sandbox: `CK_CGROUP_TEST_PARENT`, else the cgroup2 mount's root
/// found in /proc/self/mountinfo. Never the caller's own cgroup (no ambient resolution).
pub fn parent() -> PathBuf {
    match std::env::var_os("CK_CGROUP_TEST_PARENT") {
        Some(p) => PathBuf::from(p),
        None => ck_cgroup::discover::cgroup2_mount().expect("a cgroup2 mount"),
    }
}

/// A test's time limit, multiplied by `CK_TEST_TIME_SCALE` (a whole number, default 1). Lane 2 of
/// the guest lane (QEMU without KVM, some 20 times slower than the host) sets it: the limits are
/// for a machine, and what each test checks is unchanged.
pub fn scaled(d: Duration) -> Duration {
    let k = std::env::var("CK_TEST_TIME_SCALE")
        .ok()
        .map(|v| {
            v.parse::<u32>()
                .expect("CK_TEST_TIME_SCALE: a whole number")
                .max(1)
        })
        .unwrap_or(1);
    d * k
}

/// One test's world: a sandbox and the pids to kill if the test fails.
pub struct World {
    pub sb: Sandbox,
    pids: std::cell::RefCell<Vec<u32>>,
    pub tmp: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        World {
            sb: Sandbox::create(&parent()).expect("create sandbox"),
            pids: Default::default(),
            tmp: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn root(&self) -> &Path {
        self.sb.path()
    }

    /// The binary with `--root <sandbox>`; `CK_CGROUP_ROOT` removed so nothing resolves ambiently.
    pub fn ck(&self) -> Command {
        let mut c = bare();
        c.arg("--root").arg(self.root());
        c
    }

    /// Run `ck` with `args`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.ck().args(args).output().expect("run ck-cgroup")
    }

    /// Remember a pid to SIGKILL when the test ends (a leaked process must not outlive a test).
    pub fn track(&self, pid: u32) {
        self.pids.borrow_mut().push(pid);
    }

    /// Wait until `file` (in the temp dir) has a pid in it, then track it and return it.
    pub fn pid_from(&self, file: &str) -> u32 {
        let pid: u32 = self.line_from(file).parse().expect("pid");
        self.track(pid);
        pid
    }

    /// Wait until `file` (in the temp dir) holds a whole line; return it, trimmed. For what is
    /// not a pid (a port, a "ready" mark): those must never be tracked, since tracking SIGKILLs.
    /// The wait is long (60 s): it is a fixture getting ready (900 nested mkdirs take seconds on
    /// a 2-core host that runs four tests at once), not the mechanism under test.
    pub fn line_from(&self, file: &str) -> String {
        let path = self.tmp.path().join(file);
        let deadline = Instant::now() + scaled(Duration::from_secs(60));
        loop {
            if let Ok(s) = std::fs::read_to_string(&path)
                && s.ends_with('\n')
            {
                return s.trim().to_string();
            }
            assert!(Instant::now() < deadline, "no line in {}", path.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn tmp(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Every directory under the sandbox, relative, sorted.
    pub fn tree(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(self.root(), self.root(), &mut out);
        out.sort();
        out
    }
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.push(
                e.path()
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
            walk(base, &e.path(), out);
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        for &pid in self.pids.borrow().iter() {
            unsafe_free_kill(pid);
        }
    }
}

fn unsafe_free_kill(pid: u32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    }
}

/// The binary with no root and no `CK_CGROUP_ROOT`.
pub fn bare() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ck-cgroup"));
    c.env_remove("CK_CGROUP_ROOT");
    // No host policy (/etc/ck-cgroup/policy.toml) leaks into a test: an empty one.
    c.env("CK_CGROUP_POLICY", "/dev/null");
    c
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ck-cgroup")
}

/// Alive: /proc/<pid> exists and it is not a zombie.
pub fn alive(pid: u32) -> bool {
    !matches!(state(pid), Some('Z') | Some('X') | None)
}

/// Send `sig` to `pid`, a process of the test's own (a child not reaped yet, or one it tracks).
#[track_caller]
pub fn signal(pid: u32, sig: rustix::process::Signal) {
    let p = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    rustix::process::kill_process(p, sig).unwrap_or_else(|e| panic!("kill -{sig:?} {pid}: {e}"));
}

/// The one-letter state of `pid` from /proc/<pid>/stat (`R`, `S`, `D`, `T`, `t`, `Z`...); `None`
/// once it is gone.
pub fn state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')').next()?.trim_start().chars().next()
}

/// The cgroup-v2 path of `pid`, as /proc/<pid>/cgroup says.
pub fn cgroup_of(pid: u32) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    ck_cgroup::cgroup::parse::proc_cgroup_v2(&s).unwrap_or_default()
}

/// The cgroup-v2 path (as /proc/<pid>/cgroup shows it) of a directory under the mount.
pub fn v2_path(abs: &Path) -> String {
    let mount = ck_cgroup::discover::cgroup2_mount().unwrap();
    format!("/{}", abs.strip_prefix(&mount).unwrap().display())
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `tests/fixtures/hostile.c`, compiled once per test binary; or `CK_TEST_HOSTILE`, the path of
/// one compiled beforehand (lane 2 of the guest lane, whose guest has no C compiler).
pub fn hostile() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("CK_TEST_HOSTILE") {
            return p.to_string_lossy().into_owned();
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let out = dir.join("hostile");
        let tmp = dir.join(format!("hostile.{}", std::process::id()));
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hostile.c");
        let o = Command::new("cc")
            .args(["-O1", "-Wall", "-Werror", "-o"])
            .arg(&tmp)
            .arg(src)
            .output()
            .expect("run cc (Rust's linker needs it, so it is there)");
        assert!(o.status.success(), "cc: {}", stderr(&o));
        std::fs::rename(&tmp, &out).unwrap();
        out.display().to_string()
    })
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON a `--json` command printed on stdout; panics naming both streams when it is not JSON.
#[track_caller]
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout {} stderr {}", stdout(o), stderr(o)))
}

/// Assert success and return stdout.
#[track_caller]
pub fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// How many trials a race runs: `default`, or `CK_TEST_RACE_RUNS` (at least 1), as
/// `CK_TEST_FORKING_RUNS` for the forking trees of tests/teardown.rs.
pub fn race_runs(default: u32) -> u32 {
    std::env::var("CK_TEST_RACE_RUNS")
        .ok()
        .map(|v| {
            v.parse::<u32>()
                .expect("CK_TEST_RACE_RUNS: a number")
                .max(1)
        })
        .unwrap_or(default)
}

/// Wait for `c` at most `limit` (scaled: [`scaled`]); `None`, after killing and reaping it, when
/// it still runs then. Give a limit far below any timeout the command was given, so that a
/// command that waits its whole timeout fails instead of passing late.
pub fn wait_at_most(
    c: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + scaled(limit);
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return Some(s);
        }
        if Instant::now() >= deadline {
            let _ = c.kill();
            let _ = c.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Poll `f` until true or 10 s (for processes to start; never used to wait for a kill).
#[track_caller]
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A uid and gid no account uses: the supervisor that shares its uid with its modules, in the
/// tests of what such a module can do to its own cgroup.
#[allow(dead_code)] // not every test target runs as another user
pub const SHARED_UID: u32 = 47_913;

/// The binary on `w`'s root as [`SHARED_UID`] (`setpriv`), with no ambient root or policy.
#[allow(dead_code)] // not every test target runs as another user
pub fn ck_as_shared_uid(w: &World) -> std::process::Command {
    let mut c = std::process::Command::new("setpriv");
    c.args([
        &format!("--reuid={SHARED_UID}"),
        &format!("--regid={SHARED_UID}"),
        "--clear-groups",
        bin(),
        "--root",
    ])
    .arg(w.root())
    .env_remove("CK_CGROUP_ROOT")
    .env("CK_CGROUP_POLICY", "/dev/null");
    c
}

/// For `#[serde(deserialize_with = "common::version_1")]` on a `version` field of a CLI JSON
/// shape parsed with `deny_unknown_fields`: the field is there and is 1 (docs/json.md).
pub fn version_1<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let v = <u32 as serde::Deserialize>::deserialize(d)?;
    if v != 1 {
        return Err(serde::de::Error::custom(format!("version {v}, not 1")));
    }
    Ok(v)
}

/// A module `id` in `w` holding `mib` MiB resident (a Python bytearray), once it is.
pub fn hoard(w: &World, id: &str, mib: u32) -> std::process::Child {
    let ready = format!("{id}.ready");
    let script = format!(
        "import time\nx = bytearray({mib} << 20)\nopen('{}', 'w').write('1\\n')\ntime.sleep(600)",
        w.tmp(&ready).display()
    );
    let c = w
        .ck()
        .args(["exec", id, "--", "python3", "-c", &script])
        .spawn()
        .unwrap();
    w.track(c.id());
    w.line_from(&ready);
    c
}
