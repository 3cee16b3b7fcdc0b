#!/usr/bin/env python3
"""Full-width reference vectors for the BERT encoder parity test
(crates/prbench-rm/tests/embed.rs, `encoder_matches_transformers_on_every_dimension`).

Runs the local all-MiniLM-L6-v2 with transformers' AutoModel on token-id sequences of mixed
lengths (1 to 300 tokens, seeded random word pieces; some with [CLS]/[SEP] and a second segment
of token type 1), all in ONE right-padded batch with its attention mask, and writes
crates/prbench-rm/tests/fixtures/minilm_ids.json with, per sequence, the ids, the token
types and all 384 dimensions of the masked mean of the last hidden state, raw and
L2-normalised (torch.nn.functional.normalize).

Run by hand (needs torch and transformers; the model from scripts/fetch-models.sh):
    python3 tools/make_minilm_ids_fixture.py [MODEL_DIR]
MODEL_DIR defaults to $PRBENCH_MODELS/all-MiniLM-L6-v2 (PRBENCH_MODELS defaults to
~/.cache/prbench/models).
"""
import hashlib
import json
import os
import random
import sys

import torch
from transformers import AutoModel

LENGTHS = [1, 7, 33, 130, 4, 300, 64]
CLS, SEP = 101, 102


def sequences():
    rng = random.Random(20261202)
    out = []
    for i, n in enumerate(LENGTHS):
        if n >= 8 and i % 2 == 1:
            # [CLS] a [SEP] b [SEP], b of token type 1.
            a = (n - 3) // 2
            b = n - 3 - a
            ids = [CLS] + [rng.randrange(1000, 20000) for _ in range(a)] + [SEP]
            ids += [rng.randrange(1000, 20000) for _ in range(b)] + [SEP]
            types = [0] * (a + 2) + [1] * (b + 1)
        else:
            ids = [rng.randrange(1000, 20000) for _ in range(n)]
            types = [0] * n
        out.append((ids, types))
    return out


def main():
    default = os.path.join(
        os.environ.get("PRBENCH_MODELS") or os.path.expanduser("~/.cache/prbench/models"),
        "all-MiniLM-L6-v2",
    )
    model_dir = sys.argv[1] if len(sys.argv) > 1 else default
    model = AutoModel.from_pretrained(model_dir, dtype=torch.float32).eval()
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        weights_sha = hashlib.sha256(f.read()).hexdigest()
    seqs = sequences()
    t = max(len(ids) for ids, _ in seqs)
    ids = torch.zeros((len(seqs), t), dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for r, (i, ty) in enumerate(seqs):
        ids[r, : len(i)] = torch.tensor(i)
        types[r, : len(ty)] = torch.tensor(ty)
        mask[r, : len(i)] = 1
    with torch.inference_mode():
        hidden = model(input_ids=ids, token_type_ids=types, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * m).sum(1) / m.sum(1)
    unit = torch.nn.functional.normalize(mean, p=2, dim=1)
    fixture = {
        "generator": "tools/make_minilm_ids_fixture.py (transformers AutoModel, one right-padded batch, masked mean)",
        "transformers_version": __import__("transformers").__version__,
        "torch_version": torch.__version__,
        "model_safetensors_sha256": weights_sha,
        "sequences": [
            {
                "ids": i,
                "type_ids": ty,
                "mean": [float(f"{x:.9g}") for x in mean[r].tolist()],
                "normalized": [float(f"{x:.9g}") for x in unit[r].tolist()],
            }
            for r, (i, ty) in enumerate(seqs)
        ],
    }
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "..", "crates", "prbench-rm", "tests", "fixtures", "minilm_ids.json")
    with open(out, "w") as f:
        json.dump(fixture, f)
        f.write("\n")
    print(f"wrote {os.path.normpath(out)}: {len(seqs)} sequences of {LENGTHS} tokens")


if __name__ == "__main__":
    main()
