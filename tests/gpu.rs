//! Which module holds the GPU memory: `status`, `ps` and the Prometheus text join each GPU
//! process to its module by membership. This host has no GPU: "no GPU here" is checked for real,
//! and the join over real processes in real modules is driven by a stand-in `nvidia-smi`
//! (`CK_CGROUP_NVIDIA_SMI`) that prints, in the driver tool's format, what a GPU machine's would
//! for those processes. `scripts/gpu-check` is the check on a real NVIDIA GPU. And no spawn or
//! kill path does any GPU work: each is traced (strace) beside `status`, which does.

mod common;

use ck_cgroup::gpu::{NO_GPU, nvidia_smi};
use ck_cgroup::telemetry::ModuleStatus;
use common::strict::{Ps, Status, strictly};
use common::*;

/// Whether this host has a GPU a reader knows (then "no GPU here" cannot be checked here).
fn host_has_gpu() -> bool {
    let any = |d: &str, p: &str| {
        std::fs::read_dir(d).is_ok_and(|e| {
            e.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(p))
        })
    };
    any("/sys/class/drm", "renderD")
        || any("/sys/class/accel", "accel")
        || std::path::Path::new("/proc/driver/nvidia").exists()
}

/// A stand-in `nvidia-smi` in the test's temp dir that prints `lines` for the query (and fails,
/// naming the argument, for any other).
fn fake_nvidia_smi(w: &World, body: &str) -> std::path::PathBuf {
    let p = w.tmp("nvidia-smi");
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = '{}' ] && [ \"$2\" = '{}' ] || {{ echo \"unexpected: $*\" >&2; exit 2; }}\n{body}\n",
        nvidia_smi::ARGS[0],
        nvidia_smi::ARGS[1]
    );
    std::fs::write(&p, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The helper's stdout for `args` (it must exit 0), with `nvidia` as its `nvidia-smi`, or with
/// none named (`CK_CGROUP_NVIDIA_SMI` unset: this host's own).
fn with_smi(w: &World, nvidia: Option<&std::path::Path>, args: &[&str]) -> String {
    let mut c = w.ck();
    match nvidia {
        Some(p) => c.env("CK_CGROUP_NVIDIA_SMI", p),
        None => c.env_remove("CK_CGROUP_NVIDIA_SMI"),
    };
    ok(c.args(args).output().unwrap())
}

fn status(w: &World, nvidia: Option<&std::path::Path>) -> Status {
    strictly(&with_smi(w, nvidia, &["--json", "status"]))
}

fn module<'a>(s: &'a Status, id: &str) -> &'a ModuleStatus {
    s.modules
        .iter()
        .find(|m| m.module.as_ref().is_some_and(|n| *n == id))
        .unwrap_or_else(|| panic!("module {id}"))
}

/// Start `sleep` in module `id` (made by `exec`), tracked.
fn sleeper(w: &World, id: &str, secs: &str) -> std::process::Child {
    let c = w
        .ck()
        .args(["exec", id, "--", "sleep", secs])
        .spawn()
        .unwrap();
    let pid = c.id();
    w.track(pid);
    eventually("the sleeper placed", || {
        cgroup_of(pid).ends_with(&format!("/subc-modules/{id}"))
    });
    c
}

#[test]
fn status_on_a_host_without_a_gpu_is_null_with_one_reason_and_no_column() {
    if host_has_gpu() {
        skip("this host has a GPU: \"no GPU here\" cannot be checked on it");
        return;
    }
    let w = World::new();
    let mut a = sleeper(&w, "a", "600");
    let s = status(&w, None);
    let g = &module(&s, "a").gpu_memory;
    assert_eq!(g.value, None, "absent is not zero");
    assert_eq!(g.reason.as_deref(), Some(NO_GPU));
    assert!(g.devices.is_empty());
    // The table says nothing of a GPU that is not there; --wide shows the column, unknown.
    let text = ok(w.run(&["status"]));
    assert!(!text.contains("GPU"), "{text}");
    let wide = ok(w.run(&["status", "--wide"]));
    assert!(wide.lines().next().unwrap().ends_with("GPU_MEM"), "{wide}");
    assert!(
        wide.contains(&format!("GPU_MEM unknown: {NO_GPU}")),
        "{wide}"
    );
    // ps: no column either; Prometheus: no series.
    assert!(!ok(w.run(&["ps"])).contains("GPU"));
    let prom = ok(w.run(&["status", "--format", "prometheus"]));
    assert!(!prom.contains("ck_cgroup_gpu"), "{prom}");
    ok(w.run(&["kill", "a"]));
    let _ = a.wait();
}

#[test]
fn nvidia_memory_is_charged_to_the_module_whose_member_holds_it_not_its_sibling() {
    let w = World::new();
    // The holder is an orphan: its parent exited, so it is a child of PID 1, not of the
    // module's command. Membership, not ancestry, makes it module a's.
    let script = format!(
        "(sleep 601 & echo $! > {h}); exec sleep 602",
        h = w.tmp("holder").display()
    );
    let mut a = w
        .ck()
        .args(["exec", "a", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    w.track(a.id());
    let holder = w.pid_from("holder");
    let mut b = sleeper(&w, "b", "603");
    // The driver's view: the holder has 2210 MiB on one GPU and 64 on another; a process of
    // no module (this test) holds some too; b's holds none.
    let fake = fake_nvidia_smi(
        &w,
        &format!(
            "echo '{holder}, 00000000:3B:00.0, 2210'\necho '{holder}, 00000000:86:00.0, 64'\necho '{}, 00000000:3B:00.0, 500'",
            std::process::id()
        ),
    );
    let s = status(&w, Some(&fake));
    let ga = &module(&s, "a").gpu_memory;
    assert_eq!(ga.value, Some((2210 + 64) << 20), "{ga:?}");
    assert_eq!(ga.source, nvidia_smi::SOURCE);
    let devices: Vec<(&str, &str, u64)> = ga
        .devices
        .iter()
        .map(|d| (d.device.as_str(), d.driver.as_str(), d.bytes))
        .collect();
    assert_eq!(
        devices,
        [
            ("0000:3b:00.0", "nvidia", 2210 << 20),
            ("0000:86:00.0", "nvidia", 64 << 20)
        ]
    );
    let gb = &module(&s, "b").gpu_memory;
    assert_eq!(
        (gb.value, gb.devices.len()),
        (Some(0), 0),
        "the sibling holds none: {gb:?}"
    );

    // The table shows the column; ps the process; Prometheus the series per device.
    let text = with_smi(&w, Some(&fake), &["status"]);
    let head: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(head.last(), Some(&"GPU_MEM"), "{text}");
    let row = |id: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap()
            .split_whitespace()
            .last()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        (row("a").as_str(), row("b").as_str()),
        ("2.2G", "0B"),
        "{text}"
    );

    let p: Ps = strictly(&with_smi(&w, Some(&fake), &["--json", "ps"]));
    for m in &p.modules {
        for q in &m.processes {
            let want = if q.pid == holder {
                Some((2210 + 64) << 20)
            } else {
                Some(0)
            };
            assert_eq!(q.gpu_memory.value, want, "pid {} of {}", q.pid, m.name);
        }
    }
    let text = with_smi(&w, Some(&fake), &["ps", "a"]);
    assert!(text.lines().nth(1).unwrap().contains("GPU_MEM"), "{text}");

    let prom = with_smi(&w, Some(&fake), &["status", "--format", "prometheus"]);
    assert!(
        prom.contains(&format!(
            "ck_cgroup_gpu_device_memory_bytes{{module=\"a\",layout=\"ck\",slot=\"main\",device=\"0000:3b:00.0\",driver=\"nvidia\"}} {}",
            2210u64 << 20
        )),
        "{prom}"
    );
    assert!(
        prom.contains("ck_cgroup_gpu_memory_bytes{module=\"b\",layout=\"ck\",slot=\"main\"} 0"),
        "{prom}"
    );
    ok(w.run(&["kill", "a"]));
    ok(w.run(&["kill", "b"]));
    let _ = (a.wait(), b.wait());
}

#[test]
fn a_failing_nvidia_smi_makes_every_figure_unknown_with_its_line_and_status_still_answers() {
    let w = World::new();
    let mut a = sleeper(&w, "a", "604");
    let fake = fake_nvidia_smi(
        &w,
        "printf 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver. \\033]2;pwned\\007\\n' >&2; exit 9",
    );
    let s = status(&w, Some(&fake));
    let g = &module(&s, "a").gpu_memory;
    assert_eq!(g.value, None, "a failed read is unknown, never 0");
    let why = g.reason.as_deref().unwrap();
    assert!(
        why.contains("could not communicate with the NVIDIA driver"),
        "{why}"
    );
    // The other figures are there all the same.
    assert_eq!(module(&s, "a").procs.value, Some(1));
    let text = with_smi(&w, Some(&fake), &["status"]);
    assert!(text.contains("GPU_MEM unknown: "), "{text}");
    // What the tool printed reaches the terminal escaped: its bytes may be anyone's (a hung
    // driver's garbage, or a program CK_CGROUP_NVIDIA_SMI names).
    assert!(
        !text.bytes().any(|b| b == 0x1b || b == 0x07),
        "a raw control byte of the tool's: {text:?}"
    );
    assert!(text.contains("\\x1b]2;"), "{text:?}");
    ok(w.run(&["kill", "a"]));
    let _ = a.wait();
}

/// The files and programs a command's trace shows it touched for GPU figures.
fn gpu_work(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|l| {
            [
                "nvidia",
                "/sys/class/drm",
                "/sys/class/accel",
                "/fdinfo",
                "dmem.",
            ]
            .iter()
            .any(|k| l.contains(k))
        })
        .collect()
}

#[test]
fn no_spawn_or_kill_path_does_gpu_work_and_status_does() {
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        skip("no strace here (CI installs it)");
        return;
    }
    let w = World::new();
    let fake = fake_nvidia_smi(&w, "true");
    let traced = |args: &[&str]| -> String {
        let log = w.tmp("trace");
        let _ = std::fs::remove_file(&log);
        let mut c = std::process::Command::new("strace");
        c.args(["-f", "-qq", "-e", "trace=%file,execve", "-o"])
            .arg(&log)
            .arg(bin())
            .arg("--root")
            .arg(w.root())
            .args(args)
            .env("CK_CGROUP_NVIDIA_SMI", &fake)
            .env("CK_CGROUP_POLICY", "/dev/null")
            .env_remove("CK_CGROUP_ROOT");
        let o = c.output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        std::fs::read_to_string(&log).unwrap()
    };
    // The control: status does read for GPUs (so the trace would show it on another path).
    let t = traced(&["status"]);
    assert!(
        gpu_work(&t)
            .iter()
            .any(|l| l.contains("execve") && l.contains("nvidia-smi")),
        "status runs the stand-in nvidia-smi: {t}"
    );
    let mut placed = std::process::Command::new("sleep")
        .arg("605")
        .spawn()
        .unwrap();
    w.track(placed.id());
    let pid = placed.id().to_string();
    for args in [
        &["exec", "m", "--", "true"][..],
        &["run", "r", "--", "true"],
        &["create", "p"],
        &["place", "p", &pid],
        &["kill", "m"],
        &["kill", "p"],
        &["prune", "--kill"],
    ] {
        let t = traced(args);
        assert_eq!(gpu_work(&t), Vec::<&str>::new(), "{args:?} did GPU work");
    }
    let _ = placed.wait();
}

#[test]
fn the_gpu_check_script_passes_its_self_test() {
    // scripts/gpu-check on a host without a GPU: its own steps against a stand-in nvidia-smi,
    // so that the check a GPU machine runs is known to work up to the driver.
    if !needs_root("scripts/gpu-check makes its sandbox under the cgroup2 mount as root") {
        return;
    }
    let python = std::process::Command::new("python3")
        .args(["-c", "import json"])
        .output();
    if !python.is_ok_and(|o| o.status.success()) {
        skip(
            "no python3 with its json module here: scripts/gpu-check reads the helper's JSON with it",
        );
        return;
    }
    let o = std::process::Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/gpu-check"))
        .args(["--self-test", "64"])
        .env("CK", bin())
        .env("GPU_CHECK_PARENT", parent())
        .env("CK_CGROUP_POLICY", "/dev/null")
        .env_remove("CK_CGROUP_ROOT")
        .env_remove("CK_CGROUP_NVIDIA_SMI")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    assert!(out.ends_with("gpu-check: ok\n"), "{out}");
}
