#!/usr/bin/env bash
# Benchmarks conduit-mcp against the official Rust SDK (rmcp 3.11) and a bare axum
# echo, side by side (issue 5), and writes docs/benchmarks.md and docs/benchmarks.svg.
# Ours is measured twice on W1 and W2: the bench server, and the conformance fixture
# (conduit-mcp-conformance) served by the library's default path, http::serve.
#
# Usage: scripts/bench.sh [--smoke] [HARNESS OPTIONS...]
#   (no flag)  the full pass: release builds, 3 rounds, W1-W9 (W8/W9: 2025-11-25
#              sessions, rmcp in its stateful mode), ours on the memory,
#              SQLite and PostgreSQL stores; run it by hand on an otherwise idle
#              machine (under 20 minutes once the builds are cached). PostgreSQL is
#              DATABASE_URL, or postgres://postgres@127.0.0.1:5432/test when unset;
#              its tables go in the schema conduit_bench, dropped before every run.
#              Then scripts/bench_pg.sh: pgbench on the same database, and ours on
#              PostgreSQL as ratios to it (appended to docs/benchmarks.md). Then the
#              client benchmark (`conduit-mcp-bench follow`): the library client
#              following 1 000 tasks, one listen stream against polling, 3 rounds
#              (its section appended after that). Then `conduit-mcp-bench caps`: the
#              newer capabilities against themselves off, 3 interleaved rounds (its
#              section appended last): 1 000 creates through the library client with
#              no task ledger, a MemoryLedger and a SqliteLedger (issue 30); W4 with
#              the Events change log off and on (memory, SQLite, PostgreSQL), and a terminal
#              event's latency to a push stream on a second node of the same
#              PostgreSQL (issue 29); W1 with DPoP-bound tokens against bearer tokens,
#              a proof signed per request (issue 31); webhook deliveries per second
#              from one bench server to an HTTPS receiver on loopback, against a plain
#              HTTPS POST loop to the same receiver (issue 29). Then scripts/bench_wrk.sh: W1 and
#              W2 under wrk against the fixture, the bench server, rmcp and the echo.
#              Then scripts/bench_auth.sh: W1 with OAuth validation on against off.
#              Then scripts/bench_alloc.sh: the bench server on the system allocator
#              against mimalloc (the `conduit-mcp` binary's).
#   --smoke    the CI pass: debug builds, every workload for 0.25 s on tiny sizes, one
#              round, ours on memory and SQLite, and on PostgreSQL when DATABASE_URL
#              is set; writes target/bench/smoke.md and fails if anything errored;
#              then the client benchmark on 20 tasks, one round (target/bench/follow.md);
#              then `caps` on tiny sizes, one round (target/bench/caps.md; the
#              cross-node events latency only when DATABASE_URL is set; webhook
#              deliveries: 10 tasks to 4 subscriptions).
#              It never touches docs/.
# Other options go to `conduit-mcp-bench run` (e.g. --rounds 1, --stores memory,
# --database-url URL). The SQLite file is target/bench/sqlite/bench.db (smoke:
# target/bench/sqlite/smoke.db), removed before every run.
# The rmcp peer is its own cargo workspace (crates/conduit-mcp-bench/peers/rmcp-peer)
# built into target/rmcp-peer (under $CARGO_TARGET_DIR when set), so rmcp never enters
# the library's dependency graph.
# Binaries are found where cargo puts them: $CARGO_TARGET_DIR when it is set
# (relative to the repository root), target/ otherwise.
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"

mode=full
if [[ "${1:-}" == "--smoke" ]]; then
  mode=smoke
  shift
fi

if ! command -v cargo >/dev/null 2>&1; then
  log "cargo is required (install Rust with rustup)"
  exit 1
fi

peer_manifest=crates/conduit-mcp-bench/peers/rmcp-peer/Cargo.toml
peer_target="$target_dir/rmcp-peer"
if [[ "$mode" == smoke ]]; then
  profile_flag=()
  dir=debug
  out=(--out target/bench/smoke.md --chart target/bench/smoke.svg --json target/bench/smoke.json --smoke)
else
  export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
  profile_flag=(--release)
  dir=release
  out=(--out docs/benchmarks.md --chart docs/benchmarks.svg --json target/bench/results.json)
fi

start=$(date +%s)
echo "== building the bench crate and the conformance fixture ($dir)"
if [[ "$mode" == smoke ]]; then
  build_bins
else
  cargo build --release -p conduit-mcp-bench -p conduit-mcp-conformance --bins
fi
echo "== building the rmcp peer ($dir, its own workspace and lockfile)"
cargo build "${profile_flag[@]}" --locked --manifest-path "$peer_manifest" --target-dir "$peer_target"
built=$(date +%s)

if [[ "$mode" == full ]]; then
  load=$(cut -d' ' -f1 /proc/loadavg)
  if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
    echo "warning: load average is $load; other work on this machine will skew the numbers" >&2
  fi
fi

recorded="scripts/bench.sh"
if [[ "$mode" == smoke ]]; then recorded+=" --smoke"; fi
if [[ $# -gt 0 ]]; then recorded+=" $*"; fi
echo "== running the $mode pass"
"$target_dir/$dir/conduit-mcp-bench" run \
  --server "$target_dir/$dir/bench-server" \
  --echo "$target_dir/$dir/bench-echo" \
  --fixture "$target_dir/$dir/conduit-mcp-conformance" \
  --rmcp "$peer_target/$dir/rmcp-peer" \
  --rmcp-lock "${peer_manifest%Cargo.toml}Cargo.lock" \
  --command "$recorded" \
  "${out[@]}" "$@"
echo "== the client following tasks (listen against poll)"
follow_flags=()
if [[ "$mode" == smoke ]]; then follow_flags=(--smoke); fi
"$target_dir/$dir/conduit-mcp-bench" follow --server "$target_dir/$dir/bench-server" "${follow_flags[@]}" \
  --out target/bench/follow.md --command "$recorded"
echo "== the capabilities on and off (task ledger, Events change log, DPoP, webhook deliveries)"
"$target_dir/$dir/conduit-mcp-bench" caps --server "$target_dir/$dir/bench-server" \
  --bench-as "$target_dir/$dir/bench-as" "${follow_flags[@]}" --out target/bench/caps.md --command "$recorded"
if [[ "$mode" == full ]]; then
  # PostgreSQL against pgbench on the same database, in the same run (issue 13);
  # its table goes at the end of the report.
  echo "== PostgreSQL against pgbench"
  cargo build --release -p conduit-mcp-cli --bins
  scripts/bench_pg.sh
  { echo; cat target/bench/pg.md; } >>docs/benchmarks.md
  # W1 and W2 under wrk, an external load generator, against the fixture, the bench
  # server, rmcp and the echo (issue 13).
  echo "== W1 and W2 under wrk"
  scripts/bench_wrk.sh
  { echo; cat target/bench/wrk.md; } >>docs/benchmarks.md
  # W1 with OAuth validation on against off, side by side (issue 34).
  echo "== W1 with OAuth validation on and off"
  scripts/bench_auth.sh
  { echo; cat target/bench/auth.md; } >>docs/benchmarks.md
  # The bench server on the system allocator against mimalloc, the reference server's (issue 32).
  echo "== the allocator"
  scripts/bench_alloc.sh
  { echo; cat target/bench/alloc.md; } >>docs/benchmarks.md
  # The client benchmark's section, after the generated report (which would not keep it).
  { echo; cat target/bench/follow.md; } >>docs/benchmarks.md
  { echo; cat target/bench/caps.md; } >>docs/benchmarks.md
fi
end=$(date +%s)
echo "== done: builds $((built - start)) s, benchmarks $((end - built)) s"
