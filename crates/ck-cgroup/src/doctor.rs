//! `doctor`: is this host and this service ready for per-module cgroups? One check per line,
//! and for each failure the fix.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::backend::Bus;
use crate::backend::systemd::manager::{self as systemd, Unavailable};
use crate::cgroup::parse;
use crate::discover;
use crate::layout::{MODULES_DIR, WANTED_CONTROLLERS};
use crate::module::Root;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Passed.
    Ok,
    /// Failed: the service is not ready.
    Fail,
    /// Could not be checked, or a limitation that does not stop the service (no systemd on the
    /// bus, an old kernel with a fall-back).
    Warn,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// How it came out.
    pub outcome: Outcome,
    /// What was found.
    pub detail: String,
    /// What to change, for a failure or a warning.
    pub fix: Option<String>,
}

/// Every check, and whether the service is ready (no failure).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The checks, in order.
    pub checks: Vec<Check>,
    /// No check failed.
    pub ready: bool,
}

fn check(name: &str, outcome: Outcome, detail: String, fix: Option<String>) -> Check {
    Check {
        name: name.to_string(),
        outcome,
        detail,
        fix,
    }
}

/// `cgroup2 nsdelegate`: whether the hierarchy is mounted with `nsdelegate`, without which the
/// cgroup namespace that `exec`, `run` and `Root::spawn` give a module only changes what the
/// module sees (it may still move itself out of its module and write its own limits where its
/// uid may write). A warning when off, with the fix; `None` without cgroup2 (its own check fails).
pub fn nsdelegate_check(mountinfo: &str) -> Option<Check> {
    let on = parse::cgroup2_nsdelegate(mountinfo)?;
    Some(if on {
        check(
            "cgroup2 nsdelegate",
            Outcome::Ok,
            "cgroup2 is mounted with nsdelegate: a module in its cgroup namespace can neither leave its module nor write its own limits".into(),
            None,
        )
    } else {
        check(
            "cgroup2 nsdelegate",
            Outcome::Warn,
            "cgroup2 is mounted without nsdelegate: a module's cgroup namespace only changes what it sees; it can still move itself out of its module and write its own limits where its uid may write".into(),
            Some("mount cgroup2 with nsdelegate: `mount -o remount,nsdelegate <cgroup2 mount point>` (from the initial namespaces), or fstab's option; systemd mounts it so when it is PID 1".into()),
        )
    })
}

fn kernel_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    let (a, b) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

/// Run every check. `root`: the explicit root, else discovered; `unit`: the unit to ask systemd
/// about, else the unit of the calling process.
pub fn doctor(root: Option<&Path>, unit: Option<&str>) -> Report {
    doctor_for(root, unit, None)
}

/// [`doctor`] for a backend: with `scopes` (the systemd backend and its manager), the service's
/// own cgroup is not the modules' root, so instead of the root checks it checks that the manager
/// answers and which controllers it can give the module scopes, and `Delegate=no` is fine.
pub fn doctor_for(root: Option<&Path>, unit: Option<&str>, scopes: Option<Bus>) -> Report {
    let mut checks = Vec::new();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mounts = parse::mountinfo(&mountinfo);
    let v2: Vec<_> = mounts.iter().filter(|m| m.fs_type == "cgroup2").collect();
    let v1 = mounts.iter().any(|m| m.fs_type == "cgroup");
    match v2.first() {
        Some(m) => checks.push(check(
            "cgroup2 mounted",
            Outcome::Ok,
            format!(
                "at {} ({})",
                m.mount_point.display(),
                if v1 {
                    "hybrid: cgroup v1 hierarchies are mounted too and may hold controllers"
                } else {
                    "unified"
                }
            ),
            None,
        )),
        None => checks.push(check(
            "cgroup2 mounted",
            Outcome::Fail,
            "no cgroup2 filesystem in /proc/self/mountinfo".into(),
            Some("boot with systemd.unified_cgroup_hierarchy=1 (or mount -t cgroup2 none /sys/fs/cgroup/unified)".into()),
        )),
    }

    checks.extend(nsdelegate_check(&mountinfo));
    if let Some(bus) = scopes {
        scope_checks(bus, v1, &mut checks);
    }
    let root_path: Option<PathBuf> = match root {
        _ if scopes.is_some() => None,
        Some(p) => Some(p.to_path_buf()),
        None => match discover::discover() {
            Ok(p) => Some(p),
            Err(e) => {
                checks.push(check(
                    "service root",
                    Outcome::Fail,
                    e.to_string(),
                    Some(
                        e.hint()
                            .unwrap_or("pass --root with the service's cgroup")
                            .to_string(),
                    ),
                ));
                None
            }
        },
    };
    let opened = root_path.as_deref().map(Root::open);
    if let (Some(path), Some(r)) = (&root_path, &opened) {
        match r {
            Ok(_) => {
                let writable = rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok();
                checks.push(check(
                    "service root",
                    if writable { Outcome::Ok } else { Outcome::Fail },
                    format!(
                        "{} is a cgroup2 directory{}",
                        path.display(),
                        if writable { ", writable by this user" } else { ", NOT writable by this user" }
                    ),
                    (!writable).then(|| {
                        "delegate the service's cgroup to its user: Delegate=memory pids cpu io in the unit (systemctl edit ck-subc.service)".to_string()
                    }),
                ));
            }
            Err(e) => checks.push(check(
                "service root",
                Outcome::Fail,
                e.to_string(),
                e.hint().map(str::to_string),
            )),
        }
    }
    if let Some(Ok(r)) = &opened {
        let available = r
            .dir()
            .read("cgroup.controllers")
            .map(|t| parse::controllers(&t))
            .unwrap_or_default();
        checks.push(controllers_check(
            "controllers delegated",
            &available,
            |_| Outcome::Fail,
            if v1 {
                "this hybrid host keeps those controllers in cgroup v1: boot with systemd.unified_cgroup_hierarchy=1 (and cgroup_no_v1=all), then add Delegate=memory pids cpu io"
            } else {
                "add a drop-in (systemctl edit ck-subc.service):\n[Service]\nDelegate=memory pids cpu io"
            },
        ));
        let enabled = r.module_controllers().unwrap_or_default();
        let not_enabled: Vec<&str> = WANTED_CONTROLLERS
            .iter()
            .copied()
            .filter(|c| available.iter().any(|a| a == c) && !enabled.iter().any(|e| e == c))
            .collect();
        let layout = r.dir().is_dir(MODULES_DIR).unwrap_or(false);
        checks.push(check(
            "controllers enabled for the modules",
            if not_enabled.is_empty() && layout {
                Outcome::Ok
            } else {
                Outcome::Warn
            },
            if !layout {
                "subc-modules/ does not exist yet".into()
            } else if not_enabled.is_empty() {
                format!(
                    "subc-modules/cgroup.subtree_control: {}",
                    if enabled.is_empty() {
                        "-".into()
                    } else {
                        enabled.join(" ")
                    }
                )
            } else {
                format!("available but not enabled: {}", not_enabled.join(" "))
            },
            (!(not_enabled.is_empty() && layout)).then(|| {
                "run `ck-cgroup init` (the daemon does, before its first spawn)".to_string()
            }),
        ));
        for (file, version, what, fallback) in [
            (
                "cgroup.kill",
                "5.14",
                "kill --method cgroup-kill",
                "kill falls through to the freezer",
            ),
            (
                "cgroup.freeze",
                "5.2",
                "kill --method freeze",
                "kill falls through to per-process SIGKILL",
            ),
        ] {
            let there = r.dir().exists(file);
            checks.push(check(
                &format!("kernel: {file}"),
                if there { Outcome::Ok } else { Outcome::Warn },
                if there {
                    format!("present ({what})")
                } else {
                    format!("absent (kernel before {version}): {fallback}")
                },
                (!there).then(|| format!("a kernel {version} or newer")),
            ));
        }
        let peak = r.dir().exists("memory.peak");
        checks.push(check(
            "kernel: memory.peak",
            if peak { Outcome::Ok } else { Outcome::Warn },
            if peak {
                "present".into()
            } else if !available.iter().any(|c| c == "memory") {
                "not checked: no memory controller".into()
            } else {
                "absent (kernel before 5.19): status shows the peak as unknown".into()
            },
            None,
        ));
    }
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    let clone3 = kernel_at_least(&release, 5, 7);
    checks.push(check(
        "kernel: CLONE_INTO_CGROUP",
        if clone3 { Outcome::Ok } else { Outcome::Warn },
        format!(
            "kernel {release}: {}",
            if clone3 {
                "spawn places the child with clone3"
            } else {
                "before 5.7: spawn falls back to a pre-exec write to cgroup.procs"
            }
        ),
        None,
    ));

    // systemd, over D-Bus, when it is on the bus.
    let own_cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| parse::proc_cgroup_v2(&t))
        .unwrap_or_default();
    let bus = if let Some(b) = scopes {
        b
    } else if own_cgroup.contains("/user@") && !rustix::process::getuid().is_root() {
        Bus::User
    } else {
        Bus::System
    };
    match systemd::unit_facts(bus, unit, std::process::id()) {
        Err(Unavailable::NoBus(e)) => checks.push(check(
            "systemd",
            Outcome::Warn,
            format!("systemd is not on the bus ({e}); the unit's settings were not checked"),
            None,
        )),
        Err(Unavailable::Failed(e)) => checks.push(check(
            "systemd",
            Outcome::Warn,
            format!("systemd did not answer: {e}"),
            Some("name the unit with --unit ck-subc.service".into()),
        )),
        Ok(f) => unit_checks(&f, scopes.is_some(), &mut checks),
    }
    let ready = checks.iter().all(|c| c.outcome != Outcome::Fail);
    Report { checks, ready }
}

/// The systemd backend: the manager answers, and the controllers it can give module scopes (those
/// of the hierarchy's root for the system manager, of its own cgroup for a user manager).
fn scope_checks(bus: Bus, v1: bool, checks: &mut Vec<Check>) {
    let m = match systemd::Manager::connect(bus) {
        Ok(m) => m,
        Err(e) => {
            checks.push(check(
                "systemd backend",
                Outcome::Fail,
                e.to_string(),
                e.hint().map(str::to_string),
            ));
            return;
        }
    };
    checks.push(check(
        "systemd backend",
        Outcome::Ok,
        format!(
            "the {} manager answers on {}; modules are scopes in {}",
            if bus == Bus::User { "user" } else { "system" },
            m.via(),
            crate::layout::MODULES_SLICE
        ),
        None,
    ));
    let top = m
        .control_group("-.slice")
        .ok()
        .flatten()
        .unwrap_or_default();
    let available = discover::cgroup2_mount()
        .ok()
        .and_then(|mnt| {
            std::fs::read_to_string(
                mnt.join(top.trim_start_matches('/'))
                    .join("cgroup.controllers"),
            )
            .ok()
        })
        .map(|t| parse::controllers(&t))
        .unwrap_or_default();
    // A user manager gets no io from systemd 252 (user@.service delegates cpu memory pids):
    // without memory or pids the backend fails, without the others it only warns.
    checks.push(controllers_check(
        "controllers for module scopes",
        &available,
        |missing| {
            if missing.iter().any(|c| *c == "memory" || *c == "pids") {
                Outcome::Fail
            } else {
                Outcome::Warn
            }
        },
        if v1 {
            "this hybrid host keeps those controllers in cgroup v1: boot with systemd.unified_cgroup_hierarchy=1"
        } else {
            "limits on those controllers are unavailable to the modules (for a user manager: systemctl edit user@.service, [Service] Delegate=cpu cpuset io memory pids)"
        },
    ));
}

/// The controllers the helper uses, against those `available`: ok when none is missing, else
/// `outcome(missing)` with `fix`.
fn controllers_check(
    name: &str,
    available: &[String],
    outcome: impl Fn(&[&str]) -> Outcome,
    fix: &str,
) -> Check {
    let missing: Vec<&str> = WANTED_CONTROLLERS
        .iter()
        .copied()
        .filter(|c| !available.iter().any(|a| a == c))
        .collect();
    if missing.is_empty() {
        return check(
            name,
            Outcome::Ok,
            format!("{} available", WANTED_CONTROLLERS.join(" ")),
            None,
        );
    }
    check(
        name,
        outcome(&missing),
        format!(
            "missing from cgroup.controllers: {} (available: {})",
            missing.join(" "),
            if available.is_empty() {
                "none".to_string()
            } else {
                available.join(" ")
            }
        ),
        Some(fix.to_string()),
    )
}

fn unit_checks(f: &systemd::UnitFacts, scopes: bool, checks: &mut Vec<Check>) {
    let edit = |line: &str| {
        format!(
            "add a drop-in (systemctl edit {}):\n[Service]\n{line}",
            f.unit
        )
    };
    checks.push(check(
        "systemd unit",
        Outcome::Ok,
        format!(
            "{} (systemd {}), cgroup {}",
            f.unit,
            f.version,
            f.control_group.as_deref().unwrap_or("-")
        ),
        None,
    ));
    if scopes {
        checks.push(check(
            "Delegate=",
            Outcome::Ok,
            format!(
                "{}: not needed, the modules are systemd's scopes (--backend systemd)",
                match f.delegate {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "unknown",
                }
            ),
            None,
        ));
    }
    let delegated = f.delegate == Some(true);
    let ctl = f.delegate_controllers.clone().unwrap_or_default();
    let lacking: Vec<&str> = WANTED_CONTROLLERS
        .iter()
        .copied()
        .filter(|c| !ctl.iter().any(|x| x == c))
        .collect();
    if !scopes {
        checks.push(check(
            "Delegate=",
            if delegated && lacking.is_empty() {
                Outcome::Ok
            } else {
                Outcome::Fail
            },
            match f.delegate {
                Some(true) => format!(
                    "yes, controllers: {}",
                    if ctl.is_empty() {
                        "-".into()
                    } else {
                        ctl.join(" ")
                    }
                ),
                Some(false) => {
                    "no: the service's cgroup is systemd's; modules cannot get cgroups of their own"
                        .into()
                }
                None => "unknown".into(),
            },
            (!(delegated && lacking.is_empty())).then(|| {
                let fix = edit("Delegate=memory pids cpu io");
                if f.delegate == Some(false) {
                    // The incident's host: delegation may be forbidden by local policy.
                    format!(
                        "{fix}\n(where the service must stay undelegated: run its modules as systemd scopes, `ck-cgroup exec --backend systemd`, e.g. Environment=CK_CGROUP_BACKEND=systemd in the same drop-in instead)"
                    )
                } else {
                    fix
                }
            }),
        ));
    }
    let oom = f.oom_policy.as_deref() == Some("continue");
    checks.push(check(
        "OOMPolicy=",
        if oom { Outcome::Ok } else { Outcome::Fail },
        f.oom_policy.clone().unwrap_or_else(|| "unknown".into()),
        (!oom).then(|| edit("OOMPolicy=continue")),
    ));
    let km = f.kill_mode.as_deref() == Some("mixed");
    checks.push(check(
        "KillMode=",
        if km { Outcome::Ok } else { Outcome::Fail },
        f.kill_mode.clone().unwrap_or_else(|| "unknown".into()),
        (!km).then(|| edit("KillMode=mixed")),
    ));
    let t = f.timeout_stop_usec == Some(35_000_000);
    checks.push(check(
        "TimeoutStopSec=",
        if t { Outcome::Ok } else { Outcome::Fail },
        f.timeout_stop_usec
            .map_or("unknown".into(), |u| format!("{} s", u as f64 / 1e6)),
        (!t).then(|| edit("TimeoutStopSec=35")),
    ));
    let sub = f.major().is_some_and(|v| v >= 254);
    checks.push(check(
        "DelegateSubgroup=",
        Outcome::Ok,
        if sub {
            format!("systemd {} has it: DelegateSubgroup=daemon puts the daemon in its leaf", f.version)
        } else {
            format!("systemd {} is older than 254: the daemon runs `ck-cgroup init` before its first spawn", f.version)
        },
        None,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsdelegate_is_one_line_warning_with_the_fix_when_off() {
        let read = |f: &str| {
            std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../..")
                    .join("tests/fixtures")
                    .join(f),
            )
            .unwrap()
        };
        let on = nsdelegate_check(&read("mountinfo.unified")).unwrap();
        assert_eq!(
            (on.name.as_str(), on.outcome, on.fix.is_none()),
            ("cgroup2 nsdelegate", Outcome::Ok, true)
        );
        let off = nsdelegate_check(&read("mountinfo.hybrid")).unwrap();
        assert_eq!(off.outcome, Outcome::Warn, "{}", off.detail);
        assert!(
            off.fix
                .as_deref()
                .unwrap_or("")
                .contains("remount,nsdelegate")
        );
        assert!(nsdelegate_check("").is_none());
    }

    #[test]
    fn kernel_versions() {
        assert!(kernel_at_least("6.1.0-26-amd64", 5, 7));
        assert!(kernel_at_least("5.7.0", 5, 7));
        assert!(!kernel_at_least("5.4.0-150-generic", 5, 7));
        assert!(kernel_at_least("6.18.44-fc-v769", 5, 14));
    }

    #[test]
    fn unit_facts_to_checks() {
        let f = systemd::UnitFacts {
            version: "252.38-1~deb12u1".into(),
            unit: "ck-subc.service".into(),
            delegate: Some(false),
            delegate_controllers: Some(vec![]),
            oom_policy: Some("stop".into()),
            kill_mode: Some("control-group".into()),
            timeout_stop_usec: Some(90_000_000),
            control_group: Some("/system.slice/ck-subc.service".into()),
        };
        let mut c = Vec::new();
        unit_checks(&f, false, &mut c);
        let failed: Vec<&str> = c
            .iter()
            .filter(|c| c.outcome == Outcome::Fail)
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            failed,
            vec!["Delegate=", "OOMPolicy=", "KillMode=", "TimeoutStopSec="]
        );
        let d = c.iter().find(|c| c.name == "Delegate=").unwrap();
        assert!(
            d.fix
                .as_deref()
                .unwrap()
                .contains("Delegate=memory pids cpu io")
        );
        assert!(c.iter().any(|c| c.detail.contains("older than 254")));
        assert!(d.fix.as_deref().unwrap().contains("--backend systemd"));

        // With the systemd backend, Delegate=no is fine; the rest still fails.
        let mut c = Vec::new();
        unit_checks(&f, true, &mut c);
        let failed: Vec<&str> = c
            .iter()
            .filter(|c| c.outcome == Outcome::Fail)
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(failed, vec!["OOMPolicy=", "KillMode=", "TimeoutStopSec="]);
        let d = c.iter().find(|c| c.name == "Delegate=").unwrap();
        assert_eq!(d.outcome, Outcome::Ok);
    }
}
