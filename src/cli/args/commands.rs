//! The command list: one row per command, with its help (the variant's doc comment: clap's about
//! and long help, the man page's DESCRIPTION), its arguments' type (`<Name>Opts`, [`super::opts`])
//! and its name. `commands!` makes from it everything that lists the commands: clap's
//! [`Command`], its [`Kind`] (a command without its arguments) with [`Kind::ALL`] and
//! [`Kind::name`], each command's promises ([`Kind::promises`], from the literal its arguments'
//! type gives, [`Promise`]) and what its flags give ([`Command::given`]), and the lazy parser's
//! table ([`Kind::augment_args`], `super::lazy`).
//!
//! A new command is one row here, its arguments' type, its [`Promise`] (one [`Promises`]
//! literal, `cli::promises::commands`), its arm of `main.rs`'s `dispatch`, its handler
//! (`cmd_<name>`) and its renderer; a row without its arguments' type, its `Promise` or its arm
//! does not compile.

use crate::cli::promises::types::{Given, Promise, Promises};

use super::opts::*;

/// The list, each row `/// help` then `Variant(Opts) = "name",` (see the module's text).
macro_rules! commands {
    ($(
        $(#[$($doc:tt)*])*
        $Variant:ident($Opts:ident) = $name:literal,
    )*) => {
        /// The commands.
        #[derive(Debug, clap::Subcommand)]
        pub enum Command {
            $(
                $(#[$($doc)*])*
                #[command(name = $name)]
                $Variant($Opts),
            )*
        }

        /// A command, without its arguments: one per [`Command`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Kind {
            $($Variant,)*
        }

        impl Kind {
            /// Every kind, in `--help`'s order.
            pub const ALL: [Kind; [$($name),*].len()] = [$(Kind::$Variant),*];

            /// The subcommand's name, as clap knows it.
            pub fn name(self) -> &'static str {
                match self {
                    $(Kind::$Variant => $name,)*
                }
            }

            /// What it promises ([`Promise::PROMISES`] of its arguments' type).
            pub fn promises(self) -> Promises {
                match self {
                    $(Kind::$Variant => <$Opts as Promise>::PROMISES,)*
                }
            }

            /// `c` (a command named [`Self::name`]) with this command's arguments: the lazy
            /// parser's subcommand, made by the same derive as the whole tree's.
            pub fn augment_args(self, c: clap::Command) -> clap::Command {
                match self {
                    $(Kind::$Variant => <$Opts as clap::Args>::augment_args(c),)*
                }
            }
        }

        impl Command {
            /// This command's kind.
            pub fn kind(&self) -> Kind {
                match self {
                    $(Command::$Variant(_) => Kind::$Variant,)*
                }
            }

            /// What its flags give ([`Promise::given`] of its arguments).
            pub fn given(&self) -> Given<'_> {
                match self {
                    $(Command::$Variant(o) => o.given(),)*
                }
            }
        }
    };
}

commands! {
    /// Make daemon/ and subc-modules/, move the root's processes into daemon/, enable controllers.
    /// With CMD: then execute CMD in daemon/ (same pid, nothing printed), as the unit's
    /// ExecStart= does for a daemon that does not run `init` itself.
    Init(InitOpts) = "init",
    /// Make a module's cgroup subc-modules/<ID> (idempotent), with limits.
    Create(CreateOpts) = "create",
    /// Change the limits of a module.
    Set(SetOpts) = "set",
    /// Move this process into the module, then execute CMD (same pid; the caller stays its
    /// parent), in a cgroup namespace rooted at the module.
    Exec(ExecOpts) = "exec",
    /// Move existing processes into a module. Every pid is checked before anything is made or
    /// moved: PID 1, this process, kernel threads, zombies and thread ids that are not their
    /// process's are refused (exit 2).
    Place(PlaceOpts) = "place",
    /// Stop a module's whole tree (SIG and a grace, then SIGKILL), wait until it is empty, remove it.
    Kill(KillOpts) = "kill",
    /// Remove empty modules; with --kill also stop and remove populated ones (orphans).
    Prune(PruneOpts) = "prune",
    /// Start CMD in a module, in a PID namespace of its own under an init that dies with this
    /// helper (kill-on-close) and a cgroup namespace rooted at the module, and stay as its
    /// parent. TERM, INT or HUP stop the whole module
    /// (the signal to every process, --grace, SIGKILL); USR1 and USR2 go to CMD. When CMD exits,
    /// stop what is left of the module, remove it, and exit with CMD's status. stdout is CMD's:
    /// with --json the result (the module's stop) is the last line on stderr.
    Run(RunOpts) = "run",
    /// Freeze a module (pause it): 1 to its cgroup.freeze, then wait until its cgroup.events
    /// says frozen 1. Every process of the module stops where it is until `thaw`; `kill` takes
    /// a frozen module as it is. Exit 1 when it is not frozen within --timeout.
    Freeze(FreezeOpts) = "freeze",
    /// Thaw a frozen module (resume it): 0 to its cgroup.freeze, then wait until its
    /// cgroup.events says frozen 0. Exit 1 when it is still frozen after --timeout (an
    /// ancestor's cgroup.freeze can hold it).
    Thaw(ThawOpts) = "thaw",
    /// Remove an empty module's cgroup (a populated one is refused).
    Remove(RemoveOpts) = "remove",
    /// Every module (ours and the daemon's own placement) with its populated state and processes.
    List(ListOpts) = "list",
    /// Check the host and the service: cgroup2, the root, controllers, kernel features, and the
    /// unit's Delegate=, OOMPolicy=, KillMode=, TimeoutStopSec= from systemd over D-Bus. Exit 0
    /// when ready, 1 when not.
    /// The unit checked is --unit (default: the unit of the calling process); a root that
    /// --unit cannot give (no systemd) is a failed check, not a refusal.
    Doctor(DoctorOpts) = "doctor",
    /// Re-apply the policy's limits to every existing module; report what differed.
    Apply(ApplyOpts) = "apply",
    /// Module events as JSON Lines as they happen (appeared, emptied, removed, OOM and pids
    /// counters rising, memory above a threshold, pressure triggers firing), and events_lost
    /// naming what may be missing and why. Reports; never kills.
    Watch(WatchOpts) = "watch",
    /// Per-module figures: memory, swap, OOM events, pids, cpu, pressure, and the limits in force.
    ///
    /// Memory includes anon and file from memory.stat (ANON, FILE). The table's NAME is the
    /// directory, MODULE the module id (for the daemon's own m-<escaped>_<n> directories decoded
    /// from NAME, as `list` shows it). Unknown figures are `-` (JSON null), never 0.
    Status(StatusOpts) = "status",
    /// Every process of each module, as a tree: which process holds the memory.
    ///
    /// Membership is the cgroup's (cgroup.procs of the module and every sub-cgroup), so a
    /// process reparented away from the module's tree is still listed, marked `orphan`. Each
    /// line: PID, PPID, the state, RSS and swap (from /proc/<pid>/status; `-` when unreadable),
    /// on a host with a GPU the device memory it holds (GPU_MEM), the sub-cgroup (`.` for the
    /// module's own) and the command line, indented under its parent when the parent is in the
    /// module. `status --sort mem` names the module, `ps ID --sort rss` the process.
    Ps(PsOpts) = "ps",
    /// A live view of every module, sorted and refreshed, like systemd-cgtop.
    ///
    /// The figures of `status`, read every --interval, the biggest first; CPU% is the share of
    /// one CPU each module used over the last interval (from cpu.stat usage_usec; `-` on the
    /// first screen). A header line gives the time (UTC), the number of modules, the interval,
    /// the sort key and the root. On a terminal the screen is redrawn in place and `q` or Ctrl-C
    /// quits; the terminal's settings are restored however it ends, SIGTERM and SIGHUP included.
    /// Elsewhere (a pipe, a file, ssh without -t) each refresh is the plain table, after a blank
    /// line, without escape codes.
    Top(TopOpts) = "top",
    /// Run CMD with CK_CGROUP_ROOT set to a fresh isolated root; remove it afterwards. The
    /// sandbox is PARENT/ck-sandbox-*-locked, locked by this helper while it lives, holding CMD
    /// (cmd/, which CMD enters before it runs and which dies with the helper) and the root
    /// (root/); leftovers of SIGKILLed helpers under PARENT are removed first (see --prune). On
    /// a systemd host (without --parent) it is a transient delegated scope ck-sandbox-*.scope
    /// that holds the helper (helper/), CMD (cmd/) and the root (root/). stdout is CMD's: with
    /// --json the result is the last line on stderr.
    Sandbox(SandboxOpts) = "sandbox",
    /// Write the man pages, a shell completion script, or what each command promises (JSON
    /// Lines), for packagers and scripts
    Generate(GenerateOpts) = "generate",
}

impl Kind {
    /// The kind of the subcommand named `name`.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl Command {
    /// What it promises ([`Kind::promises`]).
    pub fn promises(&self) -> Promises {
        self.kind().promises()
    }
}
