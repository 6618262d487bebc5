//! The binary's own modules: the clap definition, the renderers, durations and CMD's lookup.

pub mod args;
pub mod duration;
pub mod generate;
pub mod output;
pub mod program;
pub mod status;
