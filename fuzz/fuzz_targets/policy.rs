//! cargo-fuzz target `policy`: see `crates/ck-fuzz-checks`.
#![no_main]

use ck_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::policy(data));
