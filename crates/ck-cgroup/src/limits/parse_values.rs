//! The limits' parsers: one clear line naming the problem and the fix for bad input.

use super::table::infinity;
use super::{Limit, Property};
use crate::error::{Error, Result};

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

/// A weight (`cpu.weight`, `io.weight`): 1 to 10000 (the kernel's default is 100).
pub fn parse_weight(s: &str) -> Result<u64> {
    match s.parse::<u64>() {
        Ok(w) if (1..=10_000).contains(&w) => Ok(w),
        Ok(w) => Err(
            Error::bad_input(format!("weight {w} is outside 1 to 10000"))
                .with_hint("a weight is a number from 1 to 10000; the default is 100"),
        ),
        Err(_) => Err(Error::bad_input(format!("invalid weight {s:?}"))
            .with_hint("a weight is a number from 1 to 10000; the default is 100")),
    }
}

/// `true` or `false` (`1`, `0`).
pub fn parse_bool(s: &str) -> Result<bool> {
    match s {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(Error::bad_input(format!("invalid switch {s:?}")).with_hint("say true or false")),
    }
}

/// `cpu.max`: at most `quota` microseconds of CPU time in each `period` microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuMax {
    /// Microseconds per period, or `max` (no ceiling).
    pub quota: Limit,
    /// The period in microseconds (the kernel's default, 100000, when not given).
    pub period: u64,
}

/// The kernel's default `cpu.max` period, in microseconds.
pub const CPU_PERIOD_DEFAULT: u64 = 100_000;

impl std::fmt::Display for CpuMax {
    /// The text of `cpu.max`: `$MAX $PERIOD`, as the kernel shows it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.quota {
            Limit::Max => write!(f, "max {}", self.period),
            Limit::Value(q) => write!(f, "{q} {}", self.period),
        }
    }
}

impl CpuMax {
    /// `CPUQuotaPerSecUSec=` (the quota per second of wall time: 500000 is `CPUQuota=50%`;
    /// `u64::MAX` for `max`) and `CPUQuotaPeriodUSec=`.
    pub fn properties(&self) -> Vec<(&'static str, Property)> {
        let per_sec = match self.quota {
            Limit::Max => u64::MAX,
            // The parser bounds the quota so this cannot overflow; saturate all the same.
            Limit::Value(q) => q.saturating_mul(1_000_000) / self.period.max(1),
        };
        vec![
            ("CPUQuotaPerSecUSec", Property::U64(per_sec)),
            ("CPUQuotaPeriodUSec", Property::U64(self.period)),
        ]
    }

    /// The share of one CPU, in percent, as systemd's `CPUQuota=` says it (`None` for `max`).
    pub fn percent(&self) -> Option<f64> {
        match self.quota {
            Limit::Max => None,
            Limit::Value(q) => Some(q as f64 * 100.0 / self.period.max(1) as f64),
        }
    }
}

/// `QUOTA[/PERIOD]` in microseconds, or `max[/PERIOD]`: the quota at least 1000 (1 ms), the
/// period 1000 to 1000000 (1 s; default 100000).
pub fn parse_cpu_max(s: &str) -> Result<CpuMax> {
    const HINT: &str = "say QUOTA[/PERIOD] in microseconds (50000/100000 is half a CPU, 200000 two CPUs at the default period of 100000) or max; the quota is at least 1000, the period 1000 to 1000000";
    let bad =
        |what: String| Error::bad_input(format!("invalid cpu max {s:?}: {what}")).with_hint(HINT);
    let (q, p) = match s.split_once('/') {
        Some((q, p)) => (q, Some(p)),
        None => (s, None),
    };
    let period = match p {
        None => CPU_PERIOD_DEFAULT,
        Some(p) => match p.parse::<u64>() {
            Ok(p) if (1_000..=1_000_000).contains(&p) => p,
            Ok(p) => return Err(bad(format!("the period {p} is outside 1000 to 1000000"))),
            Err(_) => return Err(bad(format!("the period {p:?} is not a number"))),
        },
    };
    let quota = match q {
        "max" => Limit::Max,
        q => match q.parse::<u64>() {
            Ok(q) if (1_000..=u64::MAX / 1_000_000).contains(&q) => Limit::Value(q),
            Ok(q) => {
                return Err(bad(format!(
                    "the quota {q} is outside 1000 to {}",
                    u64::MAX / 1_000_000
                )));
            }
            Err(_) => return Err(bad(format!("the quota {q:?} is not a number or max"))),
        },
    };
    Ok(CpuMax { quota, period })
}

/// The highest CPU number a list may name (systemd's `AllowedCPUs=` takes up to 8192 CPUs).
pub const MAX_CPU: u32 = 8191;

/// A set of CPUs (`cpuset.cpus`), as sorted, disjoint, non-adjacent ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(Vec<(u32, u32)>);

impl CpuList {
    /// The ranges, first to last CPU inclusive.
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.0
    }

    /// The mask systemd's `AllowedCPUs=` takes: bit N of byte N/8 for CPU N.
    pub fn mask(&self) -> Vec<u8> {
        let top = self.0.last().map_or(0, |r| r.1 as usize);
        let mut m = vec![0u8; top / 8 + 1];
        for &(a, b) in &self.0 {
            for c in a..=b {
                if let Some(byte) = m.get_mut(c as usize / 8) {
                    *byte |= 1 << (c % 8);
                }
            }
        }
        m
    }
}

impl std::fmt::Display for CpuList {
    /// As the kernel shows `cpuset.cpus`: `0-3,6`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, &(a, b)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
        }
        Ok(())
    }
}

/// A CPU list, `0-3,6` (cpuset(7)'s list format): numbers and ranges separated by commas, CPUs
/// 0 to [`MAX_CPU`]; normalised (sorted, merged).
pub fn parse_cpus(s: &str) -> Result<CpuList> {
    const HINT: &str = "say CPU numbers and ranges separated by commas, as 0-3,6 (see /sys/devices/system/cpu/online)";
    let bad =
        |what: String| Error::bad_input(format!("invalid cpu list {s:?}: {what}")).with_hint(HINT);
    let num = |t: &str| -> Result<u32> {
        match t.trim().parse::<u32>() {
            Ok(n) if n <= MAX_CPU => Ok(n),
            Ok(n) => Err(bad(format!("cpu {n} is above {MAX_CPU}"))),
            Err(_) => Err(bad(format!("{t:?} is not a cpu number"))),
        }
    };
    if s.trim().is_empty() {
        return Err(bad("it is empty".into()));
    }
    let mut ranges = Vec::new();
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(part)?;
                (n, n)
            }
        };
        if a > b {
            return Err(bad(format!("the range {a}-{b} runs backwards")));
        }
        ranges.push((a, b));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    Ok(CpuList(merged))
}

/// `io.max` on one block device: bytes per second and IO operations per second, read and write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoMax {
    /// The device's major number.
    pub major: u32,
    /// The device's minor number.
    pub minor: u32,
    /// The path given (systemd's properties take a path); `None` when `MAJ:MIN` was given.
    pub path: Option<String>,
    /// `rbps`: read bytes per second.
    pub rbps: Option<Limit>,
    /// `wbps`: written bytes per second.
    pub wbps: Option<Limit>,
    /// `riops`: read operations per second.
    pub riops: Option<Limit>,
    /// `wiops`: write operations per second.
    pub wiops: Option<Limit>,
}

impl IoMax {
    fn keys(&self) -> [(&'static str, Option<Limit>); 4] {
        [
            ("rbps", self.rbps),
            ("wbps", self.wbps),
            ("riops", self.riops),
            ("wiops", self.wiops),
        ]
    }

    /// The device as systemd's properties take it: the path given, or `/dev/block/MAJ:MIN`.
    pub fn device_path(&self) -> String {
        self.path
            .clone()
            .unwrap_or_else(|| format!("/dev/block/{}:{}", self.major, self.minor))
    }

    /// `IOReadBandwidthMax=`, `IOWriteBandwidthMax=`, `IOReadIOPSMax=`, `IOWriteIOPSMax=` of the
    /// keys given, each `[(device path, value)]` (`u64::MAX` for `max`).
    pub fn properties(&self) -> Vec<(&'static str, Property)> {
        let names = [
            "IOReadBandwidthMax",
            "IOWriteBandwidthMax",
            "IOReadIOPSMax",
            "IOWriteIOPSMax",
        ];
        names
            .into_iter()
            .zip(self.keys())
            .filter_map(|(name, (_, v))| {
                v.map(|v| {
                    (
                        name,
                        Property::Devices(vec![(self.device_path(), infinity(v))]),
                    )
                })
            })
            .collect()
    }

    /// Whether `io.max`'s text (one line per device, `MAJ:MIN rbps=.. wbps=.. riops=.. wiops=..`)
    /// has this device with every key given at its value.
    pub fn same(&self, current: &str) -> bool {
        let dev = format!("{}:{}", self.major, self.minor);
        let Some(line) = current
            .lines()
            .find(|l| l.split_whitespace().next() == Some(dev.as_str()))
        else {
            // No line: every key is max.
            return self
                .keys()
                .iter()
                .all(|(_, v)| matches!(v, None | Some(Limit::Max)));
        };
        self.keys().iter().all(|(k, v)| {
            let Some(want) = v else { return true };
            line.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .find(|(key, _)| key == k)
                .and_then(|(_, got)| crate::cgroup::parse::limit(got))
                == Some(*want)
        })
    }
}

impl std::fmt::Display for IoMax {
    /// The line written to `io.max`: `MAJ:MIN` and the keys given (`rbps=1048576 wiops=max`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)?;
        for (k, v) in self.keys() {
            match v {
                Some(Limit::Max) => write!(f, " {k}=max")?,
                Some(Limit::Value(n)) => write!(f, " {k}={n}")?,
                None => {}
            }
        }
        Ok(())
    }
}

const IO_MAX_HINT: &str = "say DEV:KEY=VALUE,... with DEV a block device (MAJ:MIN, or a path such as /dev/sda) and KEY rbps or wbps (bytes per second, K/M/G/T suffixes) or riops or wiops (operations per second), each value a number or max";

/// `DEV:rbps=..,wbps=..,riops=..,wiops=..` (at least one key), DEV a block device as `MAJ:MIN`
/// or a path resolved with `stat(2)` (it must be a block device).
pub fn parse_io_max(s: &str) -> Result<IoMax> {
    parse_io_max_with(s, |path| {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let meta = std::fs::metadata(path).map_err(|e| format!("{path:?}: {e}"))?;
        if !meta.file_type().is_block_device() {
            return Err(format!("{path:?} is not a block device"));
        }
        Ok((
            rustix::fs::major(meta.rdev()),
            rustix::fs::minor(meta.rdev()),
        ))
    })
}

/// [`parse_io_max`] with `resolve` turning a device path into its (major, minor) or saying why
/// it cannot (no I/O here: the fuzz targets pass a resolver that refuses).
pub fn parse_io_max_with(
    s: &str,
    resolve: impl Fn(&str) -> std::result::Result<(u32, u32), String>,
) -> Result<IoMax> {
    let bad = |what: String| {
        // One line whatever the resolver said (a device path may hold any byte).
        let what: String = what
            .chars()
            .flat_map(|c| {
                let e: Vec<char> = if c.is_control() {
                    c.escape_default().collect()
                } else {
                    vec![c]
                };
                e
            })
            .collect();
        Error::bad_input(format!("invalid io max {s:?}: {what}")).with_hint(IO_MAX_HINT)
    };
    let eq = s.find('=').ok_or_else(|| bad("no KEY=VALUE".into()))?;
    let colon = s[..eq]
        .rfind(':')
        .ok_or_else(|| bad("no DEV: before the keys".into()))?;
    let (dev, keys) = (&s[..colon], &s[colon + 1..]);
    let number = |t: &str| {
        t.parse::<u32>()
            .ok()
            .filter(|_| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
    };
    let (major, minor, path) = match dev.split_once(':') {
        Some((a, b)) if !dev.starts_with('/') => match (number(a), number(b)) {
            (Some(a), Some(b)) => (a, b, None),
            _ => {
                return Err(bad(format!(
                    "the device {dev:?} is neither MAJ:MIN nor a path"
                )));
            }
        },
        _ if dev.starts_with('/') => {
            let (a, b) = resolve(dev).map_err(bad)?;
            (a, b, Some(dev.to_string()))
        }
        _ => {
            return Err(bad(format!(
                "the device {dev:?} is neither MAJ:MIN nor a path"
            )));
        }
    };
    let mut m = IoMax {
        major,
        minor,
        path,
        rbps: None,
        wbps: None,
        riops: None,
        wiops: None,
    };
    for kv in keys.split(',') {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad(format!("{kv:?} is not KEY=VALUE")))?;
        let value = match k {
            "rbps" | "wbps" => parse_size(v),
            "riops" | "wiops" => parse_count(v),
            _ => return Err(bad(format!("unknown key {k:?}"))),
        }
        .map_err(|e| bad(format!("{k}: {}", e.message())))?;
        let slot = match k {
            "rbps" => &mut m.rbps,
            "wbps" => &mut m.wbps,
            "riops" => &mut m.riops,
            _ => &mut m.wiops,
        };
        if slot.replace(value).is_some() {
            return Err(bad(format!("{k} is given twice")));
        }
    }
    Ok(m)
}
