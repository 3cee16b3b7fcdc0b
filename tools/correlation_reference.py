#!/usr/bin/env python3
"""Reference fixture for crates/prbench-stats/src/rank.rs (PROTOCOL.md §8, benchmark <-> downstream
correlation): writes crates/prbench-stats/tests/fixtures/correlation_reference.json, read by
crates/prbench-stats/tests/rank_parity.rs.

Each case is a pair of equal-length lists over n models (3 <= n <= 25): x = benchmark score (e.g.
accuracy per reward model), y = downstream score (e.g. mean rubric score after best-of-n). The cases
come from a fixed-seed numpy generator (np.random.default_rng(20240917)) plus hand-written ones:
continuous scores, heavy ties in x, in y and in both (small integer grids), joint ties (duplicate
(x, y) pairs), identical rankings, exact reversals, negative benchmark values, and the degenerate
inputs on which scipy returns nan (a constant x and/or y) or sklearn refuses (negative relevance).
Values are rounded to 6 decimals so that the JSON text parses to the same doubles everywhere.

For each case the script records:
  spearman       scipy.stats.spearmanr(x, y).statistic
  kendall_tau_b  scipy.stats.kendalltau(x, y).statistic              (tau-b, the default variant)
  weighted_tau   scipy.stats.weightedtau(x, y).statistic             (rank=True, hyperbolic, additive)
  ndcg           sklearn.metrics.ndcg_score([y], [x])                 (k=None, ignore_ties=False)
  rbo            rbo.RankingSimilarity(S, T).rbo_ext(p) for p in RBO_PS, where S (T) lists the
                 model indices by decreasing x (y), ties by ascending model index (a stable sort
                 on -x, -y), exactly as rank.rs builds them
  permutation_p  for n <= 7 only: scipy.stats.permutation_test((x,), rho, permutation_type=
                 "pairings", alternative="two-sided", n_resamples=9999).pvalue with
                 rho(x') = spearmanr(x', y).statistic. With a single sample scipy enumerates the n!
                 pairings (n! = 5040 <= 9999 for n = 7), so this is the exact permutation p-value.
                 (Passing (x, y) would make scipy enumerate (n!)^2 pairings; the exact p-value is the
                 same, every distinct pairing being repeated n! times.) The script re-derives each
                 exact p-value with integer arithmetic on doubled average ranks and asserts that it
                 matches scipy's.
A statistic that is nan (scipy) is written as {"error": "constant_input", "input": which} (which =
"benchmark", "downstream" or "both"), NDCG that sklearn refuses as {"error": "negative_relevance"},
and a defined statistic as {"value": v}.

Run (from the repository root):
    python3 tools/correlation_reference.py
Needs numpy, scipy, scikit-learn and rbo==0.1.3 (pip install scikit-learn rbo==0.1.3; rbo 0.1.3
declares numpy<2 but runs unchanged with numpy 2 — install it with --no-deps if pip would downgrade
numpy). The versions used are written into the JSON; the committed fixture was made with
Python 3.11.7, numpy 2.4.6, scipy 1.16.3, scikit-learn 1.9.1, rbo 0.1.3.
"""
import itertools
import json
import math
import os
import platform
import warnings
from importlib.metadata import version

import numpy as np
import rbo
import scipy
import sklearn
from scipy.stats import kendalltau, permutation_test, rankdata, spearmanr, weightedtau
from sklearn.metrics import ndcg_score

RBO_PS = [0.9, 0.5]
EXACT_MAX_N = 7
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "prbench-stats",
                   "tests", "fixtures", "correlation_reference.json")


def r6(values):
    return [round(float(v), 6) + 0.0 for v in values]  # + 0.0 turns -0.0 into 0.0


def constant_which(x, y):
    cx, cy = len(set(x)) == 1, len(set(y)) == 1
    if cx and cy:
        return "both"
    return "benchmark" if cx else ("downstream" if cy else None)


def scipy_stat(fn, x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = float(fn(x, y).statistic)
    if math.isnan(v):
        which = constant_which(x, y)
        assert which is not None, (x, y)
        return {"error": "constant_input", "input": which}
    return {"value": v}


def ndcg(x, y):
    if min(y) < 0:
        with np.testing.assert_raises(ValueError):
            ndcg_score([y], [x])
        return {"error": "negative_relevance"}
    return {"value": float(ndcg_score([y], [x]))}


def order_desc(v):
    # Stable: ties keep ascending model index.
    return sorted(range(len(v)), key=lambda i: -v[i])


def rbo_values(x, y):
    s, t = order_desc(x), order_desc(y)
    return [{"p": p, "value": float(rbo.RankingSimilarity(s, t).rbo_ext(p))} for p in RBO_PS]


def exact_p_integer(x, y):
    """Exact two-sided p with scipy's convention, 2 * min(P(S <= s_obs), P(S >= s_obs)) clipped
    to 1, where S = sum 2rx_i * 2ry_perm(i) (an integer; rho is increasing in S)."""
    rx = [int(round(2 * r)) for r in rankdata(x)]
    ry = [int(round(2 * r)) for r in rankdata(y)]
    s_obs = sum(a * b for a, b in zip(rx, ry))
    le = ge = total = 0
    for perm in itertools.permutations(ry):
        s = sum(a * b for a, b in zip(rx, perm))
        le += s <= s_obs
        ge += s >= s_obs
        total += 1
    return min(1.0, 2 * min(le, ge) / total)


def permutation_p(x, y):
    if len(x) > EXACT_MAX_N or constant_which(x, y) is not None:
        return None
    y_arr = np.asarray(y)

    def rho(xp):
        return spearmanr(xp, y_arr).statistic

    res = permutation_test((np.asarray(x),), rho, permutation_type="pairings",
                           alternative="two-sided", n_resamples=9999)
    assert len(res.null_distribution) == math.factorial(len(x)), "scipy did not enumerate"
    p = float(res.pvalue)
    mine = exact_p_integer(x, y)
    assert abs(p - mine) <= 1e-12, (x, y, p, mine)
    return p


def make_cases():
    rng = np.random.default_rng(20240917)
    cases = []

    def add(label, x, y):
        x, y = r6(x), r6(y)
        assert len(x) == len(y) and 3 <= len(x) <= 25, (label, x, y)
        cases.append((label, x, y))

    # Hand-written cases.
    add("identical ranking n=5", [1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    add("identical ranking, monotone transform n=8", range(8), [math.exp(v / 3) for v in range(8)])
    add("exact reversal n=6", [1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1])
    add("exact reversal n=25", range(25), [0.01 * (25 - v) for v in range(25)])
    add("minimal n=3", [0.6, 0.7, 0.65], [1.2, 1.1, 1.5])
    add("minimal n=3 with a tie in y", [0.6, 0.7, 0.65], [1.2, 1.2, 1.5])
    add("paper-like accuracies vs rubric n=8",
        [0.7236, 0.6545, 0.6728, 0.6375, 0.4876, 0.5012, 0.7169, 0.6650],
        [1.41, 1.22, 1.35, 1.18, 0.95, 1.02, 1.30, 1.25])
    add("top swapped n=10", [10, 9, 8, 7, 6, 5, 4, 3, 2, 1], [9, 10, 8, 7, 6, 5, 4, 3, 2, 1])
    add("bottom swapped n=10", [10, 9, 8, 7, 6, 5, 4, 3, 2, 1], [10, 9, 8, 7, 6, 5, 4, 3, 1, 2])
    add("identical with ties in both n=7", [1, 1, 2, 2, 2, 3, 4], [1, 1, 2, 2, 2, 3, 4])
    add("reversed with ties in both n=7", [1, 1, 2, 2, 2, 3, 4], [4, 4, 3, 3, 3, 2, 1])
    add("joint ties n=6", [1, 1, 2, 2, 3, 3], [5, 5, 1, 1, 2, 2])
    add("zeros in downstream n=6", [0.3, 0.1, 0.5, 0.2, 0.4, 0.6], [0, 0, 1, 0, 2, 1])
    # Degenerate: scipy gives nan for spearman, kendall and weighted tau.
    add("constant benchmark n=5", [0.5] * 5, [1, 2, 3, 4, 5])
    add("constant downstream n=5", [1, 2, 3, 4, 5], [1.5] * 5)
    add("constant downstream all zero n=4", [0.1, 0.4, 0.2, 0.3], [0, 0, 0, 0])
    add("both constant n=6", [2] * 6, [0.75] * 6)
    add("constant benchmark n=9 (negative)", [-1.25] * 9, range(9))
    # sklearn refuses negative relevance.
    add("negative downstream n=6", [1, 2, 3, 4, 5, 6], [0.5, -0.2, 1.0, 0.3, 0.9, 1.1])

    # Continuous random cases, n = 3..25, with varying correlation.
    for n in range(3, 26):
        x = rng.normal(size=n)
        c = rng.uniform(-1, 1)
        y = c * x + math.sqrt(1 - c * c) * rng.normal(size=n) + 2.0
        if n % 4 == 0:  # accuracy-like vs rubric-like, independent
            add(f"continuous independent n={n}", rng.uniform(0.4, 0.8, size=n),
                rng.uniform(0, 2, size=n))
        else:
            add(f"continuous n={n} c={c:.2f}", x, np.abs(y))
    # Heavy ties in x (small grid), continuous y.
    for n in [4, 6, 9, 13, 18, 25]:
        add(f"ties in x n={n}", rng.integers(0, 3, size=n), rng.uniform(0, 2, size=n))
    # Heavy ties in y, continuous x (some negative).
    for n in [4, 7, 10, 15, 21, 24]:
        add(f"ties in y n={n}", rng.normal(-0.5, 1, size=n), rng.integers(0, 3, size=n) / 2)
    # Ties in both, small integer grids, correlated or not.
    for n in [3, 5, 6, 7, 8, 11, 16, 20, 25]:
        g = int(rng.integers(2, 5))
        x = rng.integers(0, g + 1, size=n)
        y = np.clip(x + rng.integers(-1, 2, size=n), 0, None) if n % 2 else rng.integers(0, g + 1, size=n)
        if len(set(x.tolist())) == 1 or len(set(y.tolist())) == 1:
            x[0], y[0] = g + 1, g + 1
        add(f"grid ties in both n={n} g={g}", x, y)
    # Negative benchmark values.
    for n in [5, 7, 12, 19]:
        x = rng.normal(-3, 2, size=n)
        add(f"negative benchmark n={n}", x, np.exp(rng.normal(0, 0.5, size=n)) + 0.1 * x.clip(0))
    # Small n exhaustive-permutation territory with ties.
    for n in [3, 4, 5, 6, 7, 7]:
        add(f"small grid n={n}", rng.integers(0, 4, size=n), rng.integers(0, 4, size=n) / 4)
    return cases


def main():
    cases = []
    for index, (label, x, y) in enumerate(make_cases()):
        case = {
            "index": index,
            "label": label,
            "n": len(x),
            "x": x,
            "y": y,
            "spearman": scipy_stat(spearmanr, x, y),
            "kendall_tau_b": scipy_stat(kendalltau, x, y),
            "weighted_tau": scipy_stat(weightedtau, x, y),
            "ndcg": ndcg(x, y),
            "rbo": rbo_values(x, y),
            "permutation_p": permutation_p(x, y),
        }
        cases.append(case)
    out = {
        "generator": "tools/correlation_reference.py",
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__,
            "rbo": version("rbo"),
        },
        "rbo_ps": RBO_PS,
        "exact_permutation_max_n": EXACT_MAX_N,
        "cases": cases,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    n_err = sum(1 for c in cases for k in ("spearman", "kendall_tau_b", "weighted_tau", "ndcg")
                if "error" in c[k])
    n_perm = sum(1 for c in cases if c["permutation_p"] is not None)
    print(f"wrote {len(cases)} cases ({n_err} error entries, {n_perm} exact permutation p-values) "
          f"to {os.path.normpath(OUT)}")
    print(out["versions"])


if __name__ == "__main__":
    main()
