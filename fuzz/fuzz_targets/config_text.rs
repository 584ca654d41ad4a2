//! Any text as a daemon config file: a config or an error naming the
//! line and field, never a panic.
#![no_main]

use braid_daemon::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = Config::parse("fuzz.toml", text) {
            assert!(!e.field.is_empty() || !e.message.is_empty());
        }
    }
});
