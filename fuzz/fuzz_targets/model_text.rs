//! Any text given as a model file: parsing, `--set`-free deserialization and validation end
//! in `Ok` or an error with a message, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = peridot::model::parse(text, "fuzz.toml", &[]) {
            // every error has a message
            assert!(!e.to_string().is_empty());
        }
    }
});
