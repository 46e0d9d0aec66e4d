#!/usr/bin/env bash
# A real third-party 2025-11-25 client against the reference server: the
# official Python MCP SDK 1.x (`mcp` from PyPI, in a venv this script creates
# under target/) drives `conduit-mcp serve` over HTTP and over stdio: list,
# call, elicitation and sampling callbacks, a legacy task to its result.
#
#   scripts/legacy-client.sh
#
# Needs: cargo, python3 (>= 3.10) with venv, network access to PyPI on the
# first run. Exit status: 0 when both transports pass.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET_DIR/legacy-client-venv"
BIN="$TARGET_DIR/debug/conduit-mcp"
MCP_SPEC="${CONDUIT_PY_MCP:-mcp>=1.20,<2}"

log() { printf 'legacy-client.sh: %s\n' "$*" >&2; }

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

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
LOG="$TARGET_DIR/legacy-client-server.log"
"$BIN" serve --listen "127.0.0.1:$PORT" 2>"$LOG" &
PID=$!
trap 'kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  grep -q 'listening on' "$LOG" 2>/dev/null && break
  kill -0 "$PID" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
  sleep 0.1
done

"$VENV/bin/python" scripts/legacy_client.py http "http://127.0.0.1:$PORT/mcp"
"$VENV/bin/python" scripts/legacy_client.py stdio "$BIN"
log "both transports passed"
