#!/usr/bin/env bash
# Runs every check a change must pass: formatting, lints, and all tests.
# Usage: scripts/test.sh            (from anywhere inside the repo)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo is required (install Rust with rustup)" >&2
  exit 1
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (all targets, all features, -D warnings)"
cargo clippy --workspace --all-targets --all-features -- -D warnings

echo "== cargo test (workspace, all features)"
cargo test --workspace --all-features
