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
//!
//! Here the queue is read and handed out; `lifetime` begins and ends lifetimes (and scans what
//! is there), `update` reads one and says what changed.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::io::{AsRawFd, OwnedFd};

use rustix::fs::inotify;
use rustix::io::Errno;

use super::{Armed, WatchEvent, WatchOptions, event, lost_event};
use crate::cgroup::CgroupDir;
use crate::error::{Error, Result};
use crate::id::DirName;
use crate::layout::{Layout, ModuleRef};
use crate::module::Root;
use crate::mutation::{self, Control};

mod lifetime;
mod update;

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
