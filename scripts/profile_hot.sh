#!/usr/bin/env bash
# Instructions per request on the hot paths (issue 32): the release bench server
# (memory store) and the bare axum echo, each under `valgrind --tool=callgrind`,
# while scripts/lib/hot_client.py sends COUNT identical requests of W1 (`tools/call
# greet`), W2 (`tasks/get`) or W4 (creates) on one kept-alive loopback connection.
# Each (server, workload) runs twice, with BASE and BASE+COUNT requests; the
# difference divided by COUNT is the cost of one request, start-up and warm-up
# excluded. Instruction counts do not depend on the machine's load.
#
# Usage: scripts/profile_hot.sh [COUNT] [WORKLOADS] [SERVERS]
#        (default 2000, "W1 W2 W4", "ours echo"; BASE is 300)
# Needs release builds of bench-server and bench-echo (scripts/bench.sh builds them);
# OURS=PATH and ECHO=PATH profile other builds (an A/B: copy the "before" binary aside), and
# OURS_ARGS="..." adds arguments to ours (e.g. "--store sqlite --database-url F --fresh --events",
# the Events change log on: compare with it off in another OUT),
# OUT=DIR names where the results go (default target/bench/hot). Writes DIR/SERVER-WORKLOAD.txt:
# instructions per request in all, then per function, inclusive (callgrind_annotate), largest
# first; and prints the totals.
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
use_lib servers

count="${1:-2000}"
workloads="${2:-W1 W2 W4}"
servers="${3:-ours echo}"
base=300
ours="${OURS:-$target_dir/release/bench-server}"
echo_bin="${ECHO:-$target_dir/release/bench-echo}"
work="${OUT:-target/bench/hot}"
mkdir -p "$work"
for b in "$ours" "$echo_bin"; do
  [[ -x "$b" ]] || { echo "scripts/profile_hot.sh: $b is missing (cargo build --release -p conduit-mcp-bench)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "scripts/profile_hot.sh: needs valgrind" >&2; exit 1; }
trap stop_servers EXIT
client="python3 scripts/lib/hot_client.py"
launch_timeout_s=180

# The echo answers with bodies as long as ours.
launch_server sizes "$ours" --listen 127.0.0.1:0
sizes=$($client "$addr" W1 0 --sizes)
stop_servers

# run SERVER WORKLOAD N: the callgrind profile of SERVER after N requests.
run() {
  local out="$work/$1-$2-$3.cg"
  local cmd=(valgrind --tool=callgrind --callgrind-out-file="$out")
  case $1 in
    # shellcheck disable=SC2206 # OURS_ARGS is split into words on purpose.
    ours) cmd+=("$ours" --listen 127.0.0.1:0 ${OURS_ARGS:-}) ;;
    echo) cmd+=("$echo_bin" --listen 127.0.0.1:0 --sizes "$sizes") ;;
  esac
  launch_server "cg-$1-$2-$3" "${cmd[@]}"
  $client "$addr" "$2" "$3"
  stop_servers
  callgrind_annotate --inclusive=yes --threshold=100 "$out" >"$out.incl"
}

for w in $workloads; do
  for s in $servers; do
    run "$s" "$w" "$base"
    run "$s" "$w" "$((base + count))"
    python3 - "$work/$s-$w-$base.cg.incl" "$work/$s-$w-$((base + count)).cg.incl" "$count" \
      >"$work/$s-$w.txt" <<'PY'
import re, sys
def read(path):
    total, fns = 0, {}
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*\S)\s*$", line)
        if m and not m.group(2).startswith(("=>", "<")):
            fns[m.group(2)] = fns.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
        t = re.match(r"\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", line)
        if t:
            total = int(t.group(1).replace(",", ""))
    return total, fns
(t1, a), (t2, b), n = read(sys.argv[1]), read(sys.argv[2]), int(sys.argv[3])
print(f"total {(t2 - t1) / n:.0f} instructions per request")
rows = sorted(((b.get(k, 0) - a.get(k, 0)) / n, k) for k in set(a) | set(b))
for per, k in reversed(rows):
    if abs(per) >= 20:
        print(f"{per:10.0f}  {k}")
PY
    head -1 "$work/$s-$w.txt" | sed "s/^/$s $w: /"
  done
done
