"""GRPO (TRL) of a small policy against a running `prbench serve-reward`.

    prbench serve-reward --model baseline:longer --port 8000 &
    python examples/trl-grpo/train.py --policy MODEL_DIR --dataset runs/rl/dataset \
        --reward-url http://127.0.0.1:8000 --reward-condition none --steps 30 --out runs/rl/longer

The reward of each completion is the served reward model's score, fetched one batch per GRPO
step through `POST /score/batch` ({"items": [{"query", "profile"?, "response_text", "id"}]}).
A 503 (the server's queue is full) is retried after the server's `Retry-After` (capped at 60 s),
at most --reward-retries times; any other failure raises and the step fails. No reward is ever
invented (no 0.0 for a failed call).

`--reward-condition` says what the reward model was trained and benchmarked under: `none`
sends no `profile` at all (a head trained without the user must not be shown one);
`profile:K` sends the dataset's `profile_context` (the top-K posts as prbench renders them for a
reward model), and K must be the dataset's k.

Reproducibility: --seed seeds Python, NumPy and torch (transformers' set_seed) and GRPO's
sampling; torch runs on one thread (`torch.set_num_threads(1)`: two threads on two shared
cores ran ten times slower); the versions of trl, torch, transformers, accelerate and datasets
must be those of scripts/engines/requirements.lock (checked at start; --allow-unpinned
records the difference instead of refusing).

Truncation: a completion that reaches --max-completion-length without an end-of-sequence
token is counted (per call in rewards.jsonl, in total in summary.json; TRL also logs
`completions/clipped_ratio`); --mask-truncated leaves such completions out of the loss (TRL's
`mask_truncated_completions`).

Writes into --out:
    checkpoint/      the trained policy (safetensors, tokenizer, chat template)
    rewards.jsonl    one line per reward call: the items' ids, completions, scores, truncation
    log.jsonl        TRL's log per step (loss, reward, reward_std, clipped_ratio, ...)
    summary.json     settings, versions, server /health before and after, wall time, totals
"""

import argparse
import json
import math
import os
import re
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
LOCK = os.path.join(HERE, "..", "..", "scripts", "engines", "requirements.lock")
PINNED = ("trl", "torch", "transformers", "accelerate", "datasets")


class RewardServerError(RuntimeError):
    """The reward server gave no reward; the training step fails rather than use a default."""


def locked_versions():
    """{package: version} for the PINNED packages, from scripts/engines/requirements.lock."""
    pins = {}
    with open(LOCK, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", line)
            if m and m.group(1).lower() in PINNED:
                pins[m.group(1).lower()] = m.group(2)
    missing = [p for p in PINNED if p not in pins]
    if missing:
        raise SystemExit("%s pins no version of %s" % (LOCK, ", ".join(missing)))
    return pins


def installed_versions():
    import importlib.metadata as md

    return {p: md.version(p) for p in PINNED}


class RewardClient:
    """POST /score/batch with bounded 503 retries; records every call in rewards.jsonl."""

    def __init__(self, url, condition_k, retries, timeout, log_path, max_completion_length, eos_ids):
        self.url = url.rstrip("/")
        self.condition_k = condition_k  # None: send no profile
        self.retries = retries
        self.timeout = timeout
        self.log = open(log_path, "a", encoding="utf-8")
        self.max_len = max_completion_length
        self.eos_ids = set(eos_ids)
        self.calls = 0
        self.completions = 0
        self.truncated = 0
        self.retried_503 = 0
        self.__name__ = "prbench_serve_reward"

    def post(self, path, payload):
        body = json.dumps(payload).encode("utf-8")
        attempt = 0
        while True:
            request = urllib.request.Request(
                self.url + path, data=body, method="POST", headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                    return json.loads(reply.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                text = e.read().decode("utf-8", "replace")
                if e.code == 503 and attempt < self.retries:
                    attempt += 1
                    self.retried_503 += 1
                    time.sleep(retry_after(e.headers.get("Retry-After"), attempt))
                    continue
                raise RewardServerError(
                    "POST %s%s: HTTP %d after %d retries: %s" % (self.url, path, e.code, attempt, text[:500])
                ) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                reason = getattr(e, "reason", e)
                raise RewardServerError(
                    "POST %s%s: %s (is `prbench serve-reward` running there?)" % (self.url, path, reason)
                ) from None

    def __call__(self, prompts, completions, completion_ids, id, question, profile_context, **kwargs):
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        items = []
        for i, text in enumerate(texts):
            item = {"query": question[i], "response_text": text, "id": "%s#%d" % (id[i], self.completions + i)}
            if self.condition_k is not None:
                item["profile"] = profile_context[i]
            items.append(item)
        reply = self.post("/score/batch", {"items": items})
        scores = reply.get("scores") if isinstance(reply, dict) else None
        if not isinstance(scores, list) or len(scores) != len(items):
            raise RewardServerError("POST /score/batch: expected %d scores, got %r" % (len(items), reply))
        for j, v in enumerate(scores):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise RewardServerError("POST /score/batch item %d: the server sent %r, not a finite number" % (j, v))
        truncated = [len(ids) >= self.max_len and (not ids or ids[-1] not in self.eos_ids) for ids in completion_ids]
        self.calls += 1
        self.completions += len(items)
        self.truncated += sum(truncated)
        record = {
            "call": self.calls,
            "step": getattr(kwargs.get("trainer_state"), "global_step", None),
            "items": [
                {"id": id[i], "completion": texts[i], "completion_tokens": len(completion_ids[i]),
                 "truncated": truncated[i], "score": float(scores[i])}
                for i in range(len(items))
            ],
            "truncated": sum(truncated),
        }
        self.log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.log.flush()
        return [float(v) for v in scores]


def retry_after(header, attempt):
    """Seconds to wait: the server's Retry-After (capped at 60 s), else 0.5 s doubling per attempt."""
    if header is not None:
        try:
            return min(max(float(header), 0.0), 60.0)
        except ValueError:
            pass
    return min(0.5 * 2 ** (attempt - 1), 30.0)


def health(url):
    with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=30) as r:
        return json.loads(r.read())


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", required=True, help="the initial policy: a Hugging Face model folder")
    ap.add_argument("--dataset", required=True, help="folder written by make_dataset.py (its train.jsonl is used)")
    ap.add_argument("--reward-url", required=True, help="base URL of `prbench serve-reward`")
    ap.add_argument("--reward-condition", required=True, help="`none` (no profile sent) or `profile:K` (K = the dataset's k)")
    ap.add_argument("--out", required=True, help="output folder (must not hold a checkpoint)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--num-generations", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=4, help="completions per step (per_device_train_batch_size)")
    ap.add_argument("--max-completion-length", type=int, default=48)
    ap.add_argument("--learning-rate", type=float, default=1e-6)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--limit", type=int, help="use only the first LIMIT training prompts")
    ap.add_argument("--mask-truncated", action="store_true", help="TRL's mask_truncated_completions")
    ap.add_argument("--reward-retries", type=int, default=5, help="retries after a 503 (default 5)")
    ap.add_argument("--reward-timeout", type=float, default=300.0, help="seconds per reward request")
    ap.add_argument("--allow-unpinned", action="store_true", help="record, rather than refuse, versions other than the lock's")
    args = ap.parse_args()

    pins, have = locked_versions(), installed_versions()
    off = {p: (have[p], pins[p]) for p in PINNED if have[p] != pins[p]}
    if off and not args.allow_unpinned:
        raise SystemExit(
            "installed versions differ from scripts/engines/requirements.lock: %s; run `bash scripts/engines.sh install` "
            "and use its python (or pass --allow-unpinned)" % ", ".join("%s %s (lock %s)" % (p, h, l) for p, (h, l) in off.items())
        )
    if args.reward_condition == "none":
        condition_k = None
    else:
        m = re.fullmatch(r"profile:(\d+)", args.reward_condition)
        if not m:
            raise SystemExit("--reward-condition must be `none` or `profile:K`, got %r" % args.reward_condition)
        condition_k = int(m.group(1))
    with open(os.path.join(args.dataset, "manifest.json"), encoding="utf-8") as f:
        ds_manifest = json.load(f)
    if condition_k is not None and condition_k != ds_manifest["k"]:
        raise SystemExit(
            "--reward-condition profile:%d but the dataset's profile_context holds k = %d posts; rebuild it with make_dataset.py --k %d"
            % (condition_k, ds_manifest["k"], condition_k)
        )
    if os.path.exists(os.path.join(args.out, "checkpoint")):
        raise SystemExit("%s already holds a checkpoint; pick a new --out" % args.out)
    os.makedirs(args.out, exist_ok=True)
    before = health(args.reward_url)

    import torch

    torch.set_num_threads(1)
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import GRPOConfig, GRPOTrainer
    from transformers import TrainerCallback

    set_seed(args.seed)
    rows = read_jsonl(os.path.join(args.dataset, "train.jsonl"))
    if args.limit:
        rows = rows[: args.limit]
    dataset = Dataset.from_list(
        [{"prompt": r["prompt"], "id": r["id"], "question": r["question"], "profile_context": r["profile_context"]} for r in rows]
    )
    tokenizer = AutoTokenizer.from_pretrained(args.policy)
    model = AutoModelForCausalLM.from_pretrained(args.policy, dtype=torch.float32)
    eos = tokenizer.eos_token_id
    eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
    if tokenizer.pad_token_id is not None:
        eos_ids.append(tokenizer.pad_token_id)
    reward = RewardClient(
        args.reward_url, condition_k, args.reward_retries, args.reward_timeout,
        os.path.join(args.out, "rewards.jsonl"), args.max_completion_length, eos_ids,
    )

    log_path = os.path.join(args.out, "log.jsonl")

    class JsonLog(TrainerCallback):
        def on_log(self, _args, state, control, logs=None, **kw):
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"step": state.global_step, **(logs or {})}) + "\n")

    config = GRPOConfig(
        output_dir=os.path.join(args.out, "trainer"),
        use_cpu=True,
        bf16=False,
        seed=args.seed,
        data_seed=args.seed,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        learning_rate=args.learning_rate,
        temperature=args.temperature,
        mask_truncated_completions=args.mask_truncated,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model, reward_funcs=[reward], args=config, train_dataset=dataset,
        processing_class=tokenizer, callbacks=[JsonLog()],
    )
    start = time.time()
    trainer.train()
    wall = time.time() - start
    checkpoint = os.path.join(args.out, "checkpoint")
    trainer.save_model(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    after = health(args.reward_url)
    summary = {
        "policy": os.path.abspath(args.policy),
        "dataset": os.path.abspath(args.dataset),
        "train_prompts": len(rows),
        "reward_url": args.reward_url,
        "reward_model": before.get("model"),
        "reward_normalize": before.get("normalize"),
        "reward_condition": args.reward_condition,
        "steps": args.steps,
        "seed": args.seed,
        "num_generations": args.num_generations,
        "batch_size": args.batch_size,
        "max_completion_length": args.max_completion_length,
        "learning_rate": args.learning_rate,
        "temperature": args.temperature,
        "mask_truncated": args.mask_truncated,
        "torch_threads": torch.get_num_threads(),
        "versions": have,
        "versions_differ_from_lock": {p: {"installed": h, "lock": l} for p, (h, l) in off.items()},
        "reward_calls": reward.calls,
        "completions_scored": reward.completions,
        "completions_truncated": reward.truncated,
        "retried_503": reward.retried_503,
        "server_health_before": before,
        "server_health_after": after,
        "train_seconds": round(wall, 1),
        "seconds_per_step": round(wall / max(args.steps, 1), 2),
    }
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(
        "trained %d steps in %.0f s (%.1f s/step); %d completions scored by %s, %d truncated at %d tokens; checkpoint in %s"
        % (args.steps, wall, wall / max(args.steps, 1), reward.completions, before.get("model"), reward.truncated,
           args.max_completion_length, checkpoint),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
