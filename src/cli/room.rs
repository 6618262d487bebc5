//! Room to run in: a process under an address-space or data limit (`ulimit -v`, `ulimit -d`)
//! so low that the next allocation fails would be aborted by the Rust runtime (SIGABRT: "memory
//! allocation of N bytes failed"; stable Rust has no hook to turn that into an error). So before
//! anything else the limits are compared with what the process has mapped already (from
//! `/proc/self/statm`) plus [`HEADROOM`], and a limit below that is refused with one line and
//! exit 1, before any allocation (the line is formatted on the stack).
//!
//! Below about 7 MiB (the release build; more for a debug build) nothing of ours runs: the kernel
//! cannot map the binary and kills the `execve(2)` with SIGSEGV, the dynamic loader cannot map
//! libc (exit 127), or the Rust runtime cannot map its signal stack before `main` (SIGABRT). That
//! floor is the platform's, documented in README ("Exit codes").

use std::io::Write;
use std::process::ExitCode;

/// What a command may need beyond what is mapped at its start: its largest inputs are a policy
/// of 1 MiB and the kernel files of every module, a few MiB at most.
pub const HEADROOM: u64 = 16 << 20;

/// `Some(exit 1)` (the line written) when a limit leaves less than [`HEADROOM`].
pub fn check() -> Option<ExitCode> {
    use rustix::process::{Resource, getrlimit};
    // Two getrlimit(2) calls on every start; /proc/self/statm is read only under a limit (the
    // common case, no limit, opens nothing).
    let (as_limit, data_limit) = (
        getrlimit(Resource::As).current,
        getrlimit(Resource::Data).current,
    );
    if as_limit.is_none() && data_limit.is_none() {
        return None;
    }
    let (size, data) = mapped()?;
    for (limit, used, flag, what) in [
        (as_limit, size, "-v", "address space"),
        (data_limit, data, "-d", "data segment"),
    ] {
        let Some(limit) = limit else {
            continue;
        };
        let need = used.saturating_add(HEADROOM);
        if limit >= need {
            continue;
        }
        let mut buf = [0u8; 320];
        let mut line = std::io::Cursor::new(&mut buf[..]);
        let _ = writeln!(
            line,
            "ck-cgroup: out of {what}: the limit (ulimit {flag}) is {} KiB, and ck-cgroup needs {} KiB \
             ({} KiB mapped at its start and {} KiB to work in)\n\
             ck-cgroup: hint: raise it (ulimit {flag} {} or more)",
            limit >> 10,
            need >> 10,
            used >> 10,
            HEADROOM >> 10,
            need.div_ceil(1024)
        );
        let n = line.position() as usize;
        let _ = std::io::stderr().write_all(&buf[..n]);
        return Some(ExitCode::from(1));
    }
    None
}

/// The address space and the data segment mapped now, bytes (`/proc/self/statm`: size, resident,
/// shared, text, lib, data, dt, in pages), read into a buffer on the stack.
fn mapped() -> Option<(u64, u64)> {
    use rustix::fs::{Mode, OFlags, open};
    let fd = open(
        c"/proc/self/statm",
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut buf = [0u8; 128];
    let n = rustix::io::read(&fd, &mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let mut f = text.split_ascii_whitespace().map(|v| v.parse::<u64>().ok());
    let size = f.next()??;
    let data = f.nth(4)??;
    let page = rustix::param::page_size() as u64;
    Some((size * page, data * page))
}
