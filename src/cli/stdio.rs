//! A closed stdout (`list >&-`), for the commands whose output is their result
//! ([`Command::result_on_stdout`]): their failure, exit 1, as a stdout that cannot take the
//! result is, instead of exit 0 with nothing written.
//!
//! The Rust runtime opens a closed descriptor 0, 1 or 2 on `/dev/null` before `main` (so no file
//! the helper opens later takes its number), read-write; so a stdout that is the null device
//! opened read-write is taken as one that was closed. A shell's `>/dev/null` opens it write-only
//! and is the caller's choice to discard the result: that is fine (exit 0).

use std::io;
use std::os::fd::AsFd;

use super::args::Command;
use super::mutation::{self, Control};

/// Whether stdout was closed when the helper started (see the module's text).
fn stdout_was_closed() -> bool {
    let out = io::stdout();
    let fd = out.as_fd();
    let Ok(st) = rustix::fs::fstat(fd) else {
        return true;
    };
    let null = rustix::fs::FileType::from_raw_mode(st.st_mode)
        == rustix::fs::FileType::CharacterDevice
        && rustix::fs::major(st.st_rdev) == 1
        && rustix::fs::minor(st.st_rdev) == 3;
    let rdwr = rustix::fs::fcntl_getfl(fd)
        .is_ok_and(|f| f & rustix::fs::OFlags::RWMODE == rustix::fs::OFlags::RDWR);
    null && rdwr
}

/// A closed stdout, for a command whose output is its result (its failure, exit 1).
pub fn result_cannot_be_written(command: &Command) -> Option<io::Error> {
    // Mutation: no command's result is checked for a closed stdout.
    let to_stdout = command.result_on_stdout() && !mutation::active(Control::StdoutUnchecked);
    (to_stdout && stdout_was_closed()).then(|| {
        io::Error::other("stdout is closed: the result has nowhere to go (>/dev/null discards it)")
    })
}
