#!/usr/bin/env python3
"""Reference implementation of PAL-A and PAL-B on frozen embeddings, in PyTorch, and the fixture
that prbench's Rust implementation (crates/prbench-train/src/pal) is checked against.

PAL: Chen et al., "PAL: Sample-Efficient Personalized Reward Modeling for Pluralistic
Alignment", ICLR 2025. Written from the paper and a reading of the authors' code
(RamyaLab/pluralistic-alignment: src/pal_rm_a, src/pal_rm_b, src/projector.py,
src/loss_function.py, config/); nothing is copied. prbench's models see one pooled embedding per
text (frozen MiniLM), not per-token hidden states, so the authors' per-token loss averaging is a
mean over one position here.

The model (the same in Rust; names are the safetensors tensor names):
- projector `mlp2` (the authors' `mlp2-<act>-dropout0[-residual]`): Linear(d→d) → act →
  Linear(d→d) → act → Linear(d→d), plus the input when residual. Tensors `<p>.{0,1,2}.weight`
  `[d_out, d_in]` and `<p>.{0,1,2}.bias` `[d_out]`.
- user weights: `W` `[n_users, K]`, the mixture over prototypes is softmax(W[u]).
- PAL-A (`a-dim512-k2-distilbert-mlp2`: user learner f(Pw), distance score, hinge loss):
  prototypes `P` `[K, d]`; user ideal point a_u = f(softmax(W[u]) @ P); reward of an item
  r(x) = -||f(x) - a_u||_2; loss per pair max(0, 1 - (r(chosen) - r(rejected))). f is relu,
  residual, shared by items and users.
- PAL-B (`b-dim768-k2-distillbert65m-mlp2`: prompt-conditioned mixture, angle score, CE loss):
  K projectors g_k of the prompt embedding; a_u(p) = sum_k softmax(W[u])_k g_k(p); reward
  r(x) = min(exp(logit_scale), 100) * cos(f(x), a_u(p)); loss per pair
  -log softmax([r(chosen), r(rejected)])[0]. f and g_k are gelu (exact), not residual;
  logit_scale starts at ln(1/0.07).
- optimizer (config/optim_config/vanilla.yaml, the authors' Lightning module): torch Adam with
  parameter groups, weight decay as L2 (added to the gradient): projectors lr 1e-4, wd 0.01;
  P and W lr 5e-3, wd 0; logit_scale lr 0.1, wd 0; betas (0.9, 0.999), eps 1e-8. Each user's
  weights are their own parameter (the authors' ParameterDict): a user absent from a batch gets
  no gradient and so no Adam step (their moment estimates and step count wait).
- few-shot adaptation of an unseen user (main_pal_*_unseen.py): a fresh weight row, trained
  alone with AdamW (lr 5e-3, wd 0) on the user's pairs; everything else frozen.
- loss per batch: the mean over its pairs. No bound loss (the authors compute it but do not add
  it: "loss += bound_loss; reduce performance").

Run: python tools/pal_reference.py OUT.json   (needs torch and numpy; written with torch 2.x)
The committed fixture crates/prbench-train/tests/fixtures/pal_reference.json is its output.
"""

import json
import math
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)  # the reference runs in f64; Rust runs f32

SEED = 20260512
DIM = 8
K = 2
N_TRAIN_USERS = 6
PAIRS_PER_USER = 6
BATCH = 4
EPOCHS = 4
ADAPT_PAIRS = 4
ADAPT_EPOCHS = 6


def synthetic(rng):
    """Two opposite user groups: group 0 prefers items along +v, group 1 along -v."""
    v = rng.normal(size=DIM)
    v /= np.linalg.norm(v)
    prompts, items, pairs = [], [], []

    def add_pair(user, group):
        p = rng.normal(size=DIM)
        a, b = rng.normal(size=DIM), rng.normal(size=DIM)
        sa, sb = (a @ v, b @ v) if group == 0 else (-(a @ v), -(b @ v))
        chosen, rejected = (a, b) if sa > sb else (b, a)
        prompts.append(p.tolist())
        items.extend([chosen.tolist(), rejected.tolist()])
        pairs.append({"user": user, "prompt": len(prompts) - 1, "chosen": len(items) - 2, "rejected": len(items) - 1})

    for u in range(N_TRAIN_USERS):
        for _ in range(PAIRS_PER_USER):
            add_pair(u, u % 2)
    unseen = []
    for g in (0, 1):  # one unseen user per group: ADAPT_PAIRS history pairs, then 4 test pairs
        start = len(pairs)
        for _ in range(ADAPT_PAIRS + 4):
            add_pair(-1, g)
        unseen.append({"group": g, "history": list(range(start, start + ADAPT_PAIRS)),
                       "test": list(range(start + ADAPT_PAIRS, start + ADAPT_PAIRS + 4))})
    return prompts, items, pairs, unseen


def linear_init(gen, d_out, d_in):
    bound = 1.0 / math.sqrt(d_in)  # torch nn.Linear's default
    w = (torch.rand(d_out, d_in, generator=gen) * 2 - 1) * bound
    b = (torch.rand(d_out, generator=gen) * 2 - 1) * bound
    return w, b


def mlp2_init(gen, prefix, d):
    out = {}
    for i in range(3):
        w, b = linear_init(gen, d, d)
        out[f"{prefix}.{i}.weight"], out[f"{prefix}.{i}.bias"] = w, b
    return out


def mlp2(params, prefix, x, act, residual):
    h = x
    for i in range(3):
        h = h @ params[f"{prefix}.{i}.weight"].T + params[f"{prefix}.{i}.bias"]
        if i < 2:
            h = torch.relu(h) if act == "relu" else torch.nn.functional.gelu(h)
    return x + h if residual else h


def rewards(variant, params, w_rows, prompts, items):
    """r(items) for users with weight rows w_rows [n, K], prompts [n, d], items [n, d]."""
    mix = torch.softmax(w_rows, dim=-1)
    if variant == "a":
        ideal = mlp2(params, "f", mix @ params["P"], "relu", True)
        fx = mlp2(params, "f", items, "relu", True)
        return -torch.linalg.norm(fx - ideal, dim=-1)
    g = torch.stack([mlp2(params, f"g.{k}", prompts, "gelu", False) for k in range(K)], dim=1)  # [n, K, d]
    ideal = (mix.unsqueeze(-1) * g).sum(dim=1)
    fx = mlp2(params, "f", items, "gelu", False)
    cos = (fx * ideal).sum(-1) / (torch.linalg.norm(fx, dim=-1) * torch.linalg.norm(ideal, dim=-1))
    return torch.clamp(params["logit_scale"].exp(), max=100.0) * cos


def pair_loss(variant, rc, rr):
    if variant == "a":
        return torch.clamp(1.0 - (rc - rr), min=0.0)
    return torch.nn.functional.softplus(rr - rc)  # CE with the chosen as the target class


def run_variant(variant, prompts, items, pairs, unseen):
    gen = torch.Generator().manual_seed(SEED + (0 if variant == "a" else 1))
    P = torch.tensor(prompts)
    X = torch.tensor(items)
    init = mlp2_init(gen, "f", DIM)
    if variant == "a":
        p0 = torch.randn(K, DIM, generator=gen)
        init["P"] = p0 / torch.linalg.norm(p0, dim=1, keepdim=True)  # is_expectation_norm_init False
    else:
        for k in range(K):
            init.update(mlp2_init(gen, f"g.{k}", DIM))
        init["logit_scale"] = torch.tensor([math.log(1 / 0.07)])
    w_init = torch.randn(N_TRAIN_USERS, K, generator=gen)

    params = {n: torch.nn.Parameter(t.clone()) for n, t in init.items()}
    users = [torch.nn.Parameter(w_init[u].clone()) for u in range(N_TRAIN_USERS)]
    proj = [p for n, p in params.items() if n.startswith(("f.", "g."))]
    groups = [{"params": proj, "lr": 1e-4, "weight_decay": 0.01},
              {"params": users, "lr": 5e-3, "weight_decay": 0.0}]
    if variant == "a":
        groups.append({"params": [params["P"]], "lr": 5e-3, "weight_decay": 0.0})
    else:
        groups.append({"params": [params["logit_scale"]], "lr": 0.1, "weight_decay": 0.0})
    opt = torch.optim.Adam(groups, betas=(0.9, 0.999), eps=1e-8)

    train_ids = [i for i, p in enumerate(pairs) if p["user"] >= 0]
    order_rng = np.random.default_rng(SEED + 7)
    schedule, losses = [], []
    for _ in range(EPOCHS):
        perm = order_rng.permutation(train_ids).tolist()
        for s in range(0, len(perm), BATCH):
            batch = perm[s:s + BATCH]
            schedule.append(batch)
            opt.zero_grad(set_to_none=True)
            w = torch.stack([users[pairs[i]["user"]] for i in batch])
            pr = P[[pairs[i]["prompt"] for i in batch]]
            rc = rewards(variant, params, w, pr, X[[pairs[i]["chosen"] for i in batch]])
            rr = rewards(variant, params, w, pr, X[[pairs[i]["rejected"] for i in batch]])
            loss = pair_loss(variant, rc, rr).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())

    with torch.no_grad():
        w_all = torch.stack([u.detach() for u in users])
        ids = train_ids
        w = w_all[[pairs[i]["user"] for i in ids]]
        pr = P[[pairs[i]["prompt"] for i in ids]]
        final_rc = rewards(variant, params, w, pr, X[[pairs[i]["chosen"] for i in ids]])
        final_rr = rewards(variant, params, w, pr, X[[pairs[i]["rejected"] for i in ids]])

    adapt = []
    for uu in unseen:
        w_new = torch.nn.Parameter(torch.randn(K, generator=gen))
        w_start = w_new.detach().clone()
        aopt = torch.optim.AdamW([w_new], lr=5e-3, weight_decay=0.0)
        a_losses = []
        hist = uu["history"]
        for _ in range(ADAPT_EPOCHS):
            aopt.zero_grad(set_to_none=True)
            w = w_new.unsqueeze(0).expand(len(hist), K)
            pr = P[[pairs[i]["prompt"] for i in hist]]
            rc = rewards(variant, params, w, pr, X[[pairs[i]["chosen"] for i in hist]])
            rr = rewards(variant, params, w, pr, X[[pairs[i]["rejected"] for i in hist]])
            loss = pair_loss(variant, rc, rr).mean()
            loss.backward()
            aopt.step()
            a_losses.append(loss.item())
        with torch.no_grad():
            test = uu["test"]
            w = w_new.detach().unsqueeze(0).expand(len(test), K)
            pr = P[[pairs[i]["prompt"] for i in test]]
            t_rc = rewards(variant, params, w, pr, X[[pairs[i]["chosen"] for i in test]])
            t_rr = rewards(variant, params, w, pr, X[[pairs[i]["rejected"] for i in test]])
        adapt.append({"w_init": w_start.tolist(), "batches": [hist] * ADAPT_EPOCHS, "loss": a_losses,
                      "w_final": w_new.detach().tolist(), "test": test,
                      "test_chosen": t_rc.tolist(), "test_rejected": t_rr.tolist()})

    def dump(t):
        return {"shape": list(t.shape), "data": t.detach().reshape(-1).tolist()}

    final = {n: dump(p) for n, p in params.items()}
    final["W"] = dump(torch.stack([u.detach() for u in users]))
    init_out = {n: dump(t) for n, t in init.items()}
    init_out["W"] = dump(w_init)
    return {"variant": variant, "k": K, "dim": DIM, "init": init_out, "schedule": schedule, "loss": losses,
            "final": final, "eval_pairs": ids, "eval_chosen": final_rc.tolist(),
            "eval_rejected": final_rr.tolist(), "adapt": adapt}


def main():
    out_path = sys.argv[1]
    rng = np.random.default_rng(SEED)
    prompts, items, pairs, unseen = synthetic(rng)
    fixture = {
        "made_by": "tools/pal_reference.py",
        "torch": torch.__version__,
        "numpy": np.__version__,
        "dtype": "float64",
        "data": {"prompts": prompts, "items": items, "pairs": pairs,
                 "n_train_users": N_TRAIN_USERS, "unseen": unseen},
        "variants": [run_variant(v, prompts, items, pairs, unseen) for v in ("a", "b")],
    }
    with open(out_path, "w") as f:
        json.dump(fixture, f)
        f.write("\n")
    for v in fixture["variants"]:
        print(f"PAL-{v['variant'].upper()}: loss {v['loss'][0]:.4f} -> {v['loss'][-1]:.4f} over {len(v['loss'])} steps; "
              f"adapt {[round(a['loss'][0], 4) for a in v['adapt']]} -> {[round(a['loss'][-1], 4) for a in v['adapt']]}")


if __name__ == "__main__":
    main()
