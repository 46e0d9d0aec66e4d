//! Where the `scripted-browser` binary is, for tests of commands that take a
//! browser command (`conduit-mcp login --browser-command`).

use std::path::PathBuf;

/// The environment variable that names the `scripted-browser` binary, when
/// it is not beside the test's own target directory.
pub const SCRIPTED_BROWSER_ENV: &str = "CONDUIT_SCRIPTED_BROWSER";

/// The `scripted-browser` binary: `$CONDUIT_SCRIPTED_BROWSER`, else the one
/// cargo built into the running test's target directory (`cargo test
/// --workspace` builds it; alone: `cargo build -p conduit-mcp-test-oauth
/// --bin scripted-browser`).
///
/// `None` when it is not there and nothing requires it (the test should
/// return early); when the run requires the authorization server (`CI`,
/// `CONDUIT_REQUIRE_POSTGRES`, `CONDUIT_REQUIRE_OAUTH`), a missing binary
/// panics saying how to build it.
pub fn scripted_browser() -> Option<PathBuf> {
    let found = match std::env::var_os(SCRIPTED_BROWSER_ENV) {
        Some(p) => Some(PathBuf::from(p)),
        // A test runs as TARGET/PROFILE/deps/NAME-HASH; binaries are in TARGET/PROFILE.
        None => std::env::current_exe().ok().and_then(|exe| {
            let profile = exe.parent()?.parent()?;
            Some(profile.join(format!("scripted-browser{}", std::env::consts::EXE_SUFFIX)))
        }),
    };
    match found {
        Some(p) if p.is_file() => Some(p),
        other if crate::node::required() => panic!(
            "the scripted-browser binary is missing ({other:?}): build it with \
             `cargo build -p conduit-mcp-test-oauth --bin scripted-browser` or set {SCRIPTED_BROWSER_ENV}"
        ),
        other => {
            eprintln!("skipped: no scripted-browser binary at {other:?}");
            None
        }
    }
}
