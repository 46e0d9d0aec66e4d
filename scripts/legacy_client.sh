#!/usr/bin/env bash
# Real third-party 2025-11-25 clients against the reference server:
# - the official Python MCP SDK 1.x (`mcp` from PyPI, in a venv this script
#   creates under target/) drives `conduit-mcp serve` over HTTP and over stdio:
#   list, call, elicitation and sampling callbacks, a legacy task to its result;
# - the official TypeScript MCP SDK 1.x (@modelcontextprotocol/sdk 1.32.2, pinned
#   by tests/legacy_client/package-lock.json, installed with `npm ci` under
#   target/ and run on Node 22) drives it over HTTP through its experimental
#   tasks API: a task-augmented call polled to its result, tasks/list, and a
#   running task cancelled and read again (scripts/legacy_client.mjs).
#
#   scripts/legacy_client.sh
#
# Needs: cargo, python3 (>= 3.10) with venv, npx (Node.js and npm of any
# version; npx fetches Node 22), network access to PyPI and npm on the first
# run. A missing tool fails the run; nothing is skipped. Exit status: 0 when
# every client passes.

set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
use_lib servers

if ! command -v npx >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  log "npx and npm are required for the TypeScript SDK client (install Node.js and npm)"
  exit 1
fi

# The venv is also the one crates/conduit-mcp-cli/tests/client/python_oauth.rs uses.
VENV="$target_dir/legacy-client-venv"
BIN="$target_dir/debug/conduit-mcp"
MCP_SPEC="${CONDUIT_PY_MCP:-mcp>=1.20,<2}"

if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV"
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import mcp' 2>/dev/null; then
  log "installing $MCP_SPEC"
  "$VENV/bin/pip" install -q "$MCP_SPEC"
fi
log "python SDK $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

build_bins -q

work="$target_dir/legacy-client"
mkdir -p "$work"
trap stop_servers EXIT
launch_server server "$BIN" serve --listen 127.0.0.1:0

"$VENV/bin/python" scripts/legacy_client.py http "$url"
"$VENV/bin/python" scripts/legacy_client.py stdio "$BIN"
log "python SDK: both transports passed"

# The TypeScript SDK, installed exactly as locked, in a directory of its own.
ts="$target_dir/legacy-client-ts"
mkdir -p "$ts"
cp tests/legacy_client/package.json tests/legacy_client/package-lock.json scripts/legacy_client.mjs "$ts/"
(cd "$ts" && npx -y -p node@22 -- npm ci --no-audit --no-fund --loglevel=error)
(cd "$ts" && npx -y -p node@22 -- node legacy_client.mjs "$url")
log "typescript SDK: HTTP passed"
