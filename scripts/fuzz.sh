#!/usr/bin/env bash
# Runs every cargo fuzz target in fuzz/ for FUZZ_SECONDS each (default 30),
# starting from the committed seed corpora (fuzz/corpus/<target>); new
# inputs go to fuzz/target/work-corpus/<target>, so the seeds stay as
# committed. A crash, panic, leak or out-of-memory fails the run; its input
# is kept in fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh                      # every target, 30 s each
#   FUZZ_SECONDS=10 scripts/fuzz.sh      # what CI runs
#   FUZZ_SECONDS=600 scripts/fuzz.sh     # the 10-minute runs of docs/reliability.md
#   scripts/fuzz.sh header_rules         # one target
#
# Needs the nightly toolchain and cargo-fuzz (installed here if missing).
# Prints one summary line per target: executions, coverage, corpus size.

set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
cd fuzz

SECONDS_EACH="${FUZZ_SECONDS:-30}"
TARGETS=(request_decoder header_rules sealed_state tasks_update config_toml)
if [ "$#" -gt 0 ]; then TARGETS=("$@"); fi

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
cargo +nightly fuzz build -O

status=0
for t in "${TARGETS[@]}"; do
  work="target/work-corpus/$t"
  mkdir -p "$work" "artifacts/$t"
  log="target/fuzz-$t.log"
  if cargo +nightly fuzz run -O "$t" "$work" "corpus/$t" -- \
      -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
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
