# Sourced by the benchmark scripts: starting a server and learning its address.
#
# launch_server NAME CMD...: runs CMD in the background (stdout and stderr in
# $work/NAME.out and $work/NAME.err), waits for its "listening on http://ADDR/mcp"
# line, and sets $addr (ADDR) and $launched (its pid). Exits when it does not start.
launch_server() {
  local name=$1
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  launched=$!
  for _ in $(seq 1 200); do
    addr=$(grep -ohE 'listening on http://[^/ ]+' "$work/$name.out" "$work/$name.err" 2>/dev/null | head -1 | sed 's|listening on http://||') || true
    if [[ -n "$addr" ]]; then return 0; fi
    sleep 0.1
  done
  echo "$name did not start:" >&2
  cat "$work/$name.err" >&2
  exit 1
}
