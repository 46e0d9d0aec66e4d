//! The TOML configuration: any document is read or refused with a message,
//! never a panic; what is accepted is valid.
#![no_main]

use conduit_mcp::ext::tasks::TasksConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for read in [TasksConfig::from_toml, TasksConfig::from_server_toml] {
        match read(text) {
            Ok((cfg, store)) => {
                if cfg.enabled {
                    cfg.validate().expect("an accepted configuration is valid");
                }
                if let Some(s) = store {
                    assert!(s.starts_with("sqlite:") || s.starts_with("postgres"), "{s}");
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
});
