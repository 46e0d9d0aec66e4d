# Sourced first by every script: runs it from the repository root, names
# where cargo builds, gives it a log line of its own, and loads the other
# helpers it asks for.
#
# Sets $root (the repository root, also the working directory) and
# $target_dir ($CARGO_TARGET_DIR, or target/).
# log MESSAGE...: prints "SCRIPT: MESSAGE" to stderr.
# use_lib NAME...: sources scripts/lib/NAME.sh for each NAME (servers: start
# and stop servers; numbers: ratios, medians, ranges; load: wrk and the tools
# it needs).

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target_dir="${CARGO_TARGET_DIR:-target}"
log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
use_lib() {
  local lib
  for lib in "$@"; do
    # shellcheck source=/dev/null
    source "$root/scripts/lib/$lib.sh"
  done
}
