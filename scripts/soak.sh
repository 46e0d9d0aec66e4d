#!/usr/bin/env bash
# The reference server's soak (issue 11; not in CI): release builds, then
#   1. listen churn: RSS growth over 30 000 subscriptions/listen open/close
#      cycles naming a live task (must stay under 1 MiB), and a full table of
#      the largest creates against the byte budget;
#   2. SOAK_MINUTES (default 10) of mixed load on SQLite, then the same on
#      PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test,
#      schema SOAK_PG_SCHEMA, default conduit_soak, dropped before and after),
#      one after the other: creates past a small row cap, polls, listens opened
#      and dropped, cancels, tasks/update answers, complete_job, idle sockets,
#      and on PostgreSQL the server's database connections killed every minute.
# Each prints a per-minute table and a verdict; the report goes to
# target/soak/report.md. Exit 1 when any verdict fails.
#
#   scripts/soak.sh                    # everything
#   SOAK_MINUTES=1 scripts/soak.sh     # a short pass
#   scripts/soak.sh churn|sqlite|postgres   # one part
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"

MINUTES="${SOAK_MINUTES:-10}"
URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
SCHEMA="${SOAK_PG_SCHEMA:-conduit_soak}"
PARTS=(churn sqlite postgres)
if [ "$#" -gt 0 ]; then PARTS=("$@"); fi

cargo build --release -p conduit-mcp-cli -p conduit-mcp-bench --bin conduit-mcp --bin conduit-mcp-soak
server="$target_dir/release/conduit-mcp"
soak="$target_dir/release/conduit-mcp-soak"
mkdir -p target/soak
report=target/soak/report.md
{
  echo "## Soak $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), ${MINUTES} min"
  echo
  echo "Load average before: $(cat /proc/loadavg)"
  echo
} >"$report"

status=0
for part in "${PARTS[@]}"; do
  case "$part" in
    churn)
      "$soak" churn --server "$server" 2>&1 | tee -a "$report" || status=1
      ;;
    sqlite)
      "$soak" mixed --server "$server" --store sqlite --minutes "$MINUTES" --out "$report" || status=1
      ;;
    postgres)
      "$soak" mixed --server "$server" --store postgres --minutes "$MINUTES" \
        --database-url "$URL" --pg-schema "$SCHEMA" --out "$report" || status=1
      ;;
    *)
      log "unknown part $part (churn, sqlite or postgres)"
      exit 2
      ;;
  esac
done
echo "Load average after: $(cat /proc/loadavg)" >>"$report"
echo "wrote $report"
exit "$status"
