//! The Debian packages (scripts/build-deb): file lists (insta snapshots), control data, the
//! conffile and its empty policy, the DEP-5 copyright, the maintainer scripts; build-deb itself
//! runs lintian --pedantic where it is installed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::make_install::{MAKE_VARS, fold_command_pages};
use crate::{BIN, SRC, check, read};

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
/// installed and fails on any tag that is not overridden. One build (it takes minutes), each
/// part checked by a function of its own.
#[test]
fn debian_package() {
    let out = tempfile::tempdir().unwrap();
    let [deb, units] = build_debs(out.path());
    check_deb_file_lists(&deb, &units);
    check_deb_control(&deb, &units);
    check_deb_conffile(&deb);
    // DEP-5 copyright: the header, the project's paragraph, a paragraph per compiled-in crate, and
    // a stand-alone License paragraph for every license named.
    for (name, d) in [("ck-cgroup", &deb), ("ck-subc-units", &units)] {
        let text = deb_file(d, &format!("./usr/share/doc/{name}/copyright"));
        check_dep5(&text, name == "ck-cgroup");
    }
    check_maintainer_scripts_never_start_the_daemon();
    for (pkg, unit) in [
        ("ck-subc-units", "ck-subc.service"),
        ("ck-cgroup", "ck-cgroup-metrics.timer"),
    ] {
        check_deb_systemd_helper_state(pkg, unit);
    }
}

/// scripts/build-deb with this test's binary into `out`: the two packages it printed, the
/// helper's and ck-subc-units', each a file in `out`.
fn build_debs(out: &Path) -> [PathBuf; 2] {
    let mut cmd = Command::new(Path::new(SRC).join("scripts/build-deb"));
    for v in MAKE_VARS {
        cmd.env_remove(v);
    }
    cmd.arg("--out").arg(out).env("CK_CGROUP_BIN", BIN);
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
        assert!(d.starts_with(out) && d.is_file(), "{}", d.display());
    }
    [deb.clone(), units.clone()]
}

/// Both file lists (insta snapshots): the daemon's unit is ck-subc-units', the metrics units are
/// the helper's, for both managers.
fn check_deb_file_lists(deb: &Path, units: &Path) {
    let helper_files = deb_listing(deb);
    insta::assert_snapshot!("deb_contents", fold_command_pages(&helper_files));
    let unit_files = deb_listing(units);
    insta::assert_snapshot!("deb_units_contents", unit_files.join("\n") + "\n");
    assert!(
        !helper_files.iter().any(|l| l.ends_with("ck-subc.service")),
        "ck-cgroup ships the daemon's unit"
    );
    // Every file of the one list (packaging/debian/files, which scripts/build-deb checks too) is
    // in its package, owned by root, and in no other.
    let list = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/packaging/debian/files"
    ))
    .unwrap();
    let mut n = 0;
    for line in list
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (pkg, path) = line.split_once(' ').expect("PACKAGE PATH");
        let path = path.replace("<docdir>", &format!("/usr/share/doc/{pkg}"));
        let (mine, other) = match pkg {
            "ck-cgroup" => (&helper_files, &unit_files),
            "ck-subc-units" => (&unit_files, &helper_files),
            _ => panic!("packaging/debian/files names a package {pkg}"),
        };
        // The listing's paths start `./`; its unit directories are placeholders, as here.
        let want = format!(" ./{}", path.trim_start_matches('/'));
        let owned = |l: &String| l.contains(" root/root ") && l.ends_with(&want);
        assert!(mine.iter().any(owned), "{pkg} lacks{want} (owned by root)");
        assert!(
            !other.iter().any(|l| l.ends_with(&want)),
            "{want} is in both"
        );
        n += 1;
    }
    assert!(n > 20, "packaging/debian/files lists {n} files");
}

/// The control fields of both packages: names, the version below any Debian revision, the
/// descriptions, and the relations between them and to the system.
fn check_deb_control(deb: &Path, units: &Path) {
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
    let deps: Vec<&str> = c["Depends"].split(',').map(str::trim).collect();
    assert!(
        deps.iter().any(|d| d.starts_with("init-system-helpers")),
        "ck-cgroup runs deb-systemd-helper: {deps:?}"
    );
}

/// The conffile: listed, and all comments, so it parses as the empty policy.
fn check_deb_conffile(deb: &Path) {
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
}

/// A maintainer script of packaging/debian, comments left out, each line trimmed.
fn maintainer_script(name: &str) -> Vec<String> {
    read(Path::new(SRC).join("packaging/debian").join(name))
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The maintainer scripts reload systemd (only where it runs) and never start, stop or restart
/// a unit of their own; ck-subc-units' postinst unmasks the daemon's unit.
fn check_maintainer_scripts_never_start_the_daemon() {
    for name in ["ck-cgroup.postinst", "ck-cgroup.postrm"] {
        let code = maintainer_script(name);
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
        let code = maintainer_script(name);
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
    assert!(
        maintainer_script("ck-subc-units.postinst")
            .iter()
            .any(|l| l.contains("unmask")),
        "ck-subc-units postinst lacks unmask"
    );
}

/// deb-systemd-helper's state tracking of `unit` in `pkg`'s scripts (ck-subc.service in
/// ck-subc-units, ck-cgroup-metrics.timer in ck-cgroup): `enable` only for a unit the operator
/// had enabled (was-enabled); a stop only on removal; never a start or restart.
fn check_deb_systemd_helper_state(pkg: &str, unit: &str) {
    let postinst = maintainer_script(&format!("{pkg}.postinst"));
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
    let postrm = maintainer_script(&format!("{pkg}.postrm"));
    assert!(
        postrm
            .iter()
            .any(|l| l.contains(&format!("deb-systemd-helper purge '{unit}'"))),
        "{pkg} postrm: no purge of the enable links of {unit}"
    );
    let prerm = maintainer_script(&format!("{pkg}.prerm"));
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
