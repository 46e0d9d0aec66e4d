#!/usr/bin/env bash
# Runs the official MCP conformance suite against conduit-mcp and publishes
# the score in docs/conformance.md:
#   1. the server leg against ONE fixture process (conformance/src) serving
#      both eras on one URL: `--requirements 2025-11-25` (the legacy leg),
#      then `--requirements 2026-07-28`;
#   2. the ten tasks-* scenarios one by one (`--requirements` runs them but
#      does not score them), against the fixture on the memory store, then on
#      a SQLite file;
#   3. the client leg: the suite's scenario servers drive
#      conduit-mcp-conformance-client (conformance/src/client, on
#      conduit_mcp::client), every client scenario of each revision below, the
#      scored auth/* ones included (the suite's mock authorization server; the
#      client's OAuth is the library's, the same code path as `conduit-mcp
#      login`). The six auth extension scenarios (CLIENT_EXTENSIONS below) are
#      on no spec timeline: they run at each revision with --force (the
#      runner skips them otherwise) and count as legs of their own.
# Then scripts/lib/conformance_results.py counts every checks.json: unlike
# the runner's own exit code, this also counts the not-scored pending
# scenarios (json-schema-2020-12, http-header-validation,
# http-custom-header-server-validation; on 2025-11-25 server-session-lifecycle,
# json-schema-2020-12, server-sse-polling). A FAILURE fails; on the client leg
# a WARNING fails too, as in the runner's own verdict.
#
#   scripts/conformance.sh
#   CONDUIT_CONFORMANCE_TASKS=0 scripts/conformance.sh    # skip the tasks-* scenarios
#   CONDUIT_CONFORMANCE_CLIENT=0 scripts/conformance.sh   # skip the client leg
#   CONDUIT_CONFORMANCE_SERVER=0 CONDUIT_CONFORMANCE_TASKS=0 scripts/conformance.sh   # the client leg only
#
# Needs: cargo, python3, npx (the runner needs Node >= 22; npx fetches it).
# Results: target/conformance-results/<UTC timestamp>/. The score table goes to
# docs/conformance.md when every leg ran, to the results folder otherwise.
# Exit status: 0 when every counted check passed, 1 otherwise.

set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
use_lib servers

CONFORMANCE_PACKAGE="@modelcontextprotocol/conformance@0.2.0-alpha.12"
REQUIREMENTS="2026-07-28"
LEGACY_REQUIREMENTS="2025-11-25"

# The Tasks extension scenarios, counted from their own runs.
TASK_SCENARIOS=(
  tasks-lifecycle
  tasks-capability-negotiation
  tasks-wire-fields
  tasks-request-state-removal
  tasks-mrtr-input
  tasks-request-headers
  tasks-dispatch-and-envelope
  tasks-status-notifications
  tasks-required-task-error
  tasks-mrtr-composition
)
RUN_TASKS="${CONDUIT_CONFORMANCE_TASKS:-1}"
RUN_CLIENT="${CONDUIT_CONFORMANCE_CLIENT:-1}"
RUN_SERVER="${CONDUIT_CONFORMANCE_SERVER:-1}"

# The client leg: the auth/* scenarios both revisions score, then each revision's own.
CLIENT_AUTH_BOTH=(
  auth/metadata-default
  auth/metadata-var1
  auth/metadata-var2
  auth/metadata-var3
  auth/basic-cimd
  auth/scope-from-www-authenticate
  auth/scope-from-scopes-supported
  auth/scope-omitted-when-undefined
  auth/scope-step-up
  auth/scope-retry-limit
  auth/token-endpoint-auth-basic
  auth/token-endpoint-auth-post
  auth/token-endpoint-auth-none
  auth/pre-registration
)
CLIENT_SCENARIOS_2026=(
  tools_call
  request-metadata
  sep-2322-client-request-state
  http-standard-headers
  http-custom-headers
  http-invalid-tool-headers
  json-schema-ref-no-deref
  "${CLIENT_AUTH_BOTH[@]}"
  auth/resource-mismatch
  auth/offline-access-scope
  auth/offline-access-not-supported
  auth/authorization-server-migration
  auth/iss-supported
  auth/iss-not-advertised
  auth/iss-supported-missing
  auth/iss-wrong-issuer
  auth/iss-unexpected
  auth/iss-normalized
  auth/metadata-issuer-mismatch
)
CLIENT_SCENARIOS_2025=(
  initialize
  tools_call
  elicitation-sep1034-client-defaults
  sse-retry
  json-schema-2020-12-preservation
  "${CLIENT_AUTH_BOTH[@]}"
)
# The auth extension scenarios: client credentials (a secret; private_key_jwt),
# enterprise-managed authorization (ID-JAG), DPoP (without and with nonces),
# workload identity (the JWT bearer grant). Counted on both client legs.
CLIENT_EXTENSIONS=(
  auth/client-credentials-basic
  auth/client-credentials-jwt
  auth/enterprise-managed-authorization
  auth/dpop
  auth/dpop-nonce
  auth/wif-jwt-bearer
)

BIN="$target_dir/debug/conduit-mcp-conformance"
CLIENT_BIN="$target_dir/debug/conduit-mcp-conformance-client"
OUT="$target_dir/conformance-results/$(date -u +%Y%m%dT%H%M%SZ)"
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
work="$OUT"
mkdir -p "$OUT"
trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building the fixture and the conformance client"
build_bins

# The runner and Node 22 are installed once by npx; each run then calls them from where npx
# put them (a call through npx costs about two seconds more, and there are ~80 runs).
runner_bin=$(npx -y -p node@22 -p "$CONFORMANCE_PACKAGE" -- sh -c 'dirname "$(command -v conformance)"' 2>/dev/null)
if [[ ! -x "$runner_bin/conformance" || ! -x "$runner_bin/node" ]]; then
  log "npx did not install the conformance runner and Node 22 (found: '$runner_bin')"
  exit 1
fi
log "conformance runner $CONFORMANCE_PACKAGE on Node $("$runner_bin/node" --version)"

RUNNER_FAILED=0
# run_suite LOG ARGS...: one run of the suite's runner (`conformance ARGS`), its output also in $OUT/LOG.log.
run_suite() {
  local log_name=$1
  shift
  log "running conformance $*"
  set +e
  PATH="$runner_bin:$PATH" conformance "$@" 2>&1 | tee -a "$OUT/$log_name.log"
  local rc=${PIPESTATUS[0]}
  set -e
  if ((rc != 0)); then
    log "the runner exited with $rc on: conformance $*"
    RUNNER_FAILED=1
  fi
}

# start_fixture NAME [ARGS...]: the fixture on a port of its own; sets $url.
start_fixture() {
  launch_server "$1" env RUST_LOG="${RUST_LOG:-info}" "$BIN" --listen 127.0.0.1:0 "${@:2}"
  log "fixture $1 is listening on $url"
}

# run_tasks SUBDIR: each tasks-* scenario against the running fixture, into $OUT/SUBDIR.
run_tasks() {
  for scenario in "${TASK_SCENARIOS[@]}"; do
    run_suite "$1" server --url "$url" --scenario "$scenario" -o "$OUT/$1"
  done
}

legs=""
if [[ "$RUN_SERVER" == "1" ]]; then
  legs="server"
  start_fixture fixture
  run_suite legacy server --url "$url" --requirements "$LEGACY_REQUIREMENTS" -o "$OUT/legacy"
  run_suite requirements server --url "$url" --requirements "$REQUIREMENTS" -o "$OUT/requirements"
fi
if [[ "$RUN_TASKS" == "1" ]]; then
  legs+=" tasks"
  # The same fixture as the server legs (started here when they did not run).
  [[ "$RUN_SERVER" == "1" ]] || start_fixture fixture
  run_tasks tasks
  stop_servers
  # The tasks scenarios again, with the fixture's tasks in a SQLite file.
  start_fixture fixture-sqlite --store "sqlite:$OUT/tasks.db"
  run_tasks tasks-sqlite
fi
stop_servers

if [[ "$RUN_CLIENT" == "1" ]]; then
  legs+=" client"
  for scenario in "${CLIENT_SCENARIOS_2026[@]}"; do
    run_suite client-2026-07-28 client --command "$CLIENT_BIN" --scenario "$scenario" \
      --spec-version 2026-07-28 -o "$OUT/client-2026-07-28"
  done
  for scenario in "${CLIENT_SCENARIOS_2025[@]}"; do
    run_suite client-2025-11-25 client --command "$CLIENT_BIN" --scenario "$scenario" \
      --spec-version 2025-11-25 -o "$OUT/client-2025-11-25"
  done
  for revision in "$REQUIREMENTS" "$LEGACY_REQUIREMENTS"; do
    for scenario in "${CLIENT_EXTENSIONS[@]}"; do
      run_suite "client-extensions-$revision" client --command "$CLIENT_BIN" --scenario "$scenario" \
        --spec-version "$revision" --force -o "$OUT/client-extensions-$revision"
    done
  done
fi

table="$OUT/conformance.md"
legs="${legs# }"
if [[ "$legs" == "server tasks client" ]]; then table=docs/conformance.md; fi
set +e
python3 scripts/lib/conformance_results.py "$OUT" --package "$CONFORMANCE_PACKAGE" --legs "$legs" \
  --tasks "${TASK_SCENARIOS[*]}" --client-2026 "${CLIENT_SCENARIOS_2026[*]}" \
  --client-2025 "${CLIENT_SCENARIOS_2025[*]}" --extensions "${CLIENT_EXTENSIONS[*]}" --table "$table" \
  --commit "$COMMIT"
count_rc=$?
set -e
if ((count_rc != 0 || RUNNER_FAILED != 0)); then
  log "FAILED (results in $OUT)"
  exit 1
fi
log "all counted checks passed (results in $OUT)"
