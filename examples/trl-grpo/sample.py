"""Held-out answers of a policy checkpoint as a Best-of-N folder, for `prbench bon judge`.

    python examples/trl-grpo/sample.py --prbench target/release/prbench --policy runs/rl/longer/checkpoint \
        --name grpo-longer --data runs/rl/dataset/heldout-data.jsonl --out runs/rl/bon-longer --n 4 --seed 7

The folder is written by `prbench bon sample` itself (manifest.json, samples.jsonl), so
`prbench bon judge` and `bon report` read it like any other: this script serves the checkpoint
behind a small OpenAI-style `/v1/chat/completions` endpoint on loopback and runs
`prbench bon sample --policy openai:NAME@URL` against it. prbench renders the policy prompt
(the same prompt make_dataset.py captured for training), picks the examples and seeds each
sample with sha256(seed, example id, sample index) folded into 31 bits; the server seeds
torch with that number before each generation. Every policy sampled with the same --data,
--n, --seed, --k-posts and --max-new-tokens answers the same prompts under the same seeds.

Generation: the checkpoint's chat template (add_generation_prompt), multinomial sampling at
the request's temperature and top-p (prbench's defaults 1.0 and 0.9), at most
`max_tokens` new tokens; `finish_reason` is `length` when the budget was used up. One torch
thread, requests served one at a time (--concurrency 1), float32 on CPU.
"""

import argparse
import http.server
import json
import os
import subprocess
import sys
import threading
import time


def make_handler(model, tokenizer, name, lock, counter):
    import torch

    class Policy(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, code, obj):
            data = json.dumps(obj).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                self.reply(200, {"object": "list", "data": [{"id": name, "object": "model"}]})
            else:
                self.reply(404, {"error": {"message": "not found: %s" % self.path}})

        def do_POST(self):
            if not self.path.endswith("/chat/completions"):
                self.reply(404, {"error": {"message": "not found: %s" % self.path}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                messages = body["messages"]
                max_tokens = int(body["max_tokens"])
                temperature = float(body.get("temperature", 1.0))
                top_p = float(body.get("top_p", 1.0))
                seed = int(body["seed"])
            except (KeyError, ValueError, TypeError) as e:
                self.reply(400, {"error": {"message": "bad request: %r" % (e,)}})
                return
            with lock:
                ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
                torch.manual_seed(seed)
                kw = {"max_new_tokens": max_tokens, "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id}
                if temperature > 0:
                    kw.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
                else:
                    kw.update(do_sample=False)
                with torch.inference_mode():
                    out = model.generate(**ids, **kw)
                new = out[0, ids["input_ids"].shape[1]:].tolist()
                eos = tokenizer.eos_token_id
                eos_ids = {eos} if isinstance(eos, int) else set(eos or [])
                stopped = bool(new) and new[-1] in eos_ids
                text = tokenizer.decode(new, skip_special_tokens=True)
                counter[0] += 1
            self.reply(
                200,
                {
                    "id": "sample-%d" % counter[0],
                    "object": "chat.completion",
                    "model": name,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop" if stopped or len(new) < max_tokens else "length"}],
                    "usage": {"prompt_tokens": ids["input_ids"].shape[1], "completion_tokens": len(new),
                              "total_tokens": ids["input_ids"].shape[1] + len(new)},
                },
            )

    return Policy


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prbench", default="prbench", help="the prbench binary (default: `prbench` on PATH)")
    ap.add_argument("--policy", required=True, help="a checkpoint folder (train.py's <out>/checkpoint, or the initial model)")
    ap.add_argument("--name", required=True, help="the policy's name in the BoN manifest (openai:NAME@URL)")
    ap.add_argument("--data", required=True, help="the held-out dataset (make_dataset.py's heldout-data.jsonl)")
    ap.add_argument("--out", required=True, help="the new BoN folder")
    ap.add_argument("--n", type=int, default=4, help="samples per question (default 4)")
    ap.add_argument("--seed", type=int, default=7, help="run seed (default 7)")
    ap.add_argument("--k-posts", type=int, default=10, help="profile posts in the prompt (default 10, as make_dataset.py)")
    ap.add_argument("--max-new-tokens", type=int, default=48, help="new-token budget (default 48, train.py's completion length)")
    ap.add_argument("--limit", type=int, help="at most this many examples per subset")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.policy)
    model = AutoModelForCausalLM.from_pretrained(args.policy, dtype=torch.float32).eval()
    counter = [0]
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), make_handler(model, tokenizer, args.name, threading.Lock(), counter)
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/v1" % server.server_address[1]
    cmd = [args.prbench, "bon", "sample", "--data", args.data, "--out", args.out,
           "--policy", "openai:%s@%s" % (args.name, url), "--n", str(args.n), "--seed", str(args.seed),
           "--k-posts", str(args.k_posts), "--max-new-tokens", str(args.max_new_tokens),
           "--no-cache", "--concurrency", "1", "--timeout", "3600", "--quiet"]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    start = time.time()
    try:
        status = subprocess.run(cmd).returncode
    finally:
        server.shutdown()
    if status != 0:
        raise SystemExit("`%s` failed (exit %d)" % (" ".join(cmd), status))
    print("%d samples of %s in %s (%.0f s)" % (counter[0], args.policy, args.out, time.time() - start), file=sys.stderr)


if __name__ == "__main__":
    main()
