#!/usr/bin/env python3
"""Reference embeddings for the MiniLM parity test (crates/prbench-rm/tests/embed.rs).

Loads the local all-MiniLM-L6-v2 directory with transformers' AutoModel + AutoTokenizer (no
sentence-transformers), computes mean pooling over the attention mask and L2 normalisation (what
sentence-transformers does for this model), and writes
crates/prbench-rm/tests/fixtures/minilm.json with, for three single texts, the first 8
dimensions of each embedding and the pairwise cosine similarities; and for one (context, text)
sentence pair cut to 32 tokens from the LEFT of the context (truncation="only_first",
truncation_side="left"), its token counts and first 8 dimensions.

Run by hand (needs torch and transformers; the model from scripts/fetch-models.sh):
    python3 tools/make_minilm_fixture.py [MODEL_DIR]
MODEL_DIR defaults to $PRBENCH_MODELS/all-MiniLM-L6-v2 (PRBENCH_MODELS defaults to
~/.cache/prbench/models).
"""
import hashlib
import json
import os
import sys

import torch
from transformers import AutoModel, AutoTokenizer

TEXTS = [
    "A cat sits on the warm windowsill.",
    "Quantum entanglement links the states of two particles, whatever the distance between them!",
    "My grandmother's recipe: 200 g flour, 2 eggs, a pinch of salt; bake 25 min at 180 °C.",
]
PAIR_CONTEXT = (
    "User context:\nThe user writes long posts about birdwatching, early mornings in the marsh, "
    "and keeping a notebook of every heron they have seen since 1998.\n\nQuestion:\nWhat should I pack?"
)
PAIR_TEXT = "Binoculars, a notebook and a thermos of coffee."
PAIR_MAX_LENGTH = 32


def pooled(model, enc):
    with torch.no_grad():
        out = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
    mean = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, p=2, dim=1)


def main():
    default = os.path.join(
        os.environ.get("PRBENCH_MODELS") or os.path.expanduser("~/.cache/prbench/models"),
        "all-MiniLM-L6-v2",
    )
    model_dir = sys.argv[1] if len(sys.argv) > 1 else default
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        weights_sha = hashlib.sha256(f.read()).hexdigest()

    # Single texts, batched with padding (each fits; nothing is cut).
    enc = tok(TEXTS, padding=True, truncation=False, return_tensors="pt")
    emb = pooled(model, enc)
    cos = emb @ emb.T

    # A sentence pair cut from the left of the first sequence.
    full = tok(PAIR_CONTEXT, PAIR_TEXT, truncation=False)
    tok.truncation_side = "left"
    cut = tok(PAIR_CONTEXT, PAIR_TEXT, truncation="only_first", max_length=PAIR_MAX_LENGTH, return_tensors="pt")
    pair_emb = pooled(model, cut)

    fixture = {
        "generator": "tools/make_minilm_fixture.py (transformers AutoModel, mean pooling, L2 norm)",
        "transformers_version": __import__("transformers").__version__,
        "torch_version": torch.__version__,
        "model_safetensors_sha256": weights_sha,
        "texts": TEXTS,
        "input_tokens": [int(n) for n in enc["attention_mask"].sum(1)],
        "first8": [[round(float(x), 7) for x in row[:8]] for row in emb],
        "cosine": [[round(float(x), 7) for x in row] for row in cos],
        "pair": {
            "context": PAIR_CONTEXT,
            "text": PAIR_TEXT,
            "max_length": PAIR_MAX_LENGTH,
            "untruncated_tokens": len(full["input_ids"]),
            "input_tokens": int(cut["attention_mask"].sum()),
            "truncated_tokens": len(full["input_ids"]) - int(cut["attention_mask"].sum()),
            "input_ids": [int(i) for i in cut["input_ids"][0]],
            "first8": [round(float(x), 7) for x in pair_emb[0][:8]],
        },
    }
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "..", "crates", "prbench-rm", "tests", "fixtures", "minilm.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(fixture, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {os.path.normpath(out)}")
    print("cosine:", fixture["cosine"])
    print("pair:", {k: fixture["pair"][k] for k in ("untruncated_tokens", "input_tokens", "truncated_tokens")})


if __name__ == "__main__":
    main()
