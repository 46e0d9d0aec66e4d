#!/usr/bin/env bash
# PostgreSQL at the database's own speed (issue 13): measures, in one run on one
# database, what `pgbench` reaches on this machine and what our PostgreSQL store
# reaches behind a server, and reports ours as ratios to pgbench.
#
#   pgbench   a single-row INSERT of a task-sized row (the conduit_tasks row shape,
#             the document taken from a task our server stored), and a point SELECT
#             by primary key of the same columns our tasks/get reads; 50 clients,
#             prepared statements, in the schema conduit_pgbench.
#   bench     `bench-server --store postgres` (schema conduit_bench_pg), driven by our
#             generator (`conduit-mcp-bench load`): W4 creates, then W3 tasks/get on that
#             server (beside W4's tasks, still running: every lease renewal rewrites
#             their rows), and W3 again on a fresh server (the comparison with pgbench,
#             whose table is idle rows).
#   reference `conduit-mcp serve --store postgres:URL` with its defaults but a row cap
#             of 10 000 000 (schema conduit_bench_ref; creates are its `job` tool),
#             driven by our generator and by wrk (one thread, 50 connections).
#   two nodes two bench servers on one schema, creating at once: the sum of both rates, and
#             the server CPU per create (both nodes' user + system time ÷ their creates)
#             against one node's (issue 32: at most 1.1×; throughput cannot show it on
#             two shared cores), and against one node paced to the rate each of the two had
#             (a server's CPU per request grows as its rate falls: fewer rows share a batch,
#             more wake-ups; this control separates that from what a second node adds).
#   ceiling   the same bench server on its memory store, same generator: everything a
#             create or a tasks/get costs but the database, so no store can pass it on this
#             machine. A target above it is out of reach here, whatever the SQL does.
#
# Usage: scripts/bench_pg.sh [SECONDS]   (default 10 s per measurement)
# Needs DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), release builds
# of bench-server, conduit-mcp-bench and conduit-mcp (scripts/bench.sh builds them;
# this script builds them when missing). Installs pgbench (postgresql-contrib) and wrk
# with apt-get when they are missing. Writes target/bench/pg.md and prints it.
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
use_lib servers numbers load

secs="${1:-10}"
conns=50
db_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
bin="$target_dir/release"
work=target/bench/pg
mkdir -p "$work"

need pgbench postgresql-contrib
need psql postgresql-client
need wrk wrk

if [[ ! -x "$bin/bench-server" || ! -x "$bin/conduit-mcp-bench" || ! -x "$bin/conduit-mcp" ]]; then
  echo "== building the servers (release)"
  cargo build --release -p conduit-mcp-bench -p conduit-mcp-cli --bins
fi

trap stop_servers EXIT

# ours ADDR WORKLOAD [LOAD OPTIONS]: requests/s from our generator.
ours() {
  local a=$1 w=$2
  shift 2
  local line
  line=$("$bin/conduit-mcp-bench" load --addr "$a" --workload "$w" --conns "$conns" --ms "$((secs * 1000))" "$@" 2>&1 | tail -1)
  echo "   $w: $line" >&2
  echo "$line" | sed -nE 's/.* ([0-9]+) req\/s.*/\1/p'
}

# cpu_per_request TICKS RATE: µs of server CPU per request over a $secs-second measurement.
cpu_per_request() { cpu_us_per "$1" "$(($2 * secs))"; }

sql() { PGOPTIONS="-c client_min_messages=warning" psql "$db_url" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

wrk_headers='wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
meta = [[{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"4"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}]]
n = 0'

echo "== bench server on PostgreSQL, our generator ($secs s per workload, $conns connections)"
launch_server bench "$bin/bench-server" --store postgres --database-url "$db_url" --pg-schema conduit_bench_pg --fresh
ticks=$(cpu_ticks "$launched")
bench_w4=$(ours "$addr" W4)
one_cpu=$(cpu_per_request "$(($(cpu_ticks "$launched") - ticks))" "$bench_w4")
busy_tasks=$(sql -c "SELECT count(*) FROM conduit_bench_pg.conduit_tasks")
# W3 beside W4's tasks, all still running: their leases are renewed (rewritten) in the background.
bench_w3_busy=$(ours "$addr" W3 --table 20000)
doc=$(sql -c "SELECT doc::text FROM conduit_bench_pg.conduit_tasks LIMIT 1")
stop_servers
# The point-read comparison: a fresh server, its table only W3's own tasks, as pgbench reads a
# table of idle rows.
launch_server bench "$bin/bench-server" --store postgres --database-url "$db_url" --pg-schema conduit_bench_pg --fresh
bench_w3=$(ours "$addr" W3 --table 20000)
stop_servers

echo "== two bench servers on one schema, creating at once"
launch_server node_a "$bin/bench-server" --store postgres --database-url "$db_url" --pg-schema conduit_bench_pg2 --fresh
addr_a=$addr
pid_a=$launched
launch_server node_b "$bin/bench-server" --store postgres --database-url "$db_url" --pg-schema conduit_bench_pg2
addr_b=$addr
pid_b=$launched
ticks=$(($(cpu_ticks "$pid_a") + $(cpu_ticks "$pid_b")))
ours "$addr_a" W4 >"$work/two_a" &
two_a_pid=$!
two_b=$(ours "$addr_b" W4)
wait "$two_a_pid"
two_nodes=$(($(cat "$work/two_a") + two_b))
two_cpu=$(cpu_per_request "$(($(cpu_ticks "$pid_a") + $(cpu_ticks "$pid_b") - ticks))" "$two_nodes")
stop_servers
per_node=$((two_nodes / 2))
launch_server paced "$bin/bench-server" --store postgres --database-url "$db_url" --pg-schema conduit_bench_pg2 --fresh
ticks=$(cpu_ticks "$launched")
paced=$(ours "$addr" W4 --rate "$per_node")
paced_cpu=$(cpu_per_request "$(($(cpu_ticks "$launched") - ticks))" "$paced")
stop_servers

echo "== the ceiling: the same bench server on its memory store"
launch_server ceiling "$bin/bench-server" --listen 127.0.0.1:0
mem_w4=$(ours "$addr" W4)
mem_w3=$(ours "$addr" W3 --table 20000)
stop_servers

echo "== pgbench ($secs s, $conns clients, prepared statements, schema conduit_pgbench)"
doc_sql=${doc//\'/\'\'}
# pgbench reads `:name` as a variable: a space after each JSON colon keeps the document
# intact (and makes it a few bytes longer, not shorter).
doc_pgb=${doc_sql//\":/\": }
sql <<SQL
DROP SCHEMA IF EXISTS conduit_pgbench CASCADE;
CREATE SCHEMA conduit_pgbench;
CREATE TABLE conduit_pgbench.conduit_tasks (LIKE conduit_bench_pg.conduit_tasks INCLUDING ALL);
INSERT INTO conduit_pgbench.conduit_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, doc)
  SELECT 'k' || g, NULL, 'working', 1, 1700000000000, 1700003600000, '$doc_sql'::json FROM generate_series(1, 100000) g;
VACUUM ANALYZE conduit_pgbench.conduit_tasks;
SQL
cat >"$work/insert.sql" <<SQL
INSERT INTO conduit_pgbench.conduit_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, terminal_at_ms, lease_node, lease_expires_ms, doc) VALUES (md5(random()::text || :client_id), NULL, 'working', 1, 1700000000000, 1700003600000, NULL, NULL, NULL, '$doc_pgb'::json);
SQL
cat >"$work/select.sql" <<'SQL'
\set k random(1, 100000)
SELECT version, lease_node, lease_expires_ms, doc::text FROM conduit_pgbench.conduit_tasks WHERE task_id = 'k' || :k;
SQL
pgb() {
  local out
  out=$(pgbench -n -M prepared -c "$conns" -j 2 -T "$secs" -f "$1" "$db_url" 2>&1)
  echo "$out" | grep -E '^(tps|latency average)' | sed 's/^/   /' >&2
  echo "$out" | sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1 | cut -d. -f1
}
pg_insert=$(pgb "$work/insert.sql")
pg_select=$(pgb "$work/select.sql")
sql -c "DROP SCHEMA conduit_pgbench CASCADE"

echo "== reference server (conduit-mcp serve --store postgres:URL, defaults)"
sql -c "DROP SCHEMA IF EXISTS conduit_bench_ref CASCADE"
# Its defaults but for the row cap (10 000 by default; a run creates more than that).
printf '[ext_tasks]\nmax_rows = 10000000\n' >"$work/ref.toml"
launch_server ref "$bin/conduit-mcp" serve --config "$work/ref.toml" --listen 127.0.0.1:0 --store "postgres:$db_url" \
  --pg-schema conduit_bench_ref
ref_w4=$(ours "$addr" W4 --create-tool job --create-args '{"name":"bench"}')
ref_w3=$(ours "$addr" W3 --table 20000 --create-tool job --create-args '{"name":"bench"}')
cat >"$work/create.lua" <<LUA
$wrk_headers
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "job"
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. n .. ',"method":"tools/call","params":{"name":"job","arguments":{"name":"wrk"},"_meta":' .. meta .. '}}')
end
LUA
ref_wrk_create=$(wrk_rate "$work/create.lua" "$url")
sql -c "SELECT task_id FROM conduit_bench_ref.conduit_tasks ORDER BY random() LIMIT 20000" >"$work/ids.txt"
cat >"$work/get.lua" <<LUA
$wrk_headers
wrk.headers["Mcp-Method"] = "tasks/get"
ids = {}
for line in io.lines("$work/ids.txt") do ids[#ids + 1] = line end
request = function()
  n = n + 1
  local id = ids[(n % #ids) + 1]
  wrk.headers["Mcp-Name"] = id
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. n .. ',"method":"tasks/get","params":{"taskId":"' .. id .. '","_meta":' .. meta .. '}}')
end
LUA
ref_wrk_get=$(wrk_rate "$work/get.lua" "$url")
stop_servers

{
  echo "## PostgreSQL against pgbench (scripts/bench_pg.sh, one run)"
  echo
  echo "Same database, same run, $conns connections, ${secs} s each. pgbench: a single-row \`INSERT\` of a"
  echo "\`conduit_tasks\` row (its document one our server stored, ${#doc} bytes) and a point \`SELECT\` by"
  echo "primary key of the columns \`tasks/get\` reads, prepared. Targets (issue 32): creates ≥ 2×, \`tasks/get\` ≥ 1.5×."
  echo
  echo "| what | rate /s | vs pgbench |"
  echo "|---|---:|---:|"
  echo "| pgbench INSERT | $pg_insert | 1.00× |"
  echo "| pgbench SELECT by key | $pg_select | 1.00× |"
  echo "| bench server, creates (W4, our generator) | $bench_w4 | $(ratio "$bench_w4" "$pg_insert") |"
  echo "| bench server, tasks/get (W3 on a fresh server, our generator) | $bench_w3 | $(ratio "$bench_w3" "$pg_select") |"
  echo "| bench server, tasks/get beside W4's $busy_tasks running tasks (their leases renewed) | $bench_w3_busy | $(ratio "$bench_w3_busy" "$pg_select") |"
  echo "| reference server, creates (our generator) | $ref_w4 | $(ratio "$ref_w4" "$pg_insert") |"
  echo "| reference server, tasks/get (our generator) | $ref_w3 | $(ratio "$ref_w3" "$pg_select") |"
  echo "| reference server, creates (wrk) | $ref_wrk_create | $(ratio "$ref_wrk_create" "$pg_insert") |"
  echo "| reference server, tasks/get (wrk) | $ref_wrk_get | $(ratio "$ref_wrk_get" "$pg_select") |"
  echo "| two bench servers, one schema, creates (sum) | $two_nodes | $(ratio "$two_nodes" "$bench_w4") of one node |"
  echo "| ceiling: bench server on its memory store, creates | $mem_w4 | $(ratio "$mem_w4" "$pg_insert") |"
  echo "| ceiling: bench server on its memory store, tasks/get (W3) | $mem_w3 | $(ratio "$mem_w3" "$pg_select") |"
  echo
  echo "Server CPU per create: one node $one_cpu µs, two nodes on one schema $two_cpu µs"
  echo "($(ratio "$two_cpu" "$one_cpu") of one node's; target ≤ 1.1×); one node paced to each node's"
  echo "rate in the two-node run ($per_node/s asked, $paced/s reached) $paced_cpu µs: two nodes"
  echo "$(ratio "$two_cpu" "$paced_cpu") of one node at the same rate per node."
} >"$work/../pg.md"
cat "$work/../pg.md"
