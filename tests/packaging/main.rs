//! Packaging, one module per artefact (make_install, man_pages, service_unit, metrics_units,
//! slices, deb, rpm), one test binary, `packaging`: `make install` into a temporary `DESTDIR` with
//! the binary cargo built for this test run (make never runs cargo here: `CARGO=false`), the man
//! pages through man(1), the rules of the rendered units, the Debian packages (file lists, control
//! data, copyright, conffile, lintian where installed) and the RPM packages (their files against
//! make install's, where rpmbuild is installed). No cgroup is touched and nothing uses the network.
//!
//! `systemd-analyze verify` of the rendered units is `scripts/verify-units` (make check, make
//! test). That the installed unit lets the daemon write its subtree under systemd as PID 1 is for
//! the guest lane; here the hardening block is checked for every setting that would stop it.

#[path = "../common/mod.rs"]
mod common;

mod deb;
mod make_install;
mod man_pages;
mod metrics_units;
mod rpm;
mod service_unit;
mod slices;

use std::path::Path;
use std::process::Output;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_ck-cgroup");
pub(crate) const SRC: &str = env!("CARGO_MANIFEST_DIR");

pub(crate) fn check(what: &str, out: Output) -> Output {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub(crate) fn read(p: impl AsRef<Path>) -> String {
    let p = p.as_ref();
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// The directives of a unit file: (section, key, value), comments and blank lines left out.
pub(crate) fn directives(text: &str) -> Vec<(String, String, String)> {
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

pub(crate) fn values<'a>(
    d: &'a [(String, String, String)],
    section: &str,
    key: &str,
) -> Vec<&'a str> {
    d.iter()
        .filter(|(s, k, _)| s == section && k == key)
        .map(|(_, _, v)| v.as_str())
        .collect()
}

pub(crate) fn one<'a>(d: &'a [(String, String, String)], section: &str, key: &str) -> &'a str {
    match values(d, section, key)[..] {
        [v] => v,
        ref vs => panic!("[{section}] {key}= expected once, found {vs:?}"),
    }
}
