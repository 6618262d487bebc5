//! `ck-cgroup-metrics.service` and its timer: the Prometheus textfile, every 15 s while the daemon
//! runs; the helper takes their `ExecStart=` arguments.

use std::process::Command;

use crate::make_install::install;
use crate::{BIN, directives, one, read, values};

/// ck-cgroup-metrics.service: one `status --format prometheus --output` into the textfile
/// directory (the system's: Debian's node exporter's; the user's: under %S), skipped where that
/// directory does not exist, sandboxed with the directory writable (system); its timer runs it
/// every 15 s while ck-subc.service runs, and nothing enables it.
#[test]
fn metrics_units_write_the_textfile_directory_and_are_bound_to_the_service() {
    for (args, sys_dir) in [
        (&[][..], "/var/lib/prometheus/node-exporter"),
        (&["TEXTFILE_DIR=/srv/textfile"][..], "/srv/textfile"),
    ] {
        let dest = install(args);
        for manager in ["system", "user"] {
            let dir = dest.path().join(format!("usr/local/lib/systemd/{manager}"));
            let text = read(dir.join("ck-cgroup-metrics.service"));
            assert!(!text.contains('@'), "an unfilled @VARIABLE@:\n{text}");
            let d = directives(&text);
            let textfile = if manager == "system" {
                sys_dir
            } else {
                "%S/prometheus/node-exporter"
            };
            assert_eq!(one(&d, "Unit", "ConditionPathIsDirectory"), textfile);
            assert_eq!(one(&d, "Unit", "After"), "ck-subc.service");
            assert_eq!(one(&d, "Service", "Type"), "oneshot");
            let user = if manager == "user" { "--user " } else { "" };
            assert_eq!(
                one(&d, "Service", "ExecStart"),
                format!(
                    "/usr/local/bin/ck-cgroup {user}--unit ck-subc.service status --format prometheus --age-cold --output {textfile}/ck-subc.prom"
                )
            );
            assert_eq!(one(&d, "Service", "NoNewPrivileges"), "yes");
            if manager == "system" {
                assert_eq!(one(&d, "Service", "ProtectSystem"), "strict");
                assert_eq!(one(&d, "Service", "ReadWritePaths"), textfile);
            } else {
                // Mount sandboxing needs a user namespace in the user manager: none here.
                for k in [
                    "ProtectSystem",
                    "ReadWritePaths",
                    "PrivateTmp",
                    "ProtectHome",
                ] {
                    assert!(values(&d, "Service", k).is_empty(), "{k}= in a user unit");
                }
            }
            assert!(
                values(&d, "Install", "WantedBy").is_empty(),
                "the timer runs it"
            );
            let t = directives(&read(dir.join("ck-cgroup-metrics.timer")));
            assert_eq!(one(&t, "Unit", "BindsTo"), "ck-subc.service");
            assert_eq!(one(&t, "Timer", "OnUnitActiveSec"), "15s");
            assert_eq!(one(&t, "Install", "WantedBy"), "ck-subc.service");
        }
    }
    // The ExecStart= the helper takes: its arguments parse. Without a reachable systemd, --unit
    // is refused (exit 2) after they were taken; with --root, the missing directory is.
    for manager in [&[][..], &["--user"][..]] {
        let out = Command::new(BIN)
            .args(manager)
            .args([
                "--unit",
                "ck-subc.service",
                "status",
                "--format",
                "prometheus",
            ])
            .args(["--output", "/nonexistent-ck-textfile/ck-subc.prom"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("ck-cgroup: "), "not a usage error: {err}");
    }
    let root = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .args(["status", "--format", "prometheus"])
        .args(["--output", "/nonexistent-ck-textfile/ck-subc.prom"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("does not exist"), "{err}");
}
