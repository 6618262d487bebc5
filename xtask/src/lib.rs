//! The repository's own tasks (`cargo xtask`), as a library for its tests: the mutation controls'
//! list through its one parser ([`mutation_controls`]), and docs/design.md's table of them.
//! Test machinery, so a crate of its own that is never published: neither the library a daemon
//! links nor the helper carries it.

pub mod mutation_controls;

use std::path::PathBuf;

/// The one list of mutation controls, relative to the repository's root.
pub const LIST: &str = "crates/ck-cgroup/mutation-controls.txt";
/// The document whose section [`TABLE_HEADING`] tables the controls.
pub const TABLE_DOC: &str = "docs/design.md";
/// The heading of the section of [`TABLE_DOC`] that holds the controls' table.
pub const TABLE_HEADING: &str = "### Mutation controls";

/// The repository's root: this crate's parent directory.
pub fn repo() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map_or(here.clone(), PathBuf::from)
}
