//! `ck-cgroup generate`: the man pages and shell completions, from the clap definition itself.

use std::io::{self, Write};
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use super::args::{Cli, GenerateKind};

/// Write man pages into `out_dir`, or a completion script to stdout.
pub fn generate(kind: GenerateKind, out_dir: Option<&Path>) -> io::Result<()> {
    let mut cmd = Cli::command();
    let shell = match kind {
        GenerateKind::Man => {
            let dir = out_dir.unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir)?;
            return clap_mangen::generate_to(cmd, dir);
        }
        GenerateKind::Bash => Shell::Bash,
        GenerateKind::Zsh => Shell::Zsh,
        GenerateKind::Fish => Shell::Fish,
    };
    // Into memory first: clap_complete panics when its writer fails (a full stdout).
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "ck-cgroup", &mut buf);
    let mut out = io::stdout().lock();
    out.write_all(&buf)?;
    out.flush()
}
