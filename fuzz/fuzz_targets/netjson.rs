//! Any text as a NetJSON NetworkGraph (`braid paths`, `braid sim`'s
//! topologies): a topology or a typed error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = braid_proto::netjson::parse(text);
    }
});
