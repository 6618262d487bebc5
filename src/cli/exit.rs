//! Exit codes and stderr: the one place an error becomes an exit code ([`code`]), the one place
//! CMD's fate becomes a status ([`cmd_status`]), and the lines on stderr ([`note`], [`written`]).
//!
//! With `--json` an error is one JSON object on stderr instead of its text lines
//! (`{"version":1,"error":{"kind","message","hint","exit"}}`, docs/json.md); notes that are not
//! errors stay text.
//!
//! Nothing here panics on a stdout or stderr that cannot be written (closed, full, a closed
//! pipe): a line on stderr that cannot be written is lost ([`note`]), and a result that cannot
//! be written to stdout changes the exit code only for the commands whose output is the result
//! (`cli::promises::Stdout::Result`); for the others the code stays the operation's
//! ([`written`]).

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};

use ck_cgroup::Error;
use serde::Serialize;

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
/// input, usage or unsupported. Never 255. `command` names the command the arguments name, asked
/// only for a usage error's hint (the parse's side, `cli::args::lazy::command_in`).
pub fn code(r: Result<ExitCode, Fail>, command: impl FnOnce() -> Option<String>) -> ExitCode {
    match r {
        Ok(code) => code,
        // `ck-cgroup` alone: clap's help on stderr, exit 2.
        Err(Fail::Usage(e))
            if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            let _ = e.print();
            ExitCode::from(2)
        }
        Err(Fail::Usage(e)) if e.use_stderr() => {
            let (message, hint) = usage_lines(&e, command().as_deref());
            failure("usage", message, Some(&hint), 2);
            ExitCode::from(2)
        }
        // Help and version: clap prints them to stdout, exit 0.
        Err(Fail::Usage(e)) => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        Err(Fail::Ck(e)) => {
            report(&e);
            ExitCode::from(e.exit_code() as u8)
        }
        Err(Fail::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Fail::Io(e)) => {
            failure("io", format_args!("failed to write output: {e}"), None, 1);
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
    let status = cmd_status(if e.kind() == io::ErrorKind::NotFound {
        CmdEnd::NotFound
    } else {
        CmdEnd::NotExecutable
    });
    failure(
        cmd_kind(status),
        format_args!("failed to execute {prog:?}: {e}"),
        None,
        status,
    );
    status
}

/// Why CMD cannot run, with the exit code the shell uses for it: 127 not found, 126 found but
/// not executable.
#[derive(Debug)]
pub struct NotRunnable {
    /// 126 or 127.
    pub code: u8,
    /// `failed to execute <prog>: <why>`.
    pub message: String,
}

/// CMD was refused by the lookup before anything was made: its message on stderr, and 126 or 127.
pub fn not_runnable(e: NotRunnable) -> ExitCode {
    failure(cmd_kind(e.code.into()), &e.message, None, e.code.into());
    ExitCode::from(e.code)
}

/// The `kind` of an error about CMD with status 127 or 126.
fn cmd_kind(status: i32) -> &'static str {
    if status == 127 {
        "cmd_not_found"
    } else {
        "cmd_not_executable"
    }
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
    failure(&kind_name(e.kind()), e, e.hint(), e.exit_code());
}

/// `--json` was given: errors are JSON ([`set_json`]).
static JSON: AtomicBool = AtomicBool::new(false);

/// Say whether errors are to be JSON: from the raw arguments before they are parsed (a usage
/// error), then from the parsed `--json`.
pub fn set_json(on: bool) {
    JSON.store(on, Ordering::Relaxed);
}

fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Whether the raw arguments hold `--json` before any `--` (after it they are CMD's): what a usage
/// error, which clap finds before `--json` is parsed, goes by.
pub fn json_in_args(args: impl IntoIterator<Item = OsString>) -> bool {
    args.into_iter()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// An [`ErrorKind`](ck_cgroup::ErrorKind) as JSON names it: its name in snake_case
/// (`NoSuchModule`: `no_such_module`), so that a kind added later is named without a change here.
pub fn kind_name(kind: ck_cgroup::ErrorKind) -> String {
    let mut s = String::new();
    for (i, c) in format!("{kind:?}").chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

/// The JSON form of an error: `{"version":1,"error":{...}}`.
#[derive(Serialize)]
struct ErrorLine<'a> {
    error: ErrorObject<'a>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    kind: &'a str,
    message: String,
    hint: Option<&'a str>,
    exit: i32,
}

/// An error on stderr, in one write: with `--json` one JSON line, else `ck-cgroup: <message>`
/// and a `ck-cgroup: hint:` line where there is a hint. A stderr that cannot be written loses
/// it, and the exit code is still the error's.
fn failure(kind: &str, message: impl std::fmt::Display, hint: Option<&str>, exit: i32) {
    let text = if json() {
        let line = super::format::versioned(ErrorLine {
            error: ErrorObject {
                kind,
                message: message.to_string(),
                hint,
                exit,
            },
        });
        match serde_json::to_string(&line) {
            Ok(j) => j + "\n",
            Err(e) => format!("ck-cgroup: {message} ({e})\n"),
        }
    } else {
        let mut text = format!("ck-cgroup: {message}\n");
        if let Some(h) = hint {
            text += &format!("ck-cgroup: hint: {h}\n");
        }
        text
    };
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// A usage error (clap's: an unknown command or flag, a bad value, a missing argument) as every
/// error is said: its problem on one line (clap's error line, its continuation lines joined), and
/// one hint: clap's list of values or commands and its tips ("a similar subcommand exists:
/// 'kill'"), the usage where it names a command, and the `--help` that says more (`command`: the
/// command the arguments name, if any).
pub fn usage_lines(e: &clap::Error, command: Option<&str>) -> (String, String) {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let mut message = first.strip_prefix("error: ").unwrap_or(first).to_string();
    let mut hint = Vec::new();
    // The continuation of the error line, up to the first empty line: `  <ID>`, or a list of
    // values (`  [possible values: a, b]`), which is the hint's.
    for l in lines.by_ref().map(str::trim).take_while(|l| !l.is_empty()) {
        match l.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            Some(values) => hint.push(values.to_string()),
            None => {
                message.push(' ');
                message.push_str(l);
            }
        }
    }
    let mut usage: Option<String> = None;
    for l in lines.map(str::trim).filter(|l| !l.is_empty()) {
        if l.starts_with("For more information") {
            continue;
        } else if let Some(u) = l.strip_prefix("Usage: ") {
            usage = Some(u.to_string());
        } else if let Some(u) = usage.as_mut() {
            // A usage of more than one line.
            u.push_str(" | ");
            u.push_str(l);
        } else {
            hint.push(l.strip_prefix("tip: ").unwrap_or(l).to_string());
        }
    }
    // The top level's usage (`ck-cgroup [OPTIONS] <COMMAND>`) says nothing `--help` does not.
    if let Some(u) = usage.filter(|u| {
        u.split_whitespace()
            .nth(1)
            .is_some_and(|w| !w.starts_with(['[', '<']))
    }) {
        hint.push(format!("usage: {u}"));
    }
    hint.push(match command {
        Some(c) => format!("see `ck-cgroup {c} --help`"),
        None => "see `ck-cgroup --help`".to_string(),
    });
    (message, hint.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ck_cgroup::ErrorKind;

    #[test]
    fn kinds_are_snake_case() {
        for (k, name) in [
            (ErrorKind::BadInput, "bad_input"),
            (ErrorKind::NoSuchModule, "no_such_module"),
            (ErrorKind::NotAServiceRoot, "not_a_service_root"),
            (ErrorKind::NoCgroup2, "no_cgroup2"),
            (ErrorKind::SystemdUnavailable, "systemd_unavailable"),
            (ErrorKind::Io, "io"),
            (ErrorKind::Other, "other"),
        ] {
            assert_eq!(kind_name(k), name);
        }
    }

    #[test]
    fn json_is_looked_for_before_the_command_only() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(json_in_args(args(&[
            "ck-cgroup",
            "--json",
            "list",
            "--frob"
        ])));
        assert!(json_in_args(args(&["ck-cgroup", "list", "--json"])));
        assert!(!json_in_args(args(&[
            "ck-cgroup",
            "exec",
            "a",
            "--",
            "x",
            "--json"
        ])));
        assert!(
            !json_in_args(args(&["--json"])),
            "argv[0] is not an argument"
        );
    }
}
