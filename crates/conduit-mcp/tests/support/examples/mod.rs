//! The crate's examples as the tests run them: built by cargo with the features this test
//! binary was built with, so that under `cargo test --workspace --all-features` (what
//! `scripts/test.sh` runs, and which builds every example itself) the build is a no-op.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;

/// True when this test binary was built with every feature of the crate.
const ALL_FEATURES: bool = cfg!(all(
    feature = "server",
    feature = "http",
    feature = "jwt",
    feature = "oauth",
    feature = "tls",
    feature = "metrics",
    feature = "client",
    feature = "testing"
));

/// Builds example `name` (a no-op when it is built already) and returns its path.
///
/// With every feature on, the build resolves features across the whole workspace, as
/// `cargo test --workspace --all-features` does; resolved for this crate alone, the library's
/// features would differ and it would be compiled a second time.
pub fn example_binary(name: &str) -> PathBuf {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let mut cmd = std::process::Command::new(env!("CARGO"));
    // Cargo gives this test process its package's variables (CARGO_MANIFEST_DIR, CARGO_PKG_*,
    // OUT_DIR, ...). Left in the nested build's environment, they reach the fingerprints of
    // build scripts that watch them (ring's watches CARGO_MANIFEST_DIR): the nested build
    // would rebuild ring and everything above it, and the next plain build all of it again.
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_for_this_test) {
            cmd.env_remove(&name);
        }
    }
    cmd.args(["build", "--quiet", "--example", name, "--message-format=json", "--manifest-path", manifest]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    if ALL_FEATURES {
        cmd.args(["--workspace", "--all-features"]);
    } else {
        cmd.args(["--features", if cfg!(feature = "testing") { "client,testing" } else { "client" }]);
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("cargo runs");
    assert!(out.status.success(), "building the {name} example failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .and_then(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reports the {name} example's executable"))
}

/// Whether `name` is one of the variables cargo sets for a test process, rather than one a
/// user sets to configure cargo (CARGO_HOME, CARGO_TARGET_DIR, CARGO_PROFILE_*, ...).
fn set_by_cargo_for_this_test(name: &str) -> bool {
    const EXACT: [&str; 9] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "CARGO_MAKEFLAGS",
        "OUT_DIR",
    ];
    EXACT.contains(&name) || name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_BIN_EXE_")
}
