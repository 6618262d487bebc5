//! The checks, judged from [`Facts`] alone: pure functions, one per check, no I/O. The unit's
//! checks are in `unit`.

use super::gather::{
    Bus, Facts, Failure, MODULES_SLICE, RootFacts, ScopeFacts, ServiceRoot, WANTED_CONTROLLERS,
    parse,
};
use super::{Check, Outcome};
use unit::{systemd_unavailable, unit_checks};

fn check(name: &str, outcome: Outcome, detail: String, fix: Option<String>) -> Check {
    Check {
        name: name.to_string(),
        outcome,
        detail,
        fix,
    }
}

/// Every check, in the order `doctor` prints them.
pub fn judge(f: &Facts) -> Vec<Check> {
    let mountinfo = f.mountinfo.as_deref().unwrap_or_default();
    let v1 = hybrid(mountinfo);
    let mut checks = vec![cgroup2_mounted(mountinfo)];
    checks.extend(nsdelegate_check(mountinfo));
    checks.extend(favordynmods_check(mountinfo, &f.kernel_release));
    if let Some(s) = &f.scopes {
        checks.push(systemd_backend(s));
        checks.extend(scope_controllers(s, v1));
    }
    if let Some(r) = &f.root {
        checks.push(service_root(r));
        if let ServiceRoot::Opened(r) = r {
            checks.push(controllers_delegated(r, v1));
            checks.push(controllers_enabled(r));
            checks.push(cgroup_kill(r));
            checks.push(cgroup_freeze(r));
            checks.push(memory_peak(r));
        }
    }
    checks.push(clone_into_cgroup(&f.kernel_release));
    let memory = match &f.root {
        Some(ServiceRoot::Opened(r)) => r
            .controllers
            .as_ref()
            .map(|c| c.iter().any(|c| c == "memory")),
        _ => None,
    };
    checks.push(cold_memory(&f.cold, memory));
    match &f.unit {
        Err(u) => checks.push(systemd_unavailable(u)),
        Ok(u) => checks.extend(unit_checks(u, f.scopes.is_some())),
    }
    if let Some(o) = &f.oomd {
        checks.extend(super::oomd_checks::judge(o));
    }
    checks
}

/// `cold memory`: whether `status` can tell each module's cold memory (the multi-gen LRU's
/// `lru_gen`: the kernel's, switched on, debugfs, root, the memory controller), a warning naming
/// each thing missing and its fix otherwise (the figure is then unknown, never 0).
/// `memory`: whether the root's cgroup has the memory controller (`None`: not known).
pub fn cold_memory(c: &super::gather::ColdFacts, memory: Option<bool>) -> Check {
    use crate::telemetry::cold::{LRU_GEN, LRU_GEN_ENABLED, lru_gen_on};
    let mut lacks = Vec::new();
    let mut fixes = Vec::new();
    match c.enabled.as_deref() {
        None => {
            lacks.push(format!(
                "no multi-gen LRU in this kernel (no {LRU_GEN_ENABLED}: CONFIG_LRU_GEN is not set)"
            ));
            fixes.push(
                "a kernel built with CONFIG_LRU_GEN (6.1 or newer; Debian 12's is)".to_string(),
            );
        }
        Some(t) if !lru_gen_on(t) => {
            lacks.push(format!(
                "the multi-gen LRU is off ({LRU_GEN_ENABLED} is {})",
                t.trim()
            ));
            fixes.push(format!("`echo y > {LRU_GEN_ENABLED}` (now), lru_gen.enabled=y on the kernel command line (every boot)"));
        }
        Some(_) => {}
    }
    if !c.debugfs {
        lacks.push("debugfs is not mounted on /sys/kernel/debug".into());
        fixes.push(
            "`mount -t debugfs none /sys/kernel/debug` (systemd mounts it: sys-kernel-debug.mount)"
                .into(),
        );
    }
    if !c.is_root {
        lacks.push(format!("not root ({LRU_GEN} is root's)"));
        fixes.push("run status as root (the system metrics timer does)".into());
    }
    if memory == Some(false) {
        lacks.push("no memory controller for the modules (lru_gen lists memory cgroups)".into());
        fixes.push("enable the memory controller (see the controllers checks above)".into());
    }
    if lacks.is_empty()
        && let Err(e) = &c.lru_gen
    {
        lacks.push(format!("{LRU_GEN} cannot be read: {e}"));
    }
    if lacks.is_empty() {
        return check(
            "cold memory (multi-gen LRU)",
            Outcome::Ok,
            format!(
                "{LRU_GEN} is readable: status tells each module's cold memory (status --age-cold ages; the metrics timer's runs pass it)"
            ),
            None,
        );
    }
    check(
        "cold memory (multi-gen LRU)",
        Outcome::Warn,
        format!("status shows cold memory as unknown: {}", lacks.join("; ")),
        (!fixes.is_empty()).then(|| fixes.join("; ")),
    )
}

/// cgroup v1 hierarchies are mounted too.
fn hybrid(mountinfo: &str) -> bool {
    parse::mountinfo(mountinfo)
        .iter()
        .any(|m| m.fs_type == "cgroup")
}

/// `cgroup2 mounted`: the first cgroup2 mount, and whether v1 hierarchies are mounted beside it.
/// An unreadable mountinfo (`""` here) has no cgroup2 mount.
fn cgroup2_mounted(mountinfo: &str) -> Check {
    let name = "cgroup2 mounted";
    match parse::cgroup2_mounts(mountinfo).first() {
        Some(m) => check(
            name,
            Outcome::Ok,
            format!(
                "at {} ({})",
                m.mount_point.display(),
                if hybrid(mountinfo) {
                    "hybrid: cgroup v1 hierarchies are mounted too and may hold controllers"
                } else {
                    "unified"
                }
            ),
            None,
        ),
        None => check(
            name,
            Outcome::Fail,
            "no cgroup2 filesystem in /proc/self/mountinfo".into(),
            Some("boot with systemd.unified_cgroup_hierarchy=1 (or mount -t cgroup2 none /sys/fs/cgroup/unified)".into()),
        ),
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

/// `cgroup2 favordynmods`: without it (kernel 6.0 and later have the option), every move of a
/// process into a cgroup through `cgroup.procs` waits for an RCU grace period; `exec` and `place`
/// move that way (`spawn` and `run` place with `CLONE_INTO_CGROUP` and do not). `None` without a
/// cgroup2 mount or on a kernel before 6.0 (or one whose release cannot be read).
pub fn favordynmods_check(mountinfo: &str, release: &str) -> Option<Check> {
    if !kernel_at_least(release, 6, 0) {
        return None;
    }
    let on = parse::cgroup2_has_option(mountinfo, "favordynmods")?;
    Some(if on {
        check(
            "cgroup2 favordynmods",
            Outcome::Ok,
            "cgroup2 is mounted with favordynmods: moving a process into a module does not wait for an RCU grace period".into(),
            None,
        )
    } else {
        check(
            "cgroup2 favordynmods",
            Outcome::Warn,
            "cgroup2 is mounted without favordynmods: each exec or place into a module waits for an RCU grace period in its cgroup.procs write (spawn and run place with CLONE_INTO_CGROUP and do not; docs/performance.md)".into(),
            Some("`mount -o remount,<the mount's options>,favordynmods <cgroup2 mount point>` (systemd's: nsdelegate,memory_recursiveprot) from a oneshot unit before the service; it makes fork and exit slower host-wide (docs/packaging.md)".into()),
        )
    })
}

/// `systemd backend`: the manager answers, or why not.
fn systemd_backend(s: &ScopeFacts) -> Check {
    match &s.manager {
        Err(e) => check(
            "systemd backend",
            Outcome::Fail,
            e.error.clone(),
            e.hint.clone(),
        ),
        Ok(m) => check(
            "systemd backend",
            Outcome::Ok,
            format!(
                "the {} manager answers on {}; modules are scopes in {MODULES_SLICE}",
                if s.bus == Bus::User { "user" } else { "system" },
                m.via,
            ),
            None,
        ),
    }
}

/// `controllers for module scopes`: those the manager can give module scopes. A user manager gets
/// no io from systemd 252 (user@.service delegates cpu memory pids): without memory or pids the
/// backend fails, without the others it only warns. `None` when the manager did not answer.
fn scope_controllers(s: &ScopeFacts, v1: bool) -> Option<Check> {
    let m = s.manager.as_ref().ok()?;
    Some(controllers_check(
        "controllers for module scopes",
        m.controllers.as_deref(),
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
    ))
}

/// `service root`: found, a cgroup2 directory, writable by this user.
fn service_root(r: &ServiceRoot) -> Check {
    let failed = |e: &Failure, hint: Option<&str>| {
        check(
            "service root",
            Outcome::Fail,
            e.error.clone(),
            e.hint.as_deref().or(hint).map(str::to_string),
        )
    };
    match r {
        ServiceRoot::Undiscovered(e) => failed(e, Some("pass --root with the service's cgroup")),
        ServiceRoot::Unopenable(e) => failed(e, None),
        ServiceRoot::Opened(r) => check(
            "service root",
            if r.writable { Outcome::Ok } else { Outcome::Fail },
            format!(
                "{} is a cgroup2 directory{}",
                r.path.display(),
                if r.writable { ", writable by this user" } else { ", NOT writable by this user" }
            ),
            (!r.writable).then(|| {
                "delegate the service's cgroup to its user: Delegate=memory pids cpu io in the unit (systemctl edit ck-subc.service)".to_string()
            }),
        ),
    }
}

/// `controllers delegated`: the root's `cgroup.controllers` has every controller the helper uses.
fn controllers_delegated(r: &RootFacts, v1: bool) -> Check {
    controllers_check(
        "controllers delegated",
        r.controllers.as_deref(),
        |_| Outcome::Fail,
        if v1 {
            "this hybrid host keeps those controllers in cgroup v1: boot with systemd.unified_cgroup_hierarchy=1 (and cgroup_no_v1=all), then add Delegate=memory pids cpu io"
        } else {
            "add a drop-in (systemctl edit ck-subc.service):\n[Service]\nDelegate=memory pids cpu io"
        },
    )
}

/// The controllers the helper uses, against those `available`: ok when none is missing, else
/// `outcome(missing)` with `fix`. `available` is `None` when `cgroup.controllers` could not be
/// read: a failure that says so, not a list of "missing" controllers (absent is not none).
fn controllers_check(
    name: &str,
    available: Option<&[String]>,
    outcome: impl Fn(&[&str]) -> Outcome,
    fix: &str,
) -> Check {
    let Some(available) = available else {
        return check(
            name,
            Outcome::Fail,
            "cgroup.controllers could not be read: which controllers are available is unknown"
                .into(),
            Some("run doctor as the service's user, or as root".to_string()),
        );
    };
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

/// `controllers enabled for the modules`: `subc-modules/` exists and every wanted controller the
/// root has is in its `cgroup.subtree_control`; a warning (`init` fixes it) otherwise. A fact that
/// could not be read is a warning that says so, never "does not exist" or "nothing enabled".
fn controllers_enabled(r: &RootFacts) -> Check {
    const NAME: &str = "controllers enabled for the modules";
    let unknown = |what: &str| {
        check(
            NAME,
            Outcome::Warn,
            format!(
                "{what} could not be read: whether the modules get their controllers is unknown"
            ),
            Some("run doctor as the service's user, or as root".to_string()),
        )
    };
    let layout = match r.layout {
        Some(l) => l,
        None => return unknown("subc-modules/"),
    };
    let init =
        || Some("run `ck-cgroup init` (the daemon does, before its first spawn)".to_string());
    if !layout {
        return check(
            NAME,
            Outcome::Warn,
            "subc-modules/ does not exist yet".into(),
            init(),
        );
    }
    let (Some(available), Some(enabled)) = (r.controllers.as_deref(), r.enabled.as_deref()) else {
        return unknown(if r.controllers.is_none() {
            "cgroup.controllers"
        } else {
            "subc-modules/cgroup.subtree_control"
        });
    };
    let not_enabled: Vec<&str> = WANTED_CONTROLLERS
        .iter()
        .copied()
        .filter(|c| available.iter().any(|a| a == c) && !enabled.iter().any(|e| e == c))
        .collect();
    if not_enabled.is_empty() {
        let on = if enabled.is_empty() {
            "-".to_string()
        } else {
            enabled.join(" ")
        };
        return check(
            NAME,
            Outcome::Ok,
            format!("subc-modules/cgroup.subtree_control: {on}"),
            None,
        );
    }
    check(
        NAME,
        Outcome::Warn,
        format!("available but not enabled: {}", not_enabled.join(" ")),
        init(),
    )
}

/// `kernel: <file>`: a cgroup file that a kill method needs, with the version that brought it.
fn kernel_file(file: &str, there: bool, version: &str, what: &str, fallback: &str) -> Check {
    check(
        &format!("kernel: {file}"),
        if there { Outcome::Ok } else { Outcome::Warn },
        if there {
            format!("present ({what})")
        } else {
            format!("absent (kernel before {version}): {fallback}")
        },
        (!there).then(|| format!("a kernel {version} or newer")),
    )
}

/// `kernel: cgroup.kill`.
fn cgroup_kill(r: &RootFacts) -> Check {
    kernel_file(
        "cgroup.kill",
        r.cgroup_kill,
        "5.14",
        "kill --method cgroup-kill",
        "kill falls through to the freezer",
    )
}

/// `kernel: cgroup.freeze`.
fn cgroup_freeze(r: &RootFacts) -> Check {
    kernel_file(
        "cgroup.freeze",
        r.cgroup_freeze,
        "5.2",
        "kill --method freeze",
        "kill falls through to per-process SIGKILL",
    )
}

/// `kernel: memory.peak`: a warning without a fix when absent (`status` shows the peak unknown).
fn memory_peak(r: &RootFacts) -> Check {
    let memory = r
        .controllers
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|c| c == "memory");
    check(
        "kernel: memory.peak",
        if r.memory_peak {
            Outcome::Ok
        } else {
            Outcome::Warn
        },
        if r.memory_peak {
            "present".into()
        } else if !memory {
            "not checked: no memory controller".into()
        } else {
            "absent (kernel before 5.19): status shows the peak as unknown".into()
        },
        None,
    )
}

fn kernel_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    let (a, b) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

/// `kernel: CLONE_INTO_CGROUP`: 5.7 or newer, else a warning (spawn has a fall-back).
fn clone_into_cgroup(release: &str) -> Check {
    let clone3 = kernel_at_least(release, 5, 7);
    check(
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
    )
}

mod unit;

#[cfg(test)]
mod tests;
