//! Placement is never into the wrong cgroup: a process that `exec` starts is in its module or
//! the command fails, also while `init` moves the root's own processes into `daemon/` (docs/design.md,
//! "The placement lock"). Mutation control: `placement-no-lock`.

mod common;

use std::process::{Child, Command, Stdio};

use common::*;

/// `init` racing `exec` of new modules on a fresh root (four `exec`, started in the
/// root as a service's processes are before `init`, and one `init`, at once): in 3 to 10 of 20
/// trials a process that `exec` ran ended up in `daemon/`, where `init` had moved it after it
/// had placed itself (init read the root's `cgroup.procs` before the move and wrote the pid
/// into `daemon/` after it). Every `exec` that runs its command runs it in its module.
#[test]
fn init_racing_exec_never_moves_an_exec_d_process_out_of_its_module() {
    init_racing_exec(false);
}

/// The same race as a delegated user (nobody without capabilities, the fresh root handed to it
/// as systemd's `Delegate=` hands a user service its cgroup): the lock is a file of the root that
/// user may lock, and nothing of the placement needs root.
#[test]
fn init_racing_exec_never_moves_an_exec_d_process_out_of_its_module_as_a_delegated_user() {
    init_racing_exec(true);
}

/// `setpriv` as nobody without capabilities, for `sh -c` below (empty for root).
const AS_NOBODY: &str =
    "setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all";

fn init_racing_exec(nobody: bool) {
    use std::os::unix::fs::chown;
    // At least 20: with fewer, every exec may come before init's mkdir (none placed), and the
    // race would not have been run (lane 2 asks for 3 trials of each race).
    let trials = race_runs(50).max(20);
    let mut placed = 0;
    for trial in 0..trials {
        let w = World::new();
        // A fresh root: what the sandbox laid out is taken away (no module exists yet).
        for d in ["subc-modules", "daemon"] {
            std::fs::remove_dir(w.root().join(d)).unwrap();
        }
        let user = if nobody { AS_NOBODY } else { "" };
        if nobody {
            let r = w.root();
            for p in [
                r.to_path_buf(),
                r.join("cgroup.procs"),
                r.join("cgroup.threads"),
                r.join("cgroup.subtree_control"),
            ] {
                chown(
                    &p,
                    Some(common::nobody::NOBODY),
                    Some(common::nobody::NOBODY),
                )
                .unwrap();
            }
        }
        let mut execs: Vec<Child> = (0..4)
            .map(|i| {
                let c = Command::new("sh")
                    .args([
                        "-c",
                        "echo $$ > \"$1/cgroup.procs\" && exec $4 \"$2\" --root \"$1\" exec \"m$3\" -- sleep 600",
                        "sh",
                    ])
                    .arg(w.root())
                    .arg(bin())
                    .arg(i.to_string())
                    .arg(user)
                    .env_remove("CK_CGROUP_ROOT")
                    .env("CK_CGROUP_POLICY", "/dev/null")
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                w.track(c.id());
                c
            })
            .collect();
        let init = Command::new("sh")
            .args(["-c", "exec $3 \"$2\" --root \"$1\" init", "sh"])
            .arg(w.root())
            .arg(bin())
            .arg(user)
            .env_remove("CK_CGROUP_ROOT")
            .env("CK_CGROUP_POLICY", "/dev/null")
            .output()
            .unwrap();
        assert!(init.status.success(), "trial {trial}: {}", stderr(&init));
        // Each exec runs its command (comm is sleep) or has failed (a root not laid out yet
        // is refused, exit 2).
        eventually("every exec placed or refused", || {
            execs.iter_mut().all(|c| {
                c.try_wait().unwrap().is_some()
                    || std::fs::read_to_string(format!("/proc/{}/comm", c.id())).ok()
                        == Some("sleep\n".into())
            })
        });
        for (i, c) in execs.iter_mut().enumerate() {
            if c.try_wait().unwrap().is_some() {
                continue;
            }
            let want = v2_path(&w.root().join(format!("subc-modules/m{i}")));
            assert_eq!(
                cgroup_of(c.id()),
                want,
                "trial {trial}: exec m{i}'s process {} is not in its module",
                c.id()
            );
            placed += 1;
            ok(w.run(&["kill", &format!("m{i}")]));
            c.wait().unwrap();
        }
    }
    // The race was run: most execs came after init's mkdir and placed themselves.
    assert!(placed > 0, "no exec was placed in {trials} trials");
    eprintln!("{placed} of {} execs placed in {trials} trials", 4 * trials);
}
