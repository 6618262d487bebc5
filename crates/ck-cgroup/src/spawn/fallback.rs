//! The namespaces a spawn may drop where the host cannot make them, and the one line that says
//! so: `Root::spawn_with_fallback` records each in
//! [`ModuleChild::fallbacks`](super::ModuleChild::fallbacks), and the CLI prints
//! [`Fallback::line`] for each (`run ID: LINE`). A daemon that calls it gets the CLI's
//! behaviour, words included.

/// A namespace the spawn went on without (principle 6: a fallback is said, never silent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// No PID namespace (neither `CLONE_NEWPID` nor the retry with a user namespace worked):
    /// the program runs without one, so a SIGKILL of the process that spawned it kills the
    /// program alone, not the rest of the module. `reason`: the library's error message, which
    /// names each step tried and the last one's errno.
    NoPidNamespace {
        /// What failed (`no PID namespace for a process of PATH (clone3 CLONE_NEWPID: ...)`).
        reason: String,
    },
    /// No cgroup namespace (neither `unshare(CLONE_NEWCGROUP)` nor the retry with a user
    /// namespace worked): the program can leave its module, or write its limits, wherever its
    /// uid may write.
    NoCgroupNamespace {
        /// The errno of the last step, as text (`EPERM (Operation not permitted)`).
        reason: String,
    },
}

impl Fallback {
    /// The one line for it: what was dropped, why, and what it costs; `program` as the caller
    /// names it (the CLI: CMD's first word, or `CMD`).
    pub fn line(&self, program: &str) -> String {
        match self {
            Fallback::NoPidNamespace { reason } => format!(
                "{reason}: {program} runs without one, and a SIGKILL of this helper kills {program} alone, not the rest of the module"
            ),
            Fallback::NoCgroupNamespace { reason } => format!(
                "no cgroup namespace here ({reason}): {program} runs without one and can leave its module or write its limits where its uid may write"
            ),
        }
    }
}
