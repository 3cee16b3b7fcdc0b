#!/usr/bin/env python3
"""Reference side of `prbench bench rm`: the same forward passes in PyTorch/transformers on CPU.

Not used at run time; `prbench bench rm` calls it so both engines are timed in one run on the
same token ids. Needs `pip install torch transformers`.

  bench_rm.py make-decoder OUT_DIR
      Writes a random Qwen2ForSequenceClassification (6 layers, hidden 384, 6 heads, 2 KV heads,
      intermediate 1536, vocab 32000, f32, seed 0) in the Hugging Face layout (config.json +
      model.safetensors). Weights are random: the bench measures speed, not quality.

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


def make_decoder(out_dir):
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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-decoder")
    m.add_argument("out_dir")
    r = sub.add_parser("run")
    r.add_argument("--kind", choices=["decoder", "bert"], required=True)
    r.add_argument("--model-dir", required=True)
    r.add_argument("--inputs", required=True)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    if args.cmd == "make-decoder":
        make_decoder(args.out_dir)
    else:
        run(args)


if __name__ == "__main__":
    sys.exit(main())
