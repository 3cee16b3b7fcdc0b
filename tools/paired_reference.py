#!/usr/bin/env python3
"""Reference values for crates/prbench-stats/src/paired.rs: the exact McNemar test and Holm's
correction.

The exact McNemar test on b discordant pairs one way and c the other is the two-sided binomial
test of min(b, c) successes in b + c trials at p = 0.5 (McNemar 1947; the "exact" variant of
statsmodels.stats.contingency_tables.mcnemar). scipy.stats.binomtest(k, n, 0.5) gives it: for
p = 0.5 the distribution is symmetric, and its two-sided p-value is min(1, 2 * P(X <= min(b, c))).
statsmodels' own exact mcnemar is printed alongside as a cross-check.

Holm's step-down adjusted p-values come from statsmodels.stats.multitest.multipletests(p,
method="holm").

Run: python3 tools/paired_reference.py   (needs scipy and statsmodels; prints Rust test rows)
Versions used for the committed rows: scipy 1.16.3, statsmodels 0.14.5.
"""
import scipy
import statsmodels
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

print(f"// scipy {scipy.__version__}, statsmodels {statsmodels.__version__}")
print("// (b, c, p) exact McNemar")
CASES = [(0, 0), (1, 0), (3, 1), (5, 5), (10, 2), (25, 40), (7, 0), (100, 130), (512, 600), (1500, 1350)]
for b, c in CASES:
    n = b + c
    p = 1.0 if n == 0 else binomtest(min(b, c), n, 0.5).pvalue
    if n > 0:
        sm = mcnemar([[0, b], [c, 0]], exact=True).pvalue
        assert abs(sm - p) <= 1e-12 * max(p, 1e-300), (b, c, sm, p)
    print(f"({b}, {c}, {float(p)!r}),")

print("// Holm: (p-values, adjusted)")
FAMILIES = [
    [0.03, 0.01, 0.5, 0.02],
    [0.001, 0.2, 0.04, 0.04, 0.9, 0.0125],
    [0.0383, 0.0817, 1.0, 0.0156, 0.00905, 0.0556, 0.00525],
    [1e-12, 0.5],
    [0.7],
]
for ps in FAMILIES:
    adj = multipletests(ps, method="holm")[1]
    print(f"(&{[float(x) for x in ps]!r}, &{[float(x) for x in adj]!r}),")
