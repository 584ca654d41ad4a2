//! Any text as a simulator scenario and as a lab scenario (`braid sim`,
//! `braid lab run`): a scenario or an error naming the line and field,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        // Relative topology files resolve under a directory that does not
        // exist, so the fuzzer exercises the parser, not the file system.
        if let Err(e) =
            braid_sim::Scenario::parse_in("fuzz.toml", text, Path::new("/nonexistent-braid-fuzz"))
        {
            assert!(!e.field.is_empty() || !e.message.is_empty());
        }
        if let Err(errors) = braid_lab::Lab::parse("fuzz.toml", text) {
            for e in errors.all() {
                assert!(!e.field.is_empty() || !e.message.is_empty());
            }
        }
    }
});
