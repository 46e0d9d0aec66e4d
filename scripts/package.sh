#!/usr/bin/env bash
# The published crates package as crates.io would take them, in dependency order:
# conduit-mcp, conduit-mcp-sql, conduit-mcp-cli (`cargo package` resolves each against
# the ones before it, as `cargo publish --workspace` would), and the packaged crates
# compile on their own from their .crate files. Their versions move together.
# Usage: scripts/package.sh   (scripts/test.sh runs it, after clippy)
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"

crates=(crates/conduit-mcp crates/conduit-mcp-sql crates/conduit-mcp-cli)
names=(conduit-mcp conduit-mcp-sql conduit-mcp-cli)
# Prints "published crates at VERSION: NAMES" when they move together, or fails.
together=$(python3 scripts/lib/published_versions.py "${crates[@]}") || { echo "$together"; exit 1; }
echo "$together"
version=$(sed -n 's/^published crates at \([^:]*\):.*/\1/p' <<<"$together")
[[ -n "$version" ]] || { log "the published crates' version could not be read"; exit 1; }
case "$target_dir" in
  /*) export CARGO_TARGET_DIR="$target_dir" ;;
  *) export CARGO_TARGET_DIR="$root/$target_dir" ;;
esac
# --locked: the lockfile the workspace tests with is the one the packages are made with;
# --allow-dirty: a check of uncommitted work too (nothing is published).
# --no-verify: cargo's own verification builds each package (code generation, every
# dependency again); the check below type-checks them instead, against the dependencies
# clippy has checked already, which finds the same thing: a file a package lacks.
cargo package --locked --allow-dirty --no-verify -p conduit-mcp -p conduit-mcp-sql -p conduit-mcp-cli

# The three .crate files unpacked side by side into a workspace of their own, each
# published dependency on another patched to its unpacked copy (what the registry
# would serve once the earlier ones are published).
check="$CARGO_TARGET_DIR/package/check"
rm -rf "$check"
mkdir -p "$check"
members=()
patches=()
for name in "${names[@]}"; do
  tar -xzf "$CARGO_TARGET_DIR/package/$name-$version.crate" -C "$check"
  members+=("\"$name-$version\"")
  patches+=("$name = { path = \"$name-$version\" }")
done
{
  echo "[workspace]"
  echo "resolver = \"2\""
  echo "members = [$(IFS=,; echo "${members[*]}")]"
  echo "[patch.crates-io]"
  printf '%s\n' "${patches[@]}"
  # The workspace's profiles: with the same settings, the dependencies clippy checked are
  # reused instead of checked again.
  awk '/^\[/ { keep = /^\[profile/ } keep' Cargo.toml
} >"$check/Cargo.toml"
# The workspace's lockfile as the starting point: the same versions of every dependency.
cp Cargo.lock "$check/Cargo.lock"
cargo check --manifest-path "$check/Cargo.toml" --workspace --all-features --offline
log "the packages of ${names[*]} $version compile from their .crate files"
