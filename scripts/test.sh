#!/usr/bin/env bash
# Runs every check a change must pass: formatting, lints (clippy also refuses std APIs newer
# than the workspace's rust-version), the API docs, the packages, and all tests (the doc tests
# of every guide among them).
# Usage: scripts/test.sh            (from anywhere inside the repo)
# Ends with the benchmark smoke pass (a few minutes); CONDUIT_BENCH_SMOKE=0 skips it.
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"

if ! command -v cargo >/dev/null 2>&1; then
  log "cargo is required (install Rust with rustup)"
  exit 1
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, all features, -D warnings)"
cargo clippy --workspace --all-targets --all-features -- -D warnings

# The examples are built by `cargo test` below (it builds every example of the workspace).

step "the published crates' API docs, without a warning (all features; broken links fail)"
# After clippy, whose checked dependencies rustdoc reads: only the three crates are documented.
RUSTDOCFLAGS="-D warnings" cargo doc --all-features --no-deps -p conduit-mcp -p conduit-mcp-sql -p conduit-mcp-cli
# docs.rs builds on nightly with --cfg docsrs (the feature badges). That pass compiles every
# dependency again with the nightly compiler (about a minute and a half), and what it adds
# is the `feature(doc_cfg)` line of two lib.rs files: it runs before a release
# (CONDUIT_DOCSRS=1 scripts/test.sh), not on every change.
if [[ "${CONDUIT_DOCSRS:-0}" != 0 ]]; then
  step "the published crates' API docs as docs.rs builds them (nightly, --cfg docsrs)"
  RUSTDOCFLAGS="--cfg docsrs -D warnings" cargo +nightly doc --all-features --no-deps \
    -p conduit-mcp -p conduit-mcp-sql -p conduit-mcp-cli
fi

step "the published crates package and compile from their .crate files (scripts/package.sh)"
bash scripts/package.sh

step "building the rmcp peer (the client's interop tests call it; its own workspace)"
cargo build --locked --manifest-path crates/conduit-mcp-bench/peers/rmcp-peer/Cargo.toml \
  --target-dir "$target_dir/rmcp-peer"

step "the test authorization server (oidc-provider on Node 22; the OAuth tests start it)"
bash scripts/oauth_as.sh

step "every binary and example (debug, all features: the one build the tests and scripts share)"
# Built before the tests: the CLI's tests run `scripted-browser` (conduit-mcp-test-oauth's).
build_bins

step "cargo test (workspace, all features)"
CONDUIT_REQUIRE_RMCP=1 cargo test --workspace --all-features

step "a real third-party 2025-11-25 client (official Python SDK 1.x) over HTTP and stdio"
if [[ "${CONDUIT_LEGACY_CLIENT:-1}" != 0 ]]; then
  bash scripts/legacy_client.sh
else
  echo "skipped: CONDUIT_LEGACY_CLIENT=0"
fi

step "benchmark smoke pass (the debug builds above; a quarter of a second per workload)"
# Benchmarks are run by hand (scripts/bench.sh); CI only keeps the harness from rotting.
# CONDUIT_BENCH_SMOKE=0 skips it on a laptop.
if [[ "${CONDUIT_BENCH_SMOKE:-1}" != 0 ]]; then
  bash scripts/bench.sh --smoke
else
  echo "skipped: CONDUIT_BENCH_SMOKE=0"
fi
