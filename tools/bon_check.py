#!/usr/bin/env python3
"""Independent cross-check of a `prbench bon` folder's best-of-N column (k = N).

For each reward model's scores file it recomputes, on the examples every model scored in
full, the rubric score of the sample the model ranks first (ties averaged), and a percentile
bootstrap CI (over examples, seeded) of its gain over a random pick. Standard library only.

    python3 tools/bon_check.py runs/bon-psoups [JUDGE_NAME]
"""
import glob
import json
import os
import random
import sys


def main() -> None:
    folder = sys.argv[1]
    judges = sorted(glob.glob(os.path.join(folder, "judgements", "*.jsonl")))
    if len(sys.argv) > 2:
        judges = [os.path.join(folder, "judgements", sys.argv[2] + ".jsonl")]
    if len(judges) != 1:
        sys.exit(f"pass the judge name; found {judges}")
    judge = {}
    for line in open(judges[0]):
        j = json.loads(line)
        if j["scores"] is not None:
            judge[(j["example_id"], j["sample_index"])] = sum(j["scores"]) / len(j["scores"])
    n = json.load(open(os.path.join(folder, "manifest.json")))["settings"]["n"]
    examples = sorted({e for e, _ in judge if all((e, i) in judge for i in range(n))})
    models = {}
    for path in sorted(glob.glob(os.path.join(folder, "scores", "*.jsonl"))):
        name = os.path.basename(path)[: -len(".jsonl")]
        models[name] = {(r["example_id"], r["sample_index"]): r["score"] for r in map(json.loads, open(path))}
    common = [e for e in examples if all(m.get((e, i)) is not None for m in models.values() for i in range(n))]
    random_pick = {e: sum(judge[(e, i)] for i in range(n)) / n for e in common}
    print(f"{len(common)} examples every model scored; judge {os.path.basename(judges[0])}; N = {n}")
    print(f"{'model':45s} best-of-{n}  gain over random [95% bootstrap CI]")
    for name, scores in models.items():
        gains, best = [], []
        for e in common:
            s = [scores[(e, i)] for i in range(n)]
            top = [i for i in range(n) if s[i] == max(s)]
            b = sum(judge[(e, i)] for i in top) / len(top)
            best.append(b)
            gains.append(b - random_pick[e])
        rng = random.Random(1)
        boots = sorted(sum(gains[rng.randrange(len(gains))] for _ in gains) / len(gains) for _ in range(4000))
        print(f"{name:45s} {sum(best) / len(best):.3f}      {sum(gains) / len(gains):+.3f} [{boots[100]:+.3f}, {boots[3899]:+.3f}]")


if __name__ == "__main__":
    main()
