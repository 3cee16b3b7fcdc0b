#!/usr/bin/env python3
"""Reference side of `prbench bench rm`: the same forward passes in PyTorch/transformers on CPU.

Not used at run time; `prbench bench rm` calls it so both engines are timed in one run on the
same token ids. Needs `pip install torch transformers`.

  bench_rm.py make-decoder OUT_DIR [--tokenizer-dir DIR]
      Writes a random Qwen2ForSequenceClassification (6 layers, hidden 384, 6 heads, 2 KV heads,
      intermediate 1536, vocab 32000, f32, seed 0) in the Hugging Face layout (config.json +
      model.safetensors). Weights are random: the bench measures speed, not quality.
      With --tokenizer-dir (a folder with a tokenizer.json of at most 32000 ids, e.g.
      all-MiniLM-L6-v2's WordPiece), also writes a tokenizer and chat template, so prbench's
      reward-model path can render and tokenize real inputs for it: that tokenizer.json without
      its fixed truncation, padding and [CLS]/[SEP] post-processor (a decoder sees the rendered
      conversation as is), a ChatML chat_template.jinja, and a tokenizer_config.json whose
      model_max_length is the model's 2048 positions.

  bench_rm.py run-batches --model-dir DIR --inputs WORKLOADS.json --threads N --repeats R
      WORKLOADS.json: {"pad_id": P, "workloads": [{"name": ..., "batches": [[[ids...], ...], ...]}]}.
      Sequences of a batch may differ in length: each batch is right-padded with P and masked,
      as transformers' own batching does (Qwen2ForSequenceClassification pools each row's last
      non-pad token). Per workload: the first two rows of its first batch once to warm up (as
      prbench's side does), then R timed passes over
      every batch; prints one JSON line {"engine", "workloads": [{"name", "seconds", "tokens"
      (real tokens scored, padding not counted), "outputs" (score per sequence, in batch
      order)}]}.

  bench_rm.py run --kind decoder|bert --model-dir DIR --inputs IDS.json --threads N --repeats R
      IDS.json: {"batches": [[[ids...], ...], ...]} (each batch right-padded by the caller is NOT
      required: sequences in a batch have equal length). Runs every batch once to warm up, then R
      timed passes; prints one JSON line: {"engine", "seconds", "tokens", "tokens_per_s",
      "outputs": first value of each sequence's output (score, or embedding dim 0)}.
"""

import argparse
import json
import sys
import time


CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def write_tokenizer(tokenizer_dir, out_dir, vocab_size, max_positions):
    import os

    with open(os.path.join(tokenizer_dir, "tokenizer.json")) as f:
        tok = json.load(f)
    ids = [i for i in tok["model"].get("vocab", {}).values()] + [t["id"] for t in tok.get("added_tokens", [])]
    if not ids or max(ids) >= vocab_size:
        raise SystemExit(f"{tokenizer_dir}/tokenizer.json has ids up to {max(ids) if ids else None}, not below the decoder's vocab of {vocab_size}")
    tok["truncation"] = None
    tok["padding"] = None
    tok["post_processor"] = None
    with open(os.path.join(out_dir, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "chat_template.jinja"), "w") as f:
        f.write(CHATML)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"model_max_length": max_positions, "tokenizer_class": "PreTrainedTokenizerFast"}, f)


def make_decoder(out_dir, tokenizer_dir=None):
    import torch
    from transformers import Qwen2Config, Qwen2ForSequenceClassification

    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=32000,
        hidden_size=384,
        intermediate_size=1536,
        num_hidden_layers=6,
        num_attention_heads=6,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        num_labels=1,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )
    model = Qwen2ForSequenceClassification(cfg).eval()
    model.save_pretrained(out_dir, safe_serialization=True)
    if tokenizer_dir:
        write_tokenizer(tokenizer_dir, out_dir, cfg.vocab_size, cfg.max_position_embeddings)
    print(json.dumps({"made": out_dir, "params": sum(p.numel() for p in model.parameters())}))


def run(args):
    import torch

    torch.set_num_threads(args.threads)
    with open(args.inputs) as f:
        batches = json.load(f)["batches"]
    if args.kind == "decoder":
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_pretrained(args.model_dir, dtype=torch.float32).eval()
    else:
        from transformers import AutoModel

        model = AutoModel.from_pretrained(args.model_dir, dtype=torch.float32).eval()

    tensors = [torch.tensor(b, dtype=torch.long) for b in batches]
    masks = [torch.ones_like(t) for t in tensors]

    def forward(ids, mask):
        out = model(input_ids=ids, attention_mask=mask)
        if args.kind == "decoder":
            return out.logits[:, 0]
        hidden = out.last_hidden_state
        m = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1)[:, 0]

    outputs = []
    with torch.inference_mode():
        for ids, mask in zip(tensors, masks):
            outputs.extend(forward(ids, mask).tolist())
        start = time.perf_counter()
        for _ in range(args.repeats):
            for ids, mask in zip(tensors, masks):
                forward(ids, mask)
        seconds = time.perf_counter() - start
    tokens = args.repeats * sum(t.numel() for t in tensors)
    print(
        json.dumps(
            {
                "engine": f"transformers {__import__('transformers').__version__} / torch {torch.__version__} f32 CPU, {args.threads} threads",
                "seconds": seconds,
                "tokens": tokens,
                "tokens_per_s": tokens / seconds,
                "outputs": outputs,
            }
        )
    )


def run_batches(args):
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.set_num_threads(args.threads)
    with open(args.inputs) as f:
        spec = json.load(f)
    pad = spec["pad_id"]
    model = AutoModelForSequenceClassification.from_pretrained(args.model_dir, dtype=torch.float32).eval()

    def padded(batch):
        t = max(len(s) for s in batch)
        ids = torch.tensor([s + [pad] * (t - len(s)) for s in batch], dtype=torch.long)
        mask = torch.tensor([[1] * len(s) + [0] * (t - len(s)) for s in batch], dtype=torch.long)
        return ids, mask

    results = []
    with torch.inference_mode():
        for w in spec["workloads"]:
            tensors = [padded(b) for b in w["batches"]]
            model(input_ids=tensors[0][0][:2], attention_mask=tensors[0][1][:2])
            outputs = []
            start = time.perf_counter()
            for r in range(args.repeats):
                for ids, mask in tensors:
                    out = model(input_ids=ids, attention_mask=mask).logits[:, 0]
                    if r == 0:
                        outputs.extend(out.tolist())
            seconds = time.perf_counter() - start
            tokens = args.repeats * sum(len(s) for b in w["batches"] for s in b)
            results.append({"name": w["name"], "seconds": seconds, "tokens": tokens, "outputs": outputs})
    print(
        json.dumps(
            {
                "engine": f"transformers {__import__('transformers').__version__} / torch {torch.__version__} f32 CPU, {args.threads} threads",
                "workloads": results,
            }
        )
    )


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-decoder")
    m.add_argument("out_dir")
    m.add_argument("--tokenizer-dir")
    rb = sub.add_parser("run-batches")
    rb.add_argument("--model-dir", required=True)
    rb.add_argument("--inputs", required=True)
    rb.add_argument("--threads", type=int, default=2)
    rb.add_argument("--repeats", type=int, default=1)
    r = sub.add_parser("run")
    r.add_argument("--kind", choices=["decoder", "bert"], required=True)
    r.add_argument("--model-dir", required=True)
    r.add_argument("--inputs", required=True)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    if args.cmd == "make-decoder":
        make_decoder(args.out_dir, args.tokenizer_dir)
    elif args.cmd == "run-batches":
        run_batches(args)
    else:
        run(args)


if __name__ == "__main__":
    sys.exit(main())
