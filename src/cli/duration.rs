//! Durations on the command line (`--grace`, `--timeout`): the parser is the crate
//! `crates/ck-duration` (plain std), so that the fuzz target `durations` and
//! tests/parsers_random.rs link the helper's own parser.

pub use ck_duration::parse_duration;
