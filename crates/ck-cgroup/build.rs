//! Mutation controls (scripts/mutation-controls, scripts/vm-mutation): `CK_MUTATION=a,b` at build
//! time becomes `--cfg ck_mutation="a" --cfg ck_mutation="b"`, each switching one mechanism off so
//! that the tests guarding it fail by name. A cfg, not a Cargo feature: features unify across a
//! dependency graph, so an `--all-features` build would ship a helper whose kill does nothing.
//! Without the variable nothing is emitted but the names `check-cfg` accepts. The CLI crate uses
//! this same file as its build script.

/// Every control: what `check-cfg` accepts and what `CK_MUTATION` may name.
const CONTROLS: &[&str] = &[
    "absent-is-zero",
    "discover-ignores-env",
    "freeze-blind-to-removal",
    "freeze-no-wait",
    "grace-first-pid",
    "grace-sleep",
    "init-held-blind",
    "init-no-reap",
    "input-checked-late",
    "limits-unchecked",
    "lookup-real-uid",
    "no-cgroup-namespace",
    "no-kill",
    "no-kill-on-close",
    "no-mode-restore",
    "no-oom-group-default",
    "no-oomd-omit",
    "no-pdeathsig",
    "no-pidns-userns",
    "no-placement",
    "no-rekill",
    "no-relay",
    "no-rmdir",
    "no-service-root-check",
    "no-thaw",
    "no-threads-fallback",
    "placement-no-lock",
    "pressure-no-trigger",
    "pressure-sampling",
    "prometheus-no-rename",
    "room-unchecked",
    "root-in-root",
    "run-term-to-cmd",
    "sandbox-cmd-outside",
    "sandbox-no-lock",
    "sandbox-no-sweep",
    "sandbox-prune-kept",
    "spawn-into-frozen",
    "stop-no-seal",
    "stop-trusts-populated",
    "top-no-restore",
    "walk-by-path",
    "watch-blind",
    "watch-by-name",
    "watch-coalesce",
];

fn main() {
    println!("cargo::rerun-if-env-changed=CK_MUTATION");
    // This file is the build script of both packages, and cargo runs it from the manifest
    // directory of the one being built: name it from there, or cargo finds a path that does not
    // exist, counts the script stale and rebuilds the helper on every `cargo build`.
    let own = if std::path::Path::new("build.rs").exists() {
        "build.rs"
    } else {
        "crates/ck-cgroup/build.rs"
    };
    println!("cargo::rerun-if-changed={own}");
    let values: Vec<String> = CONTROLS.iter().map(|c| format!("\"{c}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(ck_mutation, values({}))",
        values.join(", ")
    );
    let Ok(list) = std::env::var("CK_MUTATION") else {
        return;
    };
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !CONTROLS.contains(&name) {
            println!(
                "cargo::error=CK_MUTATION names {name:?}, which is no mutation control; the controls are: {}",
                CONTROLS.join(", ")
            );
            continue;
        }
        println!("cargo::warning=built with mutation control {name}: this build must never ship");
        println!("cargo::rustc-cfg=ck_mutation=\"{name}\"");
    }
}
