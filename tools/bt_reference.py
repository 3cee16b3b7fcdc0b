#!/usr/bin/env python3
"""Reference implementation of prbench's Bradley-Terry head training in PyTorch, and the fixture
that the Rust implementation (crates/prbench-train/src/bt/train.rs, `train_head_from`) is
checked against (crates/prbench-train/tests/bt.rs, `matches_the_pytorch_reference`).

Written from the spec below (the user guide's docs/guide/src/personalized-rms.md, "Bradley-Terry
RM"; the doc comments of bt/head.rs and bt/train.rs), with torch's own layers, loss and
optimizer; nothing is translated from the Rust.

The spec:
- head: Linear(dim -> hidden) -> GELU (exact, erf) -> Linear(hidden -> 1, no bias); the linear
  head (hidden = 0) is Linear(dim -> 1, no bias). Tensors `hidden.weight` [hidden, dim],
  `hidden.bias` [hidden], `out.weight` [1, hidden] ([1, dim] for the linear head).
- initial weights: hidden layer uniform in +-1/sqrt(dim) (torch nn.Linear's default), output
  layer zero, so every initial score is 0 and the initial loss is ln 2. (prbench draws them from
  its seed with ChaCha8; here torch draws them and the Rust test starts from the fixture's.)
- loss of a batch: mean over its pairs of -log sigmoid(r_chosen - r_rejected).
- optimizer: torch.optim.AdamW, lr and weight decay per run, betas (0.9, 0.999), eps 1e-8
  (decoupled decay: theta <- theta (1 - lr wd) before the Adam step), one step per mini-batch.
- held-out split: the round(fraction n) pairs (at least one when fraction > 0 and n >= 2, never
  all) with the smallest sha256(seed as 8 little-endian bytes || id); computed here from the ids
  and recorded, and the Rust test checks prbench's split is the same.
- schedule: each epoch visits every training pair (the pairs not held out, in input order,
  indexed 0..n_train) once, in mini-batches of `batch_size` (full batch when 0 or >= n_train).
  The order is a numpy permutation per epoch (prbench shuffles with ChaCha8; the Rust test
  replays the fixture's batches).
- after each epoch (and once before training, epoch 0): mean loss and accuracy (share of pairs
  with r_chosen > r_rejected) on the training and the held-out pairs. Early stopping: the
  weights of the epoch >= 1 with the lowest held-out loss are kept (the first such epoch on a
  tie); training stops once `patience` epochs pass without a lower held-out loss (never when
  patience is 0 or nothing is held out; with nothing held out the last epoch is kept).

Every input (embeddings, initial weights) is a float32 value, so prbench's f32 and f64 runs
start from exactly the reference's numbers; the reference itself runs in float64.

The fixture, per run: its options, `init` (tensors as {shape, data}), `held_out_mask`,
`schedule` (per epoch, its batches of training-pair indices), `history` (per epoch from 0:
train and held-out loss and accuracy), `epochs_run`, `best_epoch`, `best` (the kept weights),
`test_rewards` (the kept head on data.test_inputs) and the kept head's rewards of the training
pairs; `step_losses` (each step's batch loss) and `last` (the last epoch's weights) are
informative (prbench does not report them).

Run: /root/.cache/prbench/torchref/bin/python tools/bt_reference.py \
         crates/prbench-train/tests/fixtures/bt_reference.json
(needs torch and numpy; the committed fixture was written with torch 2.15.0, numpy 2.4.6; its
"torch" and "numpy" keys record the versions).
"""

import hashlib
import json
import math
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

SEED = 20260513
DIM = 12
N_PAIRS = 40
N_TEST = 6
LABEL_NOISE = 0.25

# The runs: an MLP head on mini-batches with early stopping, and the linear head on full batches
# with prbench's default learning rate and decay and no early stopping.
RUNS = [
    {"name": "mlp", "seed": 42, "hidden": 8, "epochs": 60, "patience": 6, "lr": 1e-2,
     "weight_decay": 0.01, "batch_size": 8, "held_out": 0.2},
    {"name": "linear", "seed": 4, "hidden": 0, "epochs": 25, "patience": 0, "lr": 1e-3,
     "weight_decay": 0.01, "batch_size": 64, "held_out": 0.2},
]


def f32(a):
    """Rounds to float32 values, held in float64."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def synthetic(rng):
    """Unit-norm "embeddings"; the chosen one has the larger projection on a hidden direction,
    except for a LABEL_NOISE share of pairs whose label is flipped (so the held-out loss turns)."""
    v = rng.normal(size=DIM)
    v /= np.linalg.norm(v)

    def unit(n):
        x = rng.normal(size=(n, DIM))
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    a, b = unit(N_PAIRS), unit(N_PAIRS)
    prefer_a = (a @ v > b @ v) != (rng.random(N_PAIRS) < LABEL_NOISE)
    chosen = np.where(prefer_a[:, None], a, b)
    rejected = np.where(prefer_a[:, None], b, a)
    ids = [f"pair-{i:02d}" for i in range(N_PAIRS)]
    return ids, f32(chosen), f32(rejected), f32(unit(N_TEST))


def held_out_mask(ids, seed, fraction):
    n = len(ids)
    k = int(math.floor(fraction * n + 0.5))  # Rust's f64::round: halves away from zero
    if fraction > 0 and n >= 2:
        k = max(k, 1)
    k = min(k, max(n - 1, 0))
    keyed = sorted((hashlib.sha256(seed.to_bytes(8, "little") + i.encode()).digest(), j) for j, i in enumerate(ids))
    mask = [False] * n
    for _, j in keyed[:k]:
        mask[j] = True
    return mask


class Head(torch.nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.hidden = torch.nn.Linear(dim, hidden) if hidden > 0 else None
        self.out = torch.nn.Linear(hidden if hidden > 0 else dim, 1, bias=False)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.hidden(x)) if self.hidden is not None else x
        return self.out(h).squeeze(1)


def bt_loss(head, xc, xr):
    d = head(xc) - head(xr)
    return -torch.nn.functional.logsigmoid(d).mean(), d


def dump(t):
    return {"shape": list(t.shape), "data": t.detach().reshape(-1).tolist()}


def run(cfg, ids, chosen, rejected, test_inputs):
    gen = torch.Generator().manual_seed(SEED + cfg["seed"])
    hidden = cfg["hidden"]
    init = {}
    if hidden > 0:
        bound = 1.0 / math.sqrt(DIM)
        init["hidden.weight"] = torch.tensor(f32((torch.rand(hidden, DIM, generator=gen) * 2 - 1) * bound))
        init["hidden.bias"] = torch.tensor(f32((torch.rand(hidden, generator=gen) * 2 - 1) * bound))
    init["out.weight"] = torch.zeros(1, hidden if hidden > 0 else DIM)

    head = Head(DIM, hidden)
    with torch.no_grad():
        for name, p in head.named_parameters():
            p.copy_(init[name])
    opt = torch.optim.AdamW(head.parameters(), lr=cfg["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=cfg["weight_decay"], foreach=False)

    mask = held_out_mask(ids, cfg["seed"], cfg["held_out"])
    train = [i for i, m in enumerate(mask) if not m]
    held = [i for i, m in enumerate(mask) if m]
    X = {k: torch.tensor(v) for k, v in (("c", chosen), ("r", rejected))}
    xc, xr = X["c"][train], X["r"][train]
    hc, hr = X["c"][held], X["r"][held]
    n_train = len(train)
    batch = n_train if cfg["batch_size"] == 0 or cfg["batch_size"] >= n_train else cfg["batch_size"]
    order_rng = np.random.default_rng(SEED + 100 + cfg["seed"])
    schedule = []
    for _ in range(cfg["epochs"]):
        perm = order_rng.permutation(n_train).tolist() if batch < n_train else list(range(n_train))
        schedule.append([perm[s:s + batch] for s in range(0, n_train, batch)])

    def stats(epoch):
        with torch.no_grad():
            tl, td = bt_loss(head, xc, xr)
            s = {"epoch": epoch, "train_loss": tl.item(), "train_accuracy": (td > 0).double().mean().item(),
                 "held_out_loss": None, "held_out_accuracy": None}
            if held:
                hl, hd = bt_loss(head, hc, hr)
                s["held_out_loss"], s["held_out_accuracy"] = hl.item(), (hd > 0).double().mean().item()
        return s

    history = [stats(0)]
    step_losses = []
    best = None  # (epoch, key, weights)
    for epoch in range(1, cfg["epochs"] + 1):
        for b in schedule[epoch - 1]:
            opt.zero_grad(set_to_none=True)
            loss, _ = bt_loss(head, xc[b], xr[b])
            loss.backward()
            opt.step()
            step_losses.append(loss.item())
        s = stats(epoch)
        history.append(s)
        key = s["held_out_loss"] if s["held_out_loss"] is not None else -math.inf
        if best is None or key < best[1] or s["held_out_loss"] is None:
            best = (epoch, key, {n: p.detach().clone() for n, p in head.named_parameters()})
        if held and cfg["patience"] > 0 and epoch - best[0] >= cfg["patience"]:
            break

    best_epoch, _, best_weights = best
    last = {n: dump(p) for n, p in head.named_parameters()}
    with torch.no_grad():
        for name, p in head.named_parameters():
            p.copy_(best_weights[name])
        test_rewards = head(torch.tensor(test_inputs)).tolist()
        train_chosen = head(xc).tolist()
        train_rejected = head(xr).tolist()
    return {**cfg, "init": {n: dump(t) for n, t in init.items()}, "held_out_mask": mask,
            "schedule": schedule, "history": history, "step_losses": step_losses,
            "epochs_run": len(history) - 1, "best_epoch": best_epoch,
            "best": {n: dump(t) for n, t in best_weights.items()}, "last": last,
            "test_rewards": test_rewards, "train_chosen_rewards": train_chosen,
            "train_rejected_rewards": train_rejected}


def main():
    out_path = sys.argv[1]
    rng = np.random.default_rng(SEED)
    ids, chosen, rejected, test_inputs = synthetic(rng)
    fixture = {
        "made_by": "tools/bt_reference.py",
        "torch": torch.__version__,
        "numpy": np.__version__,
        "dtype": "float64",
        "dim": DIM,
        "data": {"ids": ids, "chosen": chosen.tolist(), "rejected": rejected.tolist(),
                 "test_inputs": test_inputs.tolist()},
        "runs": [run(cfg, ids, chosen, rejected, test_inputs) for cfg in RUNS],
    }
    with open(out_path, "w") as f:
        json.dump(fixture, f)
        f.write("\n")
    for r in fixture["runs"]:
        h = r["history"]
        print(f"{r['name']}: {r['epochs_run']} epochs, best {r['best_epoch']}; train loss {h[0]['train_loss']:.4f} -> "
              f"{h[-1]['train_loss']:.4f}, held-out {h[0]['held_out_loss']:.4f} -> best "
              f"{h[r['best_epoch']]['held_out_loss']:.4f} -> last {h[-1]['held_out_loss']:.4f}")


if __name__ == "__main__":
    main()
