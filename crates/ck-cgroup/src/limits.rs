//! Per-module limits: `memory.high`, `memory.max`, `memory.swap.max`, `pids.max`, `cpu.weight`,
//! `memory.oom.group`, written to the module's leaf only (never to the service's own cgroup).
//!
//! Every limit's controller must be enabled for the modules (`subc-modules/cgroup.subtree_control`)
//! before anything is written: a missing controller is bad input (exit 2) that names the
//! controller and the fix, and nothing is half-applied, unless `best_effort` is asked for.
//! Kernel reference: <https://docs.kernel.org/admin-guide/cgroup-v2.html> ("Memory", "PID", "CPU").

use serde::Serialize;

use crate::cgroup::parse::Limit;
use crate::error::{Error, Result};
use crate::id::ModuleId;

/// Limits to apply; `None` leaves a limit as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// `memory.high`: throttle and reclaim above this.
    pub memory_high: Option<Limit>,
    /// `memory.max`: the OOM killer acts above this.
    pub memory_max: Option<Limit>,
    /// `memory.swap.max`.
    pub memory_swap_max: Option<Limit>,
    /// `pids.max`.
    pub pids_max: Option<Limit>,
    /// `cpu.weight` (1 to 10000).
    pub cpu_weight: Option<u64>,
    /// `memory.oom.group`: an OOM kill takes the module's whole tree.
    pub oom_group: Option<bool>,
}

/// A write that passed the check: the file and the value.
pub type Write = (&'static str, String);

/// One limit written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Applied {
    /// The file.
    pub file: std::borrow::Cow<'static, str>,
    /// The value written.
    pub value: String,
}

/// One limit not written under `--best-effort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Skipped {
    /// The file.
    pub file: std::borrow::Cow<'static, str>,
    /// The controller it needs.
    pub controller: std::borrow::Cow<'static, str>,
    /// Why.
    pub reason: String,
}

/// What a limit change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[must_use]
#[non_exhaustive]
pub struct LimitReport {
    /// The module.
    pub module: ModuleId,
    /// Written.
    pub applied: Vec<Applied>,
    /// Not written (only with best effort).
    pub skipped: Vec<Skipped>,
}

impl Limits {
    /// The writes these limits make: (file, controller, value), in a fixed order.
    pub fn writes(&self) -> Vec<(&'static str, &'static str, String)> {
        let lim = |l: Limit| match l {
            Limit::Max => "max".to_string(),
            Limit::Value(v) => v.to_string(),
        };
        let mut w = Vec::new();
        if let Some(l) = self.memory_high {
            w.push(("memory.high", "memory", lim(l)));
        }
        if let Some(l) = self.memory_max {
            w.push(("memory.max", "memory", lim(l)));
        }
        if let Some(l) = self.memory_swap_max {
            w.push(("memory.swap.max", "memory", lim(l)));
        }
        if let Some(l) = self.pids_max {
            w.push(("pids.max", "pids", lim(l)));
        }
        if let Some(v) = self.cpu_weight {
            w.push(("cpu.weight", "cpu", v.to_string()));
        }
        if let Some(g) = self.oom_group {
            w.push(("memory.oom.group", "memory", u8::from(g).to_string()));
        }
        w
    }

    /// No limit asked for.
    pub fn is_empty(&self) -> bool {
        self.writes().is_empty()
    }
}

/// `512K`, `100M`, `2G`, `1T` (powers of 1024), a byte count, or `max`.
pub fn parse_size(s: &str) -> Result<Limit> {
    let bad = || {
        Error::bad_input(format!("invalid size {s:?}"))
            .with_hint("a size is a number of bytes with an optional K, M, G or T suffix, or max")
    };
    if s == "max" {
        return Ok(Limit::Max);
    }
    let (num, mul) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(bad()),
            };
            (&s[..i], m)
        }
        _ => (s, 1),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_mul(mul).map(Limit::Value).ok_or_else(bad)
}

/// A count (`pids.max`) or `max`.
pub fn parse_count(s: &str) -> Result<Limit> {
    if s == "max" {
        return Ok(Limit::Max);
    }
    s.parse().map(Limit::Value).map_err(|_| {
        Error::bad_input(format!("invalid count {s:?}")).with_hint("a count is a number, or max")
    })
}

/// What a module made now gets: `asked` (the flags over the policy, see
/// [`crate::policy::merge`]) and, where `enabled` (the controllers in
/// `subc-modules/cgroup.subtree_control`) has `memory` and `asked` says nothing of
/// `memory.oom.group`, `memory.oom.group` 1, so that an OOM kill takes the module's whole tree
/// and nothing else. Without the memory controller nothing is added: nothing is written for it
/// and nothing can fail for it. `--no-oom-group` or the policy's `oom_group = false` is
/// `Some(false)` in `asked` and is kept. Applied once, when the module is made
/// ([`Root::create_module`](crate::Root::create_module)); a module that exists keeps what it has.
pub fn creation_limits(enabled: &[String], asked: &Limits) -> Limits {
    let mut limits = *asked;
    // Mutation: no default; a module made without the flag keeps the kernel's 0.
    if limits.oom_group.is_none()
        && enabled.iter().any(|c| c == "memory")
        && !cfg!(ck_mutation = "no-oom-group-default")
    {
        limits.oom_group = Some(true);
    }
    limits
}

/// Sort `limits`' writes by whether their controller is in `enabled` (the controllers of the
/// modules of the root at `root`): the writes that may go ahead, and under `best_effort` the
/// ones skipped. Without `best_effort` a missing controller is bad input (exit 2) naming the
/// controller and the fix.
pub(crate) fn sort_writes(
    enabled: &[String],
    root: &std::path::Path,
    limits: &Limits,
    best_effort: bool,
) -> Result<(Vec<Write>, Vec<Skipped>)> {
    let mut ok = Vec::new();
    let mut skipped = Vec::new();
    for (file, controller, value) in limits.writes() {
        // Mutation: skip the check, so a missing controller is found by a failed write.
        if enabled.iter().any(|c| c == controller) || cfg!(ck_mutation = "limits-unchecked") {
            ok.push((file, value));
            continue;
        }
        let reason = format!(
            "the {controller} controller is not enabled for the modules in {}",
            root.display()
        );
        if !best_effort {
            return Err(Error::bad_input(format!("{file} needs {reason}"))
                .with_hint(
                    "delegate it to the service (Delegate=memory pids cpu io in the unit) and run `ck-cgroup init`; or pass --best-effort to apply the other limits",
                )
                .with_kind(crate::error::ErrorKind::ControllerMissing));
        }
        skipped.push(Skipped {
            file: file.into(),
            controller: controller.into(),
            reason,
        });
    }
    Ok((ok, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("max").unwrap(), Limit::Max);
        assert_eq!(parse_size("512").unwrap(), Limit::Value(512));
        assert_eq!(parse_size("4K").unwrap(), Limit::Value(4096));
        assert_eq!(parse_size("100M").unwrap(), Limit::Value(100 << 20));
        assert_eq!(parse_size("2g").unwrap(), Limit::Value(2 << 30));
        assert_eq!(parse_size("1T").unwrap(), Limit::Value(1 << 40));
        for bad in ["", "M", "1.5G", "10X", "-1", "99999999999999999999T"] {
            assert_eq!(parse_size(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
        assert_eq!(parse_count("64").unwrap(), Limit::Value(64));
        assert!(parse_count("6x").is_err());
    }

    #[test]
    fn writes_in_order() {
        let l = Limits {
            memory_max: Some(Limit::Value(1 << 20)),
            pids_max: Some(Limit::Max),
            oom_group: Some(false),
            ..Limits::default()
        };
        assert_eq!(
            l.writes(),
            vec![
                ("memory.max", "memory", "1048576".to_string()),
                ("pids.max", "pids", "max".to_string()),
                ("memory.oom.group", "memory", "0".to_string()),
            ]
        );
        assert!(Limits::default().is_empty());
    }

    fn on(controllers: &[&str]) -> Vec<String> {
        controllers.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn a_module_made_where_memory_is_on_gets_oom_group_1() {
        let all = on(&["cpu", "io", "memory", "pids"]);
        // No limits (create, exec and run without flags, Root::spawn, place).
        assert_eq!(
            creation_limits(&all, &Limits::default()).writes(),
            vec![("memory.oom.group", "memory", "1".to_string())]
        );
        // Limits without an oom_group: the default comes last, after them.
        let asked = Limits {
            memory_max: Some(Limit::Value(32 << 20)),
            ..Limits::default()
        };
        assert_eq!(
            creation_limits(&all, &asked).writes(),
            vec![
                ("memory.max", "memory", "33554432".to_string()),
                ("memory.oom.group", "memory", "1".to_string()),
            ]
        );
        // Memory alone is enough.
        assert_eq!(
            creation_limits(&on(&["memory"]), &Limits::default()).oom_group,
            Some(true)
        );
    }

    #[test]
    fn no_oom_group_and_the_policy_win_over_the_default() {
        let all = on(&["cpu", "io", "memory", "pids"]);
        for asked in [Some(false), Some(true)] {
            let l = Limits {
                oom_group: asked,
                ..Limits::default()
            };
            assert_eq!(creation_limits(&all, &l), l, "{asked:?}");
        }
        // The policy's oom_group = false, merged under flags that say nothing of it.
        let policy = Limits {
            oom_group: Some(false),
            ..Limits::default()
        };
        let asked = crate::policy::merge(&Limits::default(), &policy);
        assert_eq!(
            creation_limits(&all, &asked).writes(),
            vec![("memory.oom.group", "memory", "0".to_string())]
        );
    }

    #[test]
    fn without_the_memory_controller_nothing_is_added() {
        for enabled in [on(&[]), on(&["pids", "cpu", "io"])] {
            assert_eq!(
                creation_limits(&enabled, &Limits::default()),
                Limits::default(),
                "{enabled:?}"
            );
            // Nothing to write, so nothing to check and nothing that can fail.
            let (ok, skipped) = sort_writes(
                &enabled,
                std::path::Path::new("/r"),
                &Limits::default(),
                false,
            )
            .unwrap();
            assert!(ok.is_empty() && skipped.is_empty());
        }
    }
}
