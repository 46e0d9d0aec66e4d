#!/usr/bin/env bash
# The published crates package as crates.io would take them, in dependency order:
# conduit-mcp, conduit-mcp-sql, conduit-mcp-cli (`cargo package` resolves each against
# the ones before it, as `cargo publish --workspace` would), and each packaged crate
# builds on its own from its .crate file. Their versions move together.
# Usage: scripts/package.sh   (scripts/test.sh runs it)
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"

crates=(crates/conduit-mcp crates/conduit-mcp-sql crates/conduit-mcp-cli)
python3 scripts/lib/published_versions.py "${crates[@]}"
# --locked: the lockfile the workspace tests with is the one the packages are checked with;
# --allow-dirty: a check of uncommitted work too (nothing is published).
# The packaged crates are built in the workspace's target directory: left unset, cargo
# gives each its own (target/package/NAME/target) and builds every dependency three times.
case "$target_dir" in
  /*) export CARGO_TARGET_DIR="$target_dir" ;;
  *) export CARGO_TARGET_DIR="$root/$target_dir" ;;
esac
# A packaged crate has no workspace profile: without this, its build would write full debug
# info for every dependency, which only makes the check slower.
export CARGO_PROFILE_DEV_DEBUG=0
cargo package --locked --allow-dirty -p conduit-mcp -p conduit-mcp-sql -p conduit-mcp-cli
