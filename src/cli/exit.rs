//! Exit codes and stderr: the one place an error becomes an exit code ([`code`]), the one place
//! CMD's fate becomes a status ([`cmd_status`]), and the lines on stderr ([`note`], [`written`]).
//!
//! Nothing here panics on a stdout or stderr that cannot be written (closed, full, a closed
//! pipe): a line on stderr that cannot be written is lost ([`note`]), and a result that cannot
//! be written to stdout changes the exit code only for the commands whose output is the result
//! (`list`, `status`, `doctor`, `watch`, `generate`); for the others the code stays the
//! operation's ([`written`]).

use std::io::{self, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};

use ck_cgroup::Error;

use super::program::NotRunnable;

/// Why a command ended without the exit code it chose itself.
pub enum Fail {
    /// The arguments: clap's help, version or usage error.
    Usage(clap::Error),
    /// The library's error (or the CLI's, in the same shape).
    Ck(Error),
    /// The result could not be written to stdout.
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

/// The one place errors become exit codes: 0 help or version, or a closed stdout; 1 failed; 2 bad
/// input, usage or unsupported. Never 255.
pub fn code(r: Result<ExitCode, Fail>) -> ExitCode {
    match r {
        Ok(code) => code,
        Err(Fail::Usage(e)) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            ExitCode::from(if e.use_stderr() { 2 } else { 0 })
        }
        Err(Fail::Ck(e)) => {
            report(&e);
            ExitCode::from(e.exit_code() as u8)
        }
        Err(Fail::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Fail::Io(e)) => {
            note(format_args!("failed to write output: {e}"));
            ExitCode::from(1)
        }
    }
}

/// What became of CMD (`exec`, `run`, `sandbox`, `init -- CMD`).
pub enum CmdEnd {
    /// Not found (by the lookup, or by `execve(2)`).
    NotFound,
    /// Found, but it cannot be executed.
    NotExecutable,
    /// It ran and ended so.
    Ended(ExitStatus),
}

/// The one place CMD's fate becomes a status, as a shell reports it: 127 not found, 126 not
/// executable, CMD's own code, 128+N when it died of signal N.
pub fn cmd_status(end: CmdEnd) -> i32 {
    match end {
        CmdEnd::NotFound => 127,
        CmdEnd::NotExecutable => 126,
        CmdEnd::Ended(s) => match (s.code(), s.signal()) {
            (Some(c), _) => c,
            (None, Some(sig)) => 128 + sig,
            _ => 1,
        },
    }
}

/// The helper's exit code for CMD's [`cmd_status`]: the same, at most 254.
pub fn cmd_exit(status: i32) -> ExitCode {
    ExitCode::from(status.clamp(0, 254) as u8)
}

/// CMD could not be started (`execve(2)` or a spawn failed with `e`): its message on stderr, and
/// its [`cmd_status`].
pub fn cmd_failed(prog: &str, e: &io::Error) -> i32 {
    note(format_args!("failed to execute {prog:?}: {e}"));
    cmd_status(if e.kind() == io::ErrorKind::NotFound {
        CmdEnd::NotFound
    } else {
        CmdEnd::NotExecutable
    })
}

/// CMD was refused by the lookup before anything was made: its message on stderr, and 126 or 127.
pub fn not_runnable(e: NotRunnable) -> ExitCode {
    note(&e.message);
    ExitCode::from(e.code)
}

/// One line on stderr, `ck-cgroup: <line>`, in one write. A stderr that cannot be written
/// (closed, full) loses the line and changes nothing else: `eprintln!` would panic (exit 101).
pub fn note(line: impl std::fmt::Display) {
    let _ = io::stderr()
        .lock()
        .write_all(format!("ck-cgroup: {line}\n").as_bytes());
}

/// The result of a command that changed something, as the renderer wrote it: when stdout cannot
/// take it (full; a closed pipe is not an error) that is said on stderr, and the exit code stays
/// the operation's, so a caller is not told that a kill that happened failed.
pub fn written(r: io::Result<()>) {
    if let Err(e) = r
        && e.kind() != io::ErrorKind::BrokenPipe
    {
        note(format_args!(
            "the operation is done but its result could not be written to stdout: {e}"
        ));
    }
}

fn report(e: &Error) {
    let mut text = format!("ck-cgroup: {e}\n");
    if let Some(h) = e.hint() {
        text += &format!("ck-cgroup: hint: {h}\n");
    }
    // One write; a stderr that cannot be written loses it, and the exit code is still e's.
    let _ = io::stderr().lock().write_all(text.as_bytes());
}
