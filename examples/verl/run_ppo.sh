#!/usr/bin/env bash
# PPO on Personalized RewardBench questions with a prbench reward server as the reward
# (PROTOCOL.md §7), with the paper's hyperparameters: batch 128, actor lr 5e-7, critic lr
# 5e-6, rollout n = 1, temperature 1.0, at most 512 response tokens, policy
# Qwen2.5-0.5B-Instruct. Needs verl 0.9 (its config keys: the reward settings live under
# `reward.*`) and a GPU; extra arguments are passed on to verl as overrides (e.g.
# trainer.total_epochs=3).
#
#   target/release/prbench serve-reward --model hf:ORG/RM --port 8000 &
#   python3 examples/verl/make_dataset.py --data train.jsonl --out "$DATA/train.parquet"
#   python3 examples/verl/make_dataset.py --data val.jsonl   --out "$DATA/val.parquet"
#   DATA=$DATA bash examples/verl/run_ppo.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
DATA=${DATA:-$HOME/data/prbench}
POLICY=${POLICY:-Qwen/Qwen2.5-0.5B-Instruct}
export PRBENCH_REWARD_URL=${PRBENCH_REWARD_URL:-http://127.0.0.1:8000}

# Fail before loading anything if the reward server is not up.
if ! python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/health', timeout=10)" "$PRBENCH_REWARD_URL"; then
    echo "no reward server at $PRBENCH_REWARD_URL: start \`prbench serve-reward --model SPEC\` first" >&2
    exit 1
fi

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=gae \
    data.train_files="$DATA/train.parquet" \
    data.val_files="$DATA/val.parquet" \
    data.train_batch_size=128 \
    data.max_prompt_length="${MAX_PROMPT_LENGTH:-4096}" \
    data.max_response_length=512 \
    data.truncation=error \
    actor_rollout_ref.model.path="$POLICY" \
    actor_rollout_ref.actor.optim.lr=5e-7 \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=1 \
    actor_rollout_ref.rollout.temperature=1.0 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    critic.model.path="$POLICY" \
    critic.optim.lr=5e-6 \
    critic.ppo_micro_batch_size_per_gpu=4 \
    reward.reward_model.enable=False \
    reward.reward_manager.name=naive \
    reward.custom_reward_function.path="$here/reward_fn.py" \
    reward.custom_reward_function.name=compute_score \
    trainer.logger=console \
    trainer.project_name=prbench \
    trainer.experiment_name="${EXPERIMENT:-ppo-prbench}" \
    trainer.n_gpus_per_node="${GPUS:-1}" \
    trainer.nnodes=1 \
    trainer.val_before_train=False \
    trainer.total_epochs="${EPOCHS:-1}" \
    "$@"
