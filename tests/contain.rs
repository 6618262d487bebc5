//! Containment by default: `exec`, `run` and `Root::spawn` start the module in a new cgroup
//! namespace rooted at its module, so the module reads `0::/` in `/proc/self/cgroup` (on a
//! cgroup2 mounted with `nsdelegate` it then can neither leave the module nor write its own
//! limits; the escapes themselves are tried in lane 2's `hostile-escape` check, since this host's
//! cgroup2 has no `nsdelegate`). The opt-outs leave CMD in the host's cgroup namespace. Without
//! `CAP_SYS_ADMIN` the namespace comes with a user namespace mapping the caller's ids to
//! themselves.

mod common;

use std::process::Command;

use common::*;

/// This process's cgroup namespace (`cgroup:[inode]`).
fn own_ns() -> String {
    std::fs::read_link("/proc/self/ns/cgroup")
        .expect("readlink /proc/self/ns/cgroup")
        .to_string_lossy()
        .into_owned()
}

/// Shell for CMD: its cgroup as it sees it, its cgroup namespace, and whether its own pid is in
/// the module's `cgroup.procs` (1 or 0: the placement, seen from inside).
fn probe(w: &World, id: &str) -> String {
    let procs = w.root().join("subc-modules").join(id).join("cgroup.procs");
    format!(
        "grep '^0::' /proc/self/cgroup; readlink /proc/self/ns/cgroup; grep -cx $$ {}",
        procs.display()
    )
}

/// What the probe printed: (cgroup line, namespace, in the module).
fn seen(out: &str) -> (String, String, bool) {
    let l: Vec<&str> = out.lines().collect();
    assert_eq!(l.len(), 3, "{out}");
    (l[0].to_string(), l[1].to_string(), l[2] == "1")
}

#[test]
fn exec_starts_cmd_in_a_cgroup_namespace_rooted_at_its_module() {
    let w = World::new();
    let out = ok(w.run(&["exec", "ns", "--", "sh", "-c", &probe(&w, "ns")]));
    let (cg, ns, inside) = seen(&out);
    assert_eq!(cg, "0::/", "CMD sees its module as the root: {out}");
    assert_ne!(ns, own_ns(), "CMD has a cgroup namespace of its own: {out}");
    assert!(inside, "CMD is in the module: {out}");
}

#[test]
fn exec_no_cgroup_namespace_leaves_cmd_in_the_callers() {
    let w = World::new();
    let o = w.run(&[
        "exec",
        "host",
        "--no-cgroup-namespace",
        "--",
        "sh",
        "-c",
        &probe(&w, "host"),
    ]);
    assert_eq!(stderr(&o), "", "no note when asked for none");
    let (cg, ns, inside) = seen(&ok(o));
    let module = v2_path(&w.root().join("subc-modules/host"));
    assert_eq!(cg, format!("0::{module}"));
    assert_eq!(ns, own_ns());
    assert!(inside);
}

#[test]
fn run_starts_cmd_in_a_cgroup_namespace_rooted_at_its_module() {
    let w = World::new();
    // With the PID namespace (the default) the init makes the namespace and CMD inherits it;
    // without it, the child makes it.
    for extra in [None, Some("--no-pid-namespace")] {
        let mut args = vec!["run", "ns"];
        args.extend(extra);
        let script = probe(&w, "ns");
        args.extend(["--", "sh", "-c", &script]);
        let o = w.run(&args);
        assert_eq!(stderr(&o), "", "{extra:?}");
        let out = ok(o);
        let (cg, ns, inside) = seen(&out);
        assert_eq!(cg, "0::/", "{extra:?}: {out}");
        assert_ne!(ns, own_ns(), "{extra:?}: {out}");
        assert!(inside, "{extra:?}: {out}");
    }
}

#[test]
fn run_no_cgroup_namespace_leaves_cmd_in_the_callers() {
    let w = World::new();
    let script = probe(&w, "host");
    let o = w.run(&[
        "run",
        "host",
        "--no-cgroup-namespace",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(stderr(&o), "");
    let (cg, ns, inside) = seen(&ok(o));
    assert_eq!(
        cg,
        format!("0::{}", v2_path(&w.root().join("subc-modules/host")))
    );
    assert_eq!(ns, own_ns());
    assert!(inside);
}

/// A helper without CAP_SYS_ADMIN (as under a user's manager; here root with the capability
/// dropped by setpriv): the cgroup namespace is made with a user namespace that maps the
/// caller's uid and gid to themselves, setgroups denied (for `run`, the user namespace the
/// init's PID namespace came with, in which the init makes the cgroup namespace). Nothing says
/// there is no cgroup namespace, nor, for `run`, that there is no PID namespace.
#[test]
fn without_cap_sys_admin_the_cgroup_namespace_comes_with_a_user_namespace() {
    let w = World::new();
    let uid = rustix::process::geteuid().as_raw();
    for cmd in ["exec", "run"] {
        let script = format!(
            "{}; cat /proc/self/uid_map /proc/self/setgroups",
            probe(&w, "unpriv")
        );
        let o = Command::new("setpriv")
            .args(["--inh-caps=-sys_admin", "--bounding-set=-sys_admin", "--"])
            .arg(bin())
            .env_remove("CK_CGROUP_ROOT")
            .env("CK_CGROUP_POLICY", "/dev/null")
            .arg("--root")
            .arg(w.root())
            .args([cmd, "unpriv", "--", "sh", "-c", &script])
            .output()
            .expect("setpriv (util-linux)");
        let err = stderr(&o);
        assert!(!err.contains("cgroup namespace"), "{cmd}: {err}");
        assert!(!err.contains("no PID namespace"), "{cmd}: {err}");
        let out = ok(o);
        let l: Vec<&str> = out.lines().collect();
        assert_eq!(l.len(), 5, "{cmd}: {out}");
        assert_eq!(l[0], "0::/", "{cmd}: {out}");
        assert_ne!(l[1], own_ns(), "{cmd}: {out}");
        assert_eq!(l[2], "1", "{cmd}: in the module: {out}");
        let map: Vec<&str> = l[3].split_whitespace().collect();
        assert_eq!(
            map,
            [uid.to_string(), uid.to_string(), "1".into()],
            "{cmd}: {out}"
        );
        assert_eq!(l[4], "deny", "{cmd}: {out}");
        let _ = w.run(&["kill", "unpriv"]);
    }
}

/// The library: `Root::spawn` contains by default; `cgroup_namespace(false)` opts out.
#[test]
fn root_spawn_starts_the_program_in_a_cgroup_namespace_rooted_at_its_module() {
    use std::io::Read;
    let w = World::new();
    let root = ck_cgroup::Root::open(w.root()).expect("open the sandbox's root");
    let id = ck_cgroup::ModuleId::new("lib").unwrap();
    for on in [true, false] {
        let (r, wr) = rustix::pipe::pipe().unwrap();
        let mut cmd = ck_cgroup::spawn::ModuleCommand::new("/bin/sh");
        cmd.args(["-c", &probe(&w, "lib")])
            .stdout(wr)
            .cgroup_namespace(on);
        assert_eq!(cmd.has_cgroup_namespace(), on);
        let mut child = root.spawn(&id, &cmd).expect("spawn");
        drop(cmd);
        let mut out = String::new();
        std::fs::File::from(r).read_to_string(&mut out).unwrap();
        assert!(child.wait().unwrap().success(), "{out}");
        let (cg, ns, inside) = seen(&out);
        if on {
            assert_eq!(cg, "0::/", "{out}");
            assert_ne!(ns, own_ns(), "{out}");
        } else {
            assert_eq!(
                cg,
                format!("0::{}", v2_path(&w.root().join("subc-modules/lib")))
            );
            assert_eq!(ns, own_ns());
        }
        assert!(inside, "{out}");
    }
}

/// Where no cgroup namespace can be made (here: in a user namespace whose
/// `user.max_user_namespaces` is 0, as its root without capabilities, so only this test's helper
/// is affected), `exec` runs CMD without one and says so once, in the library's words
/// (`spawn::enter_cgroup_namespace_or_fall_back`, `Fallback::line`), naming the last step's
/// errno (ENOSPC).
#[test]
fn exec_where_no_cgroup_namespace_can_be_made_runs_cmd_and_says_so_once() {
    let w = World::new();
    // Started in the root's daemon/ (as tests/run.rs's `without_user_namespaces`).
    let o = Command::new("sh")
        .args([
            "-c",
            "echo $$ > \"$1/daemon/cgroup.procs\" && shift && exec unshare --user --map-root-user \
             sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"' sh \"$@\"",
            "sh",
        ])
        .arg(w.root())
        .args(["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"])
        .arg(bin())
        .arg("--root")
        .arg(w.root())
        .args(["exec", "nons", "--", "sh", "-c", &probe(&w, "nons")])
        .env_remove("CK_CGROUP_ROOT")
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .expect("unshare, setpriv (util-linux)");
    let err = stderr(&o);
    let out = ok(o);
    let (cg, _, inside) = seen(&out);
    assert!(inside, "CMD is in the module: {out}{err}");
    assert_ne!(
        cg, "0::/",
        "no namespace: CMD sees the host's paths: {out}{err}"
    );
    let notes: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("ck-cgroup: exec nons: "))
        .collect();
    let line = ck_cgroup::spawn::Fallback::NoCgroupNamespace {
        reason: ck_cgroup::error::errno_text(rustix::io::Errno::NOSPC),
    }
    .line("CMD");
    assert_eq!(notes, [line.as_str()], "{err}");
}
