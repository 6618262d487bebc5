//! The mutation gate: which mechanisms this build switched off, so that the tests guarding each
//! can be shown to fail by name (`make mutation`, `make vm-mutation`; docs/design.md, "Mutation
//! controls"). Every build that ships has none active.
//!
//! `CK_MUTATION=a,b` at build time activates the controls `a` and `b` of the one list,
//! `crates/ck-cgroup/mutation-controls.txt`; `build.rs` generates [`Control`] from that list and
//! passes each active one as `--cfg ck_mutation="NAME"`. A mechanism asks the gate in one line:
//!
//! - [`active`] where the switched-off form is a line or two beside the mechanism
//!   (`if mutation::active(Control::NoKill) { return Ok(Ran::Done); }`). It is generated with
//!   the build: in a build that ships its body is the literal `false`, so the branch is
//!   `if false` and the compiler removes it.
//! - `alternative_module!` with `choose!` or `alternative!` where it is an implementation
//!   of its own: the module, a file beside the mechanism's, is compiled only into a build with
//!   its control, and `choose!` or `alternative!` hands over to it there. A build without the
//!   control compiles neither the module nor the call.
//!
//! This file is the only one that names the `ck_mutation` cfg (`tests/mutation_controls_doc.rs`
//! holds the tree to it).

include!(concat!(env!("OUT_DIR"), "/mutation_controls.rs"));

/// `alternative_module!("NAME", file);`: `mod file;` (the file beside the declaring one, as
/// `mod` finds it) in a build with the control NAME active, nothing in any other: the control's
/// alternative implementation, which no release build contains.
macro_rules! alternative_module {
    ($control:literal, $module:ident) => {
        #[cfg(ck_mutation = $control)]
        mod $module;
    };
}
pub(crate) use alternative_module;

/// `alternative!("NAME", statements)`: the statements (typically a `return` into the control's
/// `alternative_module!`) in a build with the control NAME active, nothing in any other.
macro_rules! alternative {
    ($control:literal, $($statements:tt)*) => {
        #[cfg(ck_mutation = $control)]
        {
            $($statements)*
        }
    };
}
pub(crate) use alternative;

/// `choose!("NAME", alternative, mechanism)`: the expression `alternative` (a call into the
/// control's `alternative_module!`) in a build with the control NAME active, `mechanism` in any
/// other.
macro_rules! choose {
    ($control:literal, $alternative:expr, $mechanism:expr) => {{
        #[cfg(ck_mutation = $control)]
        let chosen = $alternative;
        #[cfg(not(ck_mutation = $control))]
        let chosen = $mechanism;
        chosen
    }};
}
pub(crate) use choose;

#[cfg(test)]
mod tests {
    use super::*;

    /// In a build without `CK_MUTATION` the gate is the literal `false`, not a computation the
    /// optimizer might or might not fold.
    #[test]
    fn a_build_without_ck_mutation_has_the_literal_false_for_a_gate() {
        if option_env!("CK_MUTATION").is_none_or(str::is_empty) {
            let generated = include_str!(concat!(env!("OUT_DIR"), "/mutation_controls.rs"));
            assert!(
                generated.contains(
                    "pub const fn active(control: Control) -> bool {\n    let _ = control;\n    false\n}"
                ),
                "{generated}"
            );
            assert!(!active(Control::NoKill));
        }
    }
}
