"""Each policy's judged score and its change against the initial policy, from judged BoN folders.

    python examples/trl-grpo/report.py --judgements NAME --initial runs/rl/bon/initial \
        --policy longer=runs/rl/bon/longer --policy control=runs/rl/bon/control ... \
        --out runs/rl/rl-report.md --csv runs/rl/rl-scores.csv

A sample's score is the mean of the rubric judge's 0/1/2 over its example's aspects
(`judgements/NAME.jsonl`, written by `prbench bon judge`), divided by 2 (0–1, as the BoN
table's JSON); an example's score is the mean over its samples. The change of a policy is
the mean over examples of (policy − initial), paired by example, with its standard error
(sample standard deviation / sqrt(examples)) and how many examples went up / down. Every
folder must hold the same examples and sample indices as the initial one, judged by the same
judge; a sample without a score (unparsed, failed) is an error here, never a 0.

--csv writes `model,score` (the mean judged score of each trained policy, named as given) for
`prbench correlate --downstream`; the `control` policy (the 2-step noise run, not a reward
model) is in the report but not in the CSV, since correlate ranks reward models.
"""

import argparse
import json
import math
import os


def scores(folder, judge):
    path = os.path.join(folder, "judgements", judge + ".jsonl")
    if not os.path.isfile(path):
        raise SystemExit("%s: no judgements; run `prbench bon judge --samples %s --name %s`" % (path, folder, judge))
    per = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            j = json.loads(line)
            if not j.get("scores"):
                raise SystemExit("%s line %d (%s #%d): no rubric score (%s)" % (
                    path, n, j["example_id"], j["sample_index"], j.get("unparsed") or j.get("error")))
            per.setdefault(j["example_id"], {})[j["sample_index"]] = sum(j["scores"]) / len(j["scores"]) / 2
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--judgements", required=True, help="the judgements file name (judgements/NAME.jsonl)")
    ap.add_argument("--initial", required=True, help="the initial policy's BoN folder")
    ap.add_argument("--policy", action="append", required=True, help="NAME=FOLDER of a trained policy (repeat)")
    ap.add_argument("--out", help="write the table as markdown here")
    ap.add_argument("--csv", help="write model,score for prbench correlate here")
    args = ap.parse_args()

    base = scores(args.initial, args.judgements)
    keys = {(e, i) for e, s in base.items() for i in s}
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    base_ex = {e: mean(list(s.values())) for e, s in base.items()}
    lines = [
        "| policy | judged score (0–1) | change vs initial | s.e. | examples up / down / same |",
        "|---|---:|---:|---:|---:|",
        "| initial | %.4f | | | |" % mean(list(base_ex.values())),
    ]
    rows = []
    for spec in args.policy:
        name, _, folder = spec.partition("=")
        if not folder:
            raise SystemExit("--policy %r: expected NAME=FOLDER" % spec)
        got = scores(folder, args.judgements)
        if {(e, i) for e, s in got.items() for i in s} != keys:
            raise SystemExit("%s holds other examples or samples than %s; sample both with the same --data, --n and --seed"
                             % (folder, args.initial))
        ex = {e: mean(list(s.values())) for e, s in got.items()}
        diffs = [ex[e] - base_ex[e] for e in sorted(base_ex)]
        d = mean(diffs)
        se = math.sqrt(sum((x - d) ** 2 for x in diffs) / (len(diffs) - 1) / len(diffs)) if len(diffs) > 1 else float("nan")
        up = sum(x > 0 for x in diffs)
        down = sum(x < 0 for x in diffs)
        total = mean(list(ex.values()))
        rows.append((name, total))
        lines.append("| %s | %.4f | %+.4f | %.4f | %d / %d / %d |" % (name, total, d, se, up, down, len(diffs) - up - down))
    n_samples = len(keys)
    text = "\n".join(lines) + "\n\n%d examples, %d samples per policy, judge `%s`.\n" % (len(base_ex), n_samples, args.judgements)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    if args.csv:
        with open(args.csv, "w", encoding="utf-8") as f:
            f.write("model,score\n")
            for name, total in rows:
                if name == "control":
                    continue
                f.write("%s,%.6f\n" % (name, total))


if __name__ == "__main__":
    main()
