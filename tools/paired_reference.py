#!/usr/bin/env python3
"""Reference p-values for the exact McNemar test in crates/prbench-stats/src/paired.rs.

The exact McNemar test on b discordant pairs one way and c the other is the two-sided binomial
test of min(b, c) successes in b + c trials at p = 0.5 (McNemar 1947; the "exact" variant of
statsmodels.stats.contingency_tables.mcnemar). scipy.stats.binomtest(k, n, 0.5) gives it: for
p = 0.5 the distribution is symmetric, and its two-sided p-value is min(1, 2 * P(X <= min(b, c))).

Run: python3 tools/paired_reference.py   (needs scipy; prints Rust test rows)
"""
from scipy.stats import binomtest

CASES = [(0, 0), (1, 0), (3, 1), (5, 5), (10, 2), (25, 40), (7, 0), (100, 130), (512, 600), (1500, 1350)]

for b, c in CASES:
    n = b + c
    p = 1.0 if n == 0 else binomtest(min(b, c), n, 0.5).pvalue
    print(f"({b}, {c}, {float(p)!r}),")
