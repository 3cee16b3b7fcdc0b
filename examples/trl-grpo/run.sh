#!/usr/bin/env bash
# One GRPO policy per reward model, a 2-step control, held-out answers of every policy judged
# by one rubric judge, and each policy's judged change against the initial policy.
#
#   eval "$(bash scripts/engines.sh env)"
#   bash examples/trl-grpo/run.sh --data psoups:/path/to/alignx-psoups --out runs/rl \
#       longer=baseline:longer@none shorter=baseline:shorter@none bt-none=bt:runs/bt-none@none
#
# Each reward model is NAME=SPEC@CONDITION: SPEC as `prbench serve-reward --model` takes it,
# CONDITION `none` (no profile sent) or `profile:K` (K = --k). The control trains
# CONTROL_STEPS steps against the first reward model (how far the judged score moves for
# training that has barely started: the noise level).
#
# Settings (environment): PRBENCH (binary, default target/release/prbench), STEPS (30),
# CONTROL_STEPS (2), K (posts in the prompt, 10), HELDOUT (fraction, 0.2), N (held-out samples
# per question, 4), SAMPLE_SEED (7), TRAIN_SEED (42), MAX_LEN (completion tokens, 48),
# LR (1e-6), TRAIN_LIMIT (training prompts, all), HELDOUT_LIMIT (held-out examples per subset,
# all), JUDGE (rubric judge spec, default the SmolLM2 GGUF), SUBSET.
# Needs PRBENCH_ENGINES_PYTHON and PRBENCH_ENGINE_MODELS (scripts/engines.sh env).
# Only one heavy job runs at a time: reward servers are started and stopped around each run.
set -euo pipefail

usage() { sed -n '2,20p' "$0" >&2; exit 2; }
DATA="" OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) break ;;
  esac
done
[ -n "$DATA" ] && [ -n "$OUT" ] && [ $# -ge 1 ] || usage
: "${PRBENCH_ENGINES_PYTHON:?run: eval \"\$(bash scripts/engines.sh env)\"}"
: "${PRBENCH_ENGINE_MODELS:?run: eval \"\$(bash scripts/engines.sh env)\"}"
HERE="$(cd "$(dirname "$0")" && pwd)"
PRBENCH="${PRBENCH:-$HERE/../../target/release/prbench}"
PY="$PRBENCH_ENGINES_PYTHON"
POLICY="$PRBENCH_ENGINE_MODELS/smollm2-135m-instruct"
STEPS="${STEPS:-30}" CONTROL_STEPS="${CONTROL_STEPS:-2}" K="${K:-10}" HELDOUT="${HELDOUT:-0.2}"
N="${N:-4}" SAMPLE_SEED="${SAMPLE_SEED:-7}" TRAIN_SEED="${TRAIN_SEED:-42}" MAX_LEN="${MAX_LEN:-48}" LR="${LR:-1e-6}"
export PYTHONWARNINGS=ignore
# Every reward model is checked before any work starts (retrieval and each training take long):
# NAME=SPEC@CONDITION with all three parts, names unique and not `initial` or `control` (run.sh's
# own), condition `none` or `profile:K` with K equal to the prompts' K.
declare -A SEEN=()
for arg in "$@"; do
  name="${arg%%=*}"; rest="${arg#*=}"; spec="${rest%@*}"; condition="${rest##*@}"
  if [ "$name" = "$arg" ] || [ "$spec" = "$rest" ] || [ -z "$name" ] || [ -z "$spec" ] || [ -z "$condition" ]; then
    echo "run: bad reward model '$arg': expected NAME=SPEC@CONDITION, e.g. longer=baseline:longer@none" >&2; exit 2
  fi
  case "$name" in initial|control) echo "run: '$arg': the name '$name' is run.sh's own; pick another" >&2; exit 2 ;; esac
  [ -z "${SEEN[$name]:-}" ] || { echo "run: the name '$name' is given twice" >&2; exit 2; }
  SEEN[$name]=1
  case "$condition" in
    none) ;;
    profile:*) [ "${condition#profile:}" = "$K" ] || { echo "run: '$arg': condition $condition needs K=${condition#profile:} (the prompts carry K=$K posts); set K or change the condition" >&2; exit 2; } ;;
    *) echo "run: '$arg': condition '$condition' is not none or profile:K" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/times.log" >&2; }

SERVER_PID=""
stop_server() { if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; fi; }
trap stop_server EXIT
# start_server SPEC LOG: starts serve-reward on a free port; sets SERVER_PID and SERVER_URL.
start_server() {
  "$PRBENCH" serve-reward --model "$1" --port 0 --quiet 2>"$2" &
  SERVER_PID=$!
  for _ in $(seq 1 600); do
    SERVER_URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$2" | head -1 || true)
    [ -n "$SERVER_URL" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$2" >&2; exit 1; }
    sleep 0.5
  done
  echo "serve-reward did not start; see $2" >&2; exit 1
}

# 1. The prompts: ranked profiles, then prbench's own policy prompt, split by item id.
if [ ! -f "$OUT/dataset/train.jsonl" ]; then
  log "retrieve + make_dataset"
  "$PRBENCH" retrieve --data "$DATA" ${SUBSET:+--subset "$SUBSET"} --out "$OUT/ranked.jsonl" --quiet
  "$PY" "$HERE/make_dataset.py" --prbench "$PRBENCH" --data "$OUT/ranked.jsonl" --out "$OUT/dataset" --k "$K" --heldout "$HELDOUT"
fi

# 2. One policy per reward model, and the control.
train() { # NAME SPEC CONDITION STEPS
  local name="$1" spec="$2" condition="$3" steps="$4"
  if [ -f "$OUT/policies/$name/checkpoint/model.safetensors" ]; then log "train $name: done before"; return; fi
  rm -rf "$OUT/policies/$name"; mkdir -p "$OUT/policies/$name"
  start_server "$spec" "$OUT/policies/$name/serve-reward.log"
  log "train $name ($spec, $condition, $steps steps) against $SERVER_URL"
  "$PY" "$HERE/train.py" --policy "$POLICY" --dataset "$OUT/dataset" --reward-url "$SERVER_URL" \
    --reward-condition "$condition" --steps "$steps" --seed "$TRAIN_SEED" --max-completion-length "$MAX_LEN" \
    --learning-rate "$LR" ${TRAIN_LIMIT:+--limit "$TRAIN_LIMIT"} --out "$OUT/policies/$name" >"$OUT/policies/$name/train.log" 2>&1
  stop_server
  log "train $name: done ($(grep -o '"train_seconds": [0-9.]*' "$OUT/policies/$name/summary.json"))"
}
NAMES=()
FIRST=""
for arg in "$@"; do
  name="${arg%%=*}"; rest="${arg#*=}"; spec="${rest%@*}"; condition="${rest##*@}"
  [ -z "$FIRST" ] && FIRST="$spec@$condition"
  train "$name" "$spec" "$condition" "$STEPS"
  NAMES+=("$name")
done
train control "${FIRST%@*}" "${FIRST##*@}" "$CONTROL_STEPS"
NAMES+=(control)

# 3. Held-out answers of the initial and every trained policy: same prompts, same seeds.
sample() { # NAME CHECKPOINT
  if [ -f "$OUT/bon/$1/samples.jsonl" ]; then return; fi
  log "sample $1"
  "$PY" "$HERE/sample.py" --prbench "$PRBENCH" --policy "$2" --name "grpo-$1" --data "$OUT/dataset/heldout-data.jsonl" \
    --out "$OUT/bon/$1" --n "$N" --seed "$SAMPLE_SEED" --k-posts "$K" --max-new-tokens "$MAX_LEN" \
    ${HELDOUT_LIMIT:+--limit "$HELDOUT_LIMIT"} 2>>"$OUT/sample.log"
}
mkdir -p "$OUT/bon"
sample initial "$POLICY"
for name in "${NAMES[@]}"; do sample "$name" "$OUT/policies/$name/checkpoint"; done

# 4. One rubric judge for all policies (never a policy's own reward model).
JUDGE_ARGS=()
[ -n "${JUDGE:-}" ] && JUDGE_ARGS=(--judge "$JUDGE")
for name in initial "${NAMES[@]}"; do
  if ls "$OUT/bon/$name/judgements/"rubric.jsonl >/dev/null 2>&1; then continue; fi
  log "judge $name"
  "$PRBENCH" bon judge --samples "$OUT/bon/$name" "${JUDGE_ARGS[@]}" --name rubric --quiet 2>>"$OUT/judge.log"
done

# 5. Each policy's judged score and its change against the initial policy.
ARGS=()
for name in "${NAMES[@]}"; do ARGS+=(--policy "$name=$OUT/bon/$name"); done
"$PY" "$HERE/report.py" --judgements rubric --initial "$OUT/bon/initial" "${ARGS[@]}" \
  --out "$OUT/rl-report.md" --csv "$OUT/rl-scores.csv"
log "done: $OUT/rl-report.md, $OUT/rl-scores.csv"
