//! A delegated unprivileged user's helper: the sandbox's root handed to nobody (as systemd's
//! `Delegate=` hands a user service its cgroup) and the binary run as nobody without any
//! capability.

use std::process::Command;

use super::{World, bin};

/// The uid and gid of an unprivileged user's helper (nobody: no account's files, no capability).
pub const NOBODY: u32 = 65534;

/// Hand the sandbox's root to [`NOBODY`] as systemd's `Delegate=` hands a user service its
/// cgroup (the directory and its `cgroup.procs`, `cgroup.threads` and `cgroup.subtree_control`),
/// and `subc-modules/` with it, where the helper makes the module. The temp dir is opened to all:
/// the module writes its pids there as nobody.
pub fn delegate_root_to_nobody(w: &World) {
    use std::os::unix::fs::PermissionsExt;
    let files = ["cgroup.procs", "cgroup.threads", "cgroup.subtree_control"];
    for dir in [w.root().to_path_buf(), w.root().join("subc-modules")] {
        let chown = |p: &std::path::Path| {
            std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY))
                .unwrap_or_else(|e| panic!("chown {}: {e}", p.display()))
        };
        chown(&dir);
        for f in files {
            chown(&dir.join(f));
        }
    }
    std::fs::set_permissions(w.tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// `ck-cgroup --root <sandbox> ARGS` as an unprivileged user's helper: started in the root's
/// `daemon/` (as a user manager starts a delegated service's process in its cgroup, so that the
/// module's parent is the root nobody owns), then as nobody with every capability gone
/// (`setpriv`: no CAP_SYS_ADMIN, in the effective, inheritable or bounding set).
pub fn ck_as_nobody(w: &World, args: &[&str]) -> Command {
    delegate_root_to_nobody(w);
    as_nobody(w, bin(), args, |c| {
        c.arg("--root").arg(w.root());
    })
}

/// `prog ARGS` as nobody, started in the root's `daemon/` as [`ck_as_nobody`] does; `before`
/// adds the arguments that come first.
pub fn as_nobody(
    w: &World,
    prog: &str,
    args: &[&str],
    before: impl FnOnce(&mut Command),
) -> Command {
    let mut c = Command::new("sh");
    c.args([
        "-c",
        "echo $$ > \"$1/daemon/cgroup.procs\" && shift && exec \"$@\"",
        "sh",
    ])
    .arg(w.root())
    .arg("setpriv")
    .args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
        prog,
    ]);
    before(&mut c);
    c.args(args)
        .env_remove("CK_CGROUP_ROOT")
        .env("CK_CGROUP_POLICY", "/dev/null");
    c
}
