# Sourced by the benchmark scripts that drive a server with wrk.
#
# need COMMAND PACKAGE: installs PACKAGE with apt-get when COMMAND is missing.
# wrk_rate LUA URL: requests/s of wrk (one thread, $conns connections, $secs
# seconds) running the script LUA against URL; its report goes to stderr,
# indented. Exits when a response was not 2xx.

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "== installing $2 (for $1)"
    apt-get install -y "$2" >/dev/null
  fi
}

wrk_rate() {
  local out
  out=$(wrk -t1 -c"$conns" -d"${secs}s" -s "$1" "$2")
  echo "$out" | sed 's/^/   /' >&2
  if echo "$out" | grep -q "Non-2xx"; then
    echo "wrk: non-2xx answers from $2" >&2
    exit 1
  fi
  echo "$out" | sed -nE 's/^Requests\/sec: *([0-9.]+).*/\1/p' | cut -d. -f1
}
