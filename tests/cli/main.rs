//! Integration tests: the real binary on real cgroups, each test inside its own sandbox; one
//! module per feature (each named for what it guarantees), one test binary, `cli`.
//!
//! Mutation controls: crates/ck-cgroup/mutation-controls.txt names, under each control, the tests
//! of this target (`cli  module::test`) that must fail when the helper is built with it
//! (`CK_MUTATION=NAME`; scripts/mutation-controls runs them).

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod daemon_layout;
mod discovery;
mod exit_codes;
mod freeze;
mod human_output;
mod init;
mod json_library_types;
mod kill_and_remove;
mod place_refusals;
mod placement;
mod sandbox;
mod service_root;
mod stdout_is_cmds;
mod unit;
mod unrunnable_cmd;
