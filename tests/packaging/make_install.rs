//! `make install DESTDIR=…` with the binary cargo built for this test run (make never runs cargo
//! here: `CARGO=false`): its file list (an insta snapshot), `make uninstall` removing every file,
//! and an install without a built helper failing without cargo.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use tempfile::TempDir;

use crate::{BIN, SRC, check};

/// Variables the Makefile reads from the environment: none may leak in from the caller's.
pub(crate) const MAKE_VARS: &[&str] = &[
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

pub(crate) fn make_cmd(args: &[&str]) -> Command {
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

/// `make install DESTDIR=<new temp dir> ARGS...`.
pub(crate) fn install(args: &[&str]) -> TempDir {
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
pub(crate) fn file_list(dir: &Path) -> Vec<String> {
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

/// Replace the per-command man pages `ck-cgroup-<cmd>.1[.gz]` by one placeholder line, so a new
/// command does not change the snapshot (`every_command_has_a_man_page` checks them instead).
pub(crate) fn fold_command_pages(list: &[String]) -> String {
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

/// The default install (PREFIX=/usr/local): both unit directories are then the same with or
/// without pkg-config, so the list does not depend on the host.
#[test]
fn install_tree_file_list() {
    let dest = install(&[]);
    insta::assert_snapshot!("install_tree", fold_command_pages(&file_list(dest.path())));
}

/// The docs of working on the source tree (`make vm-test`, `make bench`), which the README names
/// but `make install` leaves out.
const SOURCE_TREE_DOCS: [&str; 2] = ["guest-lane.md", "performance.md"];

/// The installed README points to docs/commands.md ("every command and option"), which no route
/// installed: every `docs/NAME.md` the installed README names is installed beside it, but the
/// source tree's own. The packages ship what make install does (tests/packaging/deb.rs and
/// rpm.rs hold them to it, packaging/debian/files names each).
#[test]
fn every_doc_the_installed_readme_names_is_installed_commands_md_too() {
    let dest = install(&[]);
    let docdir = dest.path().join("usr/local/share/doc/ck-cgroup");
    let readme = std::fs::read_to_string(docdir.join("README.md")).expect("installed README.md");
    let named: BTreeSet<&str> = readme
        .split("docs/")
        .skip(1)
        .filter_map(|rest| rest.split_once(".md").map(|(name, _)| name))
        .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect();
    assert!(named.contains("commands"), "{named:?}");
    for name in named {
        let file = format!("{name}.md");
        if SOURCE_TREE_DOCS.contains(&file.as_str()) {
            continue;
        }
        assert!(
            docdir.join(&file).is_file(),
            "the installed README names docs/{file}, which is not installed"
        );
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

/// `make` then `sudo make install`: root's PATH often lacks the user's Rust toolchain, and the
/// helper's path (target/HOST/release/, HOST from rustc) must not need it. Without rustc on PATH
/// the one helper built is installed, and make runs no cargo.
#[test]
fn sudo_make_install_after_make_finds_the_built_helper_without_rustc_on_path() {
    let target = tempfile::tempdir().unwrap();
    let built = target.path().join("x86_64-unknown-linux-gnu/release");
    std::fs::create_dir_all(&built).unwrap();
    std::fs::copy(BIN, built.join("ck-cgroup")).unwrap();
    let dest = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("make");
    cmd.args([
        "-s",
        "--no-print-directory",
        "-C",
        SRC,
        "install",
        "CARGO=false",
    ])
    .arg(format!("DESTDIR={}", dest.path().display()))
    .env("PATH", "/usr/bin:/bin")
    .env("CARGO_TARGET_DIR", target.path())
    .env_remove("RUSTC");
    for v in MAKE_VARS {
        cmd.env_remove(v);
    }
    check("make install without rustc on PATH", cmd.output().unwrap());
    let installed = dest.path().join("usr/local/bin/ck-cgroup");
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(BIN).unwrap(),
        "{} is not the helper built",
        installed.display()
    );
}
