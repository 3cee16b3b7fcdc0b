#!/usr/bin/env python3
"""A scripted (not human) rating session over the 12 bundled examples, for
docs/results/annotate-demo.md.

    python3 tools/annotate_demo.py [--prbench target/release/prbench] [--out DIR] [--doc FILE]

It starts `prbench annotate serve --data data/sample --annotators ann,bob,cat --per-item 2`, reads
the printed links, and rates every assigned item through the page's own JSON API, as three
scripted raters:

- rubric fit: the answer sharing more words (lower-cased, 4+ letters) with the item's rubric
  aspects gets 5, the other 2 (equal overlap: both 3);
- factuality, relevance, helpfulness: 4 or 5, drawn from random.Random(f"{rater}/{item}/{answer}");
- "fits better": the answer with the higher rubric fit (a tie: answer 1);
- `cat` is careless: on a third of its items (random.Random(f"cat/{item}")) it picks the other
  answer and swaps the two rubric-fit scores.

The raters never see the labels (the API does not send them). Then it stops the server, runs
`annotate export` and `annotate report`, and writes the doc: a header saying what this is, then
the report. Python's standard library only.
"""
import argparse
import json
import random
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DIMS = ["factuality", "relevance", "helpfulness", "rubric_fit"]


def call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def words(text):
    return {w for w in re.findall(r"[a-z]{4,}", text.lower())}


def rate(rater, item):
    aspects = words(" ".join(a["aspect"] + " " + a["reason"] for a in item["rubric_aspects"]))
    overlap = [len(words(a) & aspects) for a in item["answers"]]
    fit = [5, 2] if overlap[0] > overlap[1] else [2, 5] if overlap[1] > overlap[0] else [3, 3]
    better = 1 if fit[0] >= fit[1] else 2
    if rater == "cat" and random.Random(f"cat/{item['item_id']}").random() < 1 / 3:
        fit = fit[::-1]
        better = 3 - better
    answers = []
    for i in range(2):
        rng = random.Random(f"{rater}/{item['item_id']}/{i + 1}")
        a = {d: rng.choice([4, 5]) for d in DIMS[:3]}
        a["rubric_fit"] = fit[i]
        a["comment"] = ""
        answers.append(a)
    return {"answers": answers, "better": better}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prbench", default=str(REPO / "target/release/prbench"))
    ap.add_argument("--out", default="/tmp/prbench-annotate-demo")
    ap.add_argument("--doc", default=str(REPO / "docs/results/annotate-demo.md"))
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        sys.exit(f"{out} exists: pass a new --out (the demo starts from an empty folder)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve = [args.prbench, "annotate", "serve", "--data", str(REPO / "data/sample"), "--out", str(out),
             "--annotators", "ann,bob,cat", "--per-item", "2", "--port", str(port)]
    server = subprocess.Popen(serve, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        links = dict(server.stdout.readline().split() for _ in range(3))
        counts = {}
        for rater, url in links.items():
            progress = call("GET", url + "/api/progress")
            for pos in range(1, progress["total"] + 1):
                item = call("GET", f"{url}/api/items/{pos}")
                call("PUT", f"{url}/api/items/{pos}", rate(rater, item))
            counts[rater] = progress["total"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    subprocess.run([args.prbench, "annotate", "export", "--out", str(out)], check=True)
    subprocess.run([args.prbench, "annotate", "report", "--out", str(out)], check=True)
    report = (out / "annotate-report.md").read_text()
    agreement = subprocess.run([args.prbench, "annotate", "agreement", "--ratings", str(out / "ratings.csv")],
                               check=True, capture_output=True, text=True).stdout
    head = f"""# `prbench annotate`: a scripted demo over the 12 bundled examples

**The ratings below are scripted, not human.** Three scripted raters (`ann`, `bob`, `cat`) rated
the 12 examples of `data/sample` through the rating server's own API, each item by two of them
({", ".join(f"{k}: {v} items" for k, v in counts.items())}). The rule, in `tools/annotate_demo.py`:
rubric fit 5 for the answer sharing more words with the item's rubric aspects and 2 for the other,
4 or 5 at random on the other three dimensions, "fits better" = the higher rubric fit; `cat`
reverses its choice on about a third of its items. The raters never saw the labels. The numbers
show what the report computes, not how good the sample's pairs are.

Made with:

```sh
python3 tools/annotate_demo.py --out /tmp/prbench-annotate-demo
# which runs: prbench annotate serve --data data/sample --annotators ann,bob,cat --per-item 2 …
#             prbench annotate export --out DIR;  prbench annotate report --out DIR
```

`prbench annotate agreement --ratings DIR/ratings.csv` on the same export:

{agreement}
The report, as `prbench annotate report` wrote it (`annotate-report.md`, headings one level down):

"""
    lines, fence = [], None
    for line in report.splitlines():
        if fence is None and line.startswith("```"):
            fence = line[: len(line) - len(line.lstrip("`"))]
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None and line.startswith("#"):
            line = "#" + line
        lines.append(line)
    body = "\n".join(lines)
    Path(args.doc).write_text(head + body + "\n")
    print(f"wrote {args.doc}")


if __name__ == "__main__":
    main()
