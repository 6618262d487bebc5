//! The preludes many tests begin with: a module with a live process in it (`exec ID -- sleep
//! 600`, returned once the process is placed), and a shell CMD that takes signals in traps and
//! says when they are set.

use std::path::Path;
use std::process::{Child, Command};

use super::{World, cgroup_of, eventually, v2_path};

impl World {
    /// Module `id`'s directory under the sandbox (`subc-modules/ID`, the helper's layout).
    pub fn module_dir(&self, id: &str) -> std::path::PathBuf {
        self.root().join("subc-modules").join(id)
    }

    /// `exec ID -- sleep 600` on this world's root, its process tracked, returned once that
    /// process is in the module (its /proc/PID/cgroup, as the kernel placed it): a module with a
    /// live process in it, for a test of what is done to one.
    pub fn exec_sleep(&self, id: &str) -> Child {
        let mut c = self.ck();
        c.args(["exec", id, "--", "sleep", "600"]);
        self.exec_placed(c, id)
    }

    /// Spawn `c` (a `ck-cgroup ... exec ID -- CMD` of this world's root, as [`World::ck`] or
    /// `nobody::ck_as_nobody` makes it), track it, and return it once its process is in module
    /// `id` (the helper execs CMD, so the pid is CMD's).
    pub fn exec_placed(&self, mut c: Command, id: &str) -> Child {
        let child = c.spawn().expect("spawn ck-cgroup exec");
        self.track(child.id());
        wait_placed(child.id(), &self.module_dir(id));
        child
    }
}

/// Wait until `pid` is in the cgroup `module` (an absolute directory under the cgroup2 mount), as
/// /proc/PID/cgroup says.
#[track_caller]
pub fn wait_placed(pid: u32, module: &Path) {
    let want = v2_path(module);
    eventually(&format!("{pid} placed in {want}"), || {
        cgroup_of(pid) == want
    });
}

/// The text of a shell CMD (`sh -c`) that takes signals in traps: `setup` (its `trap`s, and
/// whatever it starts first), then its `$$` written to `ready` (so the traps are set once the
/// line is there: [`World::line_from`]), then a `sleep secs` in the background that it `wait`s
/// for, again after each trap that does not end it. `wait` returns as a signal arrives, so the
/// shell runs its trap at once (a sleep in the foreground would hold the trap back until the
/// sleep ends); `secs` bounds the wait, so a signal that never came fails the test instead of
/// hanging it.
pub fn trapping_sh(setup: &str, ready: &Path, secs: u32) -> String {
    format!(
        "{setup}; echo $$ > {}; sleep {secs} & while ! wait; do :; done",
        ready.display()
    )
}
