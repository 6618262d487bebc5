//! The policy file: default limits for every module and per-module overrides, in TOML.
//!
//! ```toml
//! [defaults]
//! memory_high = "2G"
//! memory_max = "4G"
//! pids_max = 512
//! memory_report = "3G"      # watch reports above this; never kills
//!
//! [module.aft]
//! memory_max = "8G"
//! ```
//!
//! Keys: the key of each row of [`LIMITS`] (`memory_high`, `memory_max`, `memory_swap_max`,
//! `memory_low`, `memory_min`: sizes, a number of bytes, or a string with K/M/G/T, or `"max"`;
//! `pids_max`: a number or `"max"`; `cpu_weight`, `io_weight`: 1 to 10000; `cpu_max`:
//! `"QUOTA[/PERIOD]"`; `cpus`: `"0-3"`; `io_max`: `"8:0:rbps=10M"`; `oom_group`: true/false),
//! each parsed by its row's parser, `memory_report` (a size) and `oomd` (the module's
//! systemd-oomd preference: `"avoid"`, `"omit"` or `"none"`). The top-level key `oomd_daemon`
//! (before the tables; the same values) is `daemon/`'s preference for `init`. An unknown key, a bad value or a module
//! table whose name is not a module id is bad input (exit 2): a typo in a policy must be loud.
//! The default path is [`DEFAULT_PATH`]; a missing default file means no policy.
//!
//! A policy file is a regular file of at most [`MAX_BYTES`] (the null device, `/dev/null`, is
//! the empty policy). Anything else (a FIFO, `/dev/zero`, a directory, a larger file) is refused
//! as bad input at once: it is opened without blocking, checked with `fstat`, and read with a
//! bound, so no policy path can hang a command or fill its memory. Its text is then scanned once
//! (`text.rs`) before the TOML parser sees it: a NUL or another control character (a binary
//! file), a line longer than [`MAX_LINE`] bytes, or arrays and inline tables nested deeper than
//! [`MAX_DEPTH`] are refused (bad input, naming the line) in microseconds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cgroup::oomd::OomdPreference;
use crate::cgroup::parse::Limit;
use crate::cgroup::wait::join;
use crate::error::{Error, Result};
use crate::id::ModuleId;
use crate::layout::Layout;
use crate::limits::{LIMITS, Limits, Unit, parse_size, spec};
use crate::module::Root;

mod text;
pub use text::{MAX_DEPTH, MAX_LINE};

/// Where the policy is read from when `--policy` and `CK_CGROUP_POLICY` are not given.
pub const DEFAULT_PATH: &str = "/etc/ck-cgroup/policy.toml";

/// The largest policy file read, in bytes (1 MiB): a policy is a few lines.
pub const MAX_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    oomd_daemon: Option<toml::Value>,
    #[serde(default)]
    defaults: toml::Table,
    #[serde(default)]
    module: BTreeMap<String, toml::Table>,
}

/// One table of the policy: limits and a report threshold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// The limits.
    pub limits: Limits,
    /// `memory_report`, bytes.
    pub memory_report: Option<u64>,
}

/// A parsed policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Where it was read from (`None`: no policy).
    pub path: Option<PathBuf>,
    /// `[defaults]`.
    pub defaults: Entry,
    /// `[module.<id>]`.
    pub modules: BTreeMap<ModuleId, Entry>,
    /// `oomd_daemon` (top level, before the tables): `daemon/`'s systemd-oomd preference for
    /// `init` (`None`: the flag's default, omit).
    pub oomd_daemon: Option<OomdPreference>,
}

/// The key a table may hold besides the limits: `watch`'s report threshold.
pub const MEMORY_REPORT: &str = "memory_report";

/// The key of a table for the module's systemd-oomd preference (`avoid`, `omit`, `none`).
pub const OOMD: &str = "oomd";

/// The top-level key for `daemon/`'s systemd-oomd preference (`init`).
pub const OOMD_DAEMON: &str = "oomd_daemon";

/// Every key a policy table takes: the key of each row of [`LIMITS`], then
/// [`MEMORY_REPORT`] and [`OOMD`].
pub fn keys() -> Vec<&'static str> {
    LIMITS
        .iter()
        .map(|s| s.key)
        .chain([MEMORY_REPORT, OOMD])
        .collect()
}

/// A systemd-oomd preference from a TOML value: a string of [`OomdPreference::ACCEPTED`].
fn oomd_value(key: &str, v: &toml::Value) -> Result<OomdPreference> {
    match v {
        toml::Value::String(s) => OomdPreference::parse(s).map_err(|e| keyed(key, e)),
        _ => Err(Error::bad_input(format!(
            "{key}: expected one of {}, found a {}",
            OomdPreference::ACCEPTED,
            v.type_str()
        ))),
    }
}

/// The text a limit's parser takes from a TOML value: a boolean for [`Unit::Bool`], else a
/// string, or a non-negative integer where the unit is a number.
fn value_text(unit: Unit, key: &str, v: &toml::Value) -> Result<String> {
    let numeric = !matches!(unit, Unit::Bool | Unit::DeviceLimits);
    match (unit, v) {
        (Unit::Bool, toml::Value::Boolean(b)) => return Ok(b.to_string()),
        (Unit::Bool, _) => {}
        (_, toml::Value::String(s)) => return Ok(s.clone()),
        (_, toml::Value::Integer(n)) if numeric && *n >= 0 => return Ok(n.to_string()),
        _ => {}
    }
    let wanted = match unit {
        Unit::Bool => "true or false",
        Unit::Bytes => "a size (bytes, \"512M\", \"max\")",
        Unit::Count => "a count or \"max\"",
        Unit::Weight => "a weight from 1 to 10000",
        Unit::Microseconds => "\"QUOTA[/PERIOD]\" in microseconds, or \"max\"",
        Unit::CpuList => "a cpu list (\"0-3,6\")",
        Unit::DeviceLimits => "a string (\"8:0:rbps=10M\")",
    };
    Err(Error::bad_input(format!(
        "{key}: expected {wanted}, found a {}",
        v.type_str()
    )))
}

fn entry(t: &toml::Table) -> Result<Entry> {
    let mut out = Entry::default();
    for (key, v) in t {
        if key == MEMORY_REPORT {
            let text = value_text(Unit::Bytes, key, v)?;
            out.memory_report = match parse_size(&text).map_err(|e| keyed(key, e))? {
                Limit::Value(v) => Some(v),
                Limit::Max => None,
            };
            continue;
        }
        if key == OOMD {
            out.limits.oomd = Some(oomd_value(key, v)?);
            continue;
        }
        let Some(s) = spec(key) else {
            return Err(Error::bad_input(format!(
                "unknown key `{key}`; the keys are {}",
                keys().join(", ")
            )));
        };
        let value = (s.parse)(&value_text(s.unit, key, v)?).map_err(|e| keyed(key, e))?;
        (s.set)(&mut out.limits, value);
    }
    Ok(out)
}

/// The parser's error in one line: where (line and column) and what, without the parser's
/// quote of the line (a policy's line may hold anything the scan lets through).
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let what = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return what;
    };
    let before = text.get(..span.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("line {line}, column {column}: {what}")
}

/// A value's error, in one line that names the key.
fn keyed(key: &str, e: Error) -> Error {
    match e.hint() {
        Some(h) => Error::bad_input(format!("{key}: {} ({h})", e.message())),
        None => Error::bad_input(format!("{key}: {}", e.message())),
    }
}

impl Policy {
    /// Parse policy text; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Policy> {
        let bad = |e: String| {
            Error::bad_input(format!("invalid policy {}: {e}", path.display()))
                .with_hint("see the example policy in the package's docs (policy.toml.example)")
        };
        if let Some(problem) = text::problem(text) {
            return Err(bad(problem));
        }
        let raw: RawPolicy = toml::from_str(text).map_err(|e| bad(toml_error(text, &e)))?;
        let oomd_daemon = match &raw.oomd_daemon {
            Some(v) => Some(oomd_value(OOMD_DAEMON, v).map_err(|e| bad(e.message().to_string()))?),
            None => None,
        };
        let defaults = entry(&raw.defaults).map_err(|e| bad(format!("[defaults] {e}")))?;
        let mut modules = BTreeMap::new();
        for (name, t) in &raw.module {
            let id = ModuleId::new(name).map_err(|e| bad(format!("[module.{name}] {e}")))?;
            modules.insert(
                id,
                entry(t).map_err(|e| bad(format!("[module.{name}] {e}")))?,
            );
        }
        Ok(Policy {
            path: Some(path.to_path_buf()),
            defaults,
            modules,
            oomd_daemon,
        })
    }

    /// Load `explicit`, or [`DEFAULT_PATH`] when it exists, or no policy. The file must be a
    /// regular file of at most [`MAX_BYTES`] ([`read_bounded`]).
    pub fn load(explicit: Option<&Path>) -> Result<Policy> {
        let (path, must) = match explicit {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_PATH), false),
        };
        match read_bounded(&path) {
            Ok(t) => Policy::parse(&t, &path),
            Err(e) if e.errno() == Some(rustix::io::Errno::NOENT) && !must => Ok(Policy::default()),
            Err(e) => Err(e),
        }
    }

    /// The entry for `id`: the module's table over the defaults, key by key.
    pub fn for_module(&self, id: &ModuleId) -> Entry {
        let d = &self.defaults;
        let Some(m) = self.modules.get(id) else {
            return d.clone();
        };
        Entry {
            limits: m.limits.or(&d.limits),
            memory_report: m.memory_report.or(d.memory_report),
        }
    }
}

/// Read a policy file: open it without blocking (a FIFO with no writer must not hang the
/// command), `fstat` the open file, and refuse anything but a regular file of at most
/// [`MAX_BYTES`] before reading; then read at most that much (a file that grew meanwhile is
/// refused too). The null device reads as the empty policy. Every refusal is bad input (exit 2)
/// naming the path and what it is; a missing file keeps its `ENOENT` ([`Error::errno`]).
pub fn read_bounded(path: &Path) -> Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
    let bad = |what: String| {
        Error::bad_input(format!("policy {}: {what}", path.display())).with_hint(format!(
            "point --policy (or CK_CGROUP_POLICY) at a TOML file of at most {} KiB, or at /dev/null for none",
            MAX_BYTES >> 10
        ))
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| {
            let errno = rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::IO);
            Error::io("open policy", path, errno).with_class(crate::error::Class::BadInput)
        })?;
    let meta = file
        .metadata()
        .map_err(|e| bad(format!("failed to fstat it: {e}")))?;
    let ft = meta.file_type();
    if ft.is_char_device()
        && rustix::fs::major(meta.rdev()) == 1
        && rustix::fs::minor(meta.rdev()) == 3
    {
        // /dev/null: no policy, as an empty file.
        return Ok(String::new());
    }
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(bad(format!("it is {kind}, not a regular file")));
    }
    let too_big = || bad(format!("it is larger than {} bytes", MAX_BYTES));
    if meta.len() > MAX_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(format!("failed to read it: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|_| bad("it is not UTF-8 text".to_string()))
}

/// `flags` over `policy`, key by key: what the command line says wins.
pub fn merge(flags: &Limits, policy: &Limits) -> Limits {
    flags.or(policy)
}

/// One limit that `apply` found different.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Difference {
    /// The module.
    pub module: String,
    /// The file.
    pub file: std::borrow::Cow<'static, str>,
    /// What it held (`null`: unreadable).
    pub was: Option<String>,
    /// What the policy wants.
    pub now: String,
    /// Written (false with `--dry-run`, or when skipped).
    pub written: bool,
    /// Why it was not written, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl Root {
    /// Re-apply the policy to every existing module of ours; report what differed. The daemon's
    /// own `daemon/subc-modules/…` cannot take limits (their parent holds the daemon, so no
    /// controller can be enabled for them) and are left alone.
    pub fn apply(
        &self,
        policy: &Policy,
        best_effort: bool,
        dry_run: bool,
    ) -> Result<Vec<Difference>> {
        let mut out = Vec::new();
        for m in self.list()? {
            if m.layout != Layout::Ck {
                continue;
            }
            let Some(id) = m.name.as_id() else {
                continue;
            };
            let want = policy.for_module(&id).limits;
            let (ok, skipped) = self.check_limits(&want, best_effort)?;
            for (file, value) in ok {
                let rel = join(&m.rel(), file);
                let was = self.dir().read_raw(&rel).ok().map(|t| t.trim().to_string());
                let same = match (
                    &was,
                    want.values().into_iter().find(|(s, _)| s.file == file),
                ) {
                    (Some(w), Some((s, v))) => (s.same)(w, &v),
                    _ => false,
                };
                if same {
                    continue;
                }
                if !dry_run {
                    self.dir().write(&rel, &value)?;
                }
                out.push(Difference {
                    module: id.to_string(),
                    file: file.into(),
                    was,
                    now: value,
                    written: !dry_run,
                    skipped: None,
                });
            }
            for s in skipped {
                // What the policy wants there, as it would have been written.
                let now = want
                    .writes()
                    .into_iter()
                    .find(|(f, _, _)| *f == s.file)
                    .map(|(_, _, v)| v)
                    .unwrap_or_default();
                out.push(Difference {
                    module: id.to_string(),
                    file: s.file,
                    was: None,
                    now,
                    written: false,
                    skipped: Some(s.reason),
                });
            }
            if let Some(pref) = want.oomd {
                let was = crate::cgroup::oomd::preference_of(self.dir(), &m.rel());
                if was != Some(pref) {
                    let mut skipped = None;
                    if !dry_run {
                        let mark = crate::cgroup::oomd::mark(self.dir(), &m.rel(), pref);
                        match (mark.error, best_effort) {
                            (None, _) => {}
                            (Some(e), true) => skipped = Some(e),
                            (Some(e), false) => {
                                return Err(Error::failed(format!(
                                    "systemd-oomd preference {pref} of module {id}: {e}"
                                )));
                            }
                        }
                    }
                    out.push(Difference {
                        module: id.to_string(),
                        file: crate::cgroup::oomd::PREFERENCE_SOURCE.into(),
                        was: was.map(|p| p.name().to_string()),
                        now: pref.name().to_string(),
                        written: !dry_run && skipped.is_none(),
                        skipped,
                    });
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{LIMITS, Unit};

    /// Every row has a policy key, which takes its example (a TOML string, or a boolean for a
    /// switch) into the row's value; a row's getter and setter are of its field.
    #[test]
    fn every_limit_has_a_policy_key() {
        for s in LIMITS {
            let want = (s.parse)(s.example).unwrap_or_else(|e| panic!("{}: {e}", s.key));
            let toml = if s.unit == Unit::Bool {
                format!("[defaults]\n{} = {}\n", s.key, s.example)
            } else {
                format!("[defaults]\n{} = \"{}\"\n", s.key, s.example)
            };
            let p = Policy::parse(&toml, std::path::Path::new("p.toml"))
                .unwrap_or_else(|e| panic!("{}: no policy key: {e}", s.key));
            assert_eq!(
                p.defaults.limits.get(s.key),
                Some(want.clone()),
                "{}",
                s.key
            );
            assert_eq!(p.defaults.limits.values().len(), 1, "{}", s.key);
            let mut l = Limits::default();
            assert!(l.set(s.key, want.clone()), "{}", s.key);
            assert_eq!(l.writes(), vec![(s.file, s.controller, (s.text)(&want))]);
            assert!((s.same)(&(s.text)(&want), &want), "{}: same", s.key);
        }
        let keys: std::collections::BTreeSet<&str> = LIMITS.iter().map(|s| s.key).collect();
        let files: std::collections::BTreeSet<&str> = LIMITS.iter().map(|s| s.file).collect();
        assert_eq!(keys.len(), LIMITS.len(), "a key twice");
        assert_eq!(files.len(), LIMITS.len(), "a file twice");
    }

    /// The policy's `oom_group = false`, merged under flags that say nothing of it, is kept when
    /// a module is made (the default `memory.oom.group` 1 is not added).
    #[test]
    fn the_policys_oom_group_false_wins_over_the_creation_default() {
        let all: Vec<String> = ["cpu", "io", "memory", "pids"].map(String::from).to_vec();
        let policy = Limits {
            oom_group: Some(false),
            ..Limits::default()
        };
        let asked = merge(&Limits::default(), &policy);
        assert_eq!(
            crate::limits::creation_limits(&all, &asked).writes(),
            vec![("memory.oom.group", "memory", "0".to_string())]
        );
    }

    #[test]
    fn parses_defaults_and_modules() {
        let p = Policy::parse(
            "[defaults]\nmemory_max = \"4G\"\npids_max = 512\nmemory_report = \"3G\"\noom_group = true\n\n[module.aft]\nmemory_max = \"8G\"\npids_max = \"max\"\n",
            Path::new("p.toml"),
        )
        .unwrap();
        let aft = p.for_module(&ModuleId::new("aft").unwrap());
        assert_eq!(aft.limits.memory_max, Some(Limit::Value(8 << 30)));
        assert_eq!(aft.limits.pids_max, Some(Limit::Max));
        assert_eq!(aft.limits.oom_group, Some(true));
        assert_eq!(aft.memory_report, Some(3 << 30));
        let other = p.for_module(&ModuleId::new("broca").unwrap());
        assert_eq!(other.limits.memory_max, Some(Limit::Value(4 << 30)));
        assert_eq!(other.limits.pids_max, Some(Limit::Value(512)));
    }

    #[test]
    fn flags_win_over_the_policy() {
        let f = Limits {
            memory_max: Some(Limit::Value(1)),
            ..Limits::default()
        };
        let p = Limits {
            memory_max: Some(Limit::Value(2)),
            pids_max: Some(Limit::Max),
            ..Limits::default()
        };
        let m = merge(&f, &p);
        assert_eq!(m.memory_max, Some(Limit::Value(1)));
        assert_eq!(m.pids_max, Some(Limit::Max));
    }

    #[test]
    fn the_packaged_example_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join("packaging/policy.toml.example");
        let text = std::fs::read_to_string(&path).unwrap();
        // As shipped (the conffile), every line is a comment: an empty policy.
        let p = Policy::parse(&text, &path).unwrap();
        assert_eq!(p.defaults.limits, Limits::default());
        assert!(p.modules.is_empty());
        // Uncommented, the defaults and the module tables parse.
        let all: String = text
            .lines()
            .map(|l| {
                l.strip_prefix("# ")
                    .filter(|r| r.starts_with('[') || r.contains(" = "))
                    .unwrap_or(l)
            })
            .collect::<Vec<_>>()
            .join("\n");
        let p = Policy::parse(&all, &path).unwrap();
        assert_eq!(p.defaults.limits.cpu_weight, Some(100), "{all}");
        assert_eq!(p.modules.len(), 2, "{all}");
    }

    #[test]
    fn policy_files_are_regular_files_of_bounded_size() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("p.toml");
        std::fs::write(&ok, "[defaults]\npids_max = 5\n").unwrap();
        assert_eq!(
            Policy::load(Some(&ok)).unwrap().defaults.limits.pids_max,
            Some(Limit::Value(5))
        );
        assert_eq!(
            Policy::load(Some(Path::new("/dev/null")))
                .unwrap()
                .modules
                .len(),
            0
        );
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_BYTES as usize + 1]).unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        for (path, says) in [
            (Path::new("/dev/zero"), "a character device"),
            (dir.path(), "a directory"),
            (fifo.as_path(), "a FIFO"),
            (big.as_path(), "larger than 1048576 bytes"),
        ] {
            let e = Policy::load(Some(path)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(e.to_string().contains(says), "{e}");
        }
        let e = Policy::load(Some(&dir.path().join("missing"))).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
    }

    #[test]
    fn mistakes_are_loud() {
        for bad in [
            "[defaults]\nmemory_maxx = \"1G\"\n",
            "[defaults]\nmemory_max = \"1Q\"\n",
            "[defaults]\ncpu_weight = 0\n",
            "[module.\"../x\"]\nmemory_max = \"1G\"\n",
            "[modules.aft]\n",
            "not toml",
        ] {
            let e = Policy::parse(bad, Path::new("p.toml")).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().starts_with("invalid policy p.toml"), "{e}");
        }
        assert_eq!(Policy::parse("", Path::new("p")).unwrap().modules.len(), 0);
    }
}
