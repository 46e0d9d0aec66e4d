#!/usr/bin/env bash
# The allocator, side by side (issue 32): the bench server built on the system allocator
# (glibc's malloc) and with `--features mimalloc` (the allocator the `conduit-mcp` binary
# ships with), in interleaved rounds of one run: creates (W4) and tasks/get (W3, on a
# fresh server) on PostgreSQL, creates (W4) and `tools/call greet` (W1) on the memory
# store; requests/s and the server's CPU per request (user + system time ÷ requests).
#
# Usage: scripts/bench_alloc.sh [SECONDS] [ROUNDS]   (default 6 s, 3 rounds)
# Needs DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test). Builds both
# variants (release) and leaves target/release/bench-server on the system allocator.
# Writes target/bench/alloc.md and prints it.
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
use_lib servers numbers

secs="${1:-6}"
rounds="${2:-3}"
db_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
bin="$target_dir/release"
work=target/bench/alloc
mkdir -p "$work"

echo "== building bench-server on both allocators (release)"
cargo build --release -p conduit-mcp-bench --bin bench-server --features mimalloc
cp "$bin/bench-server" "$work/bench-server-mimalloc"
cargo build --release -p conduit-mcp-bench --bin bench-server --bin conduit-mcp-bench
cp "$bin/bench-server" "$work/bench-server-system"
trap stop_servers EXIT

# measure VARIANT STORE WORKLOAD: appends "VARIANT STORE WORKLOAD RATE CPU_US" to $work/samples.
measure() {
  local variant=$1 store=$2 w=$3 args=() extra=()
  [[ $store == pg ]] && args=(--store postgres --database-url "$db_url" --pg-schema conduit_bench_alloc --fresh)
  launch_server "$variant-$store-$w" "$work/bench-server-$variant" "${args[@]}"
  if [[ $w == W3 ]]; then
    extra=(--table 20000)
  fi
  local t0 t1 line n rate
  t0=$(cpu_ticks "$launched")
  line=$("$bin/conduit-mcp-bench" load --addr "$addr" --workload "$w" --ms "$((secs * 1000))" "${extra[@]}" 2>&1 | tail -1)
  t1=$(cpu_ticks "$launched")
  stop_servers
  n=$(echo "$line" | awk '{ print $1 }')
  rate=$(echo "$line" | sed -nE 's/.* ([0-9]+) req\/s.*/\1/p')
  echo "   $variant $store $w: $line" >&2
  # W3's ticks include creating its table: its CPU per request is not reported.
  echo "$variant $store $w $rate $(cpu_us_per $((t1 - t0)) "$n")" >>"$work/samples"
}

: >"$work/samples"
for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds"
  for v in system mimalloc; do
    measure "$v" pg W4
    measure "$v" pg W3
    measure "$v" mem W4
    measure "$v" mem W1
  done
done

col() { awk -v v="$1" -v s="$2" -v w="$3" -v c="$4" '$1 == v && $2 == s && $3 == w { print $c }' "$work/samples"; }
{
  echo "## The allocator (scripts/bench_alloc.sh, one run)"
  echo
  echo "bench-server on the system allocator and on mimalloc, $rounds interleaved rounds of ${secs} s,"
  echo "50 connections, our generator; medians [ranges]. CPU: the server's user + system time per"
  echo "request (for W3 it includes creating the 20 000 tasks it reads, so it is left out)."
  echo
  echo "| store | workload | system req/s | mimalloc req/s | ratio | system CPU µs | mimalloc CPU µs | ratio |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  for sw in "pg W4" "pg W3" "mem W4" "mem W1"; do
    read -r s w <<<"$sw"
    rs=$(col system "$s" "$w" 4 | median)
    rm=$(col mimalloc "$s" "$w" 4 | median)
    if [[ $w == W3 ]]; then
      cs="–" cm="–" cr="–"
    else
      cs=$(col system "$s" "$w" 5 | median)
      cm=$(col mimalloc "$s" "$w" 5 | median)
      cr=$(ratio "$cm" "$cs")
    fi
    name=$([[ $s == pg ]] && echo PostgreSQL || echo memory)
    echo "| $name | $w | $rs [$(col system "$s" "$w" 4 | range)] | $rm [$(col mimalloc "$s" "$w" 4 | range)] | $(ratio "$rm" "$rs") | $cs | $cm | $cr |"
  done
} >"$work/../alloc.md"
cat "$work/../alloc.md"
