//! Each command's arguments, `<Name>Opts` (clap derive): the type its row of the command list
//! names (`super::commands`). A struct's own text is a `//` comment, not a doc comment: the
//! command's about and help are its row's.

use std::path::PathBuf;
use std::time::Duration;

use ck_cgroup::cgroup::parse::Limit;
use ck_cgroup::telemetry::pressure::PressureTrigger;
use ck_cgroup::{ModuleId, ModuleName};

use super::limit_flags::{self, size};
use super::values::{
    BackendArg, BackendArgs, ColumnList, Format, GenerateKind, ManagerArg, PsSort, cold_window,
    parse_duration, parse_interval, pressure_trigger, status_columns,
};
use super::{LimitArgs, SortKey, StopArgs};
use crate::cli::module_arg::ModuleArg;

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
    pub id: ModuleArg<ModuleId>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

// `set`'s arguments (its about and help are the variant `Command::Set`'s).
#[derive(Debug, clap::Args)]
pub struct SetOpts {
    /// Module id.
    pub id: ModuleArg<ModuleId>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

// `exec`'s arguments (its about and help are the variant `Command::Exec`'s).
#[derive(Debug, clap::Args)]
pub struct ExecOpts {
    /// Module id.
    pub id: ModuleArg<ModuleId>,
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
    pub id: ModuleArg<ModuleId>,
    /// Pids of processes (thread group leaders) to move.
    #[arg(required = true, value_name = "PID")]
    pub pids: Vec<u32>,
}

// `kill`'s arguments (its about and help are the variant `Command::Kill`'s).
#[derive(Debug, clap::Args)]
pub struct KillOpts {
    /// Module id, or a directory name as `list` shows it (the daemon's own m-<name>_<n>).
    pub id: ModuleArg<ModuleName>,
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
    pub keep: Vec<ModuleArg<ModuleName>>,
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
    pub id: ModuleArg<ModuleId>,
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
    pub id: ModuleArg<ModuleName>,
    /// How long to wait for the kernel to say frozen 1.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

// `thaw`'s arguments (its about and help are the variant `Command::Thaw`'s).
#[derive(Debug, clap::Args)]
pub struct ThawOpts {
    /// Module id, or a directory name as `list` shows it.
    pub id: ModuleArg<ModuleName>,
    /// How long to wait for the kernel to say frozen 0.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

// `remove`'s arguments (its about and help are the variant `Command::Remove`'s).
#[derive(Debug, clap::Args)]
pub struct RemoveOpts {
    /// Module id, or a directory name as `list` shows it.
    pub id: ModuleArg<ModuleName>,
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
    pub ids: Vec<ModuleArg<ModuleName>>,
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
    pub ids: Vec<ModuleArg<ModuleName>>,
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
    pub ids: Vec<ModuleArg<ModuleName>>,
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
