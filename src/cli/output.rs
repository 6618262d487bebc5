//! One renderer per result: human text or `--json`, both on stdout, except for the commands
//! whose stdout is CMD's (`run`, `sandbox`): their result goes to stderr, as one JSON line after
//! CMD and its module are gone ([`result_line`]).

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use super::format::versioned;
use super::format::{plural, table};
use ck_cgroup::module::{
    FreezeReport, InitReport, ModuleEntry, PlaceReport, PruneAction, PruneEntry, RemoveReport,
    StopReport,
};

/// A module in `list` and `status` as the CLI prints it: the library's object with `id` added,
/// so that `list`, `status` and `watch` name a module by the same pair, `name` (its directory)
/// and `id` (the module id, `null` where the name does not decode; the same as `module` here).
#[derive(Serialize)]
struct Named<'a, T> {
    id: Option<&'a ck_cgroup::DirName>,
    #[serde(flatten)]
    inner: &'a T,
}

/// Where results go, and in which form.
pub struct Output {
    json: bool,
}

fn words(v: &[String]) -> String {
    if v.is_empty() {
        "-".to_string()
    } else {
        v.join(" ")
    }
}

impl Output {
    /// `json`: print JSON instead of text.
    pub fn new(json: bool) -> Output {
        Output { json }
    }

    fn emit(&self, value: &impl Serialize, text: impl FnOnce() -> String) -> io::Result<()> {
        let mut out = io::stdout().lock();
        if self.json {
            // One write(2): stdout is line-buffered and JSON has its newline at the end only.
            let mut buf = serde_json::to_vec(&versioned(value)).map_err(io::Error::other)?;
            buf.push(b'\n');
            out.write_all(&buf)?;
        } else {
            out.write_all(text().as_bytes())?;
        }
        out.flush()
    }

    pub fn init(&self, r: &InitReport) -> io::Result<()> {
        self.emit(r, || {
            let mut s = format!("root       {}\n", r.root.display());
            s += &format!("created    {}\n", words(&r.created));
            s += &format!(
                "moved      {} into daemon/\n",
                plural(r.moved.len(), "process", "processes")
            );
            s += &format!("available  {}\n", words(&r.available));
            s += &format!("enabled    {} (in subc-modules/)\n", words(&r.enabled));
            if r.missing.is_empty() {
                s += "missing    -\n";
            } else {
                let delegable: Vec<String> = r
                    .missing
                    .iter()
                    .filter(|c| !r.missing_held_by_v1.contains(c))
                    .cloned()
                    .collect();
                if !r.missing_held_by_v1.is_empty() {
                    s += &format!(
                        "missing    {} (held by cgroup v1 on this hybrid host: cgroup2 cannot have them until the host boots with systemd.unified_cgroup_hierarchy=1; `ck-cgroup doctor` says more)\n",
                        words(&r.missing_held_by_v1)
                    );
                }
                if !delegable.is_empty() {
                    s += &format!(
                        "missing    {} (not delegated to this root: limits on them are unavailable; see Delegate= in docs/packaging.md)\n",
                        words(&delegable)
                    );
                }
            }
            s += &format!(
                "oomd       {}\n",
                super::oomd_lines::oomd_mark_line(&r.oomd_daemon)
            );
            s
        })
    }

    pub fn create(
        &self,
        id: &ck_cgroup::ModuleId,
        root: &Path,
        created: bool,
        l: &ck_cgroup::limits::LimitReport,
    ) -> io::Result<()> {
        #[derive(Serialize)]
        struct Create<'a> {
            module: &'a ck_cgroup::ModuleId,
            path: std::path::PathBuf,
            created: bool,
            applied: &'a [ck_cgroup::limits::Applied],
            skipped: &'a [ck_cgroup::limits::Skipped],
        }
        let path = root.join("subc-modules").join(id.as_str());
        let r = Create {
            module: id,
            path: path.clone(),
            created,
            applied: &l.applied,
            skipped: &l.skipped,
        };
        self.emit(&r, || {
            let mut s = format!(
                "{} {} at {}\n",
                if created { "created" } else { "exists " },
                id,
                path.display()
            );
            s += &limit_lines(l);
            s
        })
    }

    pub fn doctor(&self, r: &ck_cgroup::doctor::Report) -> io::Result<()> {
        use ck_cgroup::doctor::Outcome;
        self.emit(r, || {
            let mut s = String::new();
            for c in &r.checks {
                let tag = match c.outcome {
                    Outcome::Ok => "ok  ",
                    Outcome::Fail => "FAIL",
                    Outcome::Warn => "warn",
                };
                s += &format!("{tag}  {}: {}\n", c.name, c.detail);
                if let Some(fix) = &c.fix {
                    for (i, line) in fix.lines().enumerate() {
                        s += &format!("      {}{line}\n", if i == 0 { "fix: " } else { "     " });
                    }
                }
            }
            s += if r.ready {
                "ready\n"
            } else {
                "NOT ready: fix the FAIL lines above\n"
            };
            s
        })
    }

    pub fn apply(&self, d: &[ck_cgroup::policy::Difference], dry_run: bool) -> io::Result<()> {
        #[derive(Serialize)]
        struct Apply<'a> {
            dry_run: bool,
            differences: &'a [ck_cgroup::policy::Difference],
        }
        self.emit(
            &Apply {
                dry_run,
                differences: d,
            },
            || {
                if d.is_empty() {
                    return "every module matches the policy\n".to_string();
                }
                let mut s = String::new();
                for x in d {
                    match &x.skipped {
                        Some(why) => s += &format!("{}: skipped {}: {why}\n", x.module, x.file),
                        None => {
                            s += &format!(
                                "{}: {} {} -> {}{}\n",
                                x.module,
                                x.file,
                                x.was.as_deref().unwrap_or("-"),
                                x.now,
                                if x.written { "" } else { " (dry run)" }
                            )
                        }
                    }
                }
                s
            },
        )
    }

    pub fn limits(&self, l: &ck_cgroup::limits::LimitReport) -> io::Result<()> {
        self.emit(l, || {
            let s = limit_lines(l);
            if s.is_empty() {
                format!("{}: no limit given\n", l.module)
            } else {
                s
            }
        })
    }

    pub fn place(&self, r: &PlaceReport) -> io::Result<()> {
        self.emit(r, || {
            let pids: Vec<String> = r.placed.iter().map(u32::to_string).collect();
            format!("placed {} in {}\n", pids.join(" "), r.module)
        })
    }

    /// `freeze` and `thaw`.
    pub fn freeze(&self, r: &FreezeReport) -> io::Result<()> {
        self.emit(r, || {
            let state = if r.frozen { "frozen" } else { "thawed" };
            if r.changed {
                format!(
                    "{}: {state} ({} ms)
",
                    r.module, r.waited_ms
                )
            } else {
                format!("{}: {state} already\n", r.module)
            }
        })
    }

    pub fn kill(&self, r: &StopReport) -> io::Result<()> {
        self.emit(r, || stop_text(r))
    }

    pub fn prune(&self, entries: &[PruneEntry], dry_run: bool) -> io::Result<()> {
        #[derive(Serialize)]
        struct Prune<'a> {
            dry_run: bool,
            modules: &'a [PruneEntry],
        }
        self.emit(
            &Prune {
                dry_run,
                modules: entries,
            },
            || {
                if entries.is_empty() {
                    return "no modules\n".to_string();
                }
                let mut s = String::new();
                for e in entries {
                    let procs = e.procs.map_or("? processes".to_string(), |n| {
                        plural(n, "process", "processes")
                    });
                    let what = match e.action {
                        PruneAction::Kept => "kept (--keep)".to_string(),
                        PruneAction::Removed => "empty: removed".to_string(),
                        PruneAction::Killed => format!("{procs}: killed and removed"),
                        PruneAction::SkippedPopulated => {
                            format!("{procs}: left running (pass --kill to stop it)")
                        }
                        PruneAction::WouldRemove => "empty: would remove".to_string(),
                        PruneAction::WouldKill => format!("{procs}: would kill and remove"),
                        PruneAction::Failed => {
                            format!("failed: {}", e.error.as_deref().unwrap_or("unknown error"))
                        }
                        // The enum is non_exhaustive: an action added later.
                        other => format!("{other:?}"),
                    };
                    s += &format!("{}: {what}\n", e.name);
                    if let Some(stop) = &e.stop {
                        for f in &stop.tree.fell_through {
                            s += &format!("  {} fell through: {}\n", f.method.name(), f.reason);
                        }
                    }
                }
                s
            },
        )
    }

    pub fn remove(&self, r: &RemoveReport) -> io::Result<()> {
        self.emit(r, || {
            if r.already_gone {
                format!("{}: already gone\n", r.module)
            } else {
                format!("{}: removed\n", r.module)
            }
        })
    }

    /// `list`: `root` is the service's root, or for the systemd backend module.slice's cgroup
    /// (`null`: not loaded).
    pub fn list(&self, root: Option<&Path>, modules: &[ModuleEntry]) -> io::Result<()> {
        #[derive(Serialize)]
        struct List<'a> {
            root: Option<&'a Path>,
            modules: Vec<Named<'a, ModuleEntry>>,
        }
        let named = modules
            .iter()
            .map(|m| Named {
                id: m.module.as_ref(),
                inner: m,
            })
            .collect();
        let list = List {
            root,
            modules: named,
        };
        self.emit(&list, || {
            let mut rows = vec![[
                "NAME".to_string(),
                "MODULE".into(),
                "LAYOUT".into(),
                "POPULATED".into(),
                "FROZEN".into(),
                "PROCS".into(),
            ]];
            for m in modules {
                rows.push([
                    m.name.to_string(),
                    m.module.as_ref().map_or("-".into(), ToString::to_string),
                    m.layout.name().into(),
                    yes_no(m.populated),
                    yes_no(m.frozen),
                    m.procs.map_or("-".into(), |n| n.to_string()),
                ]);
            }
            table(&rows)
        })
    }

    /// `ps`: each module's processes (ordered by [`super::ps_tree::order`]); on a terminal each
    /// line is cut to its width.
    pub fn ps(
        &self,
        mods: &[ck_cgroup::telemetry::procs::ModuleProcesses],
        sorted: bool,
    ) -> io::Result<()> {
        #[derive(Serialize)]
        struct Ps<'a> {
            modules: Vec<Named<'a, ck_cgroup::telemetry::procs::ModuleProcesses>>,
        }
        let modules = mods
            .iter()
            .map(|m| Named {
                id: m.module.as_ref(),
                inner: m,
            })
            .collect();
        self.emit(&Ps { modules }, || {
            let stdout = io::stdout();
            let width = rustix::termios::isatty(&stdout)
                .then(|| rustix::termios::tcgetwinsize(&stdout).ok())
                .flatten()
                .map(|w| usize::from(w.ws_col))
                .filter(|&w| w > 0);
            super::ps_tree::text(mods, sorted, width)
        })
    }

    /// `status`'s figures in `format`, to stdout, or with `output` (`--output FILE`) to FILE,
    /// replaced whole (see [`super::output_file::replace_whole`]).
    pub fn status(
        &self,
        rows: &[ck_cgroup::telemetry::ModuleStatus],
        parents: &[ck_cgroup::telemetry::ParentStatus],
        format: super::args::Format,
        output: Option<&Path>,
        columns: super::status::Columns<'_>,
    ) -> Result<(), super::exit::Fail> {
        use super::args::Format;
        #[derive(Serialize)]
        struct Status<'a> {
            modules: Vec<Named<'a, ck_cgroup::telemetry::ModuleStatus>>,
        }
        let mut text = match format {
            Format::Json => {
                let modules = rows
                    .iter()
                    .map(|m| Named {
                        id: m.module.as_ref(),
                        inner: m,
                    })
                    .collect();
                serde_json::to_vec(&versioned(Status { modules })).map_err(io::Error::other)?
            }
            Format::Table => super::status::table(rows, columns).into_bytes(),
            Format::Prometheus => super::prometheus::prometheus(rows, parents).into_bytes(),
        };
        if format == Format::Json {
            text.push(b'\n');
        }
        if let Some(file) = output {
            return Ok(super::output_file::replace_whole(file, &text)?);
        }
        let mut out = io::stdout().lock();
        out.write_all(&text)?;
        Ok(out.flush()?)
    }

    /// `run`'s result: with `--json` the stop of the module, as `kill --json` prints it, as the
    /// last line on stderr; without it nothing (CMD's exit status is the helper's).
    /// `run`'s result: the stop of the module, and CMD's death (`None` where it was not read:
    /// a stop that did not end leaves CMD unwaited).
    pub fn run(&self, r: &StopReport, death: Option<&ck_cgroup::module::Death>) -> io::Result<()> {
        #[derive(Serialize)]
        struct Run<'a> {
            #[serde(flatten)]
            stop: &'a StopReport,
            death: Option<&'a ck_cgroup::module::Death>,
        }
        if self.json {
            return result_line(&Run { stop: r, death });
        }
        for line in super::oomd_lines::stop_kills_lines(r) {
            eprintln!("ck-cgroup: {line}");
        }
        if let Some(line) = super::oomd_lines::memory_left_line(&r.module, &r.memory_left) {
            eprintln!("ck-cgroup: {line}");
        }
        Ok(())
    }

    pub fn sandbox(&self, path: &Path, kept: bool, status: i32) -> io::Result<()> {
        #[derive(Serialize)]
        struct Sb<'a> {
            sandbox: &'a Path,
            kept: bool,
            removed: bool,
            status: i32,
        }
        if self.json {
            return result_line(&Sb {
                sandbox: path,
                kept,
                removed: !kept,
                status,
            });
        }
        // Human notes go to stderr: stdout belongs to CMD.
        if kept {
            let line = format!("ck-cgroup: sandbox kept at {}\n", path.display());
            io::stderr().lock().write_all(line.as_bytes())?;
        }
        Ok(())
    }
}

impl Output {
    /// `sandbox --prune`: what was removed, kept and left alone.
    pub fn sandbox_prune(&self, r: &ck_cgroup::sandbox::SweepReport) -> io::Result<()> {
        self.emit(r, || {
            let mut s = String::new();
            for x in &r.removed {
                let n = x
                    .killed
                    .map_or("an unknown number of".to_string(), |n| n.to_string());
                let procs = if x.killed == Some(1) {
                    "process"
                } else {
                    "processes"
                };
                s += &format!(
                    "{}: helper gone, {n} {procs}: killed and removed\n",
                    x.sandbox.display()
                );
            }
            for k in &r.kept {
                s += &format!(
                    "{}: helper gone, kept (rmdir its kept/ leaf to let --prune remove it)\n",
                    k.display()
                );
            }
            for f in &r.failed {
                s += &format!("{}: failed: {}\n", f.sandbox.display(), f.error);
            }
            s += &format!(
                "{} removed, {} kept, {} with a live helper left alone\n",
                r.removed.len(),
                r.kept.len(),
                r.alive
            );
            s
        })
    }
}

/// The `--json` result of a command whose stdout is CMD's (`run`, `sandbox`): one line of JSON on
/// stderr, in one `write(2)`, after CMD has exited and the module or sandbox was stopped, so that
/// it is the last line there (`tail -n 1`), as time(1) reports after its command. stdout carries
/// CMD's output only.
fn result_line(value: &impl Serialize) -> io::Result<()> {
    let mut buf = serde_json::to_vec(&versioned(value)).map_err(io::Error::other)?;
    buf.push(b'\n');
    let mut err = io::stderr().lock();
    err.write_all(&buf)?;
    err.flush()
}

fn limit_lines(l: &ck_cgroup::limits::LimitReport) -> String {
    let mut s = String::new();
    for a in &l.applied {
        s += &format!("{}: {} = {}\n", l.module, a.file, a.value);
    }
    for k in &l.skipped {
        s += &format!("{}: skipped {}: {}\n", l.module, k.file, k.reason);
    }
    s
}

/// The human form of a stop: each phase on its own clause, fallbacks on their own lines.
fn stop_text(r: &StopReport) -> String {
    if r.already_gone {
        return format!("{}: already gone\n", r.module);
    }
    let t = &r.tree;
    let mut parts = Vec::new();
    if let (Some(sig), Some(left)) = (&r.signal, t.left_after_grace) {
        parts.push(format!(
            "{sig} to {}; {left} left after the {:.1} s grace",
            plural(t.signalled, "process", "processes"),
            r.grace_ms / 1e3
        ));
    }
    match t.method {
        Some(m) => parts.push(format!(
            "killed {} by {}",
            plural(t.killed, "process", "processes"),
            m.name()
        )),
        None if t.empty => parts.push("no kill needed".to_string()),
        None => {}
    }
    parts.push(if t.empty {
        format!("empty after {:.1} ms", t.waited_ms)
    } else {
        format!("NOT empty after {:.1} ms", t.waited_ms)
    });
    parts.push(format!(
        "directory {}",
        if r.removed { "removed" } else { "kept" }
    ));
    let mut s = format!("{}: {}\n", r.module, parts.join("; "));
    for line in super::oomd_lines::stop_kills_lines(r) {
        s += &format!("{line}\n");
    }
    if let Some(line) = super::oomd_lines::memory_left_line(&r.module, &r.memory_left) {
        s += &format!("{line}\n");
    }
    for f in &t.fell_through {
        s += &format!(
            "{}: {} fell through: {}\n",
            r.module,
            f.method.name(),
            f.reason
        );
    }
    s
}

/// A flag read from a kernel file: `yes`, `no`, or `-` when it could not be read.
fn yes_no(v: Option<bool>) -> String {
    match v {
        Some(true) => "yes".into(),
        Some(false) => "no".into(),
        None => "-".into(),
    }
}
