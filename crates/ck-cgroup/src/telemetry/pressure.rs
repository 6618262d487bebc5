//! PSI triggers: the kernel wakes `watch` when a module has stalled for a share of a window.
//!
//! A module's `cpu.pressure`, `memory.pressure` and `io.pressure` (cgroup v2, kernel 4.20 and
//! later, with PSI on) take a trigger when written: `<some|full> <stall µs> <window µs>`, for
//! example `some 150000 1000000` (Documentation/accounting/psi.rst, "Monitoring for pressure
//! thresholds"). From then on the open file descriptor reports `POLLPRI` to `poll(2)` whenever
//! the tasks of the cgroup stalled on that resource for at least the stall time within one
//! window, at most once per window; the trigger lives as long as the descriptor. So `watch`
//! sleeps in `poll(2)` until the kernel reports: no timer and no sampling.
//!
//! The kernel takes windows of 500 ms to 10 s and a stall time from 1 µs to the window; a user
//! without `CAP_SYS_RESOURCE` only windows that are whole multiples of 2 s (Linux 6.5 and later;
//! `EINVAL` otherwise). `EOPNOTSUPP` says PSI is off (`psi=0`, or the kernel's
//! `CONFIG_PSI_DEFAULT_DISABLED` without `psi=1`); a cgroup whose `cgroup.pressure` is 0 has no
//! pressure files at all (`ENOENT`).

use std::fmt;
use std::os::unix::io::OwnedFd;
use std::str::FromStr;
use std::time::Duration;

use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::cgroup::CgroupDir;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::mutation::{self, Control};

/// The shortest window the kernel takes (`WINDOW_MIN_US`).
pub const WINDOW_MIN: Duration = Duration::from_millis(500);
/// The longest window the kernel takes (`WINDOW_MAX_US`).
pub const WINDOW_MAX: Duration = Duration::from_secs(10);

/// The resource a trigger is on: which `<res>.pressure` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PsiResource {
    /// `memory.pressure`.
    Memory,
    /// `cpu.pressure`.
    Cpu,
    /// `io.pressure`.
    Io,
}

impl PsiResource {
    /// `memory`, `cpu` or `io`.
    pub fn as_str(self) -> &'static str {
        match self {
            PsiResource::Memory => "memory",
            PsiResource::Cpu => "cpu",
            PsiResource::Io => "io",
        }
    }

    /// The cgroup file: `memory.pressure`, `cpu.pressure` or `io.pressure`.
    pub fn file(self) -> &'static str {
        match self {
            PsiResource::Memory => "memory.pressure",
            PsiResource::Cpu => "cpu.pressure",
            PsiResource::Io => "io.pressure",
        }
    }
}

/// Which stall a trigger counts: `some` (at least one task stalled) or `full` (every non-idle
/// task stalled at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PsiKind {
    /// `some`: at least one task of the cgroup waited for the resource.
    Some,
    /// `full`: all of its non-idle tasks waited at once.
    Full,
}

impl PsiKind {
    /// `some` or `full`.
    pub fn as_str(self) -> &'static str {
        match self {
            PsiKind::Some => "some",
            PsiKind::Full => "full",
        }
    }
}

/// One PSI trigger, as `watch --pressure` takes it: `RES:KIND:THRESHOLD/WINDOW`, e.g.
/// `cpu:some:100ms/1s` (wake when the module's tasks waited for a CPU 100 ms in total within any
/// 1 s window) or `memory:full:50ms/2s`.
///
/// RES is `memory`, `cpu` or `io` (the kernel file `<RES>.pressure` of each module), KIND `some`
/// or `full`, THRESHOLD and WINDOW whole numbers with a unit `us`, `ms` or `s`. Parsing checks
/// what the kernel would refuse for every user: a window of 500 ms to 10 s and a threshold above
/// 0 and not above the window. What is written to the file is [`PressureTrigger::trigger_text`],
/// the kernel's `<some|full> <threshold µs> <window µs>` (Documentation/accounting/psi.rst).
///
/// ```
/// use ck_cgroup::telemetry::pressure::PressureTrigger;
/// let t: PressureTrigger = "cpu:some:100ms/1s".parse().unwrap();
/// assert_eq!(t.trigger_text(), "some 100000 1000000");
/// assert_eq!(t.to_string(), "cpu:some:100ms/1s");
/// assert!("cpu:some:2s/1s".parse::<PressureTrigger>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PressureTrigger {
    resource: PsiResource,
    kind: PsiKind,
    threshold_us: u64,
    window_us: u64,
    spec: String,
}

impl PressureTrigger {
    /// The resource.
    pub fn resource(&self) -> PsiResource {
        self.resource
    }

    /// `some` or `full`.
    pub fn kind(&self) -> PsiKind {
        self.kind
    }

    /// The stall time that fires the trigger, microseconds.
    pub fn threshold_us(&self) -> u64 {
        self.threshold_us
    }

    /// The window the stall is counted in, microseconds.
    pub fn window_us(&self) -> u64 {
        self.window_us
    }

    /// What is written to the pressure file: `some 100000 1000000`.
    pub fn trigger_text(&self) -> String {
        format!(
            "{} {} {}",
            self.kind.as_str(),
            self.threshold_us,
            self.window_us
        )
    }

    /// Open `<rel>/<res>.pressure` beneath `dir` read-write and write the trigger. The returned
    /// descriptor reports `POLLPRI` when the trigger fires (and `POLLERR` once the cgroup is
    /// gone); closing it removes the trigger. The errno is the kernel's: `ENOENT` (no such file:
    /// PSI is not there for this cgroup, or the cgroup went), `EINVAL` (the trigger refused,
    /// e.g. a window that is not a multiple of 2 s without `CAP_SYS_RESOURCE`), `EOPNOTSUPP`
    /// (PSI off), `EACCES`.
    pub fn arm(&self, dir: &CgroupDir, rel: &str) -> std::result::Result<OwnedFd, Errno> {
        let fd = dir.open_beneath(
            &join(rel, self.resource.file()),
            OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC,
        )?;
        if mutation::active(Control::PressureNoTrigger) {
            // Mutation: the file is opened, but no trigger is written to it.
            return Ok(fd);
        }
        // The kernel reads the trigger as one string; the NUL ends it (psi.rst's example writes
        // strlen + 1 bytes).
        let text = format!("{}\0", self.trigger_text());
        let n = rustix::io::write(&fd, text.as_bytes())?;
        if n != text.len() {
            return Err(Errno::INVAL);
        }
        Ok(fd)
    }

    /// The error for a trigger the kernel refused on `path`: the file, the errno, and what to do.
    pub fn refused(&self, path: &std::path::Path, errno: Errno) -> Error {
        let e = Error::io(
            format_args!("set the PSI trigger {:?} ({self}) on", self.trigger_text()),
            path,
            errno,
        );
        let hint = match errno {
            Errno::INVAL => Some(
                "the kernel refused the trigger: without CAP_SYS_RESOURCE (not root) the window \
                 must be a whole multiple of 2 s (e.g. cpu:some:200ms/2s)",
            ),
            Errno::OPNOTSUPP => Some(
                "PSI is off in this kernel: boot with psi=1 (check that /proc/pressure exists)",
            ),
            Errno::ACCESS | Errno::PERM => Some(
                "the pressure file must be writable: run as root or as the owner of the \
                 delegated subtree",
            ),
            Errno::MFILE | Errno::NFILE => Some(
                "each module holds one descriptor per trigger: raise the limit on open files \
                 (LimitNOFILE=, ulimit -n) or watch fewer modules or triggers",
            ),
            _ => None,
        };
        match hint {
            Some(h) => e.with_hint(h),
            None => e,
        }
    }
}

impl fmt::Display for PressureTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

const EXAMPLE: &str = "e.g. cpu:some:100ms/1s or memory:full:50ms/2s";

impl FromStr for PressureTrigger {
    type Err = Error;

    fn from_str(s: &str) -> Result<PressureTrigger> {
        let bad = |what: String| {
            Error::bad_input(format!(
                "invalid pressure trigger {s:?}: {what}; say RES:KIND:THRESHOLD/WINDOW, {EXAMPLE}"
            ))
        };
        let mut parts = s.split(':');
        let (Some(res), Some(kind), Some(times), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("not three parts separated by ':'".into()));
        };
        let resource = match res {
            "memory" => PsiResource::Memory,
            "cpu" => PsiResource::Cpu,
            "io" => PsiResource::Io,
            _ => {
                return Err(bad(format!(
                    "unknown resource {res:?} (RES is memory, cpu or io)"
                )));
            }
        };
        let kind = match kind {
            "some" => PsiKind::Some,
            "full" => PsiKind::Full,
            _ => return Err(bad(format!("unknown kind {kind:?} (KIND is some or full)"))),
        };
        let Some((threshold, window)) = times.split_once('/') else {
            return Err(bad(format!("no '/' in {times:?} (THRESHOLD/WINDOW)")));
        };
        let threshold_us = micros(threshold).map_err(|e| bad(format!("threshold {e}")))?;
        let window_us = micros(window).map_err(|e| bad(format!("window {e}")))?;
        let (min, max) = (WINDOW_MIN.as_micros() as u64, WINDOW_MAX.as_micros() as u64);
        if !(min..=max).contains(&window_us) {
            return Err(bad(format!(
                "window {window} is outside the kernel's 500ms..10s"
            )));
        }
        if threshold_us > window_us {
            return Err(bad(format!(
                "threshold {threshold} is longer than the window {window}"
            )));
        }
        Ok(PressureTrigger {
            resource,
            kind,
            threshold_us,
            window_us,
            spec: s.to_string(),
        })
    }
}

/// A duration with its unit (`us`, `ms`, `s`), whole, above 0, in microseconds.
fn micros(s: &str) -> std::result::Result<u64, String> {
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(i);
    let per = match unit {
        "us" => 1,
        "ms" => 1_000,
        "s" => 1_000_000,
        "" => return Err(format!("{s:?} has no unit (us, ms or s)")),
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (us, ms or s)")),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number with a unit (us, ms or s)"))?;
    let v = n
        .checked_mul(per)
        .ok_or_else(|| format!("{s:?} is too long"))?;
    if v == 0 {
        return Err(format!("{s:?} is zero"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> PressureTrigger {
        s.parse().unwrap()
    }

    #[test]
    fn specs_become_the_kernels_trigger_text() {
        assert_eq!(t("cpu:some:100ms/1s").trigger_text(), "some 100000 1000000");
        assert_eq!(
            t("memory:full:50ms/2s").trigger_text(),
            "full 50000 2000000"
        );
        assert_eq!(t("io:some:1us/500ms").trigger_text(), "some 1 500000");
        assert_eq!(
            t("io:full:10s/10s").trigger_text(),
            "full 10000000 10000000"
        );
        let m = t("memory:full:50ms/2s");
        assert_eq!(m.resource().file(), "memory.pressure");
        assert_eq!(m.kind(), PsiKind::Full);
        assert_eq!((m.threshold_us(), m.window_us()), (50_000, 2_000_000));
        assert_eq!(m.to_string(), "memory:full:50ms/2s");
    }

    #[test]
    fn bad_specs_are_refused_with_the_problem_and_an_example() {
        for (bad, says) in [
            ("disk:some:100ms/1s", "unknown resource \"disk\""),
            ("cpu:most:100ms/1s", "unknown kind \"most\""),
            ("cpu:some:100ms", "no '/'"),
            ("cpu:some", "three parts"),
            ("cpu:some:1ms/1s:x", "three parts"),
            ("cpu:some:2s/1s", "longer than the window"),
            ("cpu:some:100ms/400ms", "outside the kernel's 500ms..10s"),
            ("cpu:some:100ms/11s", "outside the kernel's 500ms..10s"),
            ("cpu:some:0ms/1s", "is zero"),
            ("cpu:some:100/1s", "no unit"),
            ("cpu:some:100ms/1h", "unknown unit \"h\""),
            ("cpu:some:1.5ms/1s", "unknown unit \".5ms\""),
            ("cpu:some:-1ms/1s", "unknown unit \"-1ms\""),
            ("cpu:some:ms/1s", "not a whole number"),
            ("cpu:some:99999999999999999999s/1s", "not a whole number"),
            ("cpu:some:18446744073709551615s/1s", "too long"),
            ("", "three parts"),
        ] {
            let e = bad.parse::<PressureTrigger>().unwrap_err();
            let m = e.to_string();
            assert!(m.contains(says), "{bad}: {m}");
            assert!(m.contains("e.g. cpu:some:100ms/1s"), "{bad}: {m}");
            assert!(!m.contains('\n'), "{bad}: one line: {m}");
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
    }
}
