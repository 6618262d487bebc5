//! Finding the service root when none is given.
//!
//! The rule (also in `docs/design.md`):
//!
//! 1. `--root PATH`, else `CK_CGROUP_ROOT`. Nothing below applies then. The library's
//!    [`discover`] takes the variable too (a program that has no `--root` of its own), so a
//!    daemon's tests run under `ck-cgroup sandbox` find the sandbox's root, not the live
//!    service's. The variable set but empty is bad input (exit 2) that names it, as the CLI
//!    refuses an empty `--root`; it is not read as unset.
//! 2. The caller's cgroup: the `0::` line of `/proc/self/cgroup`, made absolute with the cgroup2
//!    mount found in `/proc/self/mountinfo` (never an assumed `/sys/fs/cgroup`).
//! 3. When that path has a `subc-modules` component (the caller is a module: ours at
//!    `<root>/subc-modules/<id>`, or the daemon's at `<root>/daemon/subc-modules/m-…`), the root
//!    is the part above the first `subc-modules`, without a trailing `daemon`.
//! 4. Else when the caller sits in the daemon's leaf `daemon` or in systemd's `.control` leaf
//!    (where `ExecStartPre=` runs with `Delegate=`), the root is its parent.
//! 5. Else the caller's cgroup itself.
//!
//! The root of the cgroup2 hierarchy is never a service root: discovery that ends there fails.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use crate::cgroup::mount::cgroup2_mount;
use crate::cgroup::mount::no_cgroup2;
use crate::cgroup::parse;
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

/// The environment variable that names the root.
pub const ENV_ROOT: &str = "CK_CGROUP_ROOT";

/// Apply the rule to the texts of `/proc/self/cgroup` and `/proc/self/mountinfo`.
pub fn service_root_from(proc_cgroup: &str, mountinfo: &str) -> Result<PathBuf> {
    let cg = parse::proc_cgroup_v2(proc_cgroup).ok_or_else(no_cgroup2)?;
    let mounts = parse::cgroup2_mounts(mountinfo);
    if mounts.is_empty() {
        return Err(no_cgroup2());
    }
    // The mount whose root is a prefix of the caller's cgroup (mount root "/" in the usual case).
    let (mount, rest) = mounts
        .iter()
        .find_map(|m| strip_components(&cg, &m.root).map(|rest| (m, rest)))
        .ok_or_else(|| {
            Error::bad_input(format!(
                "the caller's cgroup {cg} is not visible under any cgroup2 mount"
            ))
            .with_hint("pass the service root with --root or CK_CGROUP_ROOT")
        })?;
    let mut parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    if let Some(i) = parts.iter().position(|p| *p == crate::layout::MODULES_DIR) {
        parts.truncate(i);
        if parts.last() == Some(&crate::layout::DAEMON_LEAF) {
            parts.pop();
        }
    } else if matches!(parts.last(), Some(&"daemon") | Some(&".control")) {
        parts.pop();
    }
    if parts.is_empty() {
        return Err(Error::bad_input(format!(
            "the caller sits in the root of the cgroup2 hierarchy ({}), which is no service's cgroup",
            mount.mount_point.display()
        ))
        .with_hint("pass the service root with --root or CK_CGROUP_ROOT, or use `ck-cgroup sandbox`")
        .with_kind(crate::error::ErrorKind::NotAServiceRoot));
    }
    let mut root = mount.mount_point.clone();
    for p in parts {
        root.push(p);
    }
    Ok(root)
}

/// `path` without the leading components of `prefix`, or `None` when `prefix` is not a prefix.
fn strip_components(path: &str, prefix: &str) -> Option<String> {
    Path::new(path)
        .strip_prefix(Path::new(prefix))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// Step 1 for the environment: `value` is [`ENV_ROOT`] as read (`None`: unset). Set and
/// non-empty, its path (as it is, checked when it is opened); set but empty, bad input (exit 2)
/// naming the variable; unset, `None` (discovery goes on).
pub fn root_from_env(value: Option<OsString>) -> Result<Option<PathBuf>> {
    match value {
        None => Ok(None),
        Some(v) if v.is_empty() => Err(Error::bad_input(format!("{ENV_ROOT} is set but empty"))
            .with_hint(format!(
                "set {ENV_ROOT} to the service's cgroup directory, or unset it to discover the root"
            ))),
        Some(v) => Ok(Some(PathBuf::from(v))),
    }
}

/// The rule, steps 1 (the environment's part) to 5, on given inputs: `env_root` is
/// [`ENV_ROOT`] as read, and `read` reads `/proc/self/cgroup` and `/proc/self/mountinfo` by
/// path, only when `env_root` is unset.
pub fn discover_with(
    env_root: Option<OsString>,
    mut read: impl FnMut(&str) -> Result<String>,
) -> Result<PathBuf> {
    // Mutation: the library ignores the variable, as it did before it honoured it.
    let env_root = if mutation::active(Control::DiscoverIgnoresEnv) {
        None
    } else {
        env_root
    };
    if let Some(root) = root_from_env(env_root)? {
        return Ok(root);
    }
    service_root_from(&read("/proc/self/cgroup")?, &read("/proc/self/mountinfo")?)
}

/// Discover the service root of the calling process by the rule above: [`ENV_ROOT`] when it is
/// set (the library has no `--root`; a caller with one checks it first), else steps 2 to 5.
///
/// ```no_run
/// # fn main() -> ck_cgroup::Result<()> {
/// // In the daemon's service: its delegated cgroup, found from /proc/self/cgroup.
/// let root = ck_cgroup::Root::open(&ck_cgroup::discover::discover()?)?;
/// # drop(root);
/// # Ok(())
/// # }
/// ```
pub fn discover() -> Result<PathBuf> {
    discover_with(std::env::var_os(ENV_ROOT), |p| {
        std::fs::read_to_string(p).map_err(|e| Error::failed(format!("failed to read {p}: {e}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIFIED: &str = "25 28 0:24 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
    const HYBRID: &str = "41 23 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    fn root(cg: &str, mi: &str) -> Result<PathBuf> {
        service_root_from(&format!("0::{cg}\n"), mi)
    }

    #[test]
    fn rule() {
        let svc = "/sys/fs/cgroup/system.slice/ck-subc.service";
        for cg in [
            "/system.slice/ck-subc.service",
            "/system.slice/ck-subc.service/daemon",
            "/system.slice/ck-subc.service/.control",
            "/system.slice/ck-subc.service/subc-modules/aft",
            "/system.slice/ck-subc.service/subc-modules/aft/inner",
            "/system.slice/ck-subc.service/daemon/subc-modules/m-aft_5f1",
        ] {
            assert_eq!(root(cg, UNIFIED).unwrap(), Path::new(svc), "{cg}");
        }
        assert_eq!(
            root("/user.slice/x.service/daemon", HYBRID).unwrap(),
            Path::new("/sys/fs/cgroup/unified/user.slice/x.service")
        );
    }

    #[test]
    fn hierarchy_root_is_refused() {
        for cg in ["/", "/daemon", "/subc-modules/x"] {
            let e = root(cg, UNIFIED).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{cg}");
            assert_eq!(e.kind(), crate::error::ErrorKind::NotAServiceRoot, "{cg}");
        }
    }

    #[test]
    fn no_cgroup2() {
        let e = service_root_from("4:memory:/x\n", UNIFIED).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = root("/a", "22 27 0:21 / /proc rw - proc proc rw\n").unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn mount_with_a_non_root_mount_root() {
        let mi = "90 28 0:24 /system.slice /mnt/cg rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            root("/system.slice/a.service/daemon", mi).unwrap(),
            Path::new("/mnt/cg/a.service")
        );
        assert!(root("/user.slice/b", mi).is_err());
    }

    #[test]
    fn the_variable_comes_first_and_proc_is_not_read_then() {
        let unread = |p: &str| -> Result<String> { panic!("{p} was read") };
        assert_eq!(
            discover_with(Some("/sys/fs/cgroup/ck-sandbox-1".into()), unread).unwrap(),
            Path::new("/sys/fs/cgroup/ck-sandbox-1")
        );
        // Not checked here: a path that is no cgroup is refused when it is opened.
        assert_eq!(
            discover_with(Some("relative/x".into()), unread).unwrap(),
            Path::new("relative/x")
        );
    }

    #[test]
    fn an_empty_variable_is_refused_by_name() {
        let unread = |p: &str| -> Result<String> { panic!("{p} was read") };
        let e = discover_with(Some(OsString::new()), unread).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains(ENV_ROOT), "{e}");
    }

    #[test]
    fn without_the_variable_the_rule_applies() {
        let read = |p: &str| -> Result<String> {
            Ok(match p {
                "/proc/self/cgroup" => "0::/system.slice/ck-subc.service/daemon\n".to_string(),
                "/proc/self/mountinfo" => UNIFIED.to_string(),
                _ => panic!("{p}"),
            })
        };
        assert_eq!(
            discover_with(None, read).unwrap(),
            Path::new("/sys/fs/cgroup/system.slice/ck-subc.service")
        );
    }

    #[test]
    fn fixtures_of_this_kind_of_host() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join("tests/fixtures");
        let read = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
        // The hybrid host's shell sits in the hierarchy root: nothing to discover.
        assert!(service_root_from(&read("proc-cgroup.hybrid"), &read("mountinfo.hybrid")).is_err());
        assert_eq!(
            service_root_from(&read("proc-cgroup.unified"), &read("mountinfo.unified")).unwrap(),
            Path::new("/sys/fs/cgroup/system.slice/ck-subc.service")
        );
    }
}
