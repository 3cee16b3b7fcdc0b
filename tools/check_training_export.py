#!/usr/bin/env python3
"""Reads a `prbench export` file back and checks it against the trainers' documented schemas.

    tools/check_training_export.py FILE.jsonl [--tokenizer DIR]

Always (standard library only):
  * FILE.manifest.json exists, names a known format, and its `rows_sha256` and `counts.rows`
    match the file;
  * every row is a JSON object with exactly the format's keys: a string `id`, a string
    `user_id` when the example has one, a string `subset`, for the reward formats a string
    `condition` equal to the manifest's (trl-sft-planner rows have none: the manifest's is
    null), and the format's fields, each a list of {"role", "content"} messages with string
    content:
      trl-reward       TRL "preference, implicit prompt, conversational" (TRL v1.9.0
                       docs/source/dataset_formats.md): `chosen` and `rejected` are
                       [user, assistant], with the same user turn; no `prompt` key.
      openrlhf-reward  OpenRLHF's RewardDataset with apply_chat_template and prompt_key
                       (openrlhf/datasets/reward_dataset.py, v0.11.0): `prompt` is [user],
                       `chosen` and `rejected` are [assistant] (it concatenates the lists).
      trl-sft-planner  TRL "prompt-completion, conversational": `prompt` is [system, user],
                       `completion` is [assistant] whose content is a "- " item per line.
  * no key TRL or OpenRLHF would read as something else: `label`, `margin`, `messages`, and for
    the reward formats `completion` (TRL's apply_chat_template accepts only fixed key sets).
When pyarrow is importable (the reference venv scripts/setup.sh --tests installs): the file
is read with pyarrow.json.read_json, the reader `datasets.load_dataset("json")` uses, and the
message columns must come out as list<struct<role: string, content: string>> (in either field
order) with one row per line.
When trl is importable: trl.data_utils.is_conversational is true for every row, and with
--tokenizer DIR (a Hugging Face tokenizer directory with a chat template; needs transformers)
trl.data_utils.maybe_apply_chat_template renders each row with no error and keeps every
message's text. When openrlhf is importable (with --tokenizer): its own preprocess_data renders
openrlhf-reward rows. With --trl-train MODEL_DIR (a small Hugging Face model directory, e.g. the
qwen2-f32 fixture of crates/prbench-rm/tests/fixtures/seqcls): the file is loaded with
datasets.load_dataset("json") and TRL's own trainer takes one optimizer step on it on the CPU
(RewardTrainer on the model for trl-reward; SFTTrainer on a randomly initialised causal LM of
the model's config for trl-sft-planner), so TRL's dataset preparation accepts every row.

Prints one JSON object: {"format", "rows", "checked": [what ran], "skipped": [what did not and
why]}; exits 1 with a message naming the row and field on the first failure.
"""

import argparse
import hashlib
import json
import os
import sys

FORMATS = {"trl-reward", "openrlhf-reward", "trl-sft-planner"}
# Keys a trainer reads with a meaning of its own (TRL: apply_chat_template's key sets, a
# `margin` column in RewardTrainer; OpenRLHF: `margin` in preprocess_data).
FORBIDDEN = {"label", "margin", "messages"}


def fail(msg):
    print(f"check_training_export: {msg}", file=sys.stderr)
    sys.exit(1)


def messages(row, i, key, roles):
    value = row.get(key)
    where = f"row {i + 1} (id {row.get('id')!r}), field `{key}`"
    if not isinstance(value, list):
        fail(f"{where}: expected a list of messages, got {type(value).__name__}")
    got = [m.get("role") if isinstance(m, dict) else None for m in value]
    if got != roles:
        fail(f"{where}: expected roles {roles}, got {got}")
    for m in value:
        if set(m) != {"role", "content"}:
            fail(f"{where}: a message has keys {sorted(m)}, expected exactly role and content")
        if not isinstance(m["content"], str) or not m["content"].strip():
            fail(f"{where}: a {m['role']} message has no text")
    return value


def row_keys(fmt):
    """The keys every row of `fmt` has (besides `user_id`, present when the example has one)."""
    meta = ["id", "subset"] + (["condition"] if fmt != "trl-sft-planner" else [])
    return set(meta + message_fields(fmt))


def check_row(fmt, row, i, condition):
    if not isinstance(row, dict):
        fail(f"row {i + 1}: not a JSON object")
    if not isinstance(row.get("id"), str) or not row["id"]:
        fail(f"row {i + 1}: no string `id` (every row names its example so it can be joined back)")
    if "user_id" in row and not isinstance(row["user_id"], str):
        fail(f"row {i + 1}: `user_id` is not a string")
    if not isinstance(row.get("subset"), str) or not row["subset"]:
        fail(f"row {i + 1}: no string `subset`")
    if fmt == "trl-sft-planner":
        if "condition" in row:
            fail(f"row {i + 1}: trl-sft-planner rows carry no `condition` (their input is the planner's prompt)")
    elif row.get("condition") != condition:
        fail(f"row {i + 1}: `condition` is {row.get('condition')!r}, the manifest's is {condition!r}")
    bad = FORBIDDEN & set(row)
    if fmt != "trl-sft-planner" and "completion" in row:
        bad.add("completion")
    if bad:
        fail(f"row {i + 1}: keys {sorted(bad)} would be read by the trainer as something else")
    extra = set(row) - row_keys(fmt) - {"user_id"}
    missing = row_keys(fmt) - set(row)
    if extra or missing:
        fail(f"row {i + 1}: keys {sorted(row)}; a {fmt} row has {sorted(row_keys(fmt))} and `user_id` when known (extra {sorted(extra)}, missing {sorted(missing)})")
    if fmt == "trl-reward":
        if "prompt" in row:
            fail(f"row {i + 1}: trl-reward rows carry the prompt inside chosen/rejected (implicit prompt)")
        c = messages(row, i, "chosen", ["user", "assistant"])
        r = messages(row, i, "rejected", ["user", "assistant"])
        if c[0]["content"] != r[0]["content"]:
            fail(f"row {i + 1}: chosen and rejected have different user turns")
    elif fmt == "openrlhf-reward":
        messages(row, i, "prompt", ["user"])
        messages(row, i, "chosen", ["assistant"])
        messages(row, i, "rejected", ["assistant"])
    else:
        messages(row, i, "prompt", ["system", "user"])
        (target,) = messages(row, i, "completion", ["assistant"])
        lines = target["content"].split("\n")
        if not all(line.startswith("- ") and line[2:].strip() == line[2:] and line[2:] for line in lines):
            fail(f"row {i + 1}: the completion is not one `- ` item per line: {target['content']!r}")


def message_fields(fmt):
    return {"trl-reward": ["chosen", "rejected"], "openrlhf-reward": ["prompt", "chosen", "rejected"], "trl-sft-planner": ["prompt", "completion"]}[fmt]


def check_pyarrow(path, fmt, n, checked, skipped):
    try:
        import pyarrow as pa
        import pyarrow.json as pj
    except ImportError:
        skipped.append("pyarrow: not importable")
        return
    table = pj.read_json(path)
    if table.num_rows != n:
        fail(f"pyarrow read {table.num_rows} rows, the file has {n} lines")
    for key in message_fields(fmt):
        t = table.schema.field(key).type
        ok = pa.types.is_list(t) and pa.types.is_struct(t.value_type) and sorted(f.name for f in t.value_type) == ["content", "role"] and all(pa.types.is_string(f.type) for f in t.value_type)
        if not ok:
            fail(f"pyarrow reads column `{key}` as {t}, expected list<struct<role: string, content: string>>")
    checked.append(f"pyarrow {pa.__version__} json reader: {table.num_rows} rows, message columns list<struct<role, content>>")


def check_trl(rows, fmt, tokenizer_dir, checked, skipped):
    try:
        import trl
        from trl.data_utils import is_conversational, maybe_apply_chat_template
    except ImportError:
        skipped.append("trl: not importable")
        return None
    for i, row in enumerate(rows):
        if not is_conversational(row):
            fail(f"row {i + 1}: trl.data_utils.is_conversational says it is not conversational")
    checked.append(f"trl {trl.__version__} is_conversational: all {len(rows)} rows")
    if tokenizer_dir is None:
        skipped.append("trl maybe_apply_chat_template: no --tokenizer")
        return None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    if fmt == "openrlhf-reward":
        skipped.append("trl maybe_apply_chat_template: openrlhf-reward rows are OpenRLHF's format")
        return tok
    for i, row in enumerate(rows):
        keys = {"trl-reward": ("chosen", "rejected"), "trl-sft-planner": ("prompt", "completion")}[fmt]
        out = maybe_apply_chat_template({k: row[k] for k in keys}, tok)
        text = "".join(out[k] for k in keys)
        for k in keys:
            for m in row[k]:
                if m["content"].strip() not in text:
                    fail(f"row {i + 1}: TRL's rendering lost the {m['role']} text of `{k}`")
    checked.append(f"trl maybe_apply_chat_template with {tokenizer_dir}: all {len(rows)} rows keep every message")
    return tok


def check_openrlhf(rows, tok, checked, skipped):
    try:
        from openrlhf.datasets.reward_dataset import preprocess_data
    except ImportError:
        skipped.append("openrlhf: not importable")
        return
    if tok is None:
        skipped.append("openrlhf preprocess_data: no --tokenizer")
        return
    for i, row in enumerate(rows):
        prompt, chosen, rejected, margin = preprocess_data(row, None, "prompt", "chosen", "rejected", tok.apply_chat_template)
        if row["prompt"][0]["content"].strip() not in prompt or row["chosen"][0]["content"].strip() not in chosen or row["rejected"][0]["content"].strip() not in rejected or margin != 0:
            fail(f"row {i + 1}: OpenRLHF's preprocess_data lost text")
    checked.append(f"openrlhf preprocess_data: all {len(rows)} rows")


def trl_train(path, fmt, model_dir, checked, skipped):
    if fmt == "openrlhf-reward":
        skipped.append("--trl-train: openrlhf-reward rows are for OpenRLHF")
        return
    import tempfile

    from datasets import load_dataset
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer, SFTConfig, SFTTrainer

    ds = load_dataset("json", data_files=path, split="train")
    tok = AutoTokenizer.from_pretrained(model_dir)
    out = tempfile.mkdtemp()
    common = dict(output_dir=out, max_steps=1, per_device_train_batch_size=2, max_length=None, report_to=[], use_cpu=True, save_strategy="no")
    if fmt == "trl-reward":
        model = AutoModelForSequenceClassification.from_pretrained(model_dir)
        trainer = RewardTrainer(model=model, args=RewardConfig(**common), train_dataset=ds, processing_class=tok)
    else:
        cfg = AutoConfig.from_pretrained(model_dir)
        cfg.architectures = None
        model = AutoModelForCausalLM.from_config(cfg)
        trainer = SFTTrainer(model=model, args=SFTConfig(**common), train_dataset=ds, processing_class=tok)
    if len(trainer.train_dataset) != len(ds):
        fail(f"TRL's dataset preparation kept {len(trainer.train_dataset)} of {len(ds)} rows")
    loss = trainer.train().training_loss
    checked.append(f"trl {type(trainer).__name__}: prepared all {len(ds)} rows and trained one step (loss {loss:.4f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--tokenizer", help="a Hugging Face tokenizer directory with a chat template (TRL/OpenRLHF rendering checks)")
    ap.add_argument("--trl-train", metavar="MODEL_DIR", help="train one TRL step on the file with this small model (needs trl, transformers, torch)")
    args = ap.parse_args()
    base = args.file[: -len(".jsonl")] if args.file.endswith(".jsonl") else args.file
    manifest_path = base + ".manifest.json"
    if not os.path.isfile(manifest_path):
        fail(f"no manifest `{manifest_path}` beside the export")
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    fmt = manifest.get("format")
    if fmt not in FORMATS:
        fail(f"{manifest_path}: unknown format {fmt!r}")
    with open(args.file, "rb") as f:
        raw = f.read()
    if hashlib.sha256(raw).hexdigest() != manifest.get("rows_sha256"):
        fail(f"{args.file}: sha256 differs from the manifest's rows_sha256 (the file changed after export)")
    condition = manifest.get("condition")
    if (fmt == "trl-sft-planner") != (condition is None):
        fail(f"{manifest_path}: condition {condition!r} for format {fmt} (reward formats name one, trl-sft-planner none)")
    lines = raw.decode("utf-8").split("\n")
    if lines[-1] != "":
        fail(f"{args.file}: the last line has no newline")
    rows = []
    for i, line in enumerate(lines[:-1]):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            fail(f"{args.file}: line {i + 1} is not JSON ({e})")
        check_row(fmt, rows[-1], i, condition)
    if manifest.get("counts", {}).get("rows") != len(rows):
        fail(f"{manifest_path}: counts.rows is {manifest.get('counts', {}).get('rows')}, the file has {len(rows)} rows")
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        fail(f"{args.file}: an example id appears twice")
    checked = [f"schema of {fmt}: {len(rows)} rows"]
    skipped = []
    if rows:
        check_pyarrow(args.file, fmt, len(rows), checked, skipped)
        tok = check_trl(rows, fmt, args.tokenizer, checked, skipped)
        if fmt == "openrlhf-reward":
            check_openrlhf(rows, tok, checked, skipped)
        if args.trl_train:
            trl_train(args.file, fmt, args.trl_train, checked, skipped)
    print(json.dumps({"format": fmt, "rows": len(rows), "checked": checked, "skipped": skipped}))


if __name__ == "__main__":
    main()
