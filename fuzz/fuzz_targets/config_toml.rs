//! The TOML configuration: any document is read or refused with a message,
//! never a panic; what is accepted is valid.
#![no_main]

use conduit_mcp::config_file::ConfigFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match ConfigFile::parse(text) {
        Ok(file) => {
            if let Some(cfg) = file.tasks.filter(|c| c.enabled) {
                cfg.validate().expect("an accepted configuration is valid");
            }
            if let Some(s) = file.store {
                assert!(s.starts_with("sqlite:") || s.starts_with("postgres"), "{s}");
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
