//! The control `watch-coalesce`'s alternative reading of the queue, compiled only into a build
//! with it: a read is taken as one snapshot, the directory events first (a name made and gone and
//! made again is one module), then the files read by name; no `emptied` is inferred before a
//! `removed`.

use super::{Queued, Watcher, inode};
use crate::error::Result;
use crate::telemetry::watch::WatchEvent;

impl Watcher<'_> {
    #[inline(never)] // a function of its own, so that scripts/check-release-gate can find it
    pub(super) fn coalesced(&mut self, queue: Vec<Queued>, out: &mut Vec<WatchEvent>) -> Result<()> {
        let mut rescan = false;
        let mut changed = Vec::new();
        for q in &queue {
            match q {
                Queued::Made(l, name) => {
                    let k = (*l, name.clone());
                    if !self.modules.contains_key(&k) {
                        self.made(*l, name, false, out)?;
                    }
                }
                Queued::Gone(l, name) => {
                    // The directory under that name now, when it is the one watched, is
                    // taken for it (the event "was about an older one").
                    let k = (*l, name.clone());
                    let Some(st) = self.modules.get(&k) else {
                        continue;
                    };
                    let now = self.root.dir().open_dir(&st.rel).ok();
                    if now.is_none() || now.as_ref().and_then(|d| inode(d.fd())) != st.ino {
                        self.gone(&k, false, out);
                    }
                }
                Queued::Changed(wd) => changed.extend(self.wds.get(wd).cloned()),
                Queued::Ignored(wd) => {
                    self.wds.remove(wd);
                }
                Queued::Rescan | Queued::Lost | Queued::Unnamed(..) => rescan = true,
            }
        }
        for k in changed {
            self.update(&k, true, out);
        }
        if rescan {
            self.rescan(true, out)?;
        }
        Ok(())
    }
}
