#!/usr/bin/env bash
# A real third-party 2025-11-25 client against the reference server: the
# official Python MCP SDK 1.x (`mcp` from PyPI, in a venv this script creates
# under target/) drives `conduit-mcp serve` over HTTP and over stdio: list,
# call, elicitation and sampling callbacks, a legacy task to its result.
#
#   scripts/legacy_client.sh
#
# Needs: cargo, python3 (>= 3.10) with venv, network access to PyPI on the
# first run. Exit status: 0 when both transports pass.

set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
use_lib servers

# The venv is also the one crates/conduit-mcp-cli/tests/python_oauth.rs uses.
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

cargo build -q -p conduit-mcp-cli

work="$target_dir/legacy-client"
mkdir -p "$work"
trap stop_servers EXIT
launch_server server "$BIN" serve --listen 127.0.0.1:0

"$VENV/bin/python" scripts/legacy_client.py http "$url"
"$VENV/bin/python" scripts/legacy_client.py stdio "$BIN"
log "both transports passed"
