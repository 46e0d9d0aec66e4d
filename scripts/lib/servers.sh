# Sourced by the scripts that start servers: starting one and learning its
# address, and stopping it again.
#
# launch_server NAME CMD...: runs CMD in the background (stdout and stderr in
# $work/NAME.out and $work/NAME.err; the caller sets $work), waits for its
# "listening on http://ADDR/mcp" line (CMD listens on port 0: the address is
# read, never guessed), and sets $addr (ADDR), $url (http://ADDR/mcp) and
# $launched (its pid), which is also kept in $launched_pids. Exits when the
# server ends or prints nothing within $launch_timeout_s (default 60) seconds.
#
# cpu_ticks PID: the process's user + system time so far, in clock ticks.
# cpu_us_per TICKS REQUESTS: those ticks as µs of CPU per request (0 without requests).
#
# stop_server PID: SIGTERM, SIGKILL after 5 s, and waits for it.
# stop_servers: stops every server launched (an EXIT trap).

launched_pids=()

launch_server() {
  local name=$1
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  launched=$!
  launched_pids+=("$launched")
  local deadline=$((SECONDS + ${launch_timeout_s:-60}))
  while ((SECONDS < deadline)); do
    addr=$(grep -ohE 'listening on http://[^/ ]+' "$work/$name.out" "$work/$name.err" 2>/dev/null | head -1 | sed 's|listening on http://||') || true
    if [[ -n "$addr" ]]; then
      url="http://$addr/mcp"
      return 0
    fi
    if ! kill -0 "$launched" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "$name did not start (logs: $work/$name.out, $work/$name.err):" >&2
  tail -n 40 "$work/$name.err" >&2
  exit 1
}

stop_server() {
  local pid=$1
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "server $pid did not stop after SIGTERM; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
}

stop_servers() {
  local pid
  for pid in "${launched_pids[@]}"; do stop_server "$pid"; done
  launched_pids=()
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

cpu_us_per() {
  awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { if (n > 0) printf "%.1f", t / hz * 1e6 / n; else print 0 }'
}
