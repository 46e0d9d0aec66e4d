#!/usr/bin/env bash
# W1 and W2 under an external load generator (issue 13): wrk (one thread, 50
# connections) against the conformance fixture on the library's default path
# (`http::serve`), the bench server, rmcp 3.11 (its fastest, stateless JSON
# configuration) and the bare axum echo, in interleaved rounds of one run; ratios to
# rmcp and to the echo. The request bytes are those of our generator (W1 `tools/call
# greet`; W2 `tasks/get` on one live task each server created first); the echo answers
# with bodies of the fixture's lengths.
#
# Usage: scripts/bench_wrk.sh [SECONDS] [ROUNDS]   (default 5 s, 3 rounds)
# Needs release builds of bench-server, bench-echo, conduit-mcp-conformance and the
# rmcp peer (scripts/bench.sh builds them). Installs wrk with apt-get when missing.
# Writes target/bench/wrk.md and prints it.
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
use_lib servers numbers load

secs="${1:-5}"
rounds="${2:-3}"
conns=50
bin="$target_dir/release"
peer="$target_dir/rmcp-peer/release/rmcp-peer"
work=target/bench/wrk
mkdir -p "$work"
for b in "$bin/bench-server" "$bin/bench-echo" "$bin/conduit-mcp-conformance" "$peer"; do
  [[ -x "$b" ]] || { echo "scripts/bench_wrk.sh: $b is missing (run scripts/bench.sh, which builds it)" >&2; exit 1; }
done
need wrk wrk
trap stop_servers EXIT

meta_plain='{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"conduit-mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}'
meta_tasks='{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"conduit-mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}'

# post ADDR METHOD NAME BODY: one request's response body.
post() {
  curl -s "http://$1/mcp" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $2" -H "Mcp-Name: $3" --data-binary "$4"
}

# A task on the server at ADDR (its slow_compute tool, an hour long); prints its id.
new_task() {
  post "$1" tools/call slow_compute "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"slow_compute\",\"arguments\":{\"seconds\":3600,\"label\":\"wrk\"},\"_meta\":$meta_tasks}}" |
    sed -nE 's/.*"taskId":"([^"]+)".*/\1/p' | head -1
}

# script FILE METHOD NAME BODY_PREFIX BODY_SUFFIX: a wrk script whose ids count up.
script() {
  cat >"$1" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "$2"
wrk.headers["Mcp-Name"] = "$3"
n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. n .. ',$4' .. '$5')
end
LUA
}

w1_body="\"method\":\"tools/call\",\"params\":{\"name\":\"greet\",\"arguments\":{\"name\":\"bench-1\"},\"_meta\":$meta_plain}}"
script "$work/w1.lua" tools/call greet "$w1_body" ""

# The echo answers with bodies as long as the fixture's.
launch_server sizes "$bin/conduit-mcp-conformance" --listen 127.0.0.1:0
greet_len=$(post "$addr" tools/call greet "{\"jsonrpc\":\"2.0\",\"id\":1,$w1_body" | wc -c)
task=$(new_task "$addr")
get_len=$(post "$addr" tasks/get "$task" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"$task\",\"_meta\":$meta_tasks}}" | wc -c)
create_len=$(post "$addr" tools/call slow_compute "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"slow_compute\",\"arguments\":{\"seconds\":3600,\"label\":\"wrk\"},\"_meta\":$meta_tasks}}" | wc -c)
stop_servers

servers=(fixture bench rmcp echo)
declare -A label=([fixture]="fixture on http::serve" [bench]="bench server" [rmcp]="rmcp 3.11" [echo]="axum echo")
launch() {
  case $1 in
    fixture) launch_server fixture env RUST_LOG=info "$bin/conduit-mcp-conformance" --listen 127.0.0.1:0 ;;
    bench) launch_server bench "$bin/bench-server" --listen 127.0.0.1:0 ;;
    rmcp) launch_server rmcp "$peer" --listen 127.0.0.1:0 ;;
    echo) launch_server echo "$bin/bench-echo" --listen 127.0.0.1:0 --sizes "$greet_len,$get_len,$create_len" ;;
  esac
}

declare -A results
for r in $(seq 1 "$rounds"); do
  for s in "${servers[@]}"; do
    launch "$s"
    w1=$(wrk_rate "$work/w1.lua" "$url")
    task=$(new_task "$addr")
    task=${task:-none}
    script "$work/w2.lua" tasks/get "$task" "\"method\":\"tasks/get\",\"params\":{\"taskId\":\"$task\",\"_meta\":$meta_tasks}}" ""
    w2=$(wrk_rate "$work/w2.lua" "$url")
    stop_servers
    results[$s,W1]+="$w1 "
    results[$s,W2]+="$w2 "
    echo "round $r ${label[$s]}: W1 $w1/s, W2 $w2/s" >&2
  done
done

{
  echo "## W1 and W2 under wrk (scripts/bench_wrk.sh)"
  echo
  echo "wrk 1 thread, $conns connections, ${secs} s per measurement, $rounds interleaved rounds (servers started"
  echo "fresh for each), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end. Medians [ranges], requests/s;"
  echo "targets (issue 32): ours ≥ 2.5× rmcp and ≥ 0.95× the echo; every Rust server on the system allocator."
  echo
  echo "| workload | server | requests/s | ÷ rmcp | ÷ echo |"
  echo "|---|---|---:|---:|---:|"
  for w in W1 W2; do
    rm=$(echo "${results[rmcp,$w]}" | median)
    em=$(echo "${results[echo,$w]}" | median)
    for s in "${servers[@]}"; do
      m=$(echo "${results[$s,$w]}" | median)
      echo "| $w | ${label[$s]} | $m [$(echo "${results[$s,$w]}" | range)] | $(ratio "$m" "$rm") | $(ratio "$m" "$em") |"
    done
  done
} >target/bench/wrk.md
cat target/bench/wrk.md
