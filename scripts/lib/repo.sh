# Sourced first by every script: runs it from the repository root, names
# where cargo builds, gives it a log line of its own, and loads the other
# helpers it asks for.
#
# Sets $root (the repository root, also the working directory) and
# $target_dir ($CARGO_TARGET_DIR, or target/).
# log MESSAGE...: prints "SCRIPT: MESSAGE" to stderr.
# step TITLE: starts a timed step: prints "== TITLE", and the time the previous
# step took; the last step's time and the total print when the script exits.
# build_bins: builds every binary and example of the workspace in debug, once, with
# the features `cargo test --workspace --all-features` resolves (all of them, and the
# dev-dependencies' too, which building the examples brings in): after the tests it is
# a no-op, and the scripts that run binaries share one build instead of rebuilding
# the library for a feature set of their own.
# use_lib NAME...: sources scripts/lib/NAME.sh for each NAME (servers: start
# and stop servers; numbers: ratios, medians, ranges; load: wrk and the tools
# it needs).

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target_dir="${CARGO_TARGET_DIR:-target}"
log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
step_started=""
step_title=""
script_started=$(date +%s)
step_done() {
  local now
  now=$(date +%s)
  if [[ -n "$step_started" ]]; then
    printf -- '-- %s s: %s\n' "$((now - step_started))" "$step_title"
  fi
}
step() {
  if [[ -z "$step_started" ]]; then
    trap 'step_done; printf -- "-- %s s in all: %s\n" "$(($(date +%s) - script_started))" "$(basename "$0")"' EXIT
  fi
  step_done
  step_title="$1"
  step_started=$(date +%s)
  echo "== $1"
}
build_bins() {
  cargo build --workspace --all-features --bins --examples "$@"
}
use_lib() {
  local lib
  for lib in "$@"; do
    # shellcheck source=/dev/null
    source "$root/scripts/lib/$lib.sh"
  done
}
