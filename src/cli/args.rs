//! The command-line definition (clap derive). Also the source of the man page and completions.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

const EXIT_CODES: &str = "\
Exit codes:
  0  done (for `kill`: the module's tree is gone and its directory removed, or it was already gone)
  1  the operation failed (the message names the file and the errno)
  2  bad input, usage, or an unsupported root or kernel; nothing was changed
`exec` exits with 126 when CMD cannot be executed and 127 when it is not found; after a
successful exec the exit status is CMD's. `sandbox` exits with CMD's status (128+N when CMD died
of signal N).

Root: --root, else CK_CGROUP_ROOT, else discovered from /proc/self/cgroup and the cgroup2 mount
in /proc/self/mountinfo (the parent of a `daemon` or `.control` leaf, the part above
`subc-modules/` for a module). See ck-cgroup(1) and docs/design.md.";

/// Module cgroups for the ck-subc supervisor: place, list, kill and remove whole process trees.
#[derive(Debug, Parser)]
#[command(name = "ck-cgroup", version, about, after_long_help = EXIT_CODES, after_help = "Exit codes: 0 done, 1 failed, 2 bad input or unsupported (see --help).")]
pub struct Cli {
    /// The service's cgroup directory (a cgroup2 directory below the hierarchy's root).
    #[arg(long, global = true, env = "CK_CGROUP_ROOT", value_name = "PATH")]
    pub root: Option<PathBuf>,

    /// Print a machine-readable JSON result on stdout.
    #[arg(long, global = true)]
    pub json: bool,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make daemon/ and subc-modules/, move the root's processes into daemon/, enable controllers.
    Init,
    /// Make a module's cgroup subc-modules/<ID> (idempotent).
    Create {
        /// Module id: 1 to 64 of [A-Za-z0-9_-], starting with a letter or digit.
        id: String,
    },
    /// Move this process into the module, then execute CMD (same pid; the caller stays its parent).
    Exec {
        /// Module id.
        id: String,
        /// The module's command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        cmd: Vec<String>,
    },
    /// Move existing processes into a module.
    Place {
        /// Module id.
        id: String,
        /// Pids to move.
        #[arg(required = true, value_name = "PID")]
        pids: Vec<u32>,
    },
    /// SIGKILL a module's whole tree (cgroup.kill), wait until it is empty, remove its directory.
    Kill {
        /// Module id, or a directory name as `list` shows it (the daemon's own m-<name>_<n>).
        id: String,
        /// How long to wait for the tree to be empty after the kill.
        #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
        timeout: Duration,
    },
    /// Remove an empty module's cgroup (a populated one is refused).
    Remove {
        /// Module id, or a directory name as `list` shows it.
        id: String,
    },
    /// Every module (ours and the daemon's own placement) with its populated state and processes.
    List,
    /// Run CMD with CK_CGROUP_ROOT set to a fresh isolated root; remove it afterwards.
    Sandbox {
        /// Where to make the sandbox (default: the cgroup2 mount's root, when writable).
        #[arg(long, value_name = "PATH")]
        parent: Option<PathBuf>,
        /// Leave the sandbox in place and print its path.
        #[arg(long)]
        keep: bool,
        /// The command to run and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        cmd: Vec<String>,
    },
    /// Write the man pages or a shell completion script (for packagers).
    #[command(hide = true)]
    Generate {
        /// What to generate.
        kind: GenerateKind,
        /// Directory for the man pages (ck-cgroup.1 and one page per command).
        #[arg(long, value_name = "DIR", required_if_eq("kind", "man"))]
        out_dir: Option<PathBuf>,
    },
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
}

/// `500ms`, `10s`, `2m`, or a bare number of seconds (`1.5`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (examples: 500ms, 10s, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use ms, s or m)")),
    };
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("{s:?} is out of range (0 to 24 h)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        for bad in ["", "x", "10h", "-1s", "1e9"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
