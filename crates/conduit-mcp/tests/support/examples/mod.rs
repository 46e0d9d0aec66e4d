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
