#!/usr/bin/env bash
# A real OpenAI-compatible server that nobody here wrote, for the remote-engine tests:
# llama.cpp's server through PyPI's llama-cpp-python[server], serving the SmolLM2 GGUF that
# scripts/fetch-models.sh caches, on loopback.
#
#   scripts/llama-server.sh install   build once (about 9 min on 2 cores) into a cached venv
#   scripts/llama-server.sh start     start it in the background; prints `export` lines for
#                                     PRBENCH_LLAMA_SERVER_URL and PRBENCH_LLAMA_SERVER_PID
#   scripts/llama-server.sh stop PID
#
# The sdist is pinned by version and sha256, its dependencies by exact versions (constraints
# below). The venv lives in $PRBENCH_TOOLS (default ~/.cache/prbench/tools) and is reused while
# its marker file names the same pin.
set -euo pipefail

version=0.3.36
sdist_sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
tools="${PRBENCH_TOOLS:-$HOME/.cache/prbench/tools}"
venv="$tools/llama-cpp-python-$version"
marker="$venv/.prbench-installed-$sdist_sha"
models="${PRBENCH_MODELS:-$HOME/.cache/prbench/models}"
model="$models/SmolLM2-135M-Instruct.Q4_1.gguf"

install() {
  if [[ -f "$marker" ]]; then
    echo "llama-server: llama-cpp-python $version present in $venv" >&2
    return
  fi
  rm -rf "$venv"
  mkdir -p "$tools"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "llama-server: downloading llama-cpp-python==$version (sdist)" >&2
  python3 -m pip download --quiet --no-deps --no-binary :all: --disable-pip-version-check -d "$tmp" "llama-cpp-python==$version"
  got=$(sha256sum "$tmp"/llama_cpp_python-$version.tar.gz | cut -d' ' -f1)
  if [[ "$got" != "$sdist_sha" ]]; then
    echo "llama-server: sha256 mismatch for llama_cpp_python-$version.tar.gz: expected $sdist_sha, got $got" >&2
    exit 1
  fi
  cat >"$tmp/constraints.txt" <<'C'
annotated-doc==0.0.7
annotated-types==0.8.0
anyio==4.16.0
click==8.5.1
diskcache==5.6.3
fastapi==0.165.0
h11==0.16.0
idna==3.20
Jinja2==3.1.6
MarkupSafe==3.0.4
numpy==2.4.6
opentelemetry-api==1.45.2
pydantic==2.14.4
pydantic-settings==2.16.3
pydantic_core==2.50.5
python-dotenv==1.2.4
PyYAML==6.0.4
sse-starlette==3.7.0
starlette==1.10.0
starlette-context==0.3.6
typing-inspection==0.4.5
typing_extensions==4.16.0
uvicorn==0.54.0
C
  python3 -m venv "$venv"
  echo "llama-server: building llama-cpp-python $version (compiles llama.cpp; ~9 min on 2 cores)" >&2
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
    "$venv/bin/pip" install --quiet --disable-pip-version-check -c "$tmp/constraints.txt" \
    "$tmp/llama_cpp_python-$version.tar.gz[server]" >&2
  touch "$marker"
}

start() {
  [[ -f "$marker" ]] || install
  if [[ ! -f "$model" ]]; then
    echo "llama-server: $model missing; run scripts/fetch-models.sh first" >&2
    exit 1
  fi
  port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  log="${TMPDIR:-/tmp}/prbench-llama-server-$port.log"
  # n_ctx 4096 fits every judge prompt of the sample and P-Soups; one thread per core.
  nohup "$venv/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
    --host 127.0.0.1 --port "$port" --n_ctx 4096 --n_threads "$(nproc)" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do
    if "$venv/bin/python" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
      echo "export PRBENCH_LLAMA_SERVER_URL=http://127.0.0.1:$port/v1"
      echo "export PRBENCH_LLAMA_SERVER_PID=$pid"
      echo "llama-server: serving smollm2 at http://127.0.0.1:$port/v1 (pid $pid, log $log)" >&2
      return
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "llama-server: the server exited; its log ($log):" >&2
      tail -20 "$log" >&2
      exit 1
    fi
    sleep 1
  done
  echo "llama-server: no answer on port $port after 120 s; log: $log" >&2
  kill "$pid" 2>/dev/null || true
  exit 1
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) kill "${2:?pid}" 2>/dev/null || true ;;
  *) echo "usage: $0 install|start|stop PID" >&2; exit 2 ;;
esac
