//! Exhaustion is named, never a signal or a wrong word. Out of memory or address space is one
//! error line and exit 1: under every
//! `ulimit -v` from the lowest at which the binary runs at all (below it the kernel cannot map
//! the binary and kills the `execve(2)`, or the loader cannot map libc: exit 127; that floor is
//! the platform's) up to well past what a command needs, each command exits 0, 1 or 2, and a 1
//! for the limit's sake says `out of address space` in one line and a hint. So does a limit on
//! the data segment (`ulimit -d`). Out of descriptors (`ulimit -n 4`) is exit 1 naming EMFILE,
//! not a root "of the hierarchy" (exit 2).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use common::{World, ok, stderr};

/// `args` on `w`'s root under `ulimit FLAG KIB`, stdout to /dev/null.
fn under(w: &World, flag: &str, kib: u64, args: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit {flag} {kib} && exec \"$0\" --root \"$1\" {args}{out}",
            // `watch` would run on: with stdout closed it ends (exit 1) once started.
            out = if args.starts_with("watch") {
                " >&-"
            } else {
                " >/dev/null"
            }
        ))
        .arg(common::bin())
        .arg(w.root())
        .env("CK_CGROUP_POLICY", "/dev/null")
        .output()
        .unwrap()
}

#[test]
fn every_command_under_a_low_memory_limit_exits_with_one_line_never_a_signal() {
    let w = World::new();
    ok(w.run(&["init"]));
    ok(w.run(&["create", "present"]));
    let commands = [
        "list",
        "status",
        "doctor",
        "init",
        "create m",
        "set present --cpu-weight 5 --best-effort",
        "freeze present",
        "thaw present",
        "kill gone",
        "remove gone",
        "prune --keep present",
        "apply --dry-run",
        "top -n 1",
        "watch",
        "sandbox --prune --parent \"$1\"",
    ];
    for (flag, commands) in [("-v", &commands[..]), ("-d", &commands[..3])] {
        for args in commands {
            // 6 MiB to 48 MiB in steps of 1 MiB (the floor of the debug build is some 13 MiB;
            // the release build's some 7 MiB), then the MiB below and the 2 above the first
            // limit it ran under in steps of 64 KiB: the runtime's abort lived in such a sliver.
            let first = scan(&w, flag, args, (6144..=49152).step_by(1024))
                .unwrap_or_else(|| panic!("{flag} {args}: never ran up to 48 MiB"));
            scan(&w, flag, args, (first - 1024..first + 2048).step_by(64));
            // And with room it did its work (not a refusal for room).
            let o = under(&w, flag, 65536, args);
            assert!(
                !stderr(&o).contains("out of "),
                "{args} at 64 MiB (first ran at {first} KiB): {}",
                stderr(&o)
            );
        }
    }
}

/// `args` under each limit of `kibs`, rising: exit 0, 1 or 2 (a 1 for room in one line and a
/// hint), or near the floor the platform's refusal before `main`; never a signal of our code
/// (SIGABRT "memory allocation of N bytes failed"). The first limit it ran under.
fn scan(w: &World, flag: &str, args: &str, kibs: impl Iterator<Item = u64>) -> Option<u64> {
    let mut ran_at = None;
    for kib in kibs {
        let o = under(w, flag, kib, args);
        let what = format!("ulimit {flag} {kib}; {args}");
        let e = stderr(&o);
        match (o.status.code(), o.status.signal()) {
            (Some(c), _) if c <= 2 => {
                ran_at.get_or_insert(kib);
                if c == 1 && e.contains("out of ") {
                    let lines: Vec<&str> = e.lines().collect();
                    assert_eq!(lines.len(), 2, "{what}: {e}");
                    assert!(lines[1].starts_with("ck-cgroup: hint: "), "{what}: {e}");
                }
            }
            // At the platform's floor, before any code of ours: the kernel (SIGSEGV of the
            // exec), the loader (127), or the Rust runtime before `main` (its signal stack:
            // "initialization ... aborting"). The layout is random (ASLR), so near the floor
            // the outcome varies by some KiB: it is allowed up to 1 MiB above the first run.
            (Some(127), _) | (None, Some(11)) if ran_at.is_none_or(|r| kib < r + 1024) => {}
            (None, Some(6))
                if e.contains("failed to allocate an alternative stack")
                    && ran_at.is_none_or(|r| kib < r + 1024) => {}
            (code, signal) => panic!(
                "{what}: exit {code:?}, signal {signal:?} (first ran at {ran_at:?} KiB): {e}"
            ),
        }
    }
    ran_at
}

#[test]
fn out_of_descriptors_is_exit_1_naming_emfile_not_a_wrong_root() {
    let w = World::new();
    ok(w.run(&["init"]));
    for n in [4, 5] {
        for args in [
            "list",
            "status",
            "kill gone",
            "create m",
            "watch",
            "init",
            "remove gone",
        ] {
            // stdout and stderr are pipes (0 1 2 taken): the helper has n - 3 descriptors.
            let o = Command::new("sh")
                .arg("-c")
                // `timeout`: a watch that cannot watch used to wait forever in silence.
                .arg(format!(
                    "ulimit -n {n} && exec timeout 60 \"$0\" --root \"$1\" {args}"
                ))
                .arg(common::bin())
                .arg(w.root())
                .env("CK_CGROUP_POLICY", "/dev/null")
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let e = stderr(&o);
            assert!(
                !e.contains("root of the cgroup2 hierarchy"),
                "-n {n} {args}: {e}"
            );
            assert_ne!(o.status.code(), Some(2), "-n {n} {args}: {e}");
            assert_ne!(
                o.status.code(),
                Some(124),
                "-n {n} {args}: still running after 60 s"
            );
            if o.status.code() != Some(0) {
                assert_eq!(o.status.code(), Some(1), "-n {n} {args}: {e}");
                assert!(e.contains("EMFILE"), "-n {n} {args}: {e}");
            }
        }
    }
}
