//! Test support shared by the library's integration tests (crates/ck-cgroup/tests) and the CLI's
//! (tests/common re-exports it): a test that did not check what it is for says so, by name, with
//! why, so that both write the same line to the same log.

/// Says that the running test did not check what it is for, and why: one line on stderr and,
/// when `CK_TEST_SKIP_LOG` names a file (scripts/test sets it), the same line appended there, so
/// that the suite's closing summary lists every skipped test instead of counting it as a pass
/// (libtest has no "skipped" result: the test still returns and shows `ok`). The test's name is
/// its thread's, which libtest sets. Call it, then `return`.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("an unnamed test");
    let bin = std::env::args()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .map(|f| f.rsplit_once('-').map_or(f.clone(), |(b, _)| b.to_string()))
        .unwrap_or_default();
    let line = format!("SKIPPED {bin}::{name}: {reason}");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("CK_TEST_SKIP_LOG") {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("CK_TEST_SKIP_LOG: a file the tests can append to");
        // One write(2) of a short line to an O_APPEND file: whole, whichever test runs beside it.
        f.write_all(format!("{line}\n").as_bytes())
            .expect("CK_TEST_SKIP_LOG: append");
    }
}

/// Whether the test runs as root; where it does not (lane 2's `74-user-suite` runs the suite as
/// a user), the test is skipped ([`skip`]) saying what needs root. Call it, and return on false.
pub fn needs_root(what: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    skip(&format!("needs root: {what}"));
    false
}
