"""Turn a prbench dataset file (JSONL in the Personalized-RewardBench schema) into verl's
parquet layout for PPO with `reward_fn.py`.

    python3 examples/verl/make_dataset.py --data ranked.jsonl --out ~/data/prbench/train.parquet

Use a file written by `prbench retrieve` (profiles already ranked by relevance to the question,
best first); a plain dataset file works too, its posts in their stored order. Each row becomes:

    prompt        [system, user]: the Best-of-N policy prompt (prompts/bon-policy-*), top-K posts
                  then the question, so PPO and Best-of-N policies see the same input
    data_source   "prbench"
    ability       "personalization"
    reward_model  {"style": "model", "ground_truth": ""}   (unused: the reward model scores)
    extra_info    {"id", "question", "profile"}             (what reward_fn.py sends to the server)

`profile` is the `profile:K` context exactly as prbench renders it
(crates/prbench-eval/src/condition.rs, `profile_context`), so the served reward model sees the
same input as in `prbench eval --condition profile:K`. The rubric and narrative never go in.

Needs pandas, pyarrow and jinja2 (all come with verl). Run it from anywhere: the prompt
files are read from this repository's prompts/ folder.
"""

import argparse
import json
import os

PROMPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "prompts")


def profile_context(posts):
    """Mirror of prbench's `profile_context`: posts best first, numbered, with their category."""
    text = "Posts this user wrote before, most relevant to the question first:"
    if not posts:
        text += "\n(none fit in the model's context)"
    for i, post in enumerate(posts):
        text += "\n\n[Post %d · category: %s]\n%s" % (i + 1, post["category"].strip(), post["text"].strip())
    return text


def policy_messages(question, posts):
    """The BoN policy conversation, rendered as prbench renders it
    (crates/prbench-downstream/src/bon/prompts.rs, `Prompts::policy`)."""
    import jinja2

    with open(os.path.join(PROMPTS, "bon-policy-system.txt"), encoding="utf-8") as f:
        system = f.read().strip()
    with open(os.path.join(PROMPTS, "bon-policy-user.jinja"), encoding="utf-8") as f:
        template = jinja2.Template(f.read())
    shown = [{"rank": i + 1, "category": p["category"].strip(), "text": p["text"].strip()} for i, p in enumerate(posts)]
    user = template.render(question=question.strip(), posts=shown)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="dataset JSONL (e.g. written by `prbench retrieve`)")
    ap.add_argument("--out", required=True, help="parquet file to write")
    ap.add_argument("--k", type=int, default=10, help="profile posts per prompt and per reward input (default 10)")
    args = ap.parse_args()

    import pandas as pd

    rows = []
    with open(args.data, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            ex = json.loads(line)
            for field in ("id", "question", "profile"):
                if field not in ex:
                    raise SystemExit("%s line %d: no `%s` field" % (args.data, n, field))
            posts = ex["profile"][: args.k]
            context = profile_context(posts)
            rows.append(
                {
                    "data_source": "prbench",
                    "prompt": policy_messages(ex["question"], posts),
                    "ability": "personalization",
                    "reward_model": {"style": "model", "ground_truth": ""},
                    "extra_info": {"id": str(ex["id"]), "question": ex["question"], "profile": context},
                }
            )
    pd.DataFrame(rows).to_parquet(args.out)
    print("wrote %d rows to %s" % (len(rows), args.out))


if __name__ == "__main__":
    main()
