//! The modules `watch` follows: the inotify queue read in the kernel's order, each module's
//! lifetimes (one per directory made under its name), and what each lifetime reports.
//!
//! The queue is read whole (every event queued now), then handled one event at a time in the
//! kernel's order: a directory event and a file's modify event of the same module keep their
//! order, so an `emptied` is never lost behind the `removed` that follows it in the same read.
//!
//! Lifetimes, by what the kernel guarantees (docs/design.md, "watch"):
//! - each `IN_CREATE` (or rename to) of a directory under a name begins a lifetime, reported as
//!   `appeared`; each `IN_DELETE` (or rename away) ends the one open under that name, reported as
//!   `removed`, whatever is on disk now: a module made, removed and made again between two reads
//!   is `appeared`, `removed`, `appeared`;
//! - a lifetime whose end is already in the queue when its beginning is handled is not opened
//!   (the directory under that name now, if any, is a later one): it is `appeared` and `removed`,
//!   nothing read of another directory is put on it;
//! - `populated` and `emptied` are what a read of the lifetime's own `cgroup.events` (through
//!   the directory opened for it, never by name) says, when it differs from the last read;
//! - a lifetime last read populated that is removed was emptied first (the kernel refuses
//!   `rmdir(2)` of a populated cgroup, `EBUSY`): `emptied` with `inferred: true` comes before
//!   its `removed`;
//! - nothing else is invented: a lifetime that went before its directory could be opened, or
//!   whose files changed after its last read, may have been populated and emptied unseen (a
//!   modify of `cgroup.events` is also a freeze, and two in a row are one in the queue), so no
//!   `populated` is reported for it.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::io::{AsRawFd, OwnedFd};

use rustix::fs::{OFlags, inotify};
use rustix::io::Errno;

use super::{Armed, WatchEvent, WatchOptions, event, lost_event};
use crate::cgroup::CgroupDir;
use crate::cgroup::gone::is_gone;
use crate::cgroup::parse;
use crate::error::{Error, Result};
use crate::id::DirName;
use crate::layout::{Layout, ModuleRef};
use crate::module::{ModuleEntry, Root};
use crate::mutation::{self, Control};

mutation::alternative_module!("watch-coalesce", coalesced);

pub(super) type Key = (Layout, DirName);

#[derive(Default)]
pub(super) struct State {
    /// The module's path relative to the root (`ModuleEntry::path`).
    pub rel: String,
    /// The inode of the directory watched: a module made again under the same name is another.
    pub ino: Option<u64>,
    /// The last read of its `cgroup.events`; a new cgroup starts empty.
    populated: Option<bool>,
    counters: BTreeMap<String, u64>,
    pub above: bool,
    /// Found by a scan, not by its directory event: the `IN_CREATE` still queued for it (the
    /// scan at the start runs after the watch on its parent is set) is its own, not another
    /// lifetime.
    from_scan: bool,
    /// The watches on its files.
    wds: Vec<i32>,
    /// Its PSI triggers.
    pub triggers: Vec<Armed>,
    /// Its directory, opened when its lifetime began; every read of its files goes through it.
    dir: Option<CgroupDir>,
    /// Its kill counters, for `oomd_kill` and `emptied`'s `killed_by`.
    kills: crate::cause::attribution::Kills,
    /// The counters that tell an OOM kill's cause, as last read (when it was followed, and at
    /// each `memory_oom_kill`).
    oom: Option<crate::cause::oom_cause::OomCounters>,
    /// Its directory could not be opened when its lifetime began (said by `events_lost`):
    /// nothing of it is read until it is removed.
    unopened: bool,
    /// The errno of the last read of its `cgroup.events` that failed while it stays (said once
    /// by `events_lost`, until a read succeeds again).
    unreadable: Option<Errno>,
}

/// The directories watched for modules coming and going: the two that hold modules, and their
/// parents (whose events only ask for a rescan, e.g. `subc-modules/` made by the first module).
const MODULE_DIRS: [(&str, Option<Layout>); 4] = [
    ("", None),
    ("daemon", None),
    ("subc-modules", Some(Layout::Ck)),
    ("daemon/subc-modules", Some(Layout::Daemon)),
];

/// One event of the queue, as far as `watch` cares.
enum Queued {
    /// A directory appeared under this name (made, or renamed to it).
    Made(Layout, DirName),
    /// The directory under this name went (removed, or renamed away).
    Gone(Layout, DirName),
    /// A module's file changed (the watch's descriptor).
    Changed(i32),
    /// A module's file watch ended (its file went).
    Ignored(i32),
    /// A directory that holds modules changed: rescan.
    Rescan,
    /// A directory appeared or went in `layout`'s directory whose name cannot be a module's
    /// (these bytes, shown): said, then a rescan.
    Unnamed(Layout, String),
    /// The kernel's queue overflowed (`IN_Q_OVERFLOW`): events of any module were lost. Each
    /// module is told so (`events_lost`), then a rescan reports what is there now.
    Lost,
}

/// The `scope` of an `events_lost` of every module.
const ALL: &str = "all modules";

/// The `scope` of an `events_lost` of every module a name given names.
const NAMED: &str = "named";

/// The reason `events_lost` of all modules (or of a name given) gives after a queue overflow.
const OVERFLOWED_ALL: &str = "the inotify queue overflowed (this watch fell behind its reader, or the kernel's fs.inotify.max_queued_events was reached): lifetimes of modules since the previous line may be lost, those that began and ended unseen included; the lines that follow report what is there now";

/// What ENOSPC of `inotify_add_watch` means.
const LIMIT: &str = " (ENOSPC: the inotify watch limit was reached: fs.inotify.max_user_watches, or user.max_inotify_watches of a user namespace)";

/// Say a loss that this watch found (a directory it could not open or read, a lifetime it was
/// not following when the queue overflowed, a check the descriptor budget cannot hold).
fn say(out: &mut Vec<WatchEvent>, e: WatchEvent) {
    // Mutation: those losses are not said.
    if !mutation::active(Control::WatchGapSilent) {
        out.push(e);
    }
}

/// The reason `events_lost` gives after a queue overflow.
const OVERFLOWED: &str = "the inotify queue overflowed (this watch fell behind its reader, or the kernel's fs.inotify.max_queued_events was reached): events of this module since the previous line may be lost; the lines that follow report its state now";

pub(super) struct Watcher<'a> {
    pub root: &'a Root,
    pub opts: &'a WatchOptions,
    pub ino: OwnedFd,
    pub modules: HashMap<Key, State>,
    /// The watches on modules' files.
    wds: HashMap<i32, Key>,
    /// The watches on [`MODULE_DIRS`].
    dir_wds: HashMap<i32, Option<Layout>>,
    dirs: Vec<OwnedFd>,
    /// The cgroup2 mount, for the counters of the root's ancestors (an OOM kill's cause).
    mount: Option<CgroupDir>,
    /// How many pidfds the checks of `user.oomd_ooms` rises may hold at once, all modules
    /// together: a quarter of the soft RLIMIT_NOFILE, so that the directories of modules (and
    /// the files read through them) always find a descriptor.
    pidfd_budget: usize,
    /// The process events connector (root), to check stop marks against how the modules'
    /// processes ended; `None` where it could not be opened.
    pub exits: Option<super::exits::Exits>,
    /// The root's path below the cgroup2 mount (`/` first), as `/proc/<pid>/cgroup` says it.
    under: String,
}

impl<'a> Watcher<'a> {
    pub fn new(root: &'a Root, opts: &'a WatchOptions, ino: OwnedFd) -> Watcher<'a> {
        Watcher {
            root,
            opts,
            ino,
            modules: HashMap::new(),
            wds: HashMap::new(),
            dir_wds: HashMap::new(),
            dirs: Vec::new(),
            mount: crate::cgroup::mount::cgroup2_mount()
                .ok()
                .and_then(|m| CgroupDir::open(&m).ok()),
            pidfd_budget: pidfd_budget(),
            exits: None,
            under: String::new(),
        }
        .with_exits()
    }

    /// The process events connector, for the cgroups below the root (none under the mutation
    /// `watch-stop-mark-trusted`, nor where it is refused: not root).
    fn with_exits(mut self) -> Self {
        let under = self.mount.as_ref().and_then(|m| {
            let rel = self.root.path().strip_prefix(m.path()).ok()?;
            Some(format!("/{}", rel.to_str()?))
        });
        if let Some(under) = under {
            if !mutation::active(Control::WatchStopMarkTrusted) {
                self.exits = super::exits::Exits::open(&under).ok();
            }
            self.under = under;
        }
        self
    }

    /// The ends the connector told since the last read: each process that ended in a way no
    /// stop of ck-cgroup's causes is noted on the module whose directory (or a sub-cgroup of it)
    /// it was in.
    pub fn read_exits(&mut self) {
        let Some(exits) = self.exits.as_mut() else {
            return;
        };
        for e in exits.read() {
            let Some(why) = e.against_a_stop() else {
                continue;
            };
            let Some(rel) = e
                .cgroup
                .strip_prefix(&self.under)
                .and_then(|r| r.strip_prefix('/'))
            else {
                continue;
            };
            if let Some(st) = self
                .modules
                .values_mut()
                .find(|st| rel == st.rel || rel.starts_with(&format!("{}/", st.rel)))
            {
                st.kills.against_stop(why);
            }
        }
    }

    /// The counters that tell an OOM kill's cause in the module at `rel`, read now.
    fn oom_counters(&self, rel: &str) -> crate::cause::oom_cause::OomCounters {
        crate::cause::oom_cause::OomCounters::read(self.root.dir(), rel, self.mount.as_ref())
    }

    /// Read every event queued now (the fd is non-blocking), in the kernel's order.
    fn read_queue(&mut self, buf: &mut [std::mem::MaybeUninit<u8>]) -> Result<Vec<Queued>> {
        use inotify::ReadFlags;
        let mut out = Vec::new();
        let mut reader = inotify::Reader::new(&self.ino, buf);
        loop {
            let ev = match reader.next() {
                Ok(ev) => ev,
                Err(Errno::AGAIN) | Err(Errno::INTR) => break,
                Err(e) => return Err(Error::io("read inotify for", self.root.path(), e)),
            };
            let mask = ev.events();
            if mask.contains(ReadFlags::QUEUE_OVERFLOW) {
                // Events were lost: said, then only a full rescan knows what is there now.
                // Mutation: the loss is not said (the rescan alone).
                out.push(if mutation::active(Control::WatchLossSilent) {
                    Queued::Rescan
                } else {
                    Queued::Lost
                });
            } else if let Some(&layout) = self.dir_wds.get(&ev.wd()) {
                let name = ev
                    .file_name()
                    .and_then(|n| DirName::from_bytes(n.to_bytes()).ok());
                if let (Some(l), None, Some(n)) = (layout, &name, ev.file_name())
                    && mask.contains(ReadFlags::ISDIR)
                {
                    let shown = crate::id::name_bytes::escaped(n.to_bytes());
                    out.push(Queued::Unnamed(l, format!("{}/{shown}", l.dir())));
                    continue;
                }
                match (layout, name) {
                    (Some(l), Some(n)) if mask.contains(ReadFlags::ISDIR) => {
                        if mask.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                            out.push(Queued::Made(l, n));
                        } else if mask.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM) {
                            out.push(Queued::Gone(l, n));
                        }
                    }
                    // A file, not a module.
                    (Some(_), Some(_)) => {}
                    // A parent's event, or a directory that holds modules went itself.
                    _ => out.push(Queued::Rescan),
                }
            } else if self.wds.contains_key(&ev.wd()) {
                out.push(if mask.contains(ReadFlags::IGNORED) {
                    Queued::Ignored(ev.wd())
                } else {
                    Queued::Changed(ev.wd())
                });
            } else if !mask.contains(ReadFlags::IGNORED) {
                out.push(Queued::Rescan);
            }
        }
        Ok(out)
    }

    /// Read the queue and turn it into events, one queued event at a time, in order.
    pub fn drain(
        &mut self,
        buf: &mut [std::mem::MaybeUninit<u8>],
        out: &mut Vec<WatchEvent>,
    ) -> Result<()> {
        let mut queue = self.read_queue(buf)?;
        if mutation::active(Control::WatchBlind) {
            // Mutation: the kernel's modify events are dropped.
            queue.retain(|q| !matches!(q, Queued::Changed(_)));
        }
        if mutation::active(Control::WatchByName) {
            // Mutation: directory events only ask for a rescan, and a rescan takes a module
            // that has the name of one it watches for that one (the state of the removed one).
            for q in &mut queue {
                if matches!(q, Queued::Made(..) | Queued::Gone(..)) {
                    *q = Queued::Rescan;
                }
            }
        }
        mutation::alternative!("watch-coalesce", return self.coalesced(queue, out););
        let mut rescan = false;
        for i in 0..queue.len() {
            match &queue[i] {
                Queued::Made(l, name) => {
                    let (l, name) = (*l, name.clone());
                    let ends = queue[i + 1..]
                        .iter()
                        .any(|q| matches!(q, Queued::Gone(gl, gn) if *gl == l && *gn == name));
                    self.made(l, &name, ends, out)?;
                }
                Queued::Gone(l, name) => self.gone(&(*l, name.clone()), true, out),
                Queued::Changed(wd) => {
                    if let Some(k) = self.wds.get(wd).cloned() {
                        self.update(&k, true, out);
                    }
                }
                Queued::Ignored(wd) => {
                    // The file went with its module; its directory event says so.
                    self.wds.remove(wd);
                }
                Queued::Rescan => rescan = true,
                Queued::Unnamed(l, found) => {
                    say(
                        out,
                        lost_event(
                            None,
                            Some(*l),
                            Some(found.clone()),
                            format!(
                                "a directory appeared or went whose name cannot be a module's \
                                 (the kernel gave bytes no directory name holds): {found}; its \
                                 lifetime is not reported; the lines that follow report what is \
                                 there now"
                            ),
                        ),
                    );
                    rescan = true;
                }
                Queued::Lost => {
                    self.lost_all(out);
                    rescan = true;
                }
            }
        }
        if rescan {
            self.rescan(true, out)?;
        }
        Ok(())
    }

    /// Tell every module followed that its events may have been lost (a queue overflow); then
    /// say it of every module, or of each name given, since a lifetime that began and ended in
    /// the gap was never followed (an empty root, or `watch late` still waiting for `late`).
    fn lost_all(&self, out: &mut Vec<WatchEvent>) {
        let mut keys: Vec<&Key> = self.modules.keys().collect();
        keys.sort();
        for k in keys {
            let mut e = event(k, "events_lost", None, None, None);
            e.error = Some(OVERFLOWED.to_string());
            out.push(e);
        }
        if self.opts.ids.is_empty() {
            say(
                out,
                lost_event(None, None, Some(ALL.into()), OVERFLOWED_ALL.into()),
            );
        }
        for id in &self.opts.ids {
            say(
                out,
                lost_event(
                    Some(id.name.clone()),
                    id.layout,
                    Some(NAMED.into()),
                    OVERFLOWED_ALL.into(),
                ),
            );
        }
    }

    fn wanted(&self, m: &ModuleRef, module: Option<&DirName>) -> bool {
        self.opts.ids.is_empty() || self.opts.ids.iter().any(|i| i.names(m, module))
    }

    fn add(
        &mut self,
        fd: impl AsRawFd,
        file: &str,
        flags: inotify::WatchFlags,
    ) -> std::result::Result<i32, Errno> {
        let path = if file.is_empty() {
            format!("/proc/self/fd/{}", fd.as_raw_fd())
        } else {
            format!("/proc/self/fd/{}/{file}", fd.as_raw_fd())
        };
        inotify::add_watch(&self.ino, path, flags)
    }

    /// A directory appeared under `name` in `layout`'s directory: a lifetime of that module
    /// begins, when it is one that is wanted. `ends`: its end is queued already, so the
    /// directory under that name now is not its own (nothing is opened for it).
    fn made(
        &mut self,
        layout: Layout,
        name: &DirName,
        ends: bool,
        out: &mut Vec<WatchEvent>,
    ) -> Result<()> {
        let m = ModuleRef {
            layout,
            name: name.clone(),
        };
        if !self.wanted(&m, m.module_name().as_ref()) {
            return Ok(());
        }
        let k = (layout, name.clone());
        if let Some(st) = self.modules.get_mut(&k)
            && st.from_scan
        {
            // The scan found the directory this event made.
            st.from_scan = false;
            return Ok(());
        }
        // A lifetime open still had its end lost (a queue overflow): it ended before this one.
        self.gone(&k, true, out);
        let dir = if ends {
            Opened::Gone
        } else {
            self.open_module(&m.rel())
        };
        self.follow(k, m.rel(), dir, true, out)
    }

    /// Open a module's directory: a directory gone meanwhile is [`Opened::Gone`] (its end is
    /// queued); any other errno is [`Opened::Failed`], said by `events_lost`.
    fn open_module(&self, rel: &str) -> Opened {
        match self.root.dir().open_dir(rel) {
            Ok(d) => Opened::Dir(d),
            Err(e) if is_gone(e) => Opened::Gone,
            Err(e) => Opened::Failed(e),
        }
    }

    /// The lifetime open under `k`'s name ended: report it (after the `emptied` it must have
    /// had, with `infer`, when it was last read populated), stop watching its files.
    fn gone(&mut self, k: &Key, infer: bool, out: &mut Vec<WatchEvent>) {
        let Some(mut st) = self.modules.remove(k) else {
            return;
        };
        // The marks on the directory (systemd-oomd's, our own stop's) are still read through the
        // fd held since its lifetime began, though it was removed before it was read empty: a
        // stop that removed it at once would otherwise go unnamed.
        if let Some(dir) = &st.dir {
            st.kills
                .observe_removed(crate::cause::counters::kill_counters(dir, ""));
        }
        for wd in st.wds {
            self.wds.remove(&wd);
            // Already gone with its file, as a rule.
            let _ = inotify::remove_watch(&self.ino, wd);
        }
        if infer && st.populated == Some(true) {
            let mut e = event(k, "emptied", None, None, None);
            e.inferred = Some(true);
            e.killed_by = Some(st.kills.killed_by());
            out.push(e);
        }
        out.push(event(k, "removed", None, None, None));
    }

    /// Start following module `k` at `rel` (its directory opened as `dir`, when this lifetime's
    /// directory could be had): watch its event files, set its PSI triggers, report it as
    /// appeared (with `report`) and its state. A directory that could not be opened is said
    /// (`events_lost`, the errno). A trigger the kernel refuses is the error.
    fn follow(
        &mut self,
        k: Key,
        rel: String,
        opened: Opened,
        report: bool,
        out: &mut Vec<WatchEvent>,
    ) -> Result<()> {
        let (dir, unopened) = match opened {
            Opened::Dir(d) => (Some(d), None),
            Opened::Gone => (None, None),
            Opened::Failed(e) => (None, Some(e)),
        };
        // A new cgroup starts empty: a module that already holds a process is reported as
        // populated right after it appeared.
        let oom = Some(self.oom_counters(&rel));
        let mut st = State {
            oom,
            rel,
            ino: dir.as_ref().and_then(|d| inode(d.fd())),
            populated: Some(false),
            from_scan: !report,
            unopened: unopened.is_some(),
            ..State::default()
        };
        // Files whose watch could not be added (the watch limit, EMFILE): the module's events
        // from them are lost, and it is said, once, when following begins.
        let mut unwatched = Vec::new();
        if let Some(dir) = dir {
            let files = [
                ("cgroup.events", inotify::WatchFlags::MODIFY),
                ("memory.events", inotify::WatchFlags::MODIFY),
                ("pids.events", inotify::WatchFlags::MODIFY),
                // systemd-oomd's setxattr of user.oomd_ooms on the directory (cause/attribution.rs).
                ("", inotify::WatchFlags::ATTRIB),
            ];
            for (file, flags) in files {
                match self.add(dir.fd(), file, flags) {
                    Ok(wd) => {
                        self.wds.insert(wd, k.clone());
                        st.wds.push(wd);
                    }
                    // No such file: its controller is not enabled; the module removed meanwhile.
                    Err(e) if crate::cgroup::gone::is_gone(e) => {}
                    Err(e) => unwatched.push((if file.is_empty() { "." } else { file }, e)),
                }
            }
            st.dir = Some(dir);
        }
        let mut unavailable = Vec::new();
        if st.dir.is_some() {
            st.triggers = self.arm(&k, &st.rel, st.ino, &mut unavailable)?;
        }
        self.modules.insert(k.clone(), st);
        if report {
            out.push(event(&k, "appeared", None, None, None));
        }
        if let Some(errno) = unopened {
            let mut e = event(&k, "events_lost", None, None, None);
            e.error = Some(format!(
                "its directory could not be opened: {}{}: its populated, emptied and counters \
                 are not reported (this lifetime's removed is)",
                crate::error::errno_text(errno),
                why_errno(errno)
            ));
            say(out, e);
        }
        // Mutation: a watch that could not be added is not said.
        if !unwatched.is_empty() && !mutation::active(Control::WatchLossSilent) {
            let what: Vec<String> = unwatched
                .iter()
                .map(|(f, e)| format!("{f}: {}", crate::error::errno_text(*e)))
                .collect();
            let limit = if unwatched.iter().any(|(_, e)| *e == Errno::NOSPC) {
                LIMIT
            } else {
                ""
            };
            let mut e = event(&k, "events_lost", None, None, None);
            e.error = Some(format!(
                "its files cannot be watched{limit}: {}; their changes are not reported",
                what.join(", ")
            ));
            out.push(e);
        }
        out.append(&mut unavailable);
        self.update(&k, report, out);
        Ok(())
    }

    /// (Re)watch the directories that hold modules, then find modules that appeared, went, or
    /// were replaced by a directory of the same name.
    pub fn rescan(&mut self, report: bool, out: &mut Vec<WatchEvent>) -> Result<()> {
        let dir_flags = inotify::WatchFlags::CREATE
            | inotify::WatchFlags::DELETE
            | inotify::WatchFlags::MOVED_FROM
            | inotify::WatchFlags::MOVED_TO
            | inotify::WatchFlags::ONLYDIR;
        self.dirs.clear();
        self.dir_wds.clear();
        // A directory that is not there (yet) is watched for by its parent's; one that cannot be
        // opened or watched (EMFILE, the inotify watch limit) is the error: a watch that watches
        // nothing must not wait forever in silence.
        for (rel, layout) in MODULE_DIRS {
            let path = || self.root.dir().display_path(rel);
            // Said on stdout too, before the error ends the watch: every module in it is lost.
            let lost = |what: &str, e: Errno, out: &mut Vec<WatchEvent>| {
                let found = if rel.is_empty() { "." } else { rel };
                say(
                    out,
                    lost_event(
                        None,
                        layout,
                        Some(found.into()),
                        format!(
                            "{found} could not be {what}: {}{}: the modules in it are not \
                             followed; this watch ends",
                            crate::error::errno_text(e),
                            if e == Errno::NOSPC {
                                LIMIT
                            } else {
                                why_errno(e)
                            }
                        ),
                    ),
                );
            };
            let fd = match self
                .root
                .dir()
                .open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY)
            {
                Ok(fd) => fd,
                Err(Errno::NOENT) => continue,
                Err(e) => {
                    lost("opened", e, out);
                    return Err(Error::io("open", path(), e));
                }
            };
            match self.add(fd.as_raw_fd(), "", dir_flags) {
                Ok(wd) => {
                    self.dir_wds.insert(wd, layout);
                }
                Err(Errno::NOENT) => continue,
                Err(e) => {
                    lost("watched (inotify_add_watch)", e, out);
                    return Err(Error::io("watch (inotify_add_watch)", path(), e));
                }
            }
            self.dirs.push(fd);
        }
        let list: Vec<ModuleEntry> = self
            .root
            .list()?
            .into_iter()
            .filter(|m| {
                let r = ModuleRef {
                    layout: m.layout,
                    name: m.name.clone(),
                };
                self.wanted(&r, m.module.as_ref())
            })
            .collect();
        let present: Vec<Key> = list.iter().map(|m| (m.layout, m.name.clone())).collect();
        let gone: Vec<Key> = self
            .modules
            .keys()
            .filter(|k| !present.contains(k))
            .cloned()
            .collect();
        for k in gone {
            self.gone(&k, true, out);
        }
        for m in &list {
            let k = (m.layout, m.name.clone());
            let dir = self.open_module(&m.rel());
            if let Some(st) = self.modules.get(&k) {
                let ino = match &dir {
                    Opened::Dir(d) => inode(d.fd()),
                    _ => None,
                };
                // A lifetime whose directory could not be opened was said to be unread: the same
                // one, as far as can be told (its removed comes from the queue).
                if mutation::active(Control::WatchByName)
                    || ino.is_none()
                    || st.ino == ino
                    || st.unopened
                {
                    continue;
                }
                // Made again under the same name since it was watched.
                self.gone(&k, true, out);
            }
            self.follow(k, m.rel(), dir, report, out)?;
        }
        Ok(())
    }

    /// Re-read a module's event files through its own directory; report what changed. A read
    /// that fails (the directory went) changes nothing: its `removed` comes from the queue.
    fn update(&mut self, k: &Key, report: bool, out: &mut Vec<WatchEvent>) {
        let Some(st) = self.modules.get(k) else {
            return;
        };
        // The mutation `watch-coalesce` reads by name, whatever directory holds it now.
        let by_name;
        let dir = match (&st.dir, mutation::active(Control::WatchCoalesce)) {
            (Some(d), false) => d,
            // A lifetime whose directory was gone before it was handled: nothing to read.
            (None, false) => return,
            (_, true) => match self.root.dir().open_dir(&st.rel) {
                Ok(d) => {
                    by_name = d;
                    &by_name
                }
                Err(_) => return,
            },
        };
        let text = match dir.read_raw("cgroup.events") {
            Ok(t) => t,
            // Removed, or being removed: its removed is queued.
            Err(errno) if is_gone(errno) => return,
            Err(errno) => {
                // Said once, until a read succeeds again.
                if let Some(st) = self.modules.get_mut(k)
                    && st.unreadable != Some(errno)
                {
                    st.unreadable = Some(errno);
                    let mut e = event(k, "events_lost", None, None, None);
                    e.error = Some(format!(
                        "its cgroup.events could not be read: {}{}: its populated and emptied \
                         are not reported until a read succeeds",
                        crate::error::errno_text(errno),
                        why_errno(errno)
                    ));
                    say(out, e);
                }
                return;
            }
        };
        let Some(populated) = parse::events(&text).populated else {
            return;
        };
        let mut counters = BTreeMap::new();
        for (file, prefix, keys) in [
            (
                "memory.events",
                "memory_",
                &["low", "high", "max", "oom", "oom_kill", "oom_group_kill"][..],
            ),
            ("pids.events", "pids_", &["max"][..]),
        ] {
            if let Ok(t) = dir.read_raw(file) {
                let kv = parse::flat_keyed(&t);
                for key in keys {
                    if let Some(v) = kv.get(*key) {
                        counters.insert(format!("{prefix}{key}"), *v);
                    }
                }
            }
        }
        let kills = crate::cause::counters::kill_counters(dir, "");
        // The pidfds other modules' checks hold: this one's rise may take what is left of the
        // budget (its own check's, replaced by a new rise, included).
        let held_by_others: usize = self
            .modules
            .iter()
            .filter(|(key, _)| *key != k)
            .map(|(_, s)| s.kills.held())
            .sum();
        let room = self.pidfd_budget.saturating_sub(held_by_others);
        // An OOM kill's cause, from the counters now against those of the last read.
        let oom_kill_rose = self.modules.get(k).is_some_and(|st| {
            counters.get("memory_oom_kill").copied().unwrap_or(0)
                > st.counters.get("memory_oom_kill").copied().unwrap_or(0)
        });
        let oom_now = oom_kill_rose.then(|| {
            let rel = self
                .modules
                .get(k)
                .map(|st| st.rel.clone())
                .unwrap_or_default();
            self.oom_counters(&rel)
        });
        let Some(st) = self.modules.get_mut(k) else {
            return;
        };
        let oom_cause = oom_now.map(|now| {
            let c = crate::cause::oom_cause::cause(&st.oom.clone().unwrap_or_default(), &now);
            st.oom = Some(now);
            c
        });
        let populated_now = populated && st.populated != Some(true);
        let rise = st.kills.observe(kills, populated_now);
        // Its processes now, for the process events connector to tell their ends by.
        if let (true, Some(x), Some(d)) = (populated, self.exits.as_mut(), st.dir.as_ref())
            && let Ok(pids) = crate::cgroup::tree::members(d, "")
        {
            x.remember(&pids, &x.cgroup_path(&st.rel));
        }
        if report {
            if let Some((v, prev)) = rise {
                let source = crate::cause::attribution::OOMD_KILL_SOURCE;
                let name = crate::cause::attribution::OOMD_KILL;
                out.push(event(k, name, Some(v), prev, Some(source.into())));
                // The processes the kill must end, held to check that it did.
                let pids = st
                    .dir
                    .as_ref()
                    .and_then(|d| crate::cgroup::tree::members(d, "").ok())
                    .unwrap_or_default();
                // The descriptor budget: the checks never take the descriptors the directories
                // need (a module that appears meanwhile must be opened).
                let budgeted = if mutation::active(Control::WatchPidfdsUnbudgeted) {
                    pids.len()
                } else {
                    pids.len().min(room)
                };
                st.kills.expect_kill(&pids[..budgeted]);
                let wanted = pids.len().min(crate::cause::attribution::CONFIRM_HOLD);
                let held = st.kills.held();
                if held < wanted {
                    let mut e = event(k, "events_lost", None, None, None);
                    e.error = Some(format!(
                        "the check of this rise of user.oomd_ooms holds {held} of the {wanted} \
                         processes it would hold: this watch holds at most {} descriptors for \
                         those checks (a quarter of its RLIMIT_NOFILE), or no descriptor was \
                         left; an oomd_kill_unconfirmed of this rise may be missing{}",
                        self.pidfd_budget,
                        if held == 0 {
                            " (none held: the rise is taken at its word)"
                        } else {
                            ""
                        }
                    ));
                    say(out, e);
                }
            }
            if Some(populated) != st.populated {
                let name = if populated { "populated" } else { "emptied" };
                let mut e = event(k, name, None, None, None);
                if !populated {
                    if let Some(why) = st.kills.stop_doubt() {
                        let name = crate::cause::attribution::STOP_UNCONFIRMED;
                        let source = format!(
                            "user.ck_cgroup_stops rose, and {why}: no stop of ck-cgroup's ends a \
                             process so"
                        );
                        out.push(event(k, name, None, None, Some(source)));
                    }
                    e.killed_by = Some(st.kills.killed_by());
                }
                out.push(e);
            }
            for (name, v) in &counters {
                let prev = st.counters.get(name).copied();
                if *v > prev.unwrap_or(0) {
                    let file = if name.starts_with("pids_") {
                        "pids.events"
                    } else {
                        "memory.events"
                    };
                    let mut e = event(k, name, Some(*v), prev, Some(file.into()));
                    if name == "memory_oom_kill" {
                        match &oom_cause {
                            Some(Ok(Some(c))) => e.oom_cause = Some(c.clone()),
                            Some(Ok(None)) | None => {}
                            Some(Err(why)) => e.oom_cause_unknown = Some(why.clone()),
                        }
                    }
                    out.push(e);
                }
            }
        }
        st.populated = Some(populated);
        st.unreadable = None;
        st.counters.extend(counters);
    }
}

impl Watcher<'_> {
    /// When the next check of a rise of `user.oomd_ooms` is due, if any is pending.
    pub fn next_due(&self) -> Option<std::time::Instant> {
        self.modules.values().filter_map(|st| st.kills.due()).min()
    }

    /// The checks that are due: an `oomd_kill_unconfirmed` event for each module whose
    /// processes outlived the kill its mark claimed (value: how many of those held still run).
    pub fn confirm_oomd(&mut self, out: &mut Vec<WatchEvent>) {
        use crate::cause::attribution::{OOMD_KILL_UNCONFIRMED, OOMD_UNCONFIRMED_SOURCE};
        let now = std::time::Instant::now();
        let mut keys: Vec<&Key> = self.modules.keys().collect();
        keys.sort();
        let keys: Vec<Key> = keys.into_iter().cloned().collect();
        for k in keys {
            let Some(st) = self.modules.get_mut(&k) else {
                continue;
            };
            let dir = st.dir.as_ref();
            let members = || dir.and_then(|d| crate::cgroup::tree::members(d, "").ok());
            if let Some(running) = st.kills.confirm(now, members) {
                out.push(event(
                    &k,
                    OOMD_KILL_UNCONFIRMED,
                    Some(running.len() as u64),
                    None,
                    Some(OOMD_UNCONFIRMED_SOURCE.into()),
                ));
            }
        }
    }
}

/// A quarter of the soft RLIMIT_NOFILE ([`Watcher::pidfd_budget`]).
fn pidfd_budget() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    usize::try_from(soft / 4).unwrap_or(usize::MAX)
}

/// A module's directory, as an open of it went.
pub(super) enum Opened {
    Dir(CgroupDir),
    /// Gone (removed, or being removed) before it could be opened.
    Gone,
    /// Refused: the errno.
    Failed(Errno),
}

/// What an errno of an open or read of a module's directory means here.
fn why_errno(errno: Errno) -> &'static str {
    match errno {
        Errno::MFILE | Errno::NFILE => {
            " (no descriptor left for it: this watch's RLIMIT_NOFILE, or the system's fs.file-max; \
             a higher `ulimit -n`, or fewer modules)"
        }
        Errno::ACCESS | Errno::PERM => {
            " (its directory's mode or owner denies this watch's uid: the module changed it, \
             e.g. chmod 000)"
        }
        _ => "",
    }
}

/// The inode of an open directory: a cgroup made again under the same name has another one.
pub(super) fn inode(fd: impl rustix::fd::AsFd) -> Option<u64> {
    rustix::fs::fstat(fd).ok().map(|st| st.st_ino)
}
