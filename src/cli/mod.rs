//! The binary's own modules: the clap definition, the backend choice, one function per command,
//! the exit codes, the renderers, durations, CMD's lookup and the input's checks.

pub mod args;
pub mod backend;
pub mod commands;
pub mod duration;
pub mod exit;
pub mod format;
pub mod generate;
pub mod module_arg;
pub mod mutation;
pub mod oomd_lines;
pub mod output;
pub mod output_file;
pub mod program;
pub mod prometheus;
pub mod promises;
pub mod ps_tree;
pub mod room;
pub mod status;
pub mod stdio;
pub mod validate;
