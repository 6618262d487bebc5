//! The CLI's mutation gate (`make mutation`; the library's is `crates/ck-cgroup/src/mutation.rs`,
//! crate-private, so that test machinery is no part of the library's API). The same build script,
//! `crates/ck-cgroup/build.rs`, runs for this package and generates the same `Control` enum and
//! `active` from the one list, with the controls `CK_MUTATION` named at build time: the literal
//! `false` in every build that ships. A mechanism of the CLI asks it in one line,
//! `if mutation::active(Control::JsonUnrefused) { ... }`.

include!(concat!(env!("OUT_DIR"), "/mutation_controls.rs"));
