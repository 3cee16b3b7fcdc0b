//! prbench_stats::best_of_k against brute force over all k-subsets and hand-derived closed forms.

use prbench_stats::best_of_k::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Brute force: the mean over all k-subsets (bitmasks) of the mean judge score of the subset's
/// samples sharing its top RM score.
fn brute_force(rm: &[f64], judge: &[f64], k: usize) -> f64 {
    let n = rm.len();
    let (mut total, mut count) = (0.0, 0u64);
    for mask in 0u32..(1 << n) {
        if mask.count_ones() as usize != k {
            continue;
        }
        let members: Vec<usize> = (0..n).filter(|&i| mask & (1 << i) != 0).collect();
        let top = members.iter().map(|&i| rm[i]).fold(f64::NEG_INFINITY, f64::max);
        let tied: Vec<f64> = members.iter().filter(|&&i| rm[i] == top).map(|&i| judge[i]).collect();
        total += tied.iter().sum::<f64>() / tied.len() as f64;
        count += 1;
    }
    total / count as f64
}

#[test]
fn matches_brute_force_on_random_tied_cases() {
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    let mut checked = 0;
    for case in 0..300 {
        let n = rng.random_range(1..=12usize);
        // RM scores on a small grid (ties frequent); judge scores on the 0–2 rubric grid in
        // halves, or continuous.
        let grid = rng.random_range(1..=4u32);
        let rm: Vec<f64> = (0..n).map(|_| rng.random_range(0..=grid) as f64 * 0.5 - 1.0).collect();
        let judge: Vec<f64> = if case % 2 == 0 {
            (0..n).map(|_| rng.random_range(0..=4u32) as f64 / 2.0).collect()
        } else {
            (0..n).map(|_| rng.random_range(-3.0..3.0)).collect()
        };
        let curve = best_of_k_curve(&rm, &judge, &(1..=n).collect::<Vec<_>>()).unwrap();
        for (k, point) in (1..=n).zip(&curve) {
            let want = brute_force(&rm, &judge, k);
            let got = expected_best_of_k(&rm, &judge, k).unwrap();
            assert!(
                (got - want).abs() <= 1e-12,
                "case {case} k={k}: {got} vs brute force {want}\nrm={rm:?}\njudge={judge:?}"
            );
            assert_eq!(point.k, k);
            assert_eq!(point.expected, got);
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked}");
}

#[test]
fn k1_is_the_mean_and_kn_is_the_top_group_mean() {
    let rm = [0.3, 1.5, -0.2, 1.5, 0.9, 1.5, 0.0];
    let judge = [1.0, 0.5, 2.0, 1.5, 0.0, 2.0, 1.25];
    let mean = judge.iter().sum::<f64>() / judge.len() as f64;
    assert!((expected_best_of_k(&rm, &judge, 1).unwrap() - mean).abs() < 1e-15);
    // Top RM group: samples 1, 3, 5 with judge 0.5, 1.5, 2.0.
    let top = (0.5 + 1.5 + 2.0) / 3.0;
    assert!((expected_best_of_k(&rm, &judge, 7).unwrap() - top).abs() < 1e-15);
}

/// A random permutation of 0..n (seeded Fisher–Yates) so that input order is not sorted.
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        v.swap(i, rng.random_range(0..=i));
    }
    v
}

#[test]
fn n256_k128_closed_forms() {
    let (n, k) = (256usize, 128usize);
    let perm = shuffled(n, 5);
    // Distinct RM scores; judge = the sample's RM rank r in 1..=N. The best of a uniform
    // k-subset of {1, …, N} has expectation k(N + 1)/(k + 1).
    let rm: Vec<f64> = perm.iter().map(|&r| r as f64 * 0.01 - 1.0).collect();
    let judge: Vec<f64> = perm.iter().map(|&r| (r + 1) as f64).collect();
    let got = expected_best_of_k(&rm, &judge, k).unwrap();
    let want = (k * (n + 1)) as f64 / (k + 1) as f64;
    assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    // Judge = 1 on the single top-RM sample only: it is in the subset with probability k/N.
    let judge: Vec<f64> = perm.iter().map(|&r| if r == n - 1 { 1.0 } else { 0.0 }).collect();
    let got = expected_best_of_k(&rm, &judge, k).unwrap();
    assert!((got - 0.5).abs() <= 1e-12, "{got}");
    // Judge = 1 on the single bottom-RM sample: chosen only if the subset is {bottom} — only
    // possible for k = 1, where it has probability 1/N.
    let judge: Vec<f64> = perm.iter().map(|&r| if r == 0 { 1.0 } else { 0.0 }).collect();
    assert_eq!(expected_best_of_k(&rm, &judge, k).unwrap(), 0.0);
    assert!((expected_best_of_k(&rm, &judge, 1).unwrap() - 1.0 / 256.0).abs() < 1e-15);
}

#[test]
fn n256_k128_with_a_tied_top_group() {
    let (n, k) = (256usize, 128usize);
    let perm = shuffled(n, 9);
    // The two best samples share the top RM score; judge 1 on one of them, 0 elsewhere. The top
    // group is in the subset with probability 1 − C(254, 128)/C(256, 128)
    // = 1 − (128·127)/(256·255), and then the tied samples are equally likely to be chosen. By
    // exchangeability each top sample's share is half of it.
    let rm: Vec<f64> = perm.iter().map(|&r| r.min(n - 2) as f64).collect();
    let judge: Vec<f64> = perm.iter().map(|&r| if r == n - 1 { 1.0 } else { 0.0 }).collect();
    let p_top = 1.0 - (128.0 * 127.0) / (256.0 * 255.0);
    let got = expected_best_of_k(&rm, &judge, k).unwrap();
    assert!((got - p_top / 2.0).abs() <= 1e-12, "{got} vs {}", p_top / 2.0);
    // All samples tied: every k gives the plain mean.
    let flat = vec![3.0; n];
    let judge: Vec<f64> = (0..n).map(|i| (i % 5) as f64).collect();
    let mean = judge.iter().sum::<f64>() / n as f64;
    for k in [1, 2, 100, 256] {
        assert!((expected_best_of_k(&flat, &judge, k).unwrap() - mean).abs() < 1e-12);
    }
}

#[test]
fn curve_over_default_ks_is_nondecreasing_when_judge_follows_rm() {
    // If the judge agrees with the RM, more samples can only help.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let rm: Vec<f64> = (0..16).map(|_| rng.random_range(0..6u32) as f64).collect();
    let judge: Vec<f64> = rm.iter().map(|r| r / 5.0 * 2.0).collect();
    let ks = default_ks(16);
    assert_eq!(ks, vec![1, 2, 4, 8, 16]);
    let curve = best_of_k_curve(&rm, &judge, &ks).unwrap();
    for w in curve.windows(2) {
        assert!(w[0].expected <= w[1].expected + 1e-15, "{curve:?}");
    }
}

#[test]
fn errors() {
    let rm = [0.1, 0.2, 0.3];
    let judge = [1.0, 2.0, 0.0];
    assert_eq!(expected_best_of_k(&rm, &judge, 0), Err(BestOfKError::ZeroK));
    assert_eq!(expected_best_of_k(&rm, &judge, 4), Err(BestOfKError::KExceedsN { k: 4, n: 3 }));
    assert_eq!(
        expected_best_of_k(&rm, &judge[..2], 1),
        Err(BestOfKError::LengthMismatch { rm: 3, judge: 2 })
    );
    assert_eq!(expected_best_of_k(&[], &[], 1), Err(BestOfKError::Empty));
    assert!(matches!(
        expected_best_of_k(&[0.1, f64::NAN, 0.3], &judge, 1),
        Err(BestOfKError::NonFinite { list: ScoreList::Rm, index: 1, .. })
    ));
    assert!(matches!(
        expected_best_of_k(&rm, &[1.0, 2.0, f64::INFINITY], 1),
        Err(BestOfKError::NonFinite { list: ScoreList::Judge, index: 2, .. })
    ));
    // A curve fails on its first bad k (the authors' k = 128 with 16 samples).
    assert_eq!(
        best_of_k_curve(&rm, &judge, &[1, 2, 128]),
        Err(BestOfKError::KExceedsN { k: 128, n: 3 })
    );
    assert_eq!(
        BestOfKError::KExceedsN { k: 128, n: 16 }.to_string(),
        "k = 128 exceeds the 16 samples available"
    );
}
