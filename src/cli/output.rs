//! One renderer per result: human text or `--json`, both on stdout.

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use ck_cgroup::module::{
    CreateReport, InitReport, KillReport, ModuleEntry, PlaceReport, RemoveReport,
};

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

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Output {
    /// `json`: print JSON instead of text.
    pub fn new(json: bool) -> Output {
        Output { json }
    }

    fn emit(&self, value: &impl Serialize, text: impl FnOnce() -> String) -> io::Result<()> {
        let mut out = io::stdout().lock();
        if self.json {
            serde_json::to_writer(&mut out, value).map_err(io::Error::other)?;
            writeln!(out)?;
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
                s += &format!(
                    "missing    {} (not delegated to this root: limits on them are unavailable; see Delegate= in docs/packaging.md)\n",
                    words(&r.missing)
                );
            }
            s
        })
    }

    pub fn create(&self, r: &CreateReport) -> io::Result<()> {
        self.emit(r, || {
            format!(
                "{} {} at {}\n",
                if r.created { "created" } else { "exists " },
                r.module,
                r.path.display()
            )
        })
    }

    pub fn place(&self, r: &PlaceReport) -> io::Result<()> {
        self.emit(r, || {
            let pids: Vec<String> = r.placed.iter().map(u32::to_string).collect();
            format!("placed {} in {}\n", pids.join(" "), r.module)
        })
    }

    pub fn kill(&self, r: &KillReport) -> io::Result<()> {
        self.emit(r, || {
            if r.already_gone {
                return format!("{}: already gone\n", r.module);
            }
            format!(
                "{}: killed {} by cgroup-kill; empty after {:.1} ms; directory {}\n",
                r.module,
                plural(r.signalled, "process", "processes"),
                r.waited_ms,
                if r.removed { "removed" } else { "kept" }
            )
        })
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

    pub fn list(&self, root: &Path, modules: &[ModuleEntry]) -> io::Result<()> {
        #[derive(Serialize)]
        struct List<'a> {
            root: &'a Path,
            modules: &'a [ModuleEntry],
        }
        self.emit(&List { root, modules }, || {
            let mut rows = vec![[
                "NAME".to_string(),
                "MODULE".into(),
                "LAYOUT".into(),
                "POPULATED".into(),
                "PROCS".into(),
            ]];
            for m in modules {
                rows.push([
                    m.name.to_string(),
                    m.module.clone().unwrap_or_else(|| "-".into()),
                    match m.layout {
                        ck_cgroup::Layout::Ck => "ck".into(),
                        ck_cgroup::Layout::Daemon => "daemon".into(),
                    },
                    match m.populated {
                        Some(true) => "yes".into(),
                        Some(false) => "no".into(),
                        None => "-".into(),
                    },
                    m.procs.map_or("-".into(), |n| n.to_string()),
                ]);
            }
            table(&rows)
        })
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
            return self.emit(
                &Sb {
                    sandbox: path,
                    kept,
                    removed: !kept,
                    status,
                },
                String::new,
            );
        }
        // Human notes go to stderr: stdout belongs to CMD.
        if kept {
            eprintln!("ck-cgroup: sandbox kept at {}", path.display());
        }
        Ok(())
    }
}

/// Left-aligned columns separated by two spaces.
fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == N {
                line += c;
            } else {
                line += &format!("{c:<w$}  ", w = widths[i]);
            }
        }
        s += line.trim_end();
        s.push('\n');
    }
    s
}
