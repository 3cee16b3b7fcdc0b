#!/usr/bin/env bash
# Writes crates/prbench-report/tests/fixtures/sample-report/: the inputs of the HTML report's
# browser tests, made by the prbench binary on the bundled sample.
#
#   data/          data/sample with hostile text planted in one example (its profile posts,
#                  question, chosen answer and narrative hold <script>, </svg> and <img onerror>)
#   runs/          SmolLM2-135M judging under none, profile:3, planner and oracle (both orders,
#                  with the conditioning matrix), and two control baselines run as models
#                  (baseline:longer, baseline:shorter) under none
#   bon/           a Best-of-N folder: 1 example per subset, N = 4, judged by SmolLM2, scored by
#                  the two baselines and SmolLM2
#   correlation.json  `prbench correlate` of the three models' benchmark runs against best-of-4
#
# Run by hand from the repository root after a release build (it needs the SmolLM2 GGUF of
# scripts/fetch-models.sh); the tests only read what it wrote. About 6 minutes on 2 cores.
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PRBENCH_BIN:-$root/target/release/prbench}
models=${PRBENCH_MODELS:-$HOME/.cache/prbench/models}
smol=gguf:$models/SmolLM2-135M-Instruct.Q4_1.gguf
out=$root/crates/prbench-report/tests/fixtures/sample-report
[[ -x $bin ]] || { echo "make_report_fixture: build first (cargo build --release -p prbench)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/data" "$out/runs"
python3 - "$root/data/sample" "$out/data" <<'EOF'
import json, pathlib, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
hostile = ' <script>alert(1)</script> <img src=x onerror=alert(2)> </svg> & "quotes"'
for f in sorted(src.glob("*.jsonl")):
    rows = [json.loads(l) for l in f.read_text().splitlines() if l.strip()]
    if f.name.startswith("Art"):
        r = rows[0]
        r["question"] += hostile
        r["chosen"] += hostile
        for post in r["profile"]:
            post["text"] += hostile
        r["narrative"] += hostile
    (dst / f.name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
EOF

cd "$out"
"$bin" eval --data data --model "$smol" --condition none,profile:3,planner,oracle --both-orders --run-id smol --quiet
"$bin" eval --data data --model baseline:longer --run-id longer --quiet
"$bin" eval --data data --model baseline:shorter --run-id shorter --quiet
"$bin" bon sample --data data --out bon --n 4 --limit 1 --max-new-tokens 96
"$bin" bon judge --samples bon
"$bin" bon score --samples bon --model baseline:longer
"$bin" bon score --samples bon --model baseline:shorter
"$bin" bon score --samples bon --model "$smol"
"$bin" bon report --samples bon >/dev/null
judge_table=$(ls bon/bon-*.json | head -n 1)
"$bin" correlate --benchmark runs/smol-none runs/longer runs/shorter --downstream "$judge_table" --json > correlation.json
# The run cache and the BoN cache are not inputs of the report.
rm -f runs/cache.sqlite cache.sqlite
# Absolute paths of this machine in the manifests are left as written: the tests pass --data.
du -sh "$out"
