#!/usr/bin/env python3
"""Reference reader for a dataset prbench exports in the Hugging Face layout (PROTOCOL.md §1).

Reads every `<config>/test-*.parquet` under DIR with pyarrow alone (not prbench's reader) and
prints ONE JSON object to stdout:

    {"configs": {NAME: {"schema": str(table.schema), "rows": table.to_pylist(),
                        "nbytes": table.nbytes}, ...},
     "card": <the YAML front matter of DIR/README.md, parsed with yaml.safe_load, or null>}

so a test can check what another implementation sees: the exact Arrow schema text, every row
value, the Arrow size `datasets` records as the card's `num_bytes` (`nbytes`), and that the
dataset card's `configs:` / `dataset_info:` are valid YAML. Configs are in
name order; a config with several shards has their rows concatenated in file-name order.

    scripts/setup.sh --tests     # builds the pinned venv (pyarrow + PyYAML)
    ~/.cache/prbench/tools/pyref-pyarrow26.0.1-pyyaml6.0.4/bin/python tools/read_prb_export.py DIR

crates/prbench-data/tests/export_pyarrow.rs runs it against `write_hf_layout`'s output.
"""

import glob
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import yaml


def read_card(path):
    """The parsed front matter (between the leading `---` lines) of a dataset card, or None."""
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SystemExit(f"{path}: does not start with a `---` front-matter fence")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SystemExit(f"{path}: the front matter has no closing `---` fence")
    return yaml.safe_load("\n".join(lines[1:end]))


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: read_prb_export.py DIR")
    root = sys.argv[1]
    configs = {}
    for name in sorted(os.listdir(root)):
        files = sorted(glob.glob(os.path.join(root, glob.escape(name), "test-*.parquet")))
        if name.startswith(".") or not files:
            continue
        table = pa.concat_tables([pq.ParquetFile(f).read() for f in files])
        configs[name] = {"schema": str(table.schema), "rows": table.to_pylist(), "nbytes": table.nbytes}
    out = {"configs": configs, "card": read_card(os.path.join(root, "README.md"))}
    # ASCII JSON (non-ASCII as \u escapes): the same bytes whatever the locale's encoding.
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
