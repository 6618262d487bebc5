//! `watch`: module events as they happen, one JSON object per line. It reports and never kills.
//!
//! Event-driven: `inotify(7)` on each module's `cgroup.events`, `memory.events` and `pids.events`
//! (the kernel generates a modify event when their values change) and on the directories that
//! hold modules (a module appeared or was removed). The process sleeps in `poll(2)` until the
//! kernel reports something; the one exception is `memory.current`, which generates no event:
//! with a report threshold it is read once a second. PSI triggers (`--pressure`,
//! [`PressureTrigger`]) are descriptors of each module's `<res>.pressure` in the same `poll(2)`,
//! which the kernel wakes with `POLLPRI` (at most once per window). Watches are added through
//! `/proc/self/fd/<fd>` of directories opened beneath the root, so no path outside it is used.
//!
//! A module is followed by identity, not by name: the directory events (`IN_CREATE`,
//! `IN_DELETE`, renames) of the directories that hold modules are handled one by one, in the
//! kernel's order, by the name they carry, so a module removed and made again with the same id
//! between two reads is reported as `removed` then `appeared`, and the new directory's files are
//! watched (the old ones' watches end with `IN_IGNORED`). A full rescan (at the start, after a
//! queue overflow, or when a directory that holds modules appears) compares each module's
//! directory inode with the one it watches, and reports a replaced module the same way.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::io::{AsRawFd, OwnedFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::{OFlags, inotify};
use rustix::io::Errno;
use serde::Serialize;

use crate::cgroup::parse;
use crate::cgroup::wait::join;
use crate::error::{Error, Result, errno_text};
use crate::id::DirName;
use crate::layout::{Layout, ModuleRef};
use crate::module::{ModuleEntry, Root};
use crate::telemetry::memory_current;
use crate::telemetry::pressure::{PressureTrigger, PsiKind};

/// One event line.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct WatchEvent {
    /// When it was seen, RFC 3339 UTC with milliseconds.
    pub ts: String,
    /// The module's directory name.
    pub module: String,
    /// Which placement made it.
    pub layout: Layout,
    /// `appeared`, `populated`, `emptied`, `removed`, `memory_low`, `memory_high`, `memory_max`,
    /// `memory_oom`, `memory_oom_kill`, `memory_oom_group_kill`, `pids_max`, `memory_above`,
    /// `memory_below`, `oomd_kill` (systemd-oomd killed it: `user.oomd_ooms` grew), `pressure`
    /// (a PSI trigger fired), `pressure_unavailable` (the module has
    /// no pressure file for a trigger, or the kernel ended the trigger while the module stays:
    /// it is not set; `error` says why).
    pub event: String,
    /// The counter or figure now (counters: the file's value; thresholds: memory in bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// The counter before the rise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<u64>,
    /// The report threshold that was crossed, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<u64>,
    /// The file the value came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `pressure`: the trigger's resource, `memory`, `cpu` or `io`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// `pressure`: the trigger's kind, `some` or `full`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `pressure`: the trigger's stall time, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_us: Option<u64>,
    /// `pressure`: the trigger's window, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_us: Option<u64>,
    /// `pressure`: the file's `avg10` of the trigger's kind (percent) when it fired, read once
    /// then; absent when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg10: Option<f64>,
    /// `pressure_unavailable`: why the trigger could not be set (the errno and what it means).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `emptied`: the killers whose counters grew since the module was last populated,
    /// `systemd-oomd` (`user.oomd_ooms`) and/or `kernel` (`oom_kill`); empty when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed_by: Option<Vec<String>>,
}

/// What to watch.
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Only these modules (ids or directory names); all when empty.
    pub ids: Vec<String>,
    /// Report when a module's memory crosses this many bytes (up: `memory_above`, down:
    /// `memory_below`).
    pub report_above: Option<u64>,
    /// Per-module thresholds (module id to bytes), over `report_above`.
    pub per_module: BTreeMap<String, u64>,
    /// PSI triggers set on every module watched (`pressure` events).
    pub pressure: Vec<PressureTrigger>,
}

/// A PSI trigger set on a module: the index of its spec in [`WatchOptions::pressure`], and the
/// descriptor that holds it.
struct Armed {
    idx: usize,
    fd: OwnedFd,
}

#[derive(Default)]
struct State {
    /// The module's path relative to the root (`ModuleEntry::path`).
    rel: String,
    /// The inode of the directory watched: a module made again under the same name is another.
    ino: Option<u64>,
    populated: Option<bool>,
    counters: BTreeMap<String, u64>,
    above: bool,
    /// The watches on its files.
    wds: Vec<i32>,
    /// Its PSI triggers.
    triggers: Vec<Armed>,
    /// Its kill counters, for `oomd_kill` and `emptied`'s `killed_by`.
    kills: super::attribution::Kills,
    _dir: Option<OwnedFd>,
}

type Key = (Layout, String);

/// The directories watched for modules coming and going: the two that hold modules, and their
/// parents (whose events only ask for a rescan, e.g. `subc-modules/` made by the first module).
const MODULE_DIRS: [(&str, Option<Layout>); 4] = [
    ("", None),
    ("daemon", None),
    ("subc-modules", Some(Layout::Ck)),
    ("daemon/subc-modules", Some(Layout::Daemon)),
];

/// What one directory event says.
enum DirEvent {
    /// A directory appeared under this name (made, or renamed to it).
    Made(Layout, String),
    /// The directory under this name went (removed, or renamed away).
    Gone(Layout, String),
}

struct Watcher<'a> {
    root: &'a Root,
    opts: &'a WatchOptions,
    ino: OwnedFd,
    modules: HashMap<Key, State>,
    /// The watches on modules' files.
    wds: HashMap<i32, Key>,
    /// The watches on [`MODULE_DIRS`].
    dir_wds: HashMap<i32, Option<Layout>>,
    dirs: Vec<OwnedFd>,
}

/// Watch until `emit` fails (a closed pipe ends it) or a system call fails.
pub fn watch(
    root: &Root,
    opts: &WatchOptions,
    mut emit: impl FnMut(&WatchEvent) -> std::io::Result<()>,
) -> Result<()> {
    let ino = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
        .map_err(|e| Error::io("set up inotify for", root.path(), e))?;
    let mut w = Watcher {
        root,
        opts,
        ino,
        modules: HashMap::new(),
        wds: HashMap::new(),
        dir_wds: HashMap::new(),
        dirs: Vec::new(),
    };
    let mut out = Vec::new();
    w.rescan(false, &mut out)?;
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
    loop {
        for e in out.drain(..) {
            if emit(&e).is_err() {
                return Ok(());
            }
        }
        let ts = Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        let thresholds = opts.report_above.is_some() || !opts.per_module.is_empty();
        // Mutation: a 10 ms loop that reads the pressure files instead of sleeping until the
        // kernel reports.
        let sampling = cfg!(ck_mutation = "pressure-sampling") && !opts.pressure.is_empty();
        let tick = Timespec {
            tv_sec: 0,
            tv_nsec: 10_000_000,
        };
        let timeout = if sampling {
            Some(&tick)
        } else {
            thresholds.then_some(&ts)
        };
        // The inotify descriptor, then every module's PSI triggers.
        let (inotify_ready, triggers) = {
            let mut keys = Vec::new();
            let mut fds = vec![PollFd::new(&w.ino, PollFlags::IN)];
            for (k, st) in &w.modules {
                for a in &st.triggers {
                    fds.push(PollFd::new(&a.fd, PollFlags::PRI));
                    keys.push((k.clone(), a.fd.as_raw_fd()));
                }
            }
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(e) => return Err(Error::io("poll inotify for", root.path(), e)),
            }
            let ready: Vec<_> = keys
                .into_iter()
                .zip(fds[1..].iter().map(PollFd::revents))
                .filter(|(_, r)| !r.is_empty())
                .collect();
            (!fds[0].revents().is_empty(), ready)
        };
        // A trigger's report comes before what inotify says of its module (a `removed`).
        w.pressure(triggers, &mut out);
        if !inotify_ready {
            if sampling {
                w.sample();
            }
            if thresholds {
                w.thresholds(&mut out);
            }
            continue;
        }
        let batch = w.read_events(&mut buf)?;
        w.apply(batch, &mut out)?;
        if thresholds {
            w.thresholds(&mut out);
        }
    }
}

/// What one read of the inotify queue said.
#[derive(Default)]
struct Batch {
    /// Modules' files that changed.
    changed: Vec<Key>,
    /// Modules made or gone.
    dir_events: Vec<DirEvent>,
    /// Events were lost, or a directory that holds modules changed: rescan.
    rescan: bool,
}

impl Watcher<'_> {
    /// Read every event queued now (the fd is non-blocking).
    fn read_events(&mut self, buf: &mut [std::mem::MaybeUninit<u8>]) -> Result<Batch> {
        let mut b = Batch::default();
        use inotify::ReadFlags;
        let mut reader = inotify::Reader::new(&self.ino, buf);
        loop {
            let ev = match reader.next() {
                Ok(ev) => ev,
                Err(Errno::AGAIN) | Err(Errno::INTR) => break,
                Err(e) => return Err(Error::io("read inotify for", self.root.path(), e)),
            };
            let mask = ev.events();
            if mask.contains(ReadFlags::QUEUE_OVERFLOW) {
                // Events were lost: only a full rescan knows what is there now.
                b.rescan = true;
            } else if let Some(&layout) = self.dir_wds.get(&ev.wd()) {
                let name = ev
                    .file_name()
                    .and_then(|n| n.to_str().ok())
                    .filter(|n| !n.is_empty());
                match (layout, name) {
                    (Some(l), Some(n)) if mask.contains(ReadFlags::ISDIR) => {
                        if mask.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                            b.dir_events.push(DirEvent::Made(l, n.to_string()));
                        } else if mask.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM) {
                            b.dir_events.push(DirEvent::Gone(l, n.to_string()));
                        }
                    }
                    // A file, not a module.
                    (Some(_), Some(_)) => {}
                    // A parent's event, or a directory that holds modules went itself.
                    _ => b.rescan = true,
                }
            } else if let Some(k) = self.wds.get(&ev.wd()) {
                if mask.contains(ReadFlags::IGNORED) {
                    // The file went with its module; its directory event says so.
                    self.wds.remove(&ev.wd());
                } else {
                    b.changed.push(k.clone());
                }
            } else if !mask.contains(ReadFlags::IGNORED) {
                b.rescan = true;
            }
        }
        Ok(b)
    }

    /// Turn a batch into events: modules made or gone, figures updated, a rescan.
    fn apply(&mut self, mut b: Batch, out: &mut Vec<WatchEvent>) -> Result<()> {
        if cfg!(ck_mutation = "watch-blind") {
            // Mutation: the kernel's modify events are dropped.
            b.changed.clear();
        }
        if cfg!(ck_mutation = "watch-by-name") {
            // Mutation: directory events only ask for a rescan, and a rescan takes a module
            // that has the name of one it watches for that one (the state of the removed one).
            if !b.dir_events.is_empty() {
                b.rescan = true;
            }
            b.dir_events.clear();
        }
        for d in b.dir_events {
            match d {
                DirEvent::Made(layout, name) => self.made(layout, &name, out)?,
                DirEvent::Gone(layout, name) => self.went(&(layout, name), out),
            }
        }
        b.changed.sort();
        b.changed.dedup();
        for k in b.changed {
            self.update(&k, true, out);
        }
        if b.rescan {
            self.rescan(true, out)?;
        }
        Ok(())
    }
}

impl Watcher<'_> {
    fn wanted(&self, name: &str, module: Option<&String>) -> bool {
        self.opts.ids.is_empty() || self.opts.ids.iter().any(|i| i == name || Some(i) == module)
    }

    fn add(&mut self, fd: &OwnedFd, file: &str, flags: inotify::WatchFlags) -> Option<i32> {
        let path = if file.is_empty() {
            format!("/proc/self/fd/{}", fd.as_raw_fd())
        } else {
            format!("/proc/self/fd/{}/{file}", fd.as_raw_fd())
        };
        inotify::add_watch(&self.ino, path, flags).ok()
    }

    /// A directory appeared under `name` in `layout`'s directory: a module, when it is one that
    /// is wanted. One watched under that name already is checked to be the same directory.
    fn made(&mut self, layout: Layout, name: &str, out: &mut Vec<WatchEvent>) -> Result<()> {
        let Ok(dir) = DirName::new(name) else {
            return Ok(());
        };
        let m = ModuleRef { layout, name: dir };
        if !self.wanted(name, m.module_name().as_ref()) {
            return Ok(());
        }
        let k = (layout, name.to_string());
        let fd = self
            .root
            .dir()
            .open_beneath(&m.rel(), OFlags::RDONLY | OFlags::DIRECTORY)
            .ok();
        let ino = fd.as_ref().and_then(inode);
        if let Some(st) = self.modules.get(&k) {
            if ino.is_some() && st.ino == ino {
                return Ok(());
            }
            // Not the directory watched under this name: that one went.
            self.gone(&k, out);
        }
        self.follow(k, m.rel(), fd, true, out)
    }

    /// A directory event says the directory under `k`'s name went. The one watched went, unless
    /// that name holds it still (the event was about an older one, and a rescan since found
    /// the one watched now).
    fn went(&mut self, k: &Key, out: &mut Vec<WatchEvent>) {
        let Some(st) = self.modules.get(k) else {
            return;
        };
        let now = self
            .root
            .dir()
            .open_beneath(&st.rel, OFlags::RDONLY | OFlags::DIRECTORY)
            .ok()
            .and_then(|fd| inode(&fd));
        if now.is_some() && now == st.ino {
            return;
        }
        self.gone(k, out);
    }

    /// The directory under `k`'s name went: report it, stop watching its files.
    fn gone(&mut self, k: &Key, out: &mut Vec<WatchEvent>) {
        let Some(st) = self.modules.remove(k) else {
            return;
        };
        for wd in st.wds {
            self.wds.remove(&wd);
            // Already gone with its file, as a rule.
            let _ = inotify::remove_watch(&self.ino, wd);
        }
        out.push(event(k, "removed", None, None, None));
    }

    /// Start following module `k` at `rel` (its directory opened as `fd`, when it still exists):
    /// watch its event files, set its PSI triggers, report it as appeared (with `report`) and its
    /// state. A trigger the kernel refuses is the error.
    fn follow(
        &mut self,
        k: Key,
        rel: String,
        fd: Option<OwnedFd>,
        report: bool,
        out: &mut Vec<WatchEvent>,
    ) -> Result<()> {
        // A new cgroup starts empty: a module that already holds a process is reported as
        // populated right after it appeared.
        let mut st = State {
            rel,
            ino: fd.as_ref().and_then(inode),
            populated: Some(false),
            ..State::default()
        };
        if let Some(fd) = fd {
            for file in ["cgroup.events", "memory.events", "pids.events"] {
                if let Some(wd) = self.add(&fd, file, inotify::WatchFlags::MODIFY) {
                    self.wds.insert(wd, k.clone());
                    st.wds.push(wd);
                }
            }
            // systemd-oomd's setxattr of user.oomd_ooms on the directory (attribution.rs).
            if let Some(wd) = self.add(&fd, "", inotify::WatchFlags::ATTRIB) {
                self.wds.insert(wd, k.clone());
                st.wds.push(wd);
            }
            st._dir = Some(fd);
        }
        let mut unavailable = Vec::new();
        if st._dir.is_some() {
            st.triggers = self.arm(&k, &st.rel, st.ino, &mut unavailable)?;
        }
        self.modules.insert(k.clone(), st);
        if report {
            out.push(event(&k, "appeared", None, None, None));
        }
        out.append(&mut unavailable);
        self.update(&k, report, out);
        Ok(())
    }

    /// Set every PSI trigger on module `k` at `rel` (its directory's inode `ino`). A module that
    /// has gone meanwhile gets none (its directory event reports it); a pressure file that is not
    /// there is a `pressure_unavailable` event; any other refusal is the error: the file and the
    /// kernel's errno.
    fn arm(
        &self,
        k: &Key,
        rel: &str,
        ino: Option<u64>,
        out: &mut Vec<WatchEvent>,
    ) -> Result<Vec<Armed>> {
        let mut armed = Vec::new();
        for (idx, t) in self.opts.pressure.iter().enumerate() {
            let errno = match t.arm(self.root.dir(), rel) {
                Ok(fd) => {
                    armed.push(Armed { idx, fd });
                    continue;
                }
                Err(errno) => errno,
            };
            let now = self
                .root
                .dir()
                .open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY)
                .ok()
                .and_then(|fd| inode(&fd));
            if now.is_none() || now != ino {
                // The module went (or was made again) while its triggers were set.
                return Ok(Vec::new());
            }
            let file = t.resource().file();
            if errno == Errno::NOENT {
                let mut e = pressure_event(k, "pressure_unavailable", t);
                e.error = Some(format!(
                    "{}: the kernel has no {file} for this module (PSI is off for it: \
                     cgroup.pressure 0, or a kernel without PSI); the trigger {t} is not set",
                    errno_text(errno)
                ));
                out.push(e);
                continue;
            }
            return Err(t.refused(&self.root.dir().display_path(&join(rel, file)), errno));
        }
        Ok(armed)
    }

    /// Triggers that `poll(2)` found ready: `POLLPRI` is a `pressure` event; `POLLERR` (the
    /// cgroup went, or there is no trigger on the descriptor) drops the descriptor.
    fn pressure(&mut self, ready: Vec<((Key, i32), PollFlags)>, out: &mut Vec<WatchEvent>) {
        for ((k, raw), revents) in ready {
            let Some(st) = self.modules.get_mut(&k) else {
                continue;
            };
            if revents.intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL) {
                let idx = st
                    .triggers
                    .iter()
                    .find(|a| a.fd.as_raw_fd() == raw)
                    .map(|a| a.idx);
                st.triggers.retain(|a| a.fd.as_raw_fd() != raw);
                // Gone with its module (its directory event says so), or taken while the module
                // stays (`cgroup.pressure` 0 hides the files): that is said, not left silent.
                let now = self
                    .root
                    .dir()
                    .open_beneath(&st.rel, OFlags::RDONLY | OFlags::DIRECTORY)
                    .ok()
                    .and_then(|fd| inode(&fd));
                if let Some(t) = idx.and_then(|i| self.opts.pressure.get(i))
                    && now.is_some()
                    && now == st.ino
                {
                    let mut e = pressure_event(&k, "pressure_unavailable", t);
                    e.error = Some(format!(
                        "the kernel ended the trigger {t} (POLLERR): the module's {} went \
                         (cgroup.pressure 0?)",
                        t.resource().file()
                    ));
                    out.push(e);
                }
                continue;
            }
            if !revents.contains(PollFlags::PRI) {
                continue;
            }
            let Some(t) = st
                .triggers
                .iter()
                .find(|a| a.fd.as_raw_fd() == raw)
                .and_then(|a| self.opts.pressure.get(a.idx))
            else {
                continue;
            };
            // Read once, now: what the kernel's running average says as the trigger fires.
            let figures = self
                .root
                .dir()
                .read_raw(&join(&st.rel, t.resource().file()))
                .ok()
                .map(|text| parse::pressure(&text));
            let mut e = pressure_event(&k, "pressure", t);
            e.avg10 = figures.and_then(|p| match t.kind() {
                PsiKind::Some => p.some_avg10,
                PsiKind::Full => p.full_avg10,
            });
            out.push(e);
        }
    }

    /// The mutation `pressure-sampling`: read every pressure file (instead of waiting for the
    /// kernel to report).
    fn sample(&self) {
        for st in self.modules.values() {
            for a in &st.triggers {
                if let Some(t) = self.opts.pressure.get(a.idx) {
                    let _ = self
                        .root
                        .dir()
                        .read_raw(&join(&st.rel, t.resource().file()));
                }
            }
        }
    }

    /// (Re)watch the directories that hold modules, then find modules that appeared, went, or
    /// were replaced by a directory of the same name.
    fn rescan(&mut self, report: bool, out: &mut Vec<WatchEvent>) -> Result<()> {
        let dir_flags = inotify::WatchFlags::CREATE
            | inotify::WatchFlags::DELETE
            | inotify::WatchFlags::MOVED_FROM
            | inotify::WatchFlags::MOVED_TO
            | inotify::WatchFlags::ONLYDIR;
        self.dirs.clear();
        self.dir_wds.clear();
        for (rel, layout) in MODULE_DIRS {
            if let Ok(fd) = self
                .root
                .dir()
                .open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY)
            {
                if let Some(wd) = self.add(&fd, "", dir_flags) {
                    self.dir_wds.insert(wd, layout);
                }
                self.dirs.push(fd);
            }
        }
        let list: Vec<ModuleEntry> = self
            .root
            .list()?
            .into_iter()
            .filter(|m| self.wanted(m.name.as_str(), m.module.as_ref()))
            .collect();
        let present: Vec<Key> = list
            .iter()
            .map(|m| (m.layout, m.name.to_string()))
            .collect();
        let gone: Vec<Key> = self
            .modules
            .keys()
            .filter(|k| !present.contains(k))
            .cloned()
            .collect();
        for k in gone {
            self.gone(&k, out);
        }
        for m in &list {
            let k = (m.layout, m.name.to_string());
            let fd = self
                .root
                .dir()
                .open_beneath(&m.path, OFlags::RDONLY | OFlags::DIRECTORY)
                .ok();
            if let Some(st) = self.modules.get(&k) {
                let ino = fd.as_ref().and_then(inode);
                if cfg!(ck_mutation = "watch-by-name") || ino.is_none() || st.ino == ino {
                    continue;
                }
                // Made again under the same name since it was watched.
                self.gone(&k, out);
            }
            self.follow(k, m.path.clone(), fd, report, out)?;
        }
        Ok(())
    }

    /// Re-read a module's event files; report what changed.
    fn update(&mut self, k: &Key, report: bool, out: &mut Vec<WatchEvent>) {
        let Some(rel) = self.modules.get(k).map(|st| st.rel.clone()) else {
            return;
        };
        let dir = self.root.dir();
        let populated = dir
            .read_raw(&join(&rel, "cgroup.events"))
            .ok()
            .and_then(|t| parse::events(&t).populated);
        let mut counters = BTreeMap::new();
        for (file, prefix, keys) in [
            (
                "memory.events",
                "memory_",
                &["low", "high", "max", "oom", "oom_kill", "oom_group_kill"][..],
            ),
            ("pids.events", "pids_", &["max"][..]),
        ] {
            if let Ok(t) = dir.read_raw(&join(&rel, file)) {
                let kv = parse::flat_keyed(&t);
                for key in keys {
                    if let Some(v) = kv.get(*key) {
                        counters.insert(format!("{prefix}{key}"), *v);
                    }
                }
            }
        }
        let Some(st) = self.modules.get_mut(k) else {
            return;
        };
        let populated_now = populated == Some(true) && st.populated != Some(true);
        let rise = st.kills.observe(dir, &rel, populated_now);
        if report {
            if let Some((v, prev)) = rise {
                let source = super::attribution::OOMD_KILL_SOURCE;
                let name = super::attribution::OOMD_KILL;
                out.push(event(k, name, Some(v), prev, Some(source.into())));
            }
            if populated != st.populated {
                match populated {
                    Some(true) => out.push(event(k, "populated", None, None, None)),
                    Some(false) => {
                        let mut e = event(k, "emptied", None, None, None);
                        e.killed_by = Some(st.kills.killed_by());
                        out.push(e);
                    }
                    None => {}
                }
            }
            for (name, v) in &counters {
                let prev = st.counters.get(name).copied();
                if *v > prev.unwrap_or(0) {
                    let file = if name.starts_with("pids_") {
                        "pids.events"
                    } else {
                        "memory.events"
                    };
                    out.push(event(k, name, Some(*v), prev, Some(file.into())));
                }
            }
        }
        st.populated = populated;
        st.counters = counters;
    }

    /// `memory.current` (or the /proc sum) against the threshold; report crossings only.
    fn thresholds(&mut self, out: &mut Vec<WatchEvent>) {
        let Ok(list) = self.root.list() else {
            return;
        };
        for m in list {
            let per = m
                .module
                .as_ref()
                .and_then(|id| self.opts.per_module.get(id));
            let Some(&limit) = per.or(self.opts.report_above.as_ref()) else {
                continue;
            };
            let k = (m.layout, m.name.to_string());
            let Some(st) = self.modules.get_mut(&k) else {
                continue;
            };
            let mem = memory_current(self.root.dir(), &m.path);
            let Some(v) = mem.value else {
                continue;
            };
            let above = v > limit;
            if above != st.above {
                st.above = above;
                let name = if above {
                    "memory_above"
                } else {
                    "memory_below"
                };
                let mut e = event(&k, name, Some(v), None, Some(mem.source.clone()));
                e.threshold = Some(limit);
                out.push(e);
            }
        }
    }
}

/// The inode of an open directory: a cgroup made again under the same name has another one.
fn inode(fd: &OwnedFd) -> Option<u64> {
    rustix::fs::fstat(fd).ok().map(|st| st.st_ino)
}

fn event(
    k: &Key,
    name: &str,
    value: Option<u64>,
    previous: Option<u64>,
    source: Option<String>,
) -> WatchEvent {
    WatchEvent {
        ts: now_rfc3339(),
        module: k.1.clone(),
        layout: k.0,
        event: name.to_string(),
        value,
        previous,
        threshold: None,
        source,
        resource: None,
        kind: None,
        threshold_us: None,
        window_us: None,
        avg10: None,
        error: None,
        killed_by: None,
    }
}

/// A `pressure` or `pressure_unavailable` event of trigger `t` on module `k`.
fn pressure_event(k: &Key, name: &str, t: &PressureTrigger) -> WatchEvent {
    let mut e = event(k, name, None, None, Some(t.resource().file().into()));
    e.resource = Some(t.resource().as_str().into());
    e.kind = Some(t.kind().as_str().into());
    e.threshold_us = Some(t.threshold_us());
    e.window_us = Some(t.window_us());
    e
}

/// The time now, `2026-11-30T05:10:00.123Z`.
pub(crate) fn now_rfc3339() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    rfc3339(d)
}

/// `d` since the Unix epoch as RFC 3339 UTC with milliseconds, `2026-11-30T05:10:00.123Z` (the
/// civil date by H. Hinnant's `civil_from_days`): `watch`'s `ts`, and the clock of `top`.
pub fn rfc3339(d: Duration) -> String {
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(Duration::ZERO), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(Duration::from_millis(1_796_016_600_123)),
            "2026-11-30T05:30:00.123Z"
        );
        assert_eq!(
            rfc3339(Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
    }
}
