//! The binary's own modules: the clap definition and the renderers.

pub mod args;
pub mod generate;
pub mod output;
pub mod status;
