//! The man pages (`ck-cgroup generate man`, installed by make install): one per command, each
//! rendering through man(1) without a warning, with the sections clap cannot write.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::make_install::install;
use crate::{BIN, check};

/// The commands `ck-cgroup --help` lists (the `help` pseudo-command left out).
pub(crate) fn commands() -> BTreeSet<String> {
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
