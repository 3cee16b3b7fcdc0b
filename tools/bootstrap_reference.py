#!/usr/bin/env python3
"""Reference values for the prbench-stats bootstrap tests (crates/prbench-stats/src/bootstrap.rs).

With a single stratum of n items of which k are correct, a bootstrap resample draws n items
with replacement, so its mean is exactly Binomial(n, k/n) / n. The percentile interval from
many resamples therefore converges to the binomial quantiles. With numpy's default ("linear")
percentile over R = 10,000 sorted resample means, the 2.5th percentile interpolates between
order statistics 250 and 251 (1-based; virtual index 0.025 * 9999 = 249.975), and the 97.5th
between 9750 and 9751. Both order statistics equal the binomial quantile q whenever the
expected count below q and the expected count up to q are far from that rank, i.e. when
CDF(q - 1) and CDF(q) are both well away from the target probability. This script prints, for
candidate (n, k), the quantiles (scipy.stats.binom.ppf) and the margins
    lower margin = p - CDF(q - 1),  upper margin = CDF(q) - p
and selects a case where every margin exceeds 0.5 percentage points (50 resamples out of
10,000; the sampling sd of a count near 2.5% is about 16, so > 3 sd).

Run: python3 tools/bootstrap_reference.py   (needs scipy and numpy)
"""
import numpy as np
from scipy.stats import binom

LEVEL = 0.95
P_LO, P_HI = (1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2
MIN_MARGIN = 0.005


def report(n, k):
    dist = binom(n, k / n)
    out = {}
    for p in (P_LO, P_HI):
        q = int(dist.ppf(p))
        below, upto = dist.cdf(q - 1), dist.cdf(q)
        out[p] = (q, below, upto, p - below, upto - p)
    return out


def main():
    chosen = None
    for n, k in [(20, 14), (20, 15), (25, 18), (30, 21), (40, 28), (50, 35)]:
        r = report(n, k)
        margins = [m for (_, _, _, a, b) in r.values() for m in (a, b)]
        ok = min(margins) > MIN_MARGIN
        print(f"n={n} k={k} p={k / n:.4f}  ok={ok}  min margin={min(margins):.4f}")
        for p, (q, below, upto, a, b) in r.items():
            print(f"   p={p:.3f}: q={q} -> {q}/{n} = {q / n:.4f}   "
                  f"CDF(q-1)={below:.5f} CDF(q)={upto:.5f}  margins {a:.4f} / {b:.4f}")
        if ok and chosen is None:
            chosen = (n, k, r)
    n, k, r = chosen
    (qlo, *_), (qhi, *_) = r[P_LO], r[P_HI]
    # Monte-Carlo check with numpy's own resampler and percentile (different RNG than Rust).
    rng = np.random.default_rng(42)
    x = np.array([1.0] * k + [0.0] * (n - k))
    means = rng.choice(x, size=(10_000, n), replace=True).mean(axis=1)
    print("numpy bootstrap check:", np.percentile(means, [2.5, 97.5]))
    # Values hard-coded in bootstrap.rs percentile_matches_numpy_linear.
    print("np.percentile([0,1,2,3,10], [0,2.5,50,97.5,100]) =",
          np.percentile([0.0, 1.0, 2.0, 3.0, 10.0], [0, 2.5, 50, 97.5, 100]).tolist())
    print("np.percentile([1,2,3,4], 2.5) =", np.percentile([1.0, 2.0, 3.0, 4.0], 2.5))
    print(f"\nCHOSEN n={n} k={k}: 95% percentile interval = [{qlo}/{n}, {qhi}/{n}] "
          f"= [{qlo / n}, {qhi / n}]")


if __name__ == "__main__":
    main()
