#!/usr/bin/env python3
"""Reference fixture for crates/prbench-stats/src/agreement (Krippendorff's alpha):
writes crates/prbench-stats/tests/fixtures/alpha/krippendorff_reference.json, read by
crates/prbench-stats/tests/alpha_parity.rs.

Each case is a reliability matrix, annotators x units (rows x columns), a missing rating written
as null (np.nan for the package). For each case the script records what
`krippendorff.alpha(data, level_of_measurement=L)` does for L = nominal, ordinal, interval
(value_domain left to its default, the sorted unique observed values, unless the case names one):

  {"result": "value", "value": alpha}       a finite alpha
  {"result": "nan"}                        the package returns nan (0/0, with a numpy
                                           RuntimeWarning "invalid value encountered")
  {"result": "error", "message": text}     the package raises ValueError(text)

The cases: Krippendorff's own worked example (2011, "Computing Krippendorff's Alpha-Reliability",
section C: 4 observers x 12 units, values 1-5, missing values, unit 12 rated once; alpha nominal
0.743, ordinal 0.815, interval 0.849), the same with an explicit value_domain [1..5], the
package's docstring example (3 coders x 15 units), a hand-computable 2 x 3 case, units rated once,
units rated by nobody, all-equal ratings (with and without missing values, with and without a
differing single rating), two-value edge cases (one unit, perfect agreement, perfect
disagreement, binary data), ordinal values with gaps, and random matrices from a fixed-seed
numpy generator (np.random.default_rng(20261201)): integer scores 1-5 with 0-50% missing, skewed
score distributions, half-point scores, and float values (rounded to 6 decimals so the JSON text
parses to the same doubles everywhere) for the interval level.

Run (from the repository root, needs Python 3.11 on x86_64/aarch64 Linux, macOS or Windows):
    python3 tools/make_alpha_fixtures.py [--venv DIR]
It creates a virtual environment (default: a fresh temporary directory, removed afterwards; with
--venv DIR, DIR is created if missing and kept), installs the pinned packages below into it with
`pip install --require-hashes --only-binary :all:` (hashes from https://pypi.org/pypi/<name>/json,
the cp311 wheels of numpy), and reruns itself inside it. The committed fixture was made with
Python 3.11.7, krippendorff 0.9.0, numpy 2.4.6.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

REQUIREMENTS = """\
krippendorff==0.9.0 \\
    --hash=sha256:22ab549f5f05050080ea5c1a95be1401b64aaa01576fe61b2e8da666bc4e0034
numpy==2.4.6 \\
    --hash=sha256:89cd468399cfd2504718f0ba50e410dca55a170b61a02ad92bb18c8a65186e93 \\
    --hash=sha256:0ab0a9c4ffb1a6d95ef519fe4247dba8eb6b18ad93999f76b7f657039acabd47 \\
    --hash=sha256:f407cb6b8e9d6d8c626bc73c945db1706035af8fd632295547bf1c9e46d092d6 \\
    --hash=sha256:c2d37ab77531417474168eb79d6d80b14f821a966818505d03013d0833edb7a8 \\
    --hash=sha256:0280e0356c0829a18d9de1cb7eee50ec22ca639878d7240307ca0943d73cd2c4 \\
    --hash=sha256:8155154c7c691289fe18f510b5d4657c68c67989f293f0535a91360392ff6538 \\
    --hash=sha256:110f8b71aacb688ec69062bb7f6938a0f8acb01b7c1c4beb453c65b6d234584d \\
    --hash=sha256:4cfe66903cc32a9921a6733d96b19bb6abf310397581bbad89c228f5abaf0ee8 \\
    --hash=sha256:1e254a00cdf42b1e4d5b3d68d33af63268d41340d8885df2ab6470f2e1500147 \\
    --hash=sha256:ddea102b48f9e339f3948bf22040944184627a30fdf7f858667673b9c5f033c8 \\
    --hash=sha256:ed9749eef4cbd126da3dc1d6bcb3a57f5eb7ac6a6484146bdbf743f552dfc577
"""
# The numpy hashes, in order: cp311 manylinux x86_64, manylinux aarch64, musllinux x86_64,
# musllinux aarch64, macOS 10.9 x86_64, macOS 14 x86_64, macOS 11 arm64, macOS 14 arm64,
# win_amd64, win32, win_arm64.

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "crates", "prbench-annotate", "tests", "fixtures", "alpha",
                   "krippendorff_reference.json")
LEVELS = ["nominal", "ordinal", "interval"]
INSIDE = "--inside-venv"


def bootstrap_venv(venv_dir):
    """Creates the venv, installs the pinned requirements, reruns this script in it."""
    if sys.version_info[:2] != (3, 11):
        sys.exit(f"make_alpha_fixtures.py: Python 3.11 is needed (the pinned numpy wheels are "
                 f"cp311), this is {platform.python_version()}")
    subprocess.run([sys.executable, "-m", "venv", venv_dir], check=True)
    py = os.path.join(venv_dir, "Scripts" if os.name == "nt" else "bin", "python")
    req = os.path.join(venv_dir, "requirements-alpha.txt")
    with open(req, "w") as f:
        f.write(REQUIREMENTS)
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--require-hashes", "--only-binary", ":all:", "-r", req], check=True)
    subprocess.run([py, os.path.abspath(__file__), INSIDE], check=True)


def outcome(data, level, value_domain):
    import warnings

    import krippendorff
    import numpy as np

    arr = np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)
    kwargs = {"level_of_measurement": level}
    if value_domain is not None:
        kwargs["value_domain"] = value_domain
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a = float(krippendorff.alpha(arr, **kwargs))
    except ValueError as e:
        return {"result": "error", "message": str(e)}
    if np.isnan(a):
        assert any("invalid value" in str(w.message) for w in caught), caught
        return {"result": "nan"}
    assert np.isfinite(a), a
    return {"result": "value", "value": a}


def r6(x):
    return round(float(x), 6) + 0.0  # + 0.0 turns -0.0 into 0.0


def random_cases():
    import numpy as np

    rng = np.random.default_rng(20261201)
    cases = []

    def matrix(values, missing):
        m, n = values.shape
        out = []
        for i in range(m):
            out.append([None if missing[i, j] else values[i, j] for j in range(n)])
        return out

    # Integer scores 1-5, uniform, 0-50% missing.
    for k in range(16):
        m = int(rng.integers(2, 9))
        n = int(rng.integers(5, 61))
        p_miss = [0.0, 0.1, 0.3, 0.5][k % 4]
        vals = rng.integers(1, 6, size=(m, n)).astype(float)
        miss = rng.random((m, n)) < p_miss
        cases.append((f"random 1-5 scores, {m} annotators x {n} units, {int(p_miss * 100)}% missing",
                      [[None if v is None else int(v) for v in row] for row in matrix(vals, miss)]))
    # Skewed: mostly 4s and 5s, as human ratings of good answers tend to be; agreement near a
    # "true" score per unit plus noise, so alpha is well above 0.
    for k in range(8):
        m = int(rng.integers(2, 7))
        n = int(rng.integers(8, 41))
        truth = rng.choice([2, 3, 4, 4, 5, 5, 5], size=n)
        noise = rng.choice([-1, 0, 0, 0, 1], size=(m, n))
        vals = np.clip(truth[np.newaxis, :] + noise, 1, 5).astype(float)
        miss = rng.random((m, n)) < 0.25
        cases.append((f"skewed 1-5 scores with a per-unit truth, {m} x {n}, 25% missing",
                      [[None if v is None else int(v) for v in row] for row in matrix(vals, miss)]))
    # Half-point scores.
    for k in range(4):
        m = int(rng.integers(2, 6))
        n = int(rng.integers(6, 31))
        vals = rng.integers(2, 11, size=(m, n)) / 2.0
        miss = rng.random((m, n)) < 0.2
        cases.append((f"half-point scores 1-5, {m} x {n}, 20% missing",
                      [[None if v is None else float(v) for v in row] for row in matrix(vals, miss)]))
    # Float values (interval data): a per-unit mean plus noise; every value is distinct.
    for k in range(8):
        m = int(rng.integers(2, 7))
        n = int(rng.integers(5, 41))
        scale = [1.0, 10.0, 0.01, 1000.0][k % 4]
        mean = rng.normal(0.0, scale, size=n)
        vals = mean[np.newaxis, :] + rng.normal(0.0, scale * 0.5, size=(m, n))
        miss = rng.random((m, n)) < 0.2
        cases.append((f"float values (scale {scale}), {m} x {n}, 20% missing",
                      [[None if v is None else r6(v) for v in row] for row in matrix(vals, miss)]))
    return cases


def hand_cases():
    n = None
    return [
        ("Krippendorff 2011 section C: 4 observers x 12 units, values 1-5, unit 12 rated once",
         [[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
          [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
          [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
          [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]], None),
        ("Krippendorff 2011 section C with explicit value_domain [1, 2, 3, 4, 5]",
         [[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
          [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
          [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
          [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]], [1, 2, 3, 4, 5]),
        ("krippendorff docstring example: 3 coders x 15 units, units 2 and 14 rated by nobody",
         [[n, n, n, n, n, 3, 4, 1, 2, 1, 1, 3, 3, n, 3],
          [1, n, 2, 1, 3, 3, 4, 3, n, n, n, n, n, n, n],
          [n, n, 2, 1, 3, 4, 4, n, 2, 1, 1, 3, 3, n, 4]], None),
        ("hand case: 2 annotators x 3 units {1,1} {1,2} {2,3}",
         [[1, 1, 2],
          [1, 2, 3]], None),
        ("explicit value_domain with an unobserved value inside the range (ordinal gap)",
         [[1, 2, 5, 5, 1],
          [1, 3, 5, 1, 2]], [1, 2, 3, 4, 5]),
        ("a unit with a single rating of a value seen nowhere else",
         [[1, 2, 3, 4, n],
          [1, 2, 4, 4, 5],
          [2, n, 3, 4, n]], None),
        ("several units with a single rating",
         [[1, n, 3, 2, n, 5, 1],
          [n, 4, 3, 2, n, n, 2],
          [1, n, n, 3, 2, n, 1]], None),
        ("all units rated once (no pairable unit), distinct values",
         [[1, n, n],
          [n, 2, n],
          [n, n, 3]], None),
        ("all units rated once, the same value",
         [[4, n],
          [n, 4]], None),
        ("all-equal ratings, complete",
         [[3, 3, 3, 3],
          [3, 3, 3, 3],
          [3, 3, 3, 3]], None),
        ("all-equal ratings with missing values",
         [[2, n, 2, 2],
          [2, 2, n, 2]], None),
        ("all pairable ratings equal, one single rating differs",
         [[3, 3, 3, n],
          [3, 3, 3, 5]], None),
        ("all-equal ratings with an explicit value_domain [1..5]",
         [[3, 3, 3],
          [3, 3, 3]], [1, 2, 3, 4, 5]),
        ("two values: one unit, two annotators disagree",
         [[1],
          [2]], None),
        ("two values: perfect agreement on two units",
         [[1, 2],
          [1, 2]], None),
        ("two values: perfect systematic disagreement",
         [[1, 2, 1, 2],
          [2, 1, 2, 1]], None),
        ("two values: binary 0/1 codes, 3 coders, missing values",
         [[0, 1, 0, 0, 1, 1, n, 0],
          [0, 1, 1, 0, 1, n, 0, 0],
          [n, 1, 0, 0, 0, 1, 0, 1]], None),
        ("ordinal values with gaps 1, 2, 5, 9",
         [[1, 2, 5, 9, 9, 1, 5],
          [2, 2, 5, 9, 5, 1, 9],
          [1, n, 9, 9, 5, 2, 5]], None),
        ("negative and zero values",
         [[-2, 0, 3, -1, 0],
          [-1, 0, 3, -1, 1],
          [-2, 1, 2, n, 0]], None),
        ("units rated by 2 to 6 annotators",
         [[1, 2, 3, 4, 5, 1],
          [1, 2, 3, 4, 5, 2],
          [n, 3, 3, 4, 4, 1],
          [n, n, 2, 5, 5, 1],
          [n, n, n, 5, 4, 2],
          [n, n, n, n, 5, 1]], None),
    ]


def generate():
    from importlib.metadata import version

    cases = []
    for label, data, domain in hand_cases():
        cases.append({"label": label, "data": data, "value_domain": domain})
    for label, data in random_cases():
        cases.append({"label": label, "data": data, "value_domain": None})
    for i, c in enumerate(cases):
        c["index"] = i
        c["alpha"] = {lv: outcome(c["data"], lv, c["value_domain"]) for lv in LEVELS}
    paper = cases[0]["alpha"]
    for lv, want in [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]:
        assert round(paper[lv]["value"], 3) == want, (lv, paper[lv])
    results = [c["alpha"][lv]["result"] for c in cases for lv in LEVELS]
    assert {"value", "nan", "error"} <= set(results), set(results)
    out = {
        "generator": "tools/make_alpha_fixtures.py",
        "versions": {
            "python": platform.python_version(),
            "krippendorff": version("krippendorff"),
            "numpy": version("numpy"),
        },
        "levels": LEVELS,
        "layout": "data[annotator][unit], null = missing",
        "cases": [{k: c[k] for k in ["index", "label", "value_domain", "data", "alpha"]}
                  for c in cases],
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.relpath(OUT, ROOT)}")


def main():
    if INSIDE in sys.argv[1:]:
        generate()
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", help="virtual environment to create or reuse (kept afterwards)")
    args = ap.parse_args()
    if args.venv:
        bootstrap_venv(args.venv)
    else:
        with tempfile.TemporaryDirectory(prefix="prbench-alpha-") as tmp:
            bootstrap_venv(os.path.join(tmp, "venv"))


if __name__ == "__main__":
    main()
