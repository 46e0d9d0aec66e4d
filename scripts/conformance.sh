#!/usr/bin/env bash
# Runs the official MCP conformance suite (server leg) against ONE conduit-mcp
# fixture process (conformance/src) serving both eras on one URL: first
# `--requirements 2025-11-25` (the legacy leg), then `--requirements 2026-07-28`
# and the tasks-* scenarios.
# Then its client leg against the conformance client (conformance/src/client;
# block at the end).
#
#   scripts/conformance.sh
#   CONDUIT_CONFORMANCE_TASKS=0 scripts/conformance.sh   # skip the ten tasks-* scenarios
#
# Steps: build the fixture, start it on a free loopback port, run
# `conformance server --requirements 2025-11-25` and `--requirements 2026-07-28`
# against it, then read every checks.json
# and fail if any counted check has status FAILURE. Unlike the runner's own
# exit code, this also counts the not-scored pending scenarios
# (json-schema-2020-12, http-header-validation,
# http-custom-header-server-validation). The requirements run never fails on
# the tasks-* scenarios, so each one is also run separately with --scenario
# and counted (set CONDUIT_CONFORMANCE_TASKS=0 to skip them).
#
# Needs: cargo, python3, npx (the runner needs Node >= 22; npx fetches it).
# Results: target/conformance-results/<UTC timestamp>/.
# Exit status: 0 when every counted check passed, 1 otherwise.

set -euo pipefail

CONFORMANCE_PACKAGE="@modelcontextprotocol/conformance@0.2.0-alpha.12"
REQUIREMENTS="2026-07-28"
LEGACY_REQUIREMENTS="2025-11-25"

# The Tasks extension scenarios. --requirements runs them but does not score
# them, so they are run one by one and counted here.
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

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="$TARGET_DIR/debug/conduit-mcp-conformance"
OUT="$TARGET_DIR/conformance-results/$(date -u +%Y%m%dT%H%M%SZ)"
FIXTURE_LOG="$OUT/fixture.log"
STARTUP_TIMEOUT_S=60

log() { printf 'conformance.sh: %s\n' "$*" >&2; }

mkdir -p "$OUT"

log "building the fixture"
cargo build -p conduit-mcp-conformance

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
URL="http://127.0.0.1:$PORT/mcp"

FIXTURE_PID=""
stop_fixture() {
  if [[ -n "$FIXTURE_PID" ]] && kill -0 "$FIXTURE_PID" 2>/dev/null; then
    kill -TERM "$FIXTURE_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$FIXTURE_PID" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$FIXTURE_PID" 2>/dev/null; then
      log "fixture did not stop after SIGTERM; sending SIGKILL"
      kill -KILL "$FIXTURE_PID" 2>/dev/null || true
    fi
    wait "$FIXTURE_PID" 2>/dev/null || true
  fi
  FIXTURE_PID=""
}
trap stop_fixture EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_fixture LOG [ARGS...]: starts the fixture and waits until it listens.
start_fixture() {
  local log_file="$1"
  shift
  log "starting the fixture on 127.0.0.1:$PORT $* (log: $log_file)"
  RUST_LOG="${RUST_LOG:-info}" "$BIN" --listen "127.0.0.1:$PORT" "$@" 2>"$log_file" &
  FIXTURE_PID=$!
  local deadline=$((SECONDS + STARTUP_TIMEOUT_S))
  until grep -q 'listening on' "$log_file" 2>/dev/null; do
    if ! kill -0 "$FIXTURE_PID" 2>/dev/null; then
      log "the fixture exited before listening:"
      cat "$log_file" >&2
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      log "timed out after ${STARTUP_TIMEOUT_S}s waiting for 'listening on' in $log_file"
      cat "$log_file" >&2
      exit 1
    fi
    sleep 0.2
  done
  log "fixture is $(grep -m1 'listening on' "$log_file")"
}

start_fixture "$FIXTURE_LOG"

run_conformance() {
  npx -y -p node@22 -p "$CONFORMANCE_PACKAGE" -- conformance server --url "$URL" "$@"
}

RUNNER_FAILED=0

# The legacy leg, on the same process and URL. Its three unscored scenarios
# (server-session-lifecycle, json-schema-2020-12, server-sse-polling) are counted too.
log "running --requirements $LEGACY_REQUIREMENTS"
set +e
run_conformance --requirements "$LEGACY_REQUIREMENTS" -o "$OUT/legacy" 2>&1 | tee "$OUT/legacy.log"
rc=${PIPESTATUS[0]}
set -e
if ((rc != 0)); then
  log "the runner exited with $rc on --requirements $LEGACY_REQUIREMENTS"
  RUNNER_FAILED=1
fi

log "running --requirements $REQUIREMENTS"
set +e
run_conformance --requirements "$REQUIREMENTS" -o "$OUT/requirements" 2>&1 | tee "$OUT/requirements.log"
rc=${PIPESTATUS[0]}
set -e
if ((rc != 0)); then
  log "the runner exited with $rc on --requirements $REQUIREMENTS"
  RUNNER_FAILED=1
fi

# run_tasks SUBDIR: runs each tasks-* scenario against the running fixture into $OUT/SUBDIR.
run_tasks() {
  for scenario in "${TASK_SCENARIOS[@]}"; do
    log "running --scenario $scenario ($1)"
    set +e
    run_conformance --scenario "$scenario" -o "$OUT/$1" 2>&1 | tee -a "$OUT/$1.log"
    local rc=${PIPESTATUS[0]}
    set -e
    if ((rc != 0)); then
      log "the runner exited with $rc on $scenario ($1)"
      RUNNER_FAILED=1
    fi
  done
}

if [[ "$RUN_TASKS" == "1" ]]; then
  run_tasks tasks
fi
stop_fixture

# The tasks scenarios again, with the fixture's tasks in a SQLite file.
if [[ "$RUN_TASKS" == "1" ]]; then
  start_fixture "$OUT/fixture-sqlite.log" --store "sqlite:$OUT/tasks.db"
  run_tasks tasks-sqlite
  stop_fixture
fi

# Count the checks. The requirements run also executes the tasks-* scenarios
# (not scored); they are always left out of it: when CONDUIT_CONFORMANCE_TASKS=1
# they are counted from their own runs in $OUT/tasks instead.
set +e
python3 - "$OUT" "$RUN_TASKS" "${TASK_SCENARIOS[@]}" <<'PY'
import json, os, re, sys
from collections import defaultdict

out, run_tasks, task_scenarios = sys.argv[1], sys.argv[2] == "1", set(sys.argv[3:])
DIR_RE = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z?$")

def results(sub):
    root = os.path.join(out, sub)
    if not os.path.isdir(root):
        return
    for d in sorted(os.listdir(root)):
        path = os.path.join(root, d, "checks.json")
        if not os.path.isfile(path):
            continue
        m = DIR_RE.match(d)
        scenario = m.group(1) if m else d
        try:
            with open(path) as f:
                checks = json.load(f)
        except (OSError, ValueError) as e:
            yield scenario, [{"id": "checks.json", "status": "FAILURE", "errorMessage": f"unreadable: {e}"}]
            continue
        yield scenario, checks if isinstance(checks, list) else []

counted = defaultdict(list)
ignored = defaultdict(list)
for scenario, checks in results("requirements"):
    (ignored if scenario in task_scenarios else counted)[scenario].extend(checks)
for scenario, checks in results("legacy"):
    counted["2025-11-25 " + scenario].extend(checks)
if run_tasks:
    for scenario, checks in results("tasks"):
        counted[scenario].extend(checks)
    for scenario, checks in results("tasks-sqlite"):
        counted[scenario + " (sqlite)"].extend(checks)

passed = failed = 0
failures = []
legacy_passed = sum(1 for s in counted if s.startswith("2025-11-25 ") for c in counted[s] if c.get("status") == "SUCCESS")
for scenario in sorted(counted):
    for c in counted[scenario]:
        status = c.get("status")
        if status == "SUCCESS":
            passed += 1
        elif status == "FAILURE":
            failed += 1
            why = c.get("errorMessage") or c.get("description") or ""
            failures.append(f"  {scenario}: [{c.get('id')}] {why}".rstrip())

ignored_failures = sum(1 for cs in ignored.values() for c in cs if c.get("status") == "FAILURE")
print()
print(f"conformance: {passed} passed, {failed} failed ({len(counted)} scenarios counted; results in {out})")
print(f"  of which the 2025-11-25 leg: {legacy_passed} passed "
      f"({sum(1 for s in counted if s.startswith('2025-11-25 '))} scenarios)")
if failures:
    print("failures:")
    print("\n".join(failures))
if ignored and not run_tasks:
    print(f"ignored: {len(ignored)} tasks-* scenarios from the requirements run "
          f"({ignored_failures} FAILURE checks); set CONDUIT_CONFORMANCE_TASKS=1 to count them")
if not counted:
    print("conformance: no results found", file=sys.stderr)
    sys.exit(1)
expected = task_scenarios | {s + " (sqlite)" for s in task_scenarios}
legacy_expected = {"2025-11-25 " + s for s in ("server-initialize", "server-session-lifecycle",
                   "json-schema-2020-12", "server-sse-polling", "tools-call-sampling")}
missing_legacy = sorted(legacy_expected - counted.keys())
if missing_legacy:
    print(f"conformance: no results for {', '.join(missing_legacy)}", file=sys.stderr)
    sys.exit(1)
missing = sorted(expected - counted.keys()) if run_tasks else []
if missing:
    print(f"conformance: no results for {', '.join(missing)}", file=sys.stderr)
    sys.exit(1)
sys.exit(1 if failed else 0)
PY
eval_rc=$?
set -e

if ((eval_rc != 0 || RUNNER_FAILED != 0)); then
  log "FAILED"
  exit 1
fi
log "all counted checks passed"

# ---------------------------------------------------------------------------
# Client leg: the suite's scenario servers drive conduit-mcp-conformance-client
# (conformance/src/client, on conduit_mcp::client). Every client scenario of
# each revision below, the scored auth/* ones included (the suite's mock
# authorization server; the client's OAuth is the library's, the same code
# path as `conduit-mcp login`), runs with --scenario and every
# SUCCESS/FAILURE/WARNING check is counted: a WARNING fails too, as it does
# in the runner's own verdict. The six auth extension scenarios run too and
# are reported, not counted (CLIENT_EXTENSIONS below).
#   CONDUIT_CONFORMANCE_CLIENT=0 scripts/conformance.sh   # skip the client leg
# ---------------------------------------------------------------------------
CLIENT_SCENARIOS_2026=(
  tools_call
  request-metadata
  sep-2322-client-request-state
  http-standard-headers
  http-custom-headers
  http-invalid-tool-headers
  json-schema-ref-no-deref
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
# Extension scenarios: run (no --spec-version: they are on no spec timeline)
# and reported, not counted. client-credentials-basic passes; the others
# need private_key_jwt, DPoP, ID-JAG or workload identity, which the client
# does not implement.
CLIENT_EXTENSIONS=(
  auth/client-credentials-basic
  auth/client-credentials-jwt
  auth/enterprise-managed-authorization
  auth/dpop
  auth/dpop-nonce
  auth/wif-jwt-bearer
)
if [[ "${CONDUIT_CONFORMANCE_CLIENT:-1}" == "1" ]]; then
  log "building the conformance client"
  cargo build -p conduit-mcp-conformance --bin conduit-mcp-conformance-client
  CLIENT_BIN="$TARGET_DIR/debug/conduit-mcp-conformance-client"
  CLIENT_FAILED=0
  # run_client_leg REVISION SCENARIO...: one run per scenario into $OUT/client-REVISION.
  run_client_leg() {
    local revision="$1"
    shift
    for scenario in "$@"; do
      log "client leg: --scenario $scenario (--spec-version $revision)"
      set +e
      npx -y -p node@22 -p "$CONFORMANCE_PACKAGE" -- conformance client --command "$CLIENT_BIN" \
        --scenario "$scenario" --spec-version "$revision" -o "$OUT/client-$revision" 2>&1 |
        tee -a "$OUT/client-$revision.log"
      local rc=${PIPESTATUS[0]}
      set -e
      if ((rc != 0)); then
        log "the runner exited with $rc on client scenario $scenario ($revision)"
        CLIENT_FAILED=1
      fi
    done
  }
  run_client_leg 2026-07-28 "${CLIENT_SCENARIOS_2026[@]}"
  run_client_leg 2025-11-25 "${CLIENT_SCENARIOS_2025[@]}"
  for scenario in "${CLIENT_EXTENSIONS[@]}"; do
    log "client leg (extension, not counted): --scenario $scenario"
    npx -y -p node@22 -p "$CONFORMANCE_PACKAGE" -- conformance client --command "$CLIENT_BIN" \
      --scenario "$scenario" -o "$OUT/client-extensions" >>"$OUT/client-extensions.log" 2>&1 || true
  done
  set +e
  python3 - "$OUT" "${CLIENT_SCENARIOS_2026[@]/#/2026-07-28:}" "${CLIENT_SCENARIOS_2025[@]/#/2025-11-25:}" <<'PY'
import json, os, re, sys
out, wanted = sys.argv[1], sys.argv[2:]
DIR_RE = re.compile(r"^(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z?$")
passed = failed = 0
failures, seen = [], set()
for item in wanted:
    revision, scenario = item.split(":", 1)
    # The runner writes auth/NAME's results under auth/.
    sub, base = os.path.split(scenario)
    root = os.path.join(out, "client-" + revision, sub)
    for d in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        m = DIR_RE.match(d)
        if not m or m.group(1) != base:
            continue
        seen.add(item)
        with open(os.path.join(root, d, "checks.json")) as f:
            for c in json.load(f):
                st = c.get("status")
                if st == "SUCCESS":
                    passed += 1
                elif st in ("FAILURE", "WARNING"):
                    failed += 1
                    failures.append(f"  {scenario} ({revision}): {st} [{c.get('id')}] {c.get('errorMessage') or ''}")
missing = [w for w in wanted if w not in seen]
ext_root = os.path.join(out, "client-extensions", "auth")
for d in sorted(os.listdir(ext_root)) if os.path.isdir(ext_root) else []:
    m = DIR_RE.match(d)
    try:
        with open(os.path.join(ext_root, d, "checks.json")) as f:
            checks = json.load(f)
    except (OSError, ValueError):
        continue
    bad = sum(1 for c in checks if c.get("status") in ("FAILURE", "WARNING"))
    ok = sum(1 for c in checks if c.get("status") == "SUCCESS")
    name = m.group(1) if m else d
    print(f"  extension (not counted) auth/{name}: {'PASSED' if not bad else 'FAILED'} ({ok} passed, {bad} failed)")
print(f"\nconformance client leg: {passed} passed, {failed} failed ({len(seen)} scenarios counted)")
if failures:
    print("failures:\n" + "\n".join(failures))
if missing:
    print("no results for: " + ", ".join(missing), file=sys.stderr)
sys.exit(1 if failed or missing else 0)
PY
  client_rc=$?
  set -e
  if ((client_rc != 0 || CLIENT_FAILED != 0)); then
    log "client leg FAILED"
    exit 1
  fi
  log "client leg: all counted checks passed"
fi
