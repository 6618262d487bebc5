//! Packaging: `make install` into a temporary `DESTDIR` with the binary cargo built for this test
//! run (make never runs cargo here: `CARGO=false`), the man pages through man(1), the rules of the
//! rendered units, the Debian packages (file lists, control data, copyright, conffile, lintian
//! where installed) and the RPM packages (their files against make install's, where rpmbuild is
//! installed). No cgroup is touched and nothing uses the network.
//!
//! `systemd-analyze verify` of the rendered units is `scripts/verify-units` (make check, make
//! test). That the installed unit lets the daemon write its subtree under systemd as PID 1 is for
//! the guest lane; here the hardening block is checked for every setting that would stop it.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_ck-cgroup");
const SRC: &str = env!("CARGO_MANIFEST_DIR");

/// Variables the Makefile reads from the environment: none may leak in from the caller's.
const MAKE_VARS: &[&str] = &[
    "MAKEFLAGS",
    "MFLAGS",
    "MAKELEVEL",
    "DESTDIR",
    "PREFIX",
    "EXEC_PREFIX",
    "BINDIR",
    "LIBEXECDIR",
    "DATADIR",
    "MANDIR",
    "DOCDIR",
    "HELPERDIR",
    "DAEMON",
    "SYSTEMDSYSTEMUNITDIR",
    "SYSTEMDUSERUNITDIR",
    "BASHCOMPLETIONDIR",
    "ZSHCOMPLETIONDIR",
    "FISHCOMPLETIONDIR",
    "SYSTEMD_VERSION",
    "DELEGATE_SUBGROUP",
    "TEXTFILE_DIR",
    "USER_TEXTFILE_DIR",
    "CK_CGROUP_BIN",
];

fn make_cmd(args: &[&str]) -> Command {
    let mut cmd = Command::new("make");
    // Later assignments win: ARGS may override CK_CGROUP_BIN.
    cmd.args(["-s", "--no-print-directory", "-C", SRC])
        .arg(format!("CK_CGROUP_BIN={BIN}"))
        .arg("CARGO=false")
        .args(args);
    for v in MAKE_VARS {
        cmd.env_remove(v);
    }
    cmd
}

fn check(what: &str, out: Output) -> Output {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `make install DESTDIR=<new temp dir> ARGS...`.
fn install(args: &[&str]) -> TempDir {
    let dest = tempfile::tempdir().expect("tempdir");
    let destdir = format!("DESTDIR={}", dest.path().display());
    let mut all = vec!["install", destdir.as_str()];
    all.extend_from_slice(args);
    check(
        &format!("make {all:?}"),
        make_cmd(&all).output().expect("run make"),
    );
    dest
}

/// Every file under `dir`, relative, sorted by path, as `<octal mode> <path>`.
fn file_list(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let p = e.expect("dir entry").path();
            let meta = std::fs::symlink_metadata(&p).expect("metadata");
            if meta.is_dir() {
                walk(base, &p, out);
            } else {
                use std::os::unix::fs::PermissionsExt;
                let rel = p.strip_prefix(base).unwrap().display().to_string();
                let mode = format!("{:04o}", meta.permissions().mode() & 0o7777);
                out.push((rel, mode));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out.into_iter()
        .map(|(rel, mode)| format!("{mode} {rel}"))
        .collect()
}

/// The commands `ck-cgroup --help` lists (the `help` pseudo-command left out).
fn commands() -> BTreeSet<String> {
    let help = check(
        "ck-cgroup --help",
        Command::new(BIN).arg("--help").output().unwrap(),
    );
    let text = String::from_utf8(help.stdout).unwrap();
    let cmds: BTreeSet<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect();
    assert!(
        cmds.contains("kill"),
        "no commands found in --help:\n{text}"
    );
    cmds
}

/// Replace the per-command man pages `ck-cgroup-<cmd>.1[.gz]` by one placeholder line, so a new
/// command does not change the snapshot (`every_command_has_a_man_page` checks them instead).
fn fold_command_pages(list: &[String]) -> String {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in list {
        let folded = match line.rsplit_once("/man1/ck-cgroup-") {
            Some((head, tail)) => {
                let ext = if tail.ends_with(".gz") { ".1.gz" } else { ".1" };
                format!("{head}/man1/ck-cgroup-<command>{ext}")
            }
            None => line.clone(),
        };
        if seen.insert(folded.clone()) {
            out.push(folded);
        }
    }
    out.join("\n") + "\n"
}

/// The directives of a unit file: (section, key, value), comments and blank lines left out.
fn directives(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not a directive: {line:?}"));
        out.push((section.clone(), k.trim().to_string(), v.trim().to_string()));
    }
    out
}

fn values<'a>(d: &'a [(String, String, String)], section: &str, key: &str) -> Vec<&'a str> {
    d.iter()
        .filter(|(s, k, _)| s == section && k == key)
        .map(|(_, _, v)| v.as_str())
        .collect()
}

fn one<'a>(d: &'a [(String, String, String)], section: &str, key: &str) -> &'a str {
    match values(d, section, key)[..] {
        [v] => v,
        ref vs => panic!("[{section}] {key}= expected once, found {vs:?}"),
    }
}

fn read(p: impl AsRef<Path>) -> String {
    let p = p.as_ref();
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// The default install (PREFIX=/usr/local): both unit directories are then the same with or
/// without pkg-config, so the list does not depend on the host.
#[test]
fn install_tree_file_list() {
    let dest = install(&[]);
    insta::assert_snapshot!("install_tree", fold_command_pages(&file_list(dest.path())));
}

#[test]
fn every_command_has_a_man_page() {
    let dest = install(&[]);
    let man1 = dest.path().join("usr/local/share/man/man1");
    let pages: BTreeSet<String> = std::fs::read_dir(&man1)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut want: BTreeSet<String> = commands()
        .iter()
        .map(|c| format!("ck-cgroup-{c}.1"))
        .collect();
    want.insert("ck-cgroup.1".to_string());
    assert_eq!(pages, want);
}

#[test]
fn man_pages_render_without_warnings() {
    let dest = install(&[]);
    let man1 = dest.path().join("usr/local/share/man/man1");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&man1)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    assert!(!pages.is_empty());
    for page in pages {
        let out = Command::new("man")
            .args(["--warnings", "-E", "UTF-8", "-l"])
            .arg(&page)
            .env("MANWIDTH", "80")
            .env("LC_ALL", "C.UTF-8")
            .env_remove("MANPAGER")
            .env_remove("PAGER")
            .output()
            .expect("run man(1): install man-db");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.is_empty(),
            "man -l {}: {}\n{stderr}",
            page.display(),
            out.status
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("NAME"), "{}: no NAME section", page.display());
        // top refuses --json: its page does not offer it.
        if page.ends_with("ck-cgroup-top.1") {
            assert!(
                !text.contains("--json"),
                "{}: offers --json",
                page.display()
            );
        }
        // The help texts' Markdown code spans are roff bold on the page, not backticks.
        let ticks: Vec<&str> = text.lines().filter(|l| l.contains('`')).collect();
        assert!(
            ticks.is_empty(),
            "{}: backticks shown: {ticks:?}",
            page.display()
        );
    }
}

/// The sections clap cannot write: EXIT STATUS on every page (the codes of README.md), and on the
/// top-level page ENVIRONMENT (what the helper reads, not the mutation controls' build switch),
/// FILES and SEE ALSO naming every command's page.
#[test]
fn man_pages_have_exit_status_environment_files_see_also() {
    let dest = install(&[]);
    let man1 = dest.path().join("usr/local/share/man/man1");
    let render = |page: &Path| {
        let out = Command::new("man")
            .args(["-E", "UTF-8", "-l"])
            .arg(page)
            .env("MANWIDTH", "200")
            .env("LC_ALL", "C.UTF-8")
            .env_remove("MANPAGER")
            .env_remove("PAGER")
            .output()
            .expect("run man(1)");
        String::from_utf8_lossy(&out.stdout).replace('\u{2010}', "-")
    };
    let top = render(&man1.join("ck-cgroup.1"));
    let headings: Vec<&str> = top
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(' '))
        .collect();
    let pos = |h: &str| {
        headings
            .iter()
            .position(|l| *l == h)
            .unwrap_or_else(|| panic!("ck-cgroup(1) has no {h} section: {headings:?}"))
    };
    let order: Vec<usize> = ["EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"]
        .iter()
        .map(|h| pos(h))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{headings:?}");
    let section = |text: &str, h: &str| -> String {
        text.lines()
            .skip_while(|l| *l != h)
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with(' '))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let exit = section(&top, "EXIT STATUS");
    for code in ["0", "1", "2", "126", "127", "128+N"] {
        assert!(
            exit.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
                .any(|w| w == code),
            "EXIT STATUS lacks {code}:\n{exit}"
        );
    }
    let env = section(&top, "ENVIRONMENT");
    for var in ["CK_CGROUP_ROOT", "CK_CGROUP_BACKEND", "CK_CGROUP_POLICY"] {
        assert!(env.contains(var), "ENVIRONMENT lacks {var}:\n{env}");
    }
    assert!(
        !top.contains("CK_MUTATION"),
        "CK_MUTATION is not user-facing"
    );
    let files = section(&top, "FILES");
    for f in [
        "/etc/ck-cgroup/policy.toml",
        "ck-subc.service",
        "module.slice",
        "ck-cgroup-metrics.timer",
    ] {
        assert!(files.contains(f), "FILES lacks {f}:\n{files}");
    }
    let see = section(&top, "SEE ALSO");
    for c in commands() {
        assert!(
            see.contains(&format!("ck-cgroup-{c}(1)")),
            "SEE ALSO lacks ck-cgroup-{c}(1):\n{see}"
        );
    }
    // man(1) may hyphenate a long name at any width: compared without hyphens and blanks.
    let bare = |t: &str| t.replace(|c: char| c == '-' || c.is_whitespace(), "");
    for p in ["systemd.resource-control(5)", "systemd-cgls(1)"] {
        assert!(bare(&see).contains(&bare(p)), "SEE ALSO lacks {p}:\n{see}");
    }
    for c in commands() {
        let page = render(&man1.join(format!("ck-cgroup-{c}.1")));
        assert!(
            page.lines().any(|l| l == "EXIT STATUS"),
            "ck-cgroup-{c}(1) has no EXIT STATUS"
        );
        assert!(
            section(&page, "SEE ALSO").contains("ck-cgroup(1)"),
            "ck-cgroup-{c}(1) does not point to ck-cgroup(1)"
        );
    }
}

/// Every setting that would take the cgroup filesystem away from the daemon, or clone3() (and with
/// it CLONE_INTO_CGROUP) away from the helper.
fn breaks_delegation(key: &str, value: &str, all: &[(String, String, String)]) -> Option<String> {
    let sys = |v: &str| {
        v.split_whitespace()
            .map(|p| p.trim_start_matches(['-', '+']))
            .any(|p| p == "/" || p == "/sys" || p.starts_with("/sys/fs/cgroup") || p == "/sys/fs")
    };
    match key {
        "ProtectControlGroups" => Some("makes the cgroup filesystem read-only".into()),
        "ProtectKernelTunables" => {
            Some("makes /sys read-only, the cgroup2 mount below it too".into())
        }
        "RestrictNamespaces" => Some("systemd then fails clone3() with ENOSYS".into()),
        "ProtectSystem" if value == "strict" => {
            let rw = values(all, "Service", "ReadWritePaths");
            (!rw.iter().any(|v| v.contains("/sys/fs/cgroup")))
                .then(|| "ProtectSystem=strict without ReadWritePaths= for /sys/fs/cgroup".into())
        }
        "ReadOnlyPaths" | "InaccessiblePaths" | "TemporaryFileSystem" | "BindReadOnlyPaths"
            if sys(value) =>
        {
            Some(format!("{key}={value} covers the cgroup mount"))
        }
        "Delegate" if matches!(value, "no" | "false" | "0" | "off") => {
            Some("turns delegation off".into())
        }
        _ => None,
    }
}

fn check_service_unit(text: &str, manager: &str, helper: &str, daemon: &str) {
    let d = directives(text);
    // Delegation: exactly the controllers the helper uses.
    let delegated: BTreeSet<&str> = one(&d, "Service", "Delegate").split_whitespace().collect();
    assert_eq!(
        delegated,
        ["cpu", "io", "memory", "pids"].into_iter().collect(),
        "Delegate="
    );
    assert_eq!(one(&d, "Service", "OOMPolicy"), "continue");
    assert_eq!(one(&d, "Service", "KillMode"), "mixed");
    assert_eq!(one(&d, "Service", "TimeoutStopSec"), "35");
    assert_eq!(one(&d, "Service", "Restart"), "on-failure");
    let doc = one(&d, "Unit", "Documentation");
    assert!(doc.contains("man:ck-cgroup(1)"), "Documentation={doc}");
    assert!(
        doc.split_whitespace()
            .all(|u| u.starts_with("man:") || u.starts_with("https://")),
        "Documentation={doc}: man: pages and https URLs only"
    );
    assert_eq!(
        one(&d, "Service", "ExecStart"),
        format!("{helper} init -- {daemon}")
    );
    assert_eq!(
        one(&d, "Service", "Environment"),
        format!("CK_CGROUP_HELPER={helper}")
    );
    // prune --kill before the daemon starts, and never while it runs.
    assert_eq!(
        one(&d, "Service", "ExecStartPre"),
        format!("{helper} prune --kill --if-laid-out")
    );
    for (s, k, v) in &d {
        if k.starts_with("Exec") && k != "ExecStartPre" {
            assert!(
                !v.contains("prune"),
                "[{s}] {k}={v}: prune only before the daemon starts"
            );
        }
    }
    for (_, k, v) in &d {
        if let Some(why) = breaks_delegation(k, v, &d) {
            panic!("{k}={v} in the {manager} unit: {why}");
        }
    }
    // The hardening block: present, sorted, one setting per key.
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("# Hardening"))
        .expect("a # Hardening block");
    let block: Vec<&str> = lines[start..]
        .iter()
        .skip_while(|l| l.starts_with('#'))
        .take_while(|l| !l.trim().is_empty())
        .copied()
        .collect();
    assert!(block.len() >= 3, "hardening block: {block:?}");
    let keys: Vec<&str> = block
        .iter()
        .map(|l| l.split_once('=').expect("a directive").0)
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(keys, sorted, "the hardening block is sorted, each key once");
    match manager {
        "system" => assert_eq!(one(&d, "Install", "WantedBy"), "multi-user.target"),
        _ => {
            assert_eq!(one(&d, "Install", "WantedBy"), "default.target");
            assert!(
                values(&d, "Service", "User").is_empty(),
                "User= in a user unit"
            );
            assert!(
                values(&d, "Service", "Group").is_empty(),
                "Group= in a user unit"
            );
        }
    }
}

#[test]
fn service_units_keep_delegation_and_the_stop_contract() {
    let dest = install(&[]);
    let lib = dest.path().join("usr/local/lib/systemd");
    for manager in ["system", "user"] {
        let text = read(lib.join(manager).join("ck-subc.service"));
        check_service_unit(
            &text,
            manager,
            "/usr/local/bin/ck-cgroup",
            "/usr/local/bin/ck-subc",
        );
        assert!(
            !text.contains(&dest.path().display().to_string()),
            "DESTDIR in the unit"
        );
        assert!(!text.contains('@'), "an unfilled @VARIABLE@:\n{text}");
    }
}

#[test]
fn helper_and_daemon_paths_follow_the_variables() {
    let dest = install(&[
        "PREFIX=/usr",
        "HELPERDIR=/usr/libexec/ck-cgroup",
        "DAEMON=/opt/subc/bin/ck-subc",
        "SYSTEMDSYSTEMUNITDIR=/usr/lib/systemd/system",
        "SYSTEMDUSERUNITDIR=/usr/lib/systemd/user",
    ]);
    assert!(
        dest.path()
            .join("usr/libexec/ck-cgroup/ck-cgroup")
            .is_file()
    );
    assert!(!dest.path().join("usr/bin/ck-cgroup").exists());
    for manager in ["system", "user"] {
        let text = read(
            dest.path()
                .join(format!("usr/lib/systemd/{manager}/ck-subc.service")),
        );
        check_service_unit(
            &text,
            manager,
            "/usr/libexec/ck-cgroup/ck-cgroup",
            "/opt/subc/bin/ck-subc",
        );
        // Not file:/usr/share/doc/...: images without docs (path-exclude) would break the link.
        assert!(!text.contains("file:"), "a file: link in Documentation=");
    }
}

#[test]
fn delegate_subgroup_follows_the_systemd_version() {
    for (args, want) in [
        (&["DELEGATE_SUBGROUP=yes"][..], true),
        (&["DELEGATE_SUBGROUP=no"][..], false),
        (&["SYSTEMD_VERSION=254"][..], true),
        (&["SYSTEMD_VERSION=252"][..], false),
    ] {
        let dest = install(args);
        for manager in ["system", "user"] {
            let text = read(
                dest.path()
                    .join(format!("usr/local/lib/systemd/{manager}/ck-subc.service")),
            );
            let d = directives(&text);
            let got = values(&d, "Service", "DelegateSubgroup");
            if want {
                assert_eq!(got, ["daemon"], "{args:?} {manager}");
            } else {
                assert!(got.is_empty(), "{args:?} {manager}: {got:?}");
                assert!(text.contains("#DelegateSubgroup=daemon (off"), "{args:?}");
            }
        }
    }
}

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
                    "/usr/local/bin/ck-cgroup {user}--unit ck-subc.service status --format prometheus --output {textfile}/ck-subc.prom"
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

#[test]
fn module_slices_account_and_set_no_limits() {
    let dest = install(&[]);
    for manager in ["system", "user"] {
        let dir = dest.path().join(format!("usr/local/lib/systemd/{manager}"));
        for file in ["module.slice", "module-.slice.d/ck-cgroup.conf"] {
            let d = directives(&read(dir.join(file)));
            let slice: Vec<_> = d.iter().filter(|(s, _, _)| s == "Slice").collect();
            assert!(!slice.is_empty(), "{manager} {file}: no [Slice] settings");
            for (_, k, v) in slice {
                assert!(
                    k.ends_with("Accounting") && v == "yes",
                    "{manager} {file}: {k}={v} (accounting only, no limits by default)"
                );
            }
        }
    }
}

#[test]
fn uninstall_removes_every_file() {
    let dest = install(&[]);
    let destdir = format!("DESTDIR={}", dest.path().display());
    check(
        "make uninstall",
        make_cmd(&["uninstall", &destdir]).output().unwrap(),
    );
    assert_eq!(file_list(dest.path()), Vec::<String>::new());
}

#[test]
fn install_without_a_built_helper_fails_without_cargo() {
    let dest = tempfile::tempdir().unwrap();
    let out = make_cmd(&[
        "install",
        &format!("DESTDIR={}", dest.path().display()),
        "CK_CGROUP_BIN=/nonexistent/ck-cgroup",
    ])
    .output()
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not an executable"), "{stderr}");
    assert_eq!(file_list(dest.path()), Vec::<String>::new());
}

fn pkg_config(var: &str, default: &str) -> String {
    Command::new("pkg-config")
        .args([&format!("--variable={var}"), "systemd"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// `dpkg-deb -c DEB` as `<mode> <owner> <path>`, unit directories as placeholders, sorted by path,
/// directories left out.
fn deb_listing(deb: &Path) -> Vec<String> {
    let listing = check(
        "dpkg-deb -c",
        Command::new("dpkg-deb")
            .arg("-c")
            .arg(deb)
            .output()
            .unwrap(),
    );
    let sys = pkg_config("systemdsystemunitdir", "/lib/systemd/system");
    let user = pkg_config("systemduserunitdir", "/usr/lib/systemd/user");
    let mut lines: Vec<String> = String::from_utf8(listing.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let path = f[5..]
                .join(" ")
                .replacen(&format!(".{sys}/"), "./<systemdsystemunitdir>/", 1)
                .replacen(&format!(".{user}/"), "./<systemduserunitdir>/", 1);
            format!("{} {} {path}", f[0], f[1])
        })
        .filter(|l| !l.starts_with('d'))
        .collect();
    lines.sort_by(|a, b| a.rsplit(' ').next().cmp(&b.rsplit(' ').next()));
    lines
}

/// The control file of a .deb, parsed: field name to value (a multi-line value joined by `\n`).
fn deb_control(deb: &Path) -> std::collections::BTreeMap<String, String> {
    let out = check(
        "dpkg-deb -f",
        Command::new("dpkg-deb")
            .arg("-f")
            .arg(deb)
            .output()
            .unwrap(),
    );
    let mut fields = std::collections::BTreeMap::new();
    let mut last = String::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        if let Some(cont) = line.strip_prefix(' ') {
            let v: &mut String = fields.get_mut(&last).expect("a continuation line first");
            v.push('\n');
            v.push_str(cont);
        } else {
            let (k, v) = line.split_once(':').expect("a field");
            last = k.to_string();
            fields.insert(last.clone(), v.trim().to_string());
        }
    }
    fields
}

/// One file of a .deb, by its path inside (`./usr/...`).
fn deb_file(deb: &Path, path: &str) -> String {
    let out = check(
        "dpkg-deb --fsys-tarfile",
        Command::new("sh")
            .arg("-c")
            .arg(r#"dpkg-deb --fsys-tarfile "$1" | tar -xOf - "$2""#)
            .arg("sh")
            .arg(deb)
            .arg(path)
            .output()
            .unwrap(),
    );
    String::from_utf8(out.stdout).unwrap()
}

/// scripts/build-deb with this test's binary: the two packages' file lists (unit directories as
/// pkg-config names them here, shown as placeholders), their control data, the copyright format,
/// the conffile, the maintainer scripts. build-deb itself runs lintian --pedantic where it is
/// installed and fails on any tag that is not overridden.
#[test]
fn debian_package() {
    let out = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(Path::new(SRC).join("scripts/build-deb"));
    for v in MAKE_VARS {
        cmd.env_remove(v);
    }
    cmd.arg("--out").arg(out.path()).env("CK_CGROUP_BIN", BIN);
    let built = check(
        "scripts/build-deb",
        cmd.output().expect("run scripts/build-deb"),
    );
    let debs: Vec<PathBuf> = String::from_utf8(built.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect();
    let [deb, units] = &debs[..] else {
        panic!("build-deb printed {debs:?}, not two packages");
    };
    for d in [deb, units] {
        assert!(d.starts_with(out.path()) && d.is_file(), "{}", d.display());
    }

    let helper_files = deb_listing(deb);
    insta::assert_snapshot!("deb_contents", fold_command_pages(&helper_files));
    let unit_files = deb_listing(units);
    insta::assert_snapshot!("deb_units_contents", unit_files.join("\n") + "\n");
    assert!(
        !helper_files.iter().any(|l| l.ends_with("ck-subc.service")),
        "ck-cgroup ships the daemon's unit"
    );

    // Control fields.
    let version = check(
        "--version",
        Command::new(BIN).arg("--version").output().unwrap(),
    );
    let upstream = String::from_utf8(version.stdout).unwrap();
    let want_version = format!("{}-0~ck1", upstream.split_whitespace().nth(1).unwrap());
    let c = deb_control(deb);
    let u = deb_control(units);
    for (name, f) in [("ck-cgroup", &c), ("ck-subc-units", &u)] {
        assert_eq!(f["Package"], name);
        assert_eq!(
            f["Version"], want_version,
            "{name}: below any Debian revision"
        );
        assert_eq!(f["Multi-Arch"], "foreign", "{name}");
        assert_eq!(f["Section"], "admin", "{name}");
        assert_eq!(f["Priority"], "optional", "{name}");
        // No public URL is known yet: without CK_HOMEPAGE there is no Homepage field.
        assert!(
            !f.contains_key("Homepage"),
            "{name}: {:?}",
            f.get("Homepage")
        );
        let desc = &f["Description"];
        let (synopsis, long) = desc.split_once('\n').expect("a long description");
        assert!(
            synopsis.len() < 80 && !synopsis.ends_with('.'),
            "{synopsis}"
        );
        assert!(
            long.lines().count() >= 4,
            "{name}: long description:\n{long}"
        );
    }
    assert!(c["Depends"].contains("libc6"), "Depends: {}", c["Depends"]);
    assert!(c["Recommends"].contains("systemd"), "{c:?}");
    assert!(c["Suggests"].contains("ck-subc-units"), "{c:?}");
    assert_eq!(u["Architecture"], "all");
    assert_eq!(u["Source"], "ck-cgroup");
    let udeps: Vec<&str> = u["Depends"].split(',').map(str::trim).collect();
    assert!(
        udeps.contains(&format!("ck-cgroup (= {want_version})").as_str()),
        "{udeps:?}"
    );
    assert!(udeps.contains(&"ck-subc-daemon"), "{udeps:?}");

    // The conffile: listed, and all comments, so it parses as the empty policy.
    let conffiles = check(
        "dpkg-deb --ctrl-tarfile",
        Command::new("sh")
            .arg("-c")
            .arg(r#"dpkg-deb --ctrl-tarfile "$1" | tar -xOf - ./conffiles"#)
            .arg("sh")
            .arg(deb)
            .output()
            .unwrap(),
    );
    assert_eq!(
        String::from_utf8(conffiles.stdout).unwrap(),
        "/etc/ck-cgroup/policy.toml\n"
    );
    let policy = deb_file(deb, "./etc/ck-cgroup/policy.toml");
    check_empty_policy(&policy);

    // DEP-5 copyright: the header, the project's paragraph, a paragraph per compiled-in crate, and
    // a stand-alone License paragraph for every license named.
    for (name, d) in [("ck-cgroup", deb), ("ck-subc-units", units)] {
        let text = deb_file(d, &format!("./usr/share/doc/{name}/copyright"));
        check_dep5(&text, name == "ck-cgroup");
    }

    // Maintainer scripts.
    let script = |name: &str| -> Vec<String> {
        read(Path::new(SRC).join("packaging/debian").join(name))
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    for name in ["ck-cgroup.postinst", "ck-cgroup.postrm"] {
        let code = script(name);
        for l in code.iter().filter(|l| l.contains("systemctl")) {
            assert!(l.contains("daemon-reload"), "{name}: {l}");
        }
        for word in ["start", "stop", "restart", "deb-systemd-invoke"] {
            assert!(
                !code.iter().any(|l| l.split_whitespace().any(|w| w == word)),
                "{name} runs {word}"
            );
        }
    }
    for name in [
        "ck-cgroup.postinst",
        "ck-cgroup.postrm",
        "ck-subc-units.postinst",
        "ck-subc-units.postrm",
    ] {
        let code = script(name);
        let guard = code
            .iter()
            .position(|l| l.contains("[ -d /run/systemd/system ]"))
            .unwrap_or_else(|| panic!("{name}: not guarded by /run/systemd/system"));
        let reload = code
            .iter()
            .position(|l| l.contains("daemon-reload"))
            .unwrap_or_else(|| panic!("{name}: no daemon-reload"));
        assert!(guard < reload, "{name}: daemon-reload before the guard");
    }
    // deb-systemd-helper's state tracking, for ck-subc.service (ck-subc-units) and for
    // ck-cgroup-metrics.timer (ck-cgroup): `enable` only for a unit the operator had enabled
    // (was-enabled); a stop only on removal; never a start or restart.
    for (pkg, unit) in [
        ("ck-subc-units", "ck-subc.service"),
        ("ck-cgroup", "ck-cgroup-metrics.timer"),
    ] {
        let postinst = script(&format!("{pkg}.postinst"));
        for (i, l) in postinst.iter().enumerate() {
            if l.contains("deb-systemd-helper") && l.contains(" enable ") {
                assert!(
                    postinst[i - 1].contains("was-enabled"),
                    "{pkg} postinst: {l} without a was-enabled guard"
                );
                assert!(l.contains(&format!("'{unit}'")), "{pkg} postinst: {l}");
            }
            for word in ["start", "restart", "try-restart", "deb-systemd-invoke"] {
                assert!(
                    !l.split_whitespace().any(|w| w == word),
                    "{pkg} postinst runs {word}: {l}"
                );
            }
        }
        for want in ["was-enabled", "update-state", "--user update-state"] {
            assert!(
                postinst
                    .iter()
                    .any(|l| l.contains(want) && l.contains(unit)),
                "{pkg} postinst lacks {want} for {unit}"
            );
        }
        let postrm = script(&format!("{pkg}.postrm"));
        assert!(
            postrm
                .iter()
                .any(|l| l.contains(&format!("deb-systemd-helper purge '{unit}'"))),
            "{pkg} postrm: no purge of the enable links of {unit}"
        );
        let prerm = script(&format!("{pkg}.prerm"));
        for l in prerm.iter().filter(|l| l.contains("deb-systemd-invoke")) {
            assert!(
                l.split_whitespace().any(|w| w == "stop"),
                "{pkg} prerm: {l}: only a stop"
            );
            assert!(l.contains(&format!("'{unit}'")), "{pkg} prerm: {l}");
        }
        assert!(
            prerm
                .iter()
                .any(|l| l.contains(r#""$1" = remove"#) && l.contains("/run/systemd/system")),
            "{pkg} prerm: a stop only on removal, only where systemd runs"
        );
    }
    assert!(
        script("ck-subc-units.postinst")
            .iter()
            .any(|l| l.contains("unmask")),
        "ck-subc-units postinst lacks unmask"
    );
    let deps: Vec<&str> = c["Depends"].split(',').map(str::trim).collect();
    assert!(
        deps.iter().any(|d| d.starts_with("init-system-helpers")),
        "ck-cgroup runs deb-systemd-helper: {deps:?}"
    );
    // The metrics units are ck-cgroup's, for both managers, and not ck-subc-units'.
    for unit in ["ck-cgroup-metrics.service", "ck-cgroup-metrics.timer"] {
        for dir in ["<systemdsystemunitdir>", "<systemduserunitdir>"] {
            let want = format!("-rw-r--r-- root/root ./{dir}/{unit}");
            assert!(helper_files.contains(&want), "ck-cgroup lacks {want}");
        }
        assert!(!unit_files.iter().any(|l| l.ends_with(unit)), "{unit}");
    }
}

/// A policy that parses (the library's parser, and the helper's: `apply --dry-run` reads it before
/// the root) and sets nothing.
fn check_empty_policy(text: &str) {
    assert!(
        text.lines().all(|l| l.is_empty() || l.starts_with('#')),
        "the packaged policy must be all comments:\n{text}"
    );
    let p = ck_cgroup::policy::Policy::parse(text, Path::new("policy.toml")).expect("parses");
    assert!(p.defaults.limits.is_empty() && p.defaults.memory_report.is_none());
    assert!(p.modules.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(BIN)
        .arg("--root")
        .arg(dir.path())
        .args(["apply", "--dry-run", "--policy"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("invalid policy"),
        "the helper refuses the packaged policy: {stderr}"
    );
    // Uncommented, the example is a valid policy too (the keys are the parser's).
    let uncommented: String = text
        .lines()
        .skip_while(|l| *l != "# [defaults]")
        .map(|l| l.strip_prefix("# ").unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let p = ck_cgroup::policy::Policy::parse(&uncommented, Path::new("uncommented"))
        .unwrap_or_else(|e| panic!("the example, uncommented: {e}\n{uncommented}"));
    assert!(!p.modules.is_empty());
}

/// A DEP-5 copyright file: its header, `Files: *` under the project's license, and every license
/// short name used in a `License:` of a Files paragraph given a stand-alone License paragraph
/// with text; Apache-2.0 points to /usr/share/common-licenses, MIT has its text.
fn check_dep5(text: &str, crates: bool) {
    let paras: Vec<&str> = text.split("\n\n").collect();
    assert!(
        paras[0].starts_with(
            "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
        ),
        "{}",
        paras[0]
    );
    assert!(paras[0].contains("\nUpstream-Name: ck-cgroup\n"));
    assert!(
        !paras[0].contains("\nSource: "),
        "no public URL is known yet"
    );
    let field = |p: &str, k: &str| -> Option<String> {
        p.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}: ")).map(str::to_string))
    };
    assert_eq!(field(paras[1], "Files").as_deref(), Some("*"));
    assert_eq!(
        field(paras[1], "License").as_deref(),
        Some("MIT or Apache-2.0")
    );
    let mut used = BTreeSet::new();
    let mut defined = BTreeSet::new();
    let mut vendored = 0;
    for p in &paras[1..] {
        let license = field(p, "License").unwrap_or_else(|| panic!("no License: in\n{p}"));
        if field(p, "Files").is_some() {
            assert!(field(p, "Copyright").is_some(), "no Copyright: in\n{p}");
            if field(p, "Files").unwrap().starts_with("vendor/") {
                vendored += 1;
            }
            let expr = license.replace(['(', ')'], "");
            for part in expr.split(" or ").flat_map(|p| p.split(" and ")) {
                used.insert(part.trim().to_string());
            }
        } else {
            assert!(
                p.lines().count() > 1,
                "License: {license} has no text:\n{p}"
            );
            defined.insert(license.clone());
            if license == "Apache-2.0" {
                assert!(p.contains("/usr/share/common-licenses/Apache-2.0"), "{p}");
            }
            if license == "MIT" {
                assert!(p.contains("Permission is hereby granted"), "{p}");
            }
        }
    }
    assert_eq!(used, defined, "License paragraphs");
    if crates {
        assert!(vendored > 10, "{vendored} crate paragraphs");
    } else {
        assert_eq!(vendored, 0);
    }
}

/// scripts/build-rpm with this test's binary: the two packages' files together (`rpm -qlvp`,
/// directories left out) are exactly what `make install` puts into a DESTDIR with the spec's
/// variables, plus the policy conffile and the license files; the service is only in
/// ck-subc-units; the policy is %config(noreplace); the scriptlets are systemd's macros. Skipped,
/// with the reason printed, where rpmbuild is not installed (`.ci/run` installs it).
#[test]
fn rpm_packages_match_the_install_tree() {
    if Command::new("rpmbuild").arg("--version").output().is_err() {
        common::skip("rpmbuild is not installed (apt-get install rpm)");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(Path::new(SRC).join("scripts/build-rpm"));
    for v in MAKE_VARS {
        cmd.env_remove(v);
    }
    cmd.arg("--out").arg(out.path()).env("CK_CGROUP_BIN", BIN);
    let built = check(
        "scripts/build-rpm",
        cmd.output().expect("run scripts/build-rpm"),
    );
    let rpms: Vec<PathBuf> = String::from_utf8(built.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect();
    let [main, units] = &rpms[..] else {
        panic!("build-rpm printed {rpms:?}, not two packages");
    };
    let rpm = |args: &[&str], pkg: &Path| -> String {
        let o = check(
            &format!("rpm {args:?}"),
            Command::new("rpm").args(args).arg(pkg).output().unwrap(),
        );
        String::from_utf8(o.stdout).unwrap()
    };
    // Files (not directories) as `<mode> <path>`, man pages without a compression suffix.
    let files = |pkg: &Path| -> BTreeSet<String> {
        rpm(&["-qlvp"], pkg)
            .lines()
            .filter(|l| l.starts_with('-'))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let path = f[f.len() - 1].trim_end_matches(".gz");
                let mode = match f[0] {
                    "-rwxr-xr-x" => "0755",
                    "-rw-r--r--" => "0644",
                    other => other,
                };
                format!("{mode} {}", path.trim_start_matches('/'))
            })
            .collect()
    };
    let main_files = files(main);
    let unit_files = files(units);
    assert!(
        main_files.is_disjoint(&unit_files),
        "{:?}",
        main_files.intersection(&unit_files).collect::<Vec<_>>()
    );
    assert!(
        unit_files
            .iter()
            .all(|f| f.ends_with("/ck-subc.service") || f.contains("/licenses/")),
        "ck-subc-units: {unit_files:?}"
    );
    assert!(!main_files.iter().any(|f| f.ends_with("ck-subc.service")));

    let dest = install(&[
        "PREFIX=/usr",
        "SYSTEMDSYSTEMUNITDIR=/usr/lib/systemd/system",
        "SYSTEMDUSERUNITDIR=/usr/lib/systemd/user",
        "BASHCOMPLETIONDIR=/usr/share/bash-completion/completions",
        "ZSHCOMPLETIONDIR=/usr/share/zsh/site-functions",
        "FISHCOMPLETIONDIR=/usr/share/fish/vendor_completions.d",
        "DOCDIR=/usr/share/doc/ck-cgroup",
    ]);
    let mut want: BTreeSet<String> = file_list(dest.path()).into_iter().collect();
    want.insert("0644 etc/ck-cgroup/policy.toml".to_string());
    let got: BTreeSet<String> = main_files
        .union(&unit_files)
        .filter(|f| !f.contains("usr/share/licenses/"))
        .cloned()
        .collect();
    assert_eq!(got, want, "the RPMs' files and make install's");
    for pkg in [main, units] {
        let lic: Vec<String> = files(pkg)
            .into_iter()
            .filter(|f| f.contains("usr/share/licenses/"))
            .collect();
        assert!(
            lic.iter().any(|f| f.ends_with("/LICENSE-MIT"))
                && lic.iter().any(|f| f.ends_with("/LICENSE-APACHE")),
            "{}: %license files: {lic:?}",
            pkg.display()
        );
    }
    assert_eq!(rpm(&["-qpc"], main).trim(), "/etc/ck-cgroup/policy.toml");
    let policy = rpm(
        &["-qp", "--qf", "[%{FILENAMES} %{FILEFLAGS:fflags}\n]"],
        main,
    );
    assert!(
        policy.lines().any(|l| l == "/etc/ck-cgroup/policy.toml cn"),
        "policy.toml is not %config(noreplace):\n{policy}"
    );
    assert_eq!(
        rpm(&["-qp", "--qf", "%{LICENSE}"], main),
        "MIT OR Apache-2.0"
    );
    let requires = rpm(&["-qpR"], units);
    assert!(requires.contains("ck-cgroup = "), "{requires}");
    assert!(requires.contains("ck-subc-daemon"), "{requires}");
    let scripts = rpm(&["-qp", "--scripts"], units);
    for want in [
        "install-system-units ck-subc.service",
        "remove-system-units ck-subc.service",
        "mark-reload-system-units ck-subc.service",
    ] {
        assert!(
            scripts.contains(want),
            "ck-subc-units lacks {want}:\n{scripts}"
        );
    }
    assert!(
        !scripts.contains("mark-restart"),
        "an upgrade restarts the daemon:\n{scripts}"
    );
}
