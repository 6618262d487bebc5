//! A module's lifetimes: one begins when a directory is made under its name (its directory
//! opened, its files watched, its state read), one ends when the directory goes (an `emptied`
//! inferred first where it was last read populated), and a scan finds what is there now (at the
//! start, and after the queue overflowed).

use std::os::unix::io::AsRawFd;

use rustix::fs::{OFlags, inotify};
use rustix::io::Errno;

use super::{Key, LIMIT, MODULE_DIRS, Opened, State, Watcher, inode, say, why_errno};
use crate::cgroup::gone::is_gone;
use crate::error::{Error, Result};
use crate::id::DirName;
use crate::layout::{Layout, ModuleRef};
use crate::module::ModuleEntry;
use crate::mutation::{self, Control};
use crate::telemetry::watch::{WatchEvent, event, lost_event};

impl Watcher<'_> {
    /// A directory appeared under `name` in `layout`'s directory: a lifetime of that module
    /// begins, when it is one that is wanted. `ends`: its end is queued already, so the
    /// directory under that name now is not its own (nothing is opened for it).
    pub(super) fn made(
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
    pub(super) fn open_module(&self, rel: &str) -> Opened {
        match self.root.dir().open_dir(rel) {
            Ok(d) => Opened::Dir(d),
            Err(e) if is_gone(e) => Opened::Gone,
            Err(e) => Opened::Failed(e),
        }
    }

    /// The lifetime open under `k`'s name ended: report it (after the `emptied` it must have
    /// had, with `infer`, when it was last read populated), stop watching its files.
    pub(super) fn gone(&mut self, k: &Key, infer: bool, out: &mut Vec<WatchEvent>) {
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
    pub(super) fn follow(
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
}
