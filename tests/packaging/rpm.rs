//! The RPM packages (scripts/build-rpm), where rpmbuild is installed: their files are make
//! install's, plus the policy conffile and the licenses.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::skip;
use crate::make_install::{MAKE_VARS, file_list, install};
use crate::{BIN, SRC, check};

/// scripts/build-rpm with this test's binary: the two packages' files together (`rpm -qlvp`,
/// directories left out) are exactly what `make install` puts into a DESTDIR with the spec's
/// variables, plus the policy conffile and the license files; the service is only in
/// ck-subc-units; the policy is %config(noreplace); the scriptlets are systemd's macros. Skipped,
/// with the reason printed, where rpmbuild is not installed (`.ci/run` installs it).
#[test]
fn rpm_packages_match_the_install_tree() {
    if Command::new("rpmbuild").arg("--version").output().is_err() {
        skip("rpmbuild is not installed (apt-get install rpm)");
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
