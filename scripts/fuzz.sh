#!/usr/bin/env bash
# Runs every cargo fuzz target in fuzz/ for FUZZ_SECONDS each (default 30),
# starting from the committed seed corpora (fuzz/corpus/<target>); new
# inputs go to fuzz/target/work-corpus/<target>, so the seeds stay as
# committed. A crash, panic or out-of-memory (and with the sanitizer, a leak)
# fails the run; its input is kept in fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh                      # every target, 30 s each
#   FUZZ_SMOKE=1 FUZZ_SECONDS=10 scripts/fuzz.sh   # what CI runs (see FUZZ_SMOKE below)
#   FUZZ_SECONDS=600 scripts/fuzz.sh     # the 10-minute runs of docs/reliability.md
#   scripts/fuzz.sh header_rules         # one target
#
# Needs the nightly toolchain and cargo-fuzz (installed here if missing).
# Prints one summary line per target: executions, coverage, corpus size.

set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
cd fuzz

SECONDS_EACH="${FUZZ_SECONDS:-30}"
# Targets run side by side, FUZZ_JOBS at a time (default: one per core); each is one
# single-threaded libFuzzer process.
JOBS="${FUZZ_JOBS:-$(nproc)}"
TARGETS=(request_decoder header_rules sealed_state tasks_update config_toml)
if [ "$#" -gt 0 ]; then TARGETS=("$@"); fi

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  # A debug build: the tool only drives cargo and libFuzzer, and it compiles in half the time.
  cargo install cargo-fuzz --locked --debug
fi
# -D warnings: the fuzz crate builds the library with the server feature alone (no http),
# a feature set no other build checks; a warning there fails here. (`fuzz run` below
# builds with the same flags, so it finds the build done.)
export RUSTFLAGS="${RUSTFLAGS:-} -D warnings"
# The targets are built optimised with AddressSanitizer (cargo fuzz's -O), or with
# FUZZ_SMOKE=1, as CI's short pass does, unoptimised and without a sanitizer (--dev -s none):
# the same coverage-guided targets and seeds, built in less than half the time. A panic
# fails either; leaks and memory errors in the few lines of unsafe code of our
# dependencies are the long runs' to find.
build=(-O)
if [[ "${FUZZ_SMOKE:-0}" != 0 ]]; then build=(--dev -s none); fi
cargo +nightly fuzz build "${build[@]}"

# fuzz_one TARGET: runs it for SECONDS_EACH; its output goes to target/fuzz-TARGET.log,
# and "ok" or "FAILED" to target/fuzz-TARGET.result.
fuzz_one() {
  local t=$1 work="target/work-corpus/$1" result=FAILED
  mkdir -p "$work" "artifacts/$t"
  if cargo +nightly fuzz run "${build[@]}" "$t" "$work" "corpus/$t" -- \
      -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
      >"target/fuzz-$t.log" 2>&1; then
    result=ok
  fi
  echo "$result" >"target/fuzz-$t.result"
}

running=()
for t in "${TARGETS[@]}"; do
  rm -f "target/fuzz-$t.result"
  if ((${#running[@]} >= JOBS)); then
    wait "${running[0]}"
    running=("${running[@]:1}")
  fi
  fuzz_one "$t" &
  running+=("$!")
done
wait

status=0
for t in "${TARGETS[@]}"; do
  log="target/fuzz-$t.log"
  result=$(cat "target/fuzz-$t.result" 2>/dev/null || echo FAILED)
  if [[ "$result" != ok ]]; then
    status=1
    tail -n 40 "$log"
  fi
  execs=$({ grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" || true; } | grep -o '[0-9]*$' | tail -n 1 || true)
  done_line=$({ grep -E '^#[0-9]+.*(DONE|cov:)' "$log" || true; } | tail -n 1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$done_line")
  echo "fuzz $t: $result, ${SECONDS_EACH}s, ${execs:-?} execs, cov ${cov:-?}, ft ${ft:-?}, corpus ${corpus:-?}"
done
exit "$status"
