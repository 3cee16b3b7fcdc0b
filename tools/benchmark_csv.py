#!/usr/bin/env python3
"""Write a `model,score` CSV of benchmark accuracies for `prbench correlate --benchmark-set`.

Each argument is `NAME=RUN_DIR` (the run's micro strict accuracy from its summary.json) or
`NAME=NUMBER` (a figure taken from elsewhere, e.g. a documented run that is not kept; say where
in your write-up). NAME is the downstream's name for the model (a `bon score --name`), so that
correlate matches them. Standard library only.

    python3 tools/benchmark_csv.py bt-none=runs/psoups-bt-none-none smol=0.4508 > bench.csv
"""
import csv
import json
import os
import sys


def score(value):
    if os.path.isdir(value):
        with open(os.path.join(value, "summary.json")) as f:
            summary = json.load(f)
        rows = {r["label"]: r for r in summary["rows"]}
        if "micro" not in rows:
            sys.exit(f"{value}/summary.json: no micro row")
        return rows["micro"]["strict"]
    try:
        return float(value)
    except ValueError:
        sys.exit(f"`{value}` is neither a run folder nor a number")


def main(args):
    if not args:
        sys.exit(__doc__)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["model", "score"])
    for arg in args:
        name, sep, value = arg.partition("=")
        if not sep or not name:
            sys.exit(f"`{arg}`: expected NAME=RUN_DIR or NAME=NUMBER")
        out.writerow([name, repr(score(value))])


if __name__ == "__main__":
    main(sys.argv[1:])
