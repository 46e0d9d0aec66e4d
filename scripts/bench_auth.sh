#!/usr/bin/env bash
# W1 with OAuth validation on against W1 with authentication off (issue 34): the
# bench server (memory store) twice, once as an OAuth resource server whose every
# request carries an ES256 JWT of a real HTTP authorization server (bench-as:
# metadata, JWKS), once without authentication; wrk (one thread, 50 connections) in
# interleaved rounds of one run, the same `tools/call greet` bytes; the ratio
# on ÷ off. Target: at least 0.95.
#
# Usage: scripts/bench_auth.sh [SECONDS] [ROUNDS]   (default 5 s, 3 rounds)
# Builds bench-server and bench-as in release. Installs wrk with apt-get when missing.
# Writes target/bench/auth.md and prints it.
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
use_lib servers numbers load

secs="${1:-5}"
rounds="${2:-3}"
conns=50
bin="$target_dir/release"
work=target/bench/auth
mkdir -p "$work"
need wrk wrk
cargo build -q --release -p conduit-mcp-bench --bin bench-server --bin bench-as
trap stop_servers EXIT

meta='{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"conduit-mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}'
resource="http://127.0.0.1/bench/mcp"

launch_server as "$bin/bench-as" --resource "$resource" --scope mcp:read
issuer="http://$addr"
token=$(sed -nE 's/^token (.*)$/\1/p' "$work/as.out")
[[ -n "$token" ]] || { echo "bench-as printed no token" >&2; exit 1; }

# script FILE [TOKEN]: W1 as a wrk script, ids counting up, with the token when given.
script() {
  cat >"$1" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "greet"
${2:+wrk.headers[\"Authorization\"] = \"Bearer $2\"}
n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. n .. ',"method":"tools/call","params":{"name":"greet","arguments":{"name":"bench-1"},"_meta":$meta}}')
end
LUA
}
script "$work/off.lua"
script "$work/on.lua" "$token"

declare -A results
for r in $(seq 1 "$rounds"); do
  for mode in off on; do
    if [[ $mode == on ]]; then
      launch_server "server-$mode" "$bin/bench-server" --listen 127.0.0.1:0 \
        --oauth-issuer "$issuer" --oauth-resource "$resource"
      # Without the token the server refuses: the run below measures validation, not a bypass.
      code=$(curl -s -o /dev/null -w '%{http_code}' "$url" -H 'Content-Type: application/json' --data-binary '{}')
      [[ $code == 401 ]] || { echo "the OAuth server answered $code without a token, not 401" >&2; exit 1; }
    else
      launch_server "server-$mode" "$bin/bench-server" --listen 127.0.0.1:0
    fi
    pid=$launched
    rate=$(wrk_rate "$work/$mode.lua" "$url")
    stop_server "$pid"
    results[$mode]+="$rate "
    echo "round $r auth $mode: W1 $rate/s" >&2
  done
done

off=$(echo "${results[off]}" | median)
on=$(echo "${results[on]}" | median)
{
  echo "## W1 with OAuth validation on and off (scripts/bench_auth.sh)"
  echo
  echo "The bench server, memory store; wrk 1 thread, $conns connections, ${secs} s per measurement,"
  echo "$rounds interleaved rounds (servers started fresh for each), load average"
  echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end. \"on\": every request carries an ES256 JWT of"
  echo "bench-as (a loopback authorization server: metadata, JWKS), checked by the OAuth resource"
  echo "server. Medians [ranges], requests/s; target on ÷ off ≥ 0.95."
  echo
  echo "| W1 | requests/s | ÷ off |"
  echo "|---|---:|---:|"
  echo "| auth off | $off [$(echo "${results[off]}" | range)] | 1.00 |"
  echo "| OAuth on | $on [$(echo "${results[on]}" | range)] | $(ratio "$on" "$off") |"
} >target/bench/auth.md
cat target/bench/auth.md
