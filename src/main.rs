//! `ck-cgroup`: a thin binary over the `ck_cgroup` library. Arguments are checked, one library
//! call runs, one renderer prints the result, and errors map to exit codes in one place
//! ([`exit_code`]).

mod cli;

use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use ck_cgroup::{Error, ModuleId, Root, Sandbox, discover};
use cli::args::{Cli, Command};
use cli::output::Output;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let out = Output::new(cli.json);
    match run(cli, &out) {
        Ok(code) => code,
        Err(Fail::Ck(e)) => {
            report(&e);
            ExitCode::from(exit_code(&e))
        }
        Err(Fail::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Fail::Io(e)) => {
            eprintln!("ck-cgroup: failed to write output: {e}");
            ExitCode::from(1)
        }
    }
}

/// The one place errors become exit codes: 1 failed, 2 bad input or unsupported. Never 255.
fn exit_code(e: &Error) -> u8 {
    e.exit_code() as u8
}

fn report(e: &Error) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "ck-cgroup: {e}");
    if let Some(h) = e.hint() {
        let _ = writeln!(err, "ck-cgroup: hint: {h}");
    }
}

enum Fail {
    Ck(Error),
    Io(io::Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Ck(e)
    }
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Fail {
        Fail::Io(e)
    }
}

fn open_root(explicit: Option<PathBuf>) -> Result<Root, Error> {
    let path = match explicit {
        Some(p) => p,
        None => discover::discover()?,
    };
    Root::open(&path)
}

fn run(cli: Cli, out: &Output) -> Result<ExitCode, Fail> {
    match cli.command {
        Command::Init => {
            let r = open_root(cli.root)?.init()?;
            out.init(&r)?;
        }
        Command::Create { id } => {
            let id = ModuleId::new(&id)?;
            let r = open_root(cli.root)?.create(&id)?;
            out.create(&r)?;
        }
        Command::Place { id, pids } => {
            let id = ModuleId::new(&id)?;
            let r = open_root(cli.root)?.place(&id, &pids)?;
            out.place(&r)?;
        }
        Command::Exec { id, cmd } => {
            let id = ModuleId::new(&id)?;
            open_root(cli.root)?.enter(&id)?;
            return Ok(exec(&cmd));
        }
        Command::Kill { id, timeout } => {
            let root = open_root(cli.root)?;
            let r = root.kill(&id, timeout)?;
            out.kill(&r)?;
        }
        Command::Remove { id } => {
            let r = open_root(cli.root)?.remove(&id)?;
            out.remove(&r)?;
        }
        Command::List => {
            let root = open_root(cli.root)?;
            let r = root.list()?;
            out.list(root.path(), &r)?;
        }
        Command::Sandbox { parent, keep, cmd } => return sandbox(parent, keep, &cmd, out),
        Command::Generate { kind, out_dir } => cli::generate::generate(kind, out_dir.as_deref())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `execvp(3)` CMD; returns only when that failed (126 cannot execute, 127 not found).
fn exec(cmd: &[String]) -> ExitCode {
    let Some((prog, args)) = cmd.split_first() else {
        return ExitCode::from(2);
    };
    let e = std::process::Command::new(prog).args(args).exec();
    let code = if e.kind() == io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    eprintln!("ck-cgroup: failed to execute {prog}: {e}");
    ExitCode::from(code)
}

fn sandbox(
    parent: Option<PathBuf>,
    keep: bool,
    cmd: &[String],
    out: &Output,
) -> Result<ExitCode, Fail> {
    let parent = match parent {
        Some(p) => p,
        None => Sandbox::default_parent()?,
    };
    let sb = Sandbox::create(&parent)?;
    let Some((prog, args)) = cmd.split_first() else {
        return Ok(ExitCode::from(2));
    };
    let status = std::process::Command::new(prog)
        .args(args)
        .env(discover::ENV_ROOT, sb.path())
        .status();
    let code = match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => c,
            (None, Some(sig)) => 128 + sig,
            _ => 1,
        },
        Err(e) => {
            eprintln!("ck-cgroup: failed to execute {prog}: {e}");
            if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    };
    let path = sb.path().to_path_buf();
    if keep {
        sb.keep();
        out.sandbox(&path, true, code)?;
    } else {
        sb.destroy()?;
        out.sandbox(&path, false, code)?;
    }
    Ok(ExitCode::from(code.clamp(0, 254) as u8))
}
