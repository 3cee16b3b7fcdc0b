//! Several benchmarks against one downstream ranking: a case small enough to enumerate every
//! resample and compute by hand, the seeded comparison against each benchmark's own
//! `bootstrap_correlations` and against the documented draw reproduced here, pairing, and undefined
//! resamples.

use prbench_stats::rank::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const X12: [f64; 12] = [0.71, 0.64, 0.69, 0.58, 0.49, 0.52, 0.73, 0.66, 0.61, 0.55, 0.47, 0.68];
const Z12: [f64; 12] = [0.60, 0.62, 0.58, 0.66, 0.51, 0.57, 0.55, 0.63, 0.61, 0.50, 0.59, 0.64];
const Y12: [f64; 12] = [1.35, 1.10, 1.02, 1.41, 0.88, 1.05, 1.20, 0.95, 1.28, 1.12, 0.91, 1.30];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12
}

/// Every one of the 3³ = 27 draws of 3 models, once: the exact bootstrap distribution.
fn all_draws() -> Vec<[usize; 3]> {
    let mut out = Vec::new();
    for a in 0..3 {
        for b in 0..3 {
            for c in 0..3 {
                out.push([a, b, c]);
            }
        }
    }
    out
}

/// Downstream y = (1, 2, 3). Benchmark A ranks the models as y does, x_A = (1, 2, 3); benchmark
/// B swaps the last two, x_B = (1, 3, 2). Over the 27 draws:
/// - 3 draw one model three times: both x constant, rho and tau-b undefined for A, B and A − B;
/// - 18 draw two distinct models {i, j} (6 draws per pair): the pair tied with itself counts
///   nowhere, so rho = tau-b = ±1 by whether {i, j} is concordant. A: +1 always. B: +1 for
///   {0, 1} and {0, 2}, −1 for {1, 2};
/// - 6 draw all three: the full-sample values, A 1 and 1, B rho 1 − 6·2/(3·(9 − 1)) = 0.5 and
///   tau-b (2 − 1)/3 = 1/3.
///
/// So A − B on the 24 defined draws is, for rho: 0 (12 draws), 0.5 (6), 2 (6); for tau-b: 0
/// (12), 2/3 (6), 2 (6). With level 0.5 the interval is the 25th and 75th percentiles (numpy
/// linear): positions 0.25·23 = 5.75 and 0.75·23 = 17.25 of the sorted 24, i.e. [0, 0] → 0 and
/// value[17] + 0.25·(value[18] − value[17]): rho 0.5 + 0.25·1.5 = 0.875, tau-b 2/3 + 0.25·4/3 =
/// 1. B alone, rho sorted: −1 (6), 0.5 (6), 1 (12): 25th percentile −1 + 0.75·1.5 = 0.125, 75th 1.
#[test]
fn every_resample_of_three_models_by_hand() {
    let y = [1.0, 2.0, 3.0];
    let xa = [1.0, 2.0, 3.0];
    let xb = [1.0, 3.0, 2.0];
    let got = comparison_on_resamples(&[&xa, &xb], &y, DEFAULT_RBO_P, all_draws(), 0.5).unwrap();
    assert_eq!(got.resamples, 27);
    assert_eq!(got.pairs.len(), 1);
    let (a, b, d) = (&got.sets[0], &got.sets[1], &got.pairs[0]);
    assert_eq!((d.a, d.b), (0, 1));
    for s in
        [a.spearman, a.kendall_tau_b, a.weighted_tau, b.spearman, b.kendall_tau_b, b.weighted_tau]
    {
        assert_eq!((s.defined, s.undefined), (24, 3));
    }
    for s in [d.difference.spearman, d.difference.kendall_tau_b, d.difference.weighted_tau] {
        assert_eq!((s.defined, s.undefined), (24, 3));
    }
    for s in [a.ndcg, a.rbo, b.ndcg, b.rbo] {
        assert_eq!((s.defined, s.undefined), (27, 0));
    }
    assert_eq!((d.difference.ndcg.defined, d.difference.rbo.undefined), (27, 0));
    // A is perfect on every defined draw.
    let ci = a.spearman.ci.unwrap();
    assert!(close(ci.lo, 1.0) && close(ci.hi, 1.0), "{ci:?}");
    // B alone.
    assert!(close(b.spearman.point, 0.5) && close(b.kendall_tau_b.point, 1.0 / 3.0));
    let ci = b.spearman.ci.unwrap();
    assert!(close(ci.lo, 0.125) && close(ci.hi, 1.0), "{ci:?}");
    // The paired differences.
    let rho = d.difference.spearman;
    assert!(close(rho.point, 0.5), "{rho:?}");
    let ci = rho.ci.unwrap();
    assert!(close(ci.lo, 0.0) && close(ci.hi, 0.875), "{ci:?}");
    let tau = d.difference.kendall_tau_b;
    assert!(close(tau.point, 2.0 / 3.0), "{tau:?}");
    let ci = tau.ci.unwrap();
    assert!(close(ci.lo, 0.0) && close(ci.hi, 1.0), "{ci:?}");
    // At 95%: positions 0.575 and 22.425, both inside a run of equal values.
    let wide = comparison_on_resamples(&[&xa, &xb], &y, DEFAULT_RBO_P, all_draws(), 0.95).unwrap();
    let ci = wide.pairs[0].difference.spearman.ci.unwrap();
    assert!(close(ci.lo, 0.0) && close(ci.hi, 2.0), "{ci:?}");
}

#[test]
fn each_benchmark_equals_its_own_bootstrap_and_the_draw_is_shared() {
    let got = bootstrap_comparison(&[&X12, &Z12], &Y12, DEFAULT_RBO_P, 3_000, 7, 0.95).unwrap();
    assert_eq!(got.sets.len(), 2);
    assert_eq!(
        got.sets[0],
        bootstrap_correlations(&X12, &Y12, DEFAULT_RBO_P, 3_000, 7, 0.95).unwrap()
    );
    assert_eq!(
        got.sets[1],
        bootstrap_correlations(&Z12, &Y12, DEFAULT_RBO_P, 3_000, 7, 0.95).unwrap()
    );
    assert_eq!((got.resamples, got.seed, got.level, got.rbo_p), (3_000, 7, 0.95, DEFAULT_RBO_P));
    // The same seed gives the same result; another seed other intervals.
    assert_eq!(
        got,
        bootstrap_comparison(&[&X12, &Z12], &Y12, DEFAULT_RBO_P, 3_000, 7, 0.95).unwrap()
    );
    let other = bootstrap_comparison(&[&X12, &Z12], &Y12, DEFAULT_RBO_P, 3_000, 8, 0.95).unwrap();
    assert_ne!(got.pairs[0].difference.spearman.ci, other.pairs[0].difference.spearman.ci);
}

/// The differences recomputed here from the documented draw (one ChaCha8Rng::seed_from_u64(seed),
/// n indices random_range(0..n) per resample) and the public statistics, and numpy's linear
/// percentile written out.
#[test]
fn differences_follow_the_documented_draw() {
    let (resamples, seed) = (2_000, 11);
    let got =
        bootstrap_comparison(&[&X12, &Z12], &Y12, DEFAULT_RBO_P, resamples, seed, 0.9).unwrap();
    let n = Y12.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut rho, mut ndcg_d, mut undefined) = (Vec::new(), Vec::new(), 0);
    for _ in 0..resamples {
        let draw: Vec<usize> = (0..n).map(|_| rng.random_range(0..n)).collect();
        let pick = |v: &[f64]| draw.iter().map(|&i| v[i]).collect::<Vec<f64>>();
        let (xa, xb, y) = (pick(&X12), pick(&Z12), pick(&Y12));
        match (spearman(&xa, &y), spearman(&xb, &y)) {
            (Ok(a), Ok(b)) => rho.push(a - b),
            _ => undefined += 1,
        }
        ndcg_d.push(ndcg(&y, &xa).unwrap() - ndcg(&y, &xb).unwrap());
    }
    let interval = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let h = (v.len() - 1) as f64 * p;
            let (i, g) = (h.floor() as usize, h - h.floor());
            v[i] + g * (v[(i + 1).min(v.len() - 1)] - v[i])
        };
        (q(0.05), q(0.95))
    };
    let d = &got.pairs[0].difference;
    assert_eq!((d.spearman.defined, d.spearman.undefined), (rho.len(), undefined));
    let (lo, hi) = interval(rho);
    let ci = d.spearman.ci.unwrap();
    assert!(close(ci.lo, lo) && close(ci.hi, hi), "{ci:?} vs [{lo}, {hi}]");
    let (lo, hi) = interval(ndcg_d);
    let ci = d.ndcg.ci.unwrap();
    assert!(close(ci.lo, lo) && close(ci.hi, hi), "{ci:?} vs [{lo}, {hi}]");
    let full = correlations(&X12, &Y12, DEFAULT_RBO_P).unwrap().ndcg
        - correlations(&Z12, &Y12, DEFAULT_RBO_P).unwrap().ndcg;
    assert_eq!(d.ndcg.point, full);
}

#[test]
fn differences_are_paired_and_antisymmetric() {
    // A benchmark against itself: every resample's difference is exactly 0 (an unpaired
    // bootstrap would spread around 0).
    let same = bootstrap_comparison(&[&X12, &X12], &Y12, DEFAULT_RBO_P, 1_000, 3, 0.95).unwrap();
    for d in [
        same.pairs[0].difference.spearman,
        same.pairs[0].difference.weighted_tau,
        same.pairs[0].difference.rbo,
    ] {
        let ci = d.ci.unwrap();
        assert_eq!((d.point, ci.lo, ci.hi), (0.0, 0.0, 0.0), "{d:?}");
    }
    // Three benchmarks: pairs (0, 1), (0, 2), (1, 2); swapping two mirrors the interval.
    let three =
        bootstrap_comparison(&[&X12, &Z12, &Y12], &Y12, DEFAULT_RBO_P, 1_000, 3, 0.95).unwrap();
    assert_eq!(
        three.pairs.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>(),
        [(0, 1), (0, 2), (1, 2)]
    );
    let swapped = bootstrap_comparison(&[&Z12, &X12], &Y12, DEFAULT_RBO_P, 1_000, 3, 0.95).unwrap();
    let (ab, ba) =
        (three.pairs[0].difference.kendall_tau_b, swapped.pairs[0].difference.kendall_tau_b);
    assert_eq!(ab.point, -ba.point);
    let (c1, c2) = (ab.ci.unwrap(), ba.ci.unwrap());
    assert!(close(c1.lo, -c2.hi) && close(c1.hi, -c2.lo), "{c1:?} {c2:?}");
    // y against itself is a perfect benchmark: its rho is 1 on every defined resample, so
    // X12 − Y12 is never positive.
    assert!(three.pairs[1].difference.spearman.ci.unwrap().hi <= 1e-12);
}

#[test]
fn resamples_undefined_for_either_benchmark_are_counted_not_dropped_silently() {
    // Benchmark B ties its first two models: resamples drawing only models {0, 1} (plus those
    // drawing one model three times) leave B's rho undefined, while A's is defined on more.
    let y = [1.0, 2.0, 3.0];
    let (xa, xb) = ([1.0, 2.0, 3.0], [0.5, 0.5, 0.7]);
    let got = comparison_on_resamples(&[&xa, &xb], &y, DEFAULT_RBO_P, all_draws(), 0.95).unwrap();
    // A: undefined on the 3 single-model draws. B: constant on draws within {0, 1} (2³ = 8) and
    // on (2, 2, 2): 9. The pair: undefined where either is, 9.
    assert_eq!(got.sets[0].spearman.undefined, 3);
    assert_eq!(got.sets[1].spearman.undefined, 9);
    let d = got.pairs[0].difference.spearman;
    assert_eq!((d.defined, d.undefined), (18, 9));
    assert_eq!(got.pairs[0].difference.rbo.undefined, 0);
    // Serialized with its counts.
    let json = serde_json::to_value(&got).unwrap();
    assert_eq!(json["pairs"][0]["difference"]["spearman"]["undefined"], 9);
}

#[test]
fn comparison_errors() {
    assert_eq!(
        bootstrap_comparison(&[&X12, &[0.5; 12]], &Y12, DEFAULT_RBO_P, 100, 1, 0.95),
        Err(RankError::ConstantInput { input: Input::Benchmark })
    );
    assert_eq!(
        bootstrap_comparison(&[&X12], &Y12, DEFAULT_RBO_P, 0, 1, 0.95),
        Err(RankError::NoResamples)
    );
    assert_eq!(
        bootstrap_comparison(&[&X12], &Y12, DEFAULT_RBO_P, 10, 1, 1.5),
        Err(RankError::InvalidLevel { level: 1.5 })
    );
    assert_eq!(
        bootstrap_comparison(&[&X12, &X12[..11]], &Y12, DEFAULT_RBO_P, 10, 1, 0.95),
        Err(RankError::LengthMismatch { benchmark: 11, downstream: 12 })
    );
}
