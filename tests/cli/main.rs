//! Integration tests: the real binary on real cgroups, each test inside its own sandbox; one
//! module per feature (each named for what it guarantees), one test binary, `cli`.
//!
//! Mutation controls (scripts/mutation-controls): built with `CK_MUTATION=no-placement`,
//! `CK_MUTATION=no-kill` or `CK_MUTATION=no-rmdir`, the tests named there must fail.

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
