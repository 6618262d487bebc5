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
            let mut ran_at = None;
            // 6 MiB to 48 MiB in steps of 1 MiB (the floor of the debug build is some 13 MiB;
            // the release build's some 7 MiB).
            for kib in (6144..=49152).step_by(1024) {
                let o = under(&w, flag, kib, args);
                let what = format!("ulimit {flag} {kib}; {args}");
                let ours = o.status.code().is_some_and(|c| c <= 2);
                match (ran_at, ours) {
                    (_, true) => {
                        ran_at.get_or_insert(kib);
                        if o.status.code() == Some(1) && stderr(&o).contains("out of ") {
                            let e = stderr(&o);
                            let lines: Vec<&str> = e.lines().collect();
                            assert_eq!(lines.len(), 2, "{what}: {e}");
                            assert!(lines[1].starts_with("ck-cgroup: hint: "), "{what}: {e}");
                        }
                    }
                    // Below the platform's floor: the kernel or the loader, before any code of ours.
                    (None, false) => {}
                    (Some(first), false) => panic!(
                        "{what}: {:?} (signal {:?}) although it ran at {first} KiB: {}",
                        o.status.code(),
                        o.status.signal(),
                        stderr(&o)
                    ),
                }
            }
            let Some(first) = ran_at else {
                panic!("{flag} {args}: never ran up to 48 MiB");
            };
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
