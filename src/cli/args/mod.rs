//! The command-line definition (clap derive). Also the source of the man page and completions.

use std::path::PathBuf;
use std::time::Duration;

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::pressure::PressureTrigger;
use clap::{Parser, Subcommand, ValueEnum};

use crate::cli::promises;
pub use crate::cli::status::{Col, SortKey};

/// `--help`'s epilogue. Its first lines, `  CODE  meaning`, are the one list of exit codes: the
/// man pages' EXIT STATUS is made from them ([`exit_codes`]) and tests/docs.rs holds README.md's
/// table to them. The commands each paragraph names are the ones [`promises`] gives.
pub fn exit_codes_help() -> String {
    let cmd = cmd_commands_prose();
    let result = promises::prose_list(promises::result_commands());
    format!(
        "\
Exit codes:
  0  done (for `kill`: the module's tree is gone and its directory removed, or it was already gone)
  1  the operation failed (the message names the file and the errno)
  2  bad input, usage, or an unsupported root or kernel; nothing was changed
  126, 127  {cmd}: CMD cannot be executed, or is not found
CMD is looked up as execvp(3) would, before anything is made; after a successful exec the exit
status is CMD's. `run` and `sandbox` exit with CMD's status (128+N when CMD died of
signal N).

A stdout or stderr that cannot be written (closed, full) changes no exit code, except that
{result}, whose output is their result,
exit 1 when stdout cannot take it (0 on a closed pipe).
`top` exits 0 on `q` or after -n N refreshes; Ctrl-C, SIGTERM and SIGHUP end it by that signal
once the terminal is restored.

With --json, `run` and `sandbox` leave stdout to CMD: their JSON result is one line on stderr,
written after CMD and its module (or sandbox) are gone, so it is stderr's last line.

Root: --root, else --unit, else CK_CGROUP_ROOT, else CK_CGROUP_UNIT (a unit: its ControlGroup
from systemd over D-Bus, the system manager or with --user the caller's), else discovered from
/proc/self/cgroup and the cgroup2 mount in /proc/self/mountinfo (the parent of a `daemon` or
`.control` leaf, the part above `subc-modules/` for a module). Every command but
{not_service} refuses a root that is not a service root (it has neither daemon/ nor subc-modules/, e.g. an
operator's login shell's cgroup) with exit 2 and one line; `init` lays a root out. See
ck-cgroup(1) and docs/design.md.",
        not_service = promises::prose_list(
            promises::Kind::ALL
                .into_iter()
                .filter(|k| k.root() != promises::RootUse::Service)
        ),
    )
}

/// The commands that execute a CMD, as prose names them: `init -- CMD` where CMD is optional.
pub fn cmd_commands_prose() -> String {
    // `init`'s CMD is optional: named with it, and last.
    let (init, rest): (Vec<_>, Vec<_>) =
        promises::cmd_commands().partition(|k| *k == promises::Kind::Init);
    let names: Vec<String> = rest
        .iter()
        .map(|k| format!("`{}`", k.name()))
        .chain(init.iter().map(|k| format!("`{} -- CMD`", k.name())))
        .collect();
    names.join(", ")
}

/// The exit codes of [`exit_codes_help`]: each code (`0`, `126, 127`) and its meaning.
pub fn exit_codes() -> Vec<(String, String)> {
    exit_codes_help()
        .lines()
        .skip(1)
        .map_while(|l| l.strip_prefix("  "))
        .filter_map(|l| l.split_once("  "))
        .map(|(c, m)| (c.to_string(), m.to_string()))
        .collect()
}

/// Module cgroups for the ck-subc supervisor: place, list, kill and remove whole process trees.
#[derive(Debug, Parser)]
#[command(name = "ck-cgroup", version, about, after_long_help = exit_codes_help(), after_help = "Exit codes: 0 done, 1 failed, 2 bad input or unsupported (see --help).")]
pub struct Cli {
    /// The options every command takes.
    #[command(flatten)]
    pub globals: Globals,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The options every command takes (`global`: before or after the command's name).
#[derive(Debug, clap::Args)]
pub struct Globals {
    /// The service's cgroup directory (a cgroup2 directory below the hierarchy's root). The
    /// command line comes before the environment: --unit beats CK_CGROUP_ROOT, --root beats
    /// CK_CGROUP_UNIT, and of the two variables CK_CGROUP_ROOT wins (a `sandbox`'s CMD gets its
    /// root so); --root with --unit is a usage error.
    #[arg(long, global = true, env = "CK_CGROUP_ROOT", value_name = "PATH", value_parser = path_even_empty())]
    pub root: Option<PathBuf>,

    /// The service's systemd unit (e.g. ck-subc.service): the root is its cgroup (ControlGroup),
    /// asked of systemd over D-Bus, so `ck-cgroup --unit ck-subc.service kill aft` works from any
    /// shell. Only this flag (or the variable) makes the cgroupfs backend use D-Bus. Without a
    /// reachable systemd, or for a unit that is not running: exit 2 and one line.
    #[arg(long, global = true, env = "CK_CGROUP_UNIT", value_name = "NAME")]
    pub unit: Option<String>,

    /// With --unit: ask the caller's user manager (as `systemctl --user`), not the system
    /// manager.
    #[arg(long, global = true, requires = "unit")]
    pub user: bool,

    /// Print a machine-readable JSON result on stdout; `run` and `sandbox` print it as the last
    /// line on stderr instead (their stdout is CMD's). Every object has "version": 1 (added
    /// fields keep it; a rename or removal bumps it). An error, a usage error too, is then one
    /// JSON line on stderr, {"version":1,"error":{"kind","message","hint","exit"}}, with the same
    /// exit code. Every field: docs/json.md.
    #[arg(long, global = true)]
    pub json: bool,

    /// The policy file: default limits and per-module overrides (TOML), a regular file of at
    /// most 1 MiB (/dev/null: none). Default: /etc/ck-cgroup/policy.toml when it exists.
    #[arg(long, global = true, env = "CK_CGROUP_POLICY", value_name = "PATH", value_parser = path_even_empty())]
    pub policy: Option<PathBuf>,
}

/// A path, the empty one too: clap's own refuses it as a missing value of the flag, even when
/// it came from the variable (`CK_CGROUP_ROOT=`), and even when the flag was given too (the
/// variable is read for each command as well). An empty `--root` or `--policy` is refused after
/// the parse, by the name of where it came from (main.rs).
fn path_even_empty() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make daemon/ and subc-modules/, move the root's processes into daemon/, enable controllers.
    /// With CMD: then execute CMD in daemon/ (same pid, nothing printed), as the unit's
    /// ExecStart= does for a daemon that does not run `init` itself.
    Init(InitOpts),
    /// Make a module's cgroup subc-modules/<ID> (idempotent), with limits.
    Create(CreateOpts),
    /// Change the limits of a module.
    Set(SetOpts),
    /// Move this process into the module, then execute CMD (same pid; the caller stays its
    /// parent), in a cgroup namespace rooted at the module.
    Exec(ExecOpts),
    /// Move existing processes into a module. Every pid is checked before anything is made or
    /// moved: PID 1, this process, kernel threads, zombies and thread ids that are not their
    /// process's are refused (exit 2).
    Place(PlaceOpts),
    /// Stop a module's whole tree (SIG and a grace, then SIGKILL), wait until it is empty, remove it.
    Kill(KillOpts),
    /// Remove empty modules; with --kill also stop and remove populated ones (orphans).
    Prune(PruneOpts),
    /// Start CMD in a module, in a PID namespace of its own under an init that dies with this
    /// helper (kill-on-close) and a cgroup namespace rooted at the module, and stay as its
    /// parent. TERM, INT or HUP stop the whole module
    /// (the signal to every process, --grace, SIGKILL); USR1 and USR2 go to CMD. When CMD exits,
    /// stop what is left of the module, remove it, and exit with CMD's status. stdout is CMD's:
    /// with --json the result (the module's stop) is the last line on stderr.
    Run(RunOpts),
    /// Freeze a module (pause it): 1 to its cgroup.freeze, then wait until its cgroup.events
    /// says frozen 1. Every process of the module stops where it is until `thaw`; `kill` takes
    /// a frozen module as it is. Exit 1 when it is not frozen within --timeout.
    Freeze(FreezeOpts),
    /// Thaw a frozen module (resume it): 0 to its cgroup.freeze, then wait until its
    /// cgroup.events says frozen 0. Exit 1 when it is still frozen after --timeout (an
    /// ancestor's cgroup.freeze can hold it).
    Thaw(ThawOpts),
    /// Remove an empty module's cgroup (a populated one is refused).
    Remove(RemoveOpts),
    /// Every module (ours and the daemon's own placement) with its populated state and processes.
    List(ListOpts),
    /// Check the host and the service: cgroup2, the root, controllers, kernel features, and the
    /// unit's Delegate=, OOMPolicy=, KillMode=, TimeoutStopSec= from systemd over D-Bus. Exit 0
    /// when ready, 1 when not.
    /// The unit checked is --unit (default: the unit of the calling process); a root that
    /// --unit cannot give (no systemd) is a failed check, not a refusal.
    Doctor(DoctorOpts),
    /// Re-apply the policy's limits to every existing module; report what differed.
    Apply(ApplyOpts),
    /// Module events as JSON Lines as they happen (appeared, emptied, removed, OOM and pids
    /// counters rising, memory above a threshold, pressure triggers firing), and events_lost
    /// naming what may be missing and why. Reports; never kills.
    Watch(WatchOpts),
    /// Per-module figures: memory, swap, OOM events, pids, cpu, pressure, and the limits in force.
    ///
    /// Memory includes anon and file from memory.stat (ANON, FILE). The table's NAME is the
    /// directory, MODULE the module id (for the daemon's own m-<escaped>_<n> directories decoded
    /// from NAME, as `list` shows it). Unknown figures are `-` (JSON null), never 0.
    Status(StatusOpts),
    /// Every process of each module, as a tree: which process holds the memory.
    ///
    /// Membership is the cgroup's (cgroup.procs of the module and every sub-cgroup), so a
    /// process reparented away from the module's tree is still listed, marked `orphan`. Each
    /// line: PID, PPID, the state, RSS and swap (from /proc/<pid>/status; `-` when unreadable),
    /// on a host with a GPU the device memory it holds (GPU_MEM), the sub-cgroup (`.` for the
    /// module's own) and the command line, indented under its parent when the parent is in the
    /// module. `status --sort mem` names the module, `ps ID --sort rss` the process.
    Ps(PsOpts),
    /// A live view of every module, sorted and refreshed, like systemd-cgtop.
    ///
    /// The figures of `status`, read every --interval, the biggest first; CPU% is the share of
    /// one CPU each module used over the last interval (from cpu.stat usage_usec; `-` on the
    /// first screen). A header line gives the time (UTC), the number of modules, the interval,
    /// the sort key and the root. On a terminal the screen is redrawn in place and `q` or Ctrl-C
    /// quits; the terminal's settings are restored however it ends, SIGTERM and SIGHUP included.
    /// Elsewhere (a pipe, a file, ssh without -t) each refresh is the plain table, after a blank
    /// line, without escape codes.
    Top(TopOpts),
    /// Run CMD with CK_CGROUP_ROOT set to a fresh isolated root; remove it afterwards. The
    /// sandbox is PARENT/ck-sandbox-*-locked, locked by this helper while it lives, holding CMD
    /// (cmd/, which CMD enters before it runs and which dies with the helper) and the root
    /// (root/); leftovers of SIGKILLed helpers under PARENT are removed first (see --prune). On
    /// a systemd host (without --parent) it is a transient delegated scope ck-sandbox-*.scope
    /// that holds the helper (helper/), CMD (cmd/) and the root (root/). stdout is CMD's: with
    /// --json the result is the last line on stderr.
    Sandbox(SandboxOpts),
    /// Write the man pages, a shell completion script, or what each command promises (JSON
    /// Lines), for packagers and scripts
    Generate(GenerateOpts),
}

// `init`'s arguments (its about and help are the variant `Command::Init`'s).
#[derive(Debug, clap::Args)]
pub struct InitOpts {
    /// daemon/'s preference for systemd-oomd: omit (user.oomd_omit: never picked; the
    /// default), avoid (user.oomd_avoid: picked last) or none (neither); over the policy's
    /// top-level oomd_daemon. Read back and reported; where the filesystem refuses the
    /// attribute, one line says so and init goes on.
    #[arg(long, value_parser = limit_flags::oomd_preference, value_name = "omit|avoid|none")]
    pub oomd_daemon: Option<ck_cgroup::cgroup::oomd::OomdPreference>,
    /// The daemon's command and its arguments (optional).
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

// `create`'s arguments (its about and help are the variant `Command::Create`'s).
#[derive(Debug, clap::Args)]
pub struct CreateOpts {
    /// Module id: 1 to 64 of [A-Za-z0-9_-], starting with a letter or digit.
    pub id: String,
    #[command(flatten)]
    pub limits: LimitArgs,
}

// `set`'s arguments (its about and help are the variant `Command::Set`'s).
#[derive(Debug, clap::Args)]
pub struct SetOpts {
    /// Module id.
    pub id: String,
    #[command(flatten)]
    pub limits: LimitArgs,
}

// `exec`'s arguments (its about and help are the variant `Command::Exec`'s).
#[derive(Debug, clap::Args)]
pub struct ExecOpts {
    /// Module id.
    pub id: String,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// No cgroup namespace: CMD sees the host's cgroup paths and, on a cgroup2 mounted with
    /// nsdelegate, may move itself out of the module and write the module's limits where
    /// its uid may write.
    #[arg(long)]
    pub no_cgroup_namespace: bool,
    /// The module's command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

// `place`'s arguments (its about and help are the variant `Command::Place`'s).
#[derive(Debug, clap::Args)]
pub struct PlaceOpts {
    /// Module id.
    pub id: String,
    /// Pids of processes (thread group leaders) to move.
    #[arg(required = true, value_name = "PID")]
    pub pids: Vec<u32>,
}

// `kill`'s arguments (its about and help are the variant `Command::Kill`'s).
#[derive(Debug, clap::Args)]
pub struct KillOpts {
    /// Module id, or a directory name as `list` shows it (the daemon's own m-<name>_<n>).
    pub id: String,
    #[command(flatten)]
    pub stop: StopArgs,
    #[command(flatten)]
    pub backend: BackendArgs,
}

// `prune`'s arguments (its about and help are the variant `Command::Prune`'s).
#[derive(Debug, clap::Args)]
pub struct PruneOpts {
    /// Say what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also stop and remove populated modules that are not kept.
    #[arg(long)]
    pub kill: bool,
    /// A module to leave alone (id, or directory name as `list` shows it); repeatable.
    #[arg(long, value_name = "ID")]
    pub keep: Vec<String>,
    /// A root not laid out yet (neither daemon/ nor subc-modules/: a service's first start,
    /// before `init`) has nothing to prune: say so on stderr and exit 0 instead of refusing
    /// it. For the unit's ExecStartPre=; an operator's shell should name the root instead.
    #[arg(long)]
    pub if_laid_out: bool,
    #[command(flatten)]
    pub stop: StopArgs,
    #[command(flatten)]
    pub backend: BackendArgs,
}

// `run`'s arguments (its about and help are the variant `Command::Run`'s).
#[derive(Debug, clap::Args)]
pub struct RunOpts {
    /// Module id.
    pub id: String,
    #[command(flatten)]
    pub stop: StopArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// No PID namespace: CMD sees host pids, and a SIGKILL of this helper kills CMD alone
    /// (its parent-death signal), not the rest of the module.
    #[arg(long)]
    pub no_pid_namespace: bool,
    /// No cgroup namespace: CMD sees the host's cgroup paths and, on a cgroup2 mounted with
    /// nsdelegate, may move itself out of the module and write the module's limits where
    /// its uid may write.
    #[arg(long)]
    pub no_cgroup_namespace: bool,
    /// The module's command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

// `freeze`'s arguments (its about and help are the variant `Command::Freeze`'s).
#[derive(Debug, clap::Args)]
pub struct FreezeOpts {
    /// Module id, or a directory name as `list` shows it.
    pub id: String,
    /// How long to wait for the kernel to say frozen 1.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

// `thaw`'s arguments (its about and help are the variant `Command::Thaw`'s).
#[derive(Debug, clap::Args)]
pub struct ThawOpts {
    /// Module id, or a directory name as `list` shows it.
    pub id: String,
    /// How long to wait for the kernel to say frozen 0.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

// `remove`'s arguments (its about and help are the variant `Command::Remove`'s).
#[derive(Debug, clap::Args)]
pub struct RemoveOpts {
    /// Module id, or a directory name as `list` shows it.
    pub id: String,
}

// `list`'s arguments (its about and help are the variant `Command::List`'s).
#[derive(Debug, clap::Args)]
pub struct ListOpts {
    #[command(flatten)]
    pub backend: BackendArgs,
}

// `doctor`'s arguments (its about and help are the variant `Command::Doctor`'s).
#[derive(Debug, clap::Args)]
pub struct DoctorOpts {
    /// With --backend systemd: check the manager and the controllers for module scopes
    /// instead of the service's root; Delegate=no is then fine.
    #[command(flatten)]
    pub backend: BackendArgs,
}

// `apply`'s arguments (its about and help are the variant `Command::Apply`'s).
#[derive(Debug, clap::Args)]
pub struct ApplyOpts {
    /// Say what differs; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Apply the limits whose controller is enabled; list the others as skipped.
    #[arg(long)]
    pub best_effort: bool,
}

// `watch`'s arguments (its about and help are the variant `Command::Watch`'s).
#[derive(Debug, clap::Args)]
pub struct WatchOpts {
    /// Modules to watch (ids, directory names or paths as `list` shows them); all when none,
    /// new ones included.
    pub ids: Vec<String>,
    /// Report when a module's memory rises above SIZE (and when it falls back). Default: the
    /// policy's memory_report.
    #[arg(long, value_parser = size, value_name = "SIZE")]
    pub report_above: Option<Limit>,
    /// Report a `pressure` event when a module's tasks stall on RES for THRESHOLD in total
    /// within a WINDOW (repeatable): SPEC is RES:KIND:THRESHOLD/WINDOW, RES memory, cpu or
    /// io, KIND some (at least one task waited) or full (all of them at once), durations
    /// whole numbers with us, ms or s, e.g. cpu:some:100ms/1s or memory:full:50ms/2s. The
    /// kernel's PSI trigger on each module's RES.pressure wakes watch (no sampling), at most
    /// once per window. The window must be 500ms to 10s, the threshold not longer than it
    /// (else exit 2, nothing opened); a trigger the kernel refuses is exit 1 naming the
    /// file and the errno (without CAP_SYS_RESOURCE the window must be a multiple of 2s:
    /// EINVAL; PSI off: EOPNOTSUPP); a module without the file is a pressure_unavailable
    /// event.
    #[arg(long, value_parser = pressure_trigger, value_name = "SPEC")]
    pub pressure: Vec<PressureTrigger>,
}

// `status`'s arguments (its about and help are the variant `Command::Status`'s).
#[derive(Debug, clap::Args)]
pub struct StatusOpts {
    /// Modules to show (ids or directory names as `list` shows them); all when none.
    pub ids: Vec<String>,
    /// Output format (--json is the same as --format json).
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write to FILE instead of stdout, replacing it whole: a new file beside it (mode 0644),
    /// fsynced, then renamed over FILE, so a reader (the node exporter's textfile collector)
    /// never sees a part of it; on a failure FILE is left as it was. FILE's directory must
    /// exist.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Order the modules by KEY, the biggest first; a module whose figure is unknown comes
    /// after every known one (never counted as 0); ties by name. Every format takes it.
    /// Default: the order of `list`.
    #[arg(long, value_enum, value_name = "KEY")]
    pub sort: Option<SortKey>,
    /// The table with every column (NAME, MODULE, POP, PROCS, MEM, PEAK, ANON, FILE, SWAP,
    /// COLD, HIGH, MAX, OOM_KILL, PIDS, PIDS_MAX, CPU_S, PSI_MEM, GPU_MEM), known or not. By
    /// default it shows MODULE, PROCS, MEM, PEAK, SWAP, MAX, OOM_KILL, CPU_S, PSI_MEM and
    /// GPU_MEM, and leaves out (naming them under the table) the columns no module has a
    /// figure for; GPU_MEM on a host without a GPU, silently.
    #[arg(long, conflicts_with = "columns")]
    pub wide: bool,
    /// The table with these columns, in this order (as `ps -o`): a comma-separated list of
    /// name, module, id, pop, procs, mem, peak, anon, file, swap, cold, high, max, oom_kill, pids,
    /// pids_max, cpu_s, psi_mem, gpu_mem. Every one is shown, known or not.
    #[arg(short = 'o', long = "columns", value_name = "COLS", value_parser = status_columns)]
    pub columns: Option<ColumnList>,
    /// Cold memory (COLD, JSON cold_memory, ck_cgroup_memory_cold_bytes) is what a module
    /// holds and has not touched for DURATION (e.g. 10m, 30s), from the kernel's multi-gen
    /// LRU (/sys/kernel/debug/lru_gen: root, debugfs, MGLRU on); unknown, with the reason,
    /// where it cannot be told, e.g. where nothing aged the module's memory within DURATION
    /// (--age-cold).
    #[arg(long, default_value = "10m", value_parser = cold_window, value_name = "DURATION")]
    pub cold_window: Duration,
    /// Age the modules' memory first: a new multi-gen LRU generation for each module whose
    /// youngest is older than half the cold window (the kernel walks the page tables of its
    /// processes and moves the pages they touched since into it). The only write `status`
    /// makes; run it at a steady cadence (the metrics timer's runs pass it), not once: cold
    /// memory is known once two agings span the window.
    #[arg(long)]
    pub age_cold: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

// `ps`'s arguments (its about and help are the variant `Command::Ps`'s).
#[derive(Debug, clap::Args)]
pub struct PsOpts {
    /// Modules to show (ids or directory names as `list` shows them); all when none.
    pub ids: Vec<String>,
    /// Order each module's processes by KEY, the biggest first, as a flat list (unknown
    /// figures last; ties by pid). Default: the tree.
    #[arg(long, value_enum, value_name = "KEY")]
    pub sort: Option<PsSort>,
    #[command(flatten)]
    pub backend: BackendArgs,
}

// `top`'s arguments (its about and help are the variant `Command::Top`'s).
#[derive(Debug, clap::Args)]
pub struct TopOpts {
    /// Order the modules by KEY, the biggest first (unknown figures last; ties by name).
    #[arg(long, value_enum, default_value = "mem", value_name = "KEY")]
    pub sort: SortKey,
    /// Seconds between refreshes (at least 0.1; a fraction is fine).
    #[arg(long, default_value = "2", value_parser = parse_interval, value_name = "SECS")]
    pub interval: Duration,
    /// Stop after N refreshes (default: until `q`, Ctrl-C or a signal).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
}

// `sandbox`'s arguments (its about and help are the variant `Command::Sandbox`'s).
#[derive(Debug, clap::Args)]
pub struct SandboxOpts {
    /// Where to make the sandbox (default: a delegated scope on a systemd host, else the
    /// cgroup2 mount's root, when writable).
    #[arg(long, value_name = "PATH")]
    pub parent: Option<PathBuf>,
    /// systemd: a transient delegated scope; cgroupfs: a directory under --parent or the
    /// mount's root. Default: systemd when systemd is PID 1 and --parent is not given.
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub backend: Option<BackendArg>,
    /// The manager that makes the scope (default: system for root, user for everyone else).
    #[arg(long, value_enum, value_name = "MANAGER")]
    pub manager: Option<ManagerArg>,
    /// Leave the sandbox in place and print its path (marked kept: `--prune` leaves it).
    #[arg(long)]
    pub keep: bool,
    /// Run no command: remove the leftover directory sandboxes under the parent (those whose
    /// helper is gone, SIGKILLed or crashed: every process in them killed, the directories
    /// removed); those still held by a live helper and those kept are left alone.
    #[arg(long, conflicts_with_all = ["keep", "cmd"])]
    pub prune: bool,
    /// The command to run and its arguments.
    #[arg(last = true, required_unless_present = "prune", value_name = "CMD")]
    pub cmd: Vec<String>,
}

// `generate`'s arguments (its about and help are the variant `Command::Generate`'s).
#[derive(Debug, clap::Args)]
pub struct GenerateOpts {
    /// What to generate.
    pub kind: GenerateKind,
    /// Directory for the man pages (ck-cgroup.1 and one page per command).
    #[arg(long, value_name = "DIR", required_if_eq("kind", "man"))]
    pub out_dir: Option<PathBuf>,
}

mod kind;
pub mod lazy;
mod limit_flags;
mod stop_flags;

pub use limit_flags::LimitArgs;
use limit_flags::size;
pub use stop_flags::{RUN_GRACE, StopArgs};

/// `--pressure SPEC`: the library's parser, its one-line message (problem and an example).
fn pressure_trigger(s: &str) -> Result<PressureTrigger, String> {
    s.parse().map_err(|e: ck_cgroup::Error| e.to_string())
}

/// `status` output formats.
/// Where modules live.
#[derive(Debug, Clone, clap::Args)]
pub struct BackendArgs {
    /// Where modules live. cgroupfs: subc-modules/<id> under the service's delegated root (no
    /// D-Bus). systemd: transient scopes subc-module-<id>.scope in module-<id>.slice, started,
    /// limited and killed by systemd over D-Bus, for hosts where the service is not delegated
    /// (--root does not apply).
    #[arg(
        long,
        value_enum,
        default_value = "cgroupfs",
        env = ck_cgroup::backend::ENV_BACKEND,
        value_name = "BACKEND"
    )]
    pub backend: BackendArg,
    /// The systemd manager the systemd backend asks: system, or user (the caller's own). Default:
    /// system for root, user for everyone else.
    #[arg(long, value_enum, value_name = "MANAGER")]
    pub manager: Option<ManagerArg>,
}

/// `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// Module cgroups under the service's delegated root.
    Cgroupfs,
    /// Transient scopes made by systemd.
    Systemd,
}

/// `--manager`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ManagerArg {
    /// The system manager (PID 1).
    System,
    /// The caller's user manager (systemd --user).
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    Table,
    /// JSON: every figure as {"value", "source"}.
    Json,
    /// Prometheus text exposition format (node_exporter's textfile collector).
    Prometheus,
}

/// `--cold-window`: a duration of at least a second (generations are coarser than that).
fn cold_window(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_secs(1) {
        return Err(format!(
            "{s} is shorter than 1s; give the window memory must go untouched for, e.g. 10m"
        ));
    }
    Ok(d)
}

/// `status -o`'s list: the columns' names, comma-separated (`cpu_pct`, `top`'s CPU%, is not
/// one: status has no interval).
fn status_columns(s: &str) -> Result<ColumnList, String> {
    let names: Vec<String> = Col::for_o().map(|c| c.key()).collect();
    let mut cols = Vec::new();
    let mut unknown = Vec::new();
    for n in s.split(',') {
        let n = n.trim().to_ascii_lowercase();
        match Col::for_o().find(|c| c.key() == n) {
            Some(c) => cols.push(c),
            None => unknown.push(format!("{n:?}")),
        }
    }
    match unknown.len() {
        0 => Ok(ColumnList(cols)),
        1 => Err(format!(
            "no column {}; the columns: {}",
            unknown[0],
            names.join(",")
        )),
        _ => Err(format!(
            "no columns {}; the columns: {}",
            unknown.join(", "),
            names.join(",")
        )),
    }
}

/// `status -o`'s columns, in order.
#[derive(Debug, Clone)]
pub struct ColumnList(pub Vec<Col>);

/// What `ps --sort` orders a module's processes by, the biggest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PsSort {
    /// Resident memory (RSS: VmRSS).
    Rss,
    /// Swapped out (SWAP: VmSwap).
    Swap,
}

/// The shortest `top --interval`: a faster refresh costs the host reads and tells no more.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// `top --interval`: seconds, a whole number or a fraction, at least [`MIN_INTERVAL`].
fn parse_interval(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds (e.g. 2 or 0.5)"))?;
    if !secs.is_finite() {
        return Err(format!("{s:?} is not a number of seconds (e.g. 2 or 0.5)"));
    }
    if secs < MIN_INTERVAL.as_secs_f64() {
        return Err(format!("{s} s is below the shortest interval, 0.1 s"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{s} s is too long an interval"))
}

/// What `generate` writes.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GenerateKind {
    /// Man pages, into --out-dir.
    Man,
    /// bash completion, on stdout.
    Bash,
    /// zsh completion, on stdout.
    Zsh,
    /// fish completion, on stdout.
    Fish,
    /// What each command promises (its result on stdout, the modules it takes, the policy it
    /// reads, CMD, --backend, its root), as JSON Lines on stdout: what the tests iterate.
    Promises,
}

pub use super::duration::parse_duration;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the library's table has its flag (`--` and the key with `-`, made from the
    /// row), which parses its example into the row's value, and no flag sets a limit unasked.
    #[test]
    fn every_limit_has_a_flag() {
        use ck_cgroup::limits::LIMITS;
        let none = Cli::try_parse_from(["ck-cgroup", "create", "x"]).unwrap();
        let Command::Create(CreateOpts { limits, .. }) = none.command else {
            panic!("create");
        };
        assert!(
            limits.limits().values().is_empty(),
            "a limit without its flag"
        );
        for spec in LIMITS {
            let flag = format!("--{}", spec.flag());
            let mut argv = vec!["ck-cgroup", "create", "x", flag.as_str()];
            if spec.unit != ck_cgroup::limits::Unit::Bool {
                argv.push(spec.example);
            }
            let cli = Cli::try_parse_from(&argv)
                .unwrap_or_else(|e| panic!("{}: no flag {flag}: {e}", spec.key));
            let Command::Create(CreateOpts { limits, .. }) = cli.command else {
                panic!("create");
            };
            let want = (spec.parse)(spec.example).unwrap();
            assert_eq!(limits.limits().get(spec.key), Some(want), "{}", spec.key);
            assert_eq!(limits.limits().values().len(), 1, "{}", spec.key);
        }
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_interval("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_interval("0.1"), Ok(Duration::from_millis(100)));
        for bad in ["0.05", "0", "-1", "abc", "", "2s", "nan", "inf", "1e300"] {
            assert!(parse_interval(bad).is_err(), "{bad:?} was taken");
        }
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
