//! The binary's own modules: the clap definition, the backend choice, one function per command,
//! the exit codes, the renderers, durations and CMD's lookup.

pub mod args;
pub mod backend;
pub mod commands;
pub mod duration;
pub mod exit;
pub mod generate;
pub mod oomd_lines;
pub mod output;
pub mod program;
pub mod prometheus;
pub mod ps;
pub mod status;
