"""GRPO prompts from a prbench dataset, rendered by prbench itself, with a train/held-out split.

    prbench retrieve --data psoups:DIR --out runs/rl/ranked.jsonl          # rank each profile (BM25)
    python examples/trl-grpo/make_dataset.py --prbench target/release/prbench \
        --data runs/rl/ranked.jsonl --out runs/rl/dataset --heldout 0.2

The policy prompt is the Best-of-N policy prompt (prompts/bon-policy-*: the top-k posts, then
the question). It is not rendered here: this script runs `prbench bon sample` once, one sample
of one token per example, against a capture server (a tiny OpenAI-style endpoint started
here) and keeps the conversation prbench sent for each example. So the GRPO prompts are,
byte for byte, what `prbench bon sample` shows a policy, and what `sample.py` later shows the
trained policy on the held-out items.

Each sample's request seed is prbench's per-sample seed folded into 31 bits (prbench-remote's
`fold_seed`); `samples.jsonl` records the 64-bit seed and the example id, which ties each
captured conversation to its example. A seed seen twice is an error, never a guess.

The reward model's context is the `profile:K` text prbench renders for a reward model
(`profile_context` in crates/prbench-eval/src/condition.rs), built from the same top-k
posts through examples/verl/make_dataset.py's `profile_context`. It is sent to the reward
server only when the reward model's condition uses it (train.py --reward-condition).

Split: an item is held out when the first byte of sha256(id) is below `--heldout` x 256, so
the split depends on the id alone (not on file order or on the other items).

Writes into --out:
    train.jsonl, heldout.jsonl   {"id", "subset", "prompt": [messages], "question", "profile_context"}
    heldout-data.jsonl           the held-out items' dataset lines, as read (for `prbench bon sample --data`)
    manifest.json                source file and sha256, k, the split rule and counts, prbench's version

Only the Python standard library is used.
"""

import argparse
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


def _verl_profile_context():
    """`profile_context` of examples/verl/make_dataset.py (loaded by path: same module name)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("verl_make_dataset", os.path.join(HERE, "..", "verl", "make_dataset.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.profile_context


profile_context = _verl_profile_context()


def fold_seed(seed):
    """prbench-remote's `fold_seed`: XOR of the 64-bit seed's 31-bit pieces."""
    return (seed ^ (seed >> 31) ^ (seed >> 62)) & 0x7FFFFFFF


def held_out(item_id, fraction):
    """True when the item belongs to the held-out split (first byte of sha256(id) < fraction x 256)."""
    return hashlib.sha256(item_id.encode("utf-8")).digest()[0] < fraction * 256


class Capture(http.server.BaseHTTPRequestHandler):
    """Records each chat request's messages by seed and answers a one-token reply."""

    captured = {}
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_POST(self):
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        seed = body["seed"]
        with Capture.lock:
            if seed in Capture.captured and Capture.captured[seed] != body["messages"]:
                Capture.captured[seed] = None  # a collision: refused when read
            else:
                Capture.captured[seed] = body["messages"]
        reply = {
            "id": "capture",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "."}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1},
        }
        data = json.dumps(reply).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def capture_prompts(prbench, data, k, subset):
    """Runs `prbench bon sample` (n = 1, one token) against the capture server; returns
    {example id: messages} and prbench's version line."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/v1" % server.server_address[1]
    tmp = tempfile.mkdtemp(prefix="prbench-grpo-capture-")
    try:
        cmd = [prbench, "bon", "sample", "--data", data, "--out", os.path.join(tmp, "bon"),
               "--policy", "openai:prompt-capture@" + url, "--n", "1", "--max-new-tokens", "1",
               "--k-posts", str(k), "--seed", "0", "--no-cache", "--concurrency", "1", "--quiet"]
        if subset:
            cmd += ["--subset", subset]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit("`%s` failed (exit %d):\n%s" % (" ".join(cmd), run.returncode, run.stderr))
        prompts = {}
        with open(os.path.join(tmp, "bon", "samples.jsonl"), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                s = json.loads(line)
                if s.get("error"):
                    raise SystemExit("capture sample %d (%s) failed: %s" % (n, s["example_id"], s["error"]))
                messages = Capture.captured.get(fold_seed(s["seed"]))
                if messages is None:
                    raise SystemExit(
                        "example %s: no single captured conversation for its seed %d (a folded-seed "
                        "collision or a lost request); rerun with another dataset order" % (s["example_id"], s["seed"])
                    )
                prompts[s["example_id"]] = messages
        version = subprocess.run([prbench, "--version"], capture_output=True, text=True).stdout.strip()
        return prompts, version
    finally:
        server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prbench", default="prbench", help="the prbench binary (default: `prbench` on PATH)")
    ap.add_argument("--data", required=True, help="a dataset JSONL file, profiles ranked (written by `prbench retrieve`)")
    ap.add_argument("--subset", help="subsets to load (as `prbench bon sample --subset`)")
    ap.add_argument("--out", required=True, help="folder to write (created; must not hold a train.jsonl)")
    ap.add_argument("--k", type=int, default=10, help="profile posts in the policy prompt and the reward context (default 10)")
    ap.add_argument("--heldout", type=float, default=0.2, help="held-out fraction in (0, 1), by sha256 of the id (default 0.2)")
    args = ap.parse_args()
    if not 0 < args.heldout < 1:
        raise SystemExit("--heldout must be in (0, 1), got %s" % args.heldout)
    if not os.path.isfile(args.data):
        raise SystemExit("--data %s: not a file; write the ranked dataset with `prbench retrieve --out FILE.jsonl`" % args.data)
    if os.path.exists(os.path.join(args.out, "train.jsonl")):
        raise SystemExit("%s already holds a dataset; pick a new --out" % args.out)
    os.makedirs(args.out, exist_ok=True)

    prompts, version = capture_prompts(args.prbench, os.path.abspath(args.data), args.k, args.subset)
    rows = {"train": [], "heldout": []}
    heldout_lines = []
    with open(args.data, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            ex = json.loads(line)
            for field in ("id", "question", "profile"):
                if field not in ex:
                    raise SystemExit("%s line %d: no `%s` field" % (args.data, n, field))
            item_id = str(ex["id"])
            if item_id not in prompts:
                continue  # not in the selected subsets
            split = "heldout" if held_out(item_id, args.heldout) else "train"
            rows[split].append(
                {
                    "id": item_id,
                    "subset": ex.get("subset", ""),
                    "prompt": prompts.pop(item_id),
                    "question": ex["question"],
                    "profile_context": profile_context(ex["profile"][: args.k]),
                }
            )
            if split == "heldout":
                heldout_lines.append(line.rstrip("\n"))
    if prompts:
        raise SystemExit("prbench sampled ids not in %s: %s" % (args.data, sorted(prompts)[:5]))
    for split, items in rows.items():
        if not items:
            raise SystemExit("the %s split is empty; change --heldout" % split)
        with open(os.path.join(args.out, split + ".jsonl"), "w", encoding="utf-8") as f:
            for r in items:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "heldout-data.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(heldout_lines) + "\n")
    manifest = {
        "source": os.path.abspath(args.data),
        "source_sha256": sha256_file(args.data),
        "subset": args.subset,
        "k": args.k,
        "split": "held out when sha256(id)[0] < %s x 256" % args.heldout,
        "heldout_fraction": args.heldout,
        "train": len(rows["train"]),
        "heldout": len(rows["heldout"]),
        "prompts_rendered_by": version,
    }
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print("wrote %d train and %d held-out prompts to %s" % (len(rows["train"]), len(rows["heldout"]), args.out))


if __name__ == "__main__":
    main()
