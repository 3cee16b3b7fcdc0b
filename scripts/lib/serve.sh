# Shared by scripts/llama-server.sh and scripts/engines.sh (sourced, not run): start a server in
# its own process group on a free loopback port, wait until it answers, print the `export` lines
# the tests read, stop it with its whole group (vLLM forks an engine process).

# free_port PYTHON: a free TCP port on 127.0.0.1.
free_port() {
  "$1" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_ready NAME PID LOG PYTHON PROBE_URL [POST_BODY] [SECONDS]: polls PROBE_URL (a GET, or a
# POST of POST_BODY as JSON) until it answers 2xx; fails with the log's tail when the process
# exits or SECONDS (default 180) pass.
wait_ready() {
  local name=$1 pid=$2 log=$3 py=$4 url=$5 body=${6:-} secs=${7:-180}
  local i
  for ((i = 0; i < secs; i++)); do
    if "$py" - "$url" "$body" >/dev/null 2>&1 <<'PY'
import sys, urllib.request
url, body = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url, data=body.encode() if body else None,
                             headers={"Content-Type": "application/json"})
urllib.request.urlopen(req, timeout=5)
PY
    then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name: the server exited before answering; the end of its log ($log):" >&2
      tail -30 "$log" >&2
      return 1
    fi
    sleep 1
  done
  echo "$name: no answer at $url after $secs s; the end of its log ($log):" >&2
  tail -30 "$log" >&2
  stop_group "$pid"
  return 1
}

# stop_group PID: SIGTERM to the process group PID leads (every server here is started with
# setsid, so it leads its own group), then SIGKILL after 10 s for what is left. A PID that is
# not a number or leads no process group is refused, so a typo cannot end another process.
stop_group() {
  local pid=$1 i
  if [[ ! $pid =~ ^[0-9]+$ ]]; then
    echo "stop: '$pid' is not a process id (the _PID the start command exported)" >&2
    return 2
  fi
  if ! kill -0 -- "-$pid" 2>/dev/null; then
    echo "stop: no process group $pid (already stopped, or not a server these scripts started)" >&2
    return 1
  fi
  kill -TERM -- "-$pid" 2>/dev/null || true
  for ((i = 0; i < 20; i++)); do
    kill -0 -- "-$pid" 2>/dev/null || return 0
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
}
