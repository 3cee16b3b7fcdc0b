//! Parity of prbench_stats::rank with scipy / scikit-learn / rbo on the fixture written by
//! tools/correlation_reference.py, plus the permutation test, bootstrap and leave-one-out.

use prbench_stats::rank::*;
use serde_json::Value;

const TOL: f64 = 1e-9;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/correlation_reference.json");
    let text = std::fs::read_to_string(path).expect("read correlation_reference.json");
    serde_json::from_str(&text).expect("parse correlation_reference.json")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|a| a.as_f64().expect("number")).collect()
}

/// Checks one statistic against its expectation: `{"value": v}` within TOL, or
/// `{"error": kind[, "input": which]}` matched against the serialized RankError.
fn check(case: usize, label: &str, name: &str, got: &Result<f64, RankError>, want: &Value) {
    if let Some(w) = want.get("value") {
        let w = w.as_f64().unwrap();
        match got {
            Ok(g) => assert!(
                (g - w).abs() <= TOL,
                "case {case} ({label}) {name}: got {g}, reference {w}, |Δ| = {}",
                (g - w).abs()
            ),
            Err(e) => panic!("case {case} ({label}) {name}: error {e}, reference {w}"),
        }
    } else {
        let e = match got {
            Err(e) => serde_json::to_value(e).unwrap(),
            Ok(g) => panic!("case {case} ({label}) {name}: got {g}, reference {want}"),
        };
        assert_eq!(e["error"], want["error"], "case {case} ({label}) {name}: {e}");
        if want["error"] == "constant_input" {
            assert_eq!(e["input"], want["input"], "case {case} ({label}) {name}: {e}");
        }
    }
}

#[test]
fn fixture_is_substantial() {
    let f = fixture();
    let cases = f["cases"].as_array().unwrap();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let ns: Vec<u64> = cases.iter().map(|c| c["n"].as_u64().unwrap()).collect();
    assert_eq!(*ns.iter().min().unwrap(), 3);
    assert_eq!(*ns.iter().max().unwrap(), 25);
    for lib in ["scipy", "scikit-learn", "rbo", "numpy"] {
        assert!(f["versions"][lib].is_string(), "version of {lib} missing");
    }
    let errors = cases.iter().filter(|c| c["spearman"].get("error").is_some()).count();
    assert!(errors >= 3, "nan cases missing");
    let perms = cases.iter().filter(|c| !c["permutation_p"].is_null()).count();
    assert!(perms >= 10, "{perms} exact permutation p-values");
}

#[test]
fn statistics_match_reference() {
    let f = fixture();
    for case in f["cases"].as_array().unwrap() {
        let i = case["index"].as_u64().unwrap() as usize;
        let label = case["label"].as_str().unwrap();
        let (x, y) = (floats(&case["x"]), floats(&case["y"]));
        check(i, label, "spearman", &spearman(&x, &y), &case["spearman"]);
        check(i, label, "kendall_tau_b", &kendall_tau_b(&x, &y), &case["kendall_tau_b"]);
        check(i, label, "weighted_tau", &weighted_tau(&x, &y), &case["weighted_tau"]);
        check(i, label, "ndcg", &ndcg(&y, &x), &case["ndcg"]);
        for r in case["rbo"].as_array().unwrap() {
            let p = r["p"].as_f64().unwrap();
            check(i, label, &format!("rbo p={p}"), &rbo_ext(&x, &y, p), r);
        }
        // correlations(): all five or the first error.
        let all = correlations(&x, &y, DEFAULT_RBO_P);
        let defined = ["spearman", "kendall_tau_b", "weighted_tau", "ndcg"]
            .iter()
            .all(|k| case[*k].get("value").is_some());
        match all {
            Ok(set) => {
                assert!(
                    defined,
                    "case {i} ({label}): correlations() defined, reference has an error"
                );
                assert_eq!(set.spearman, spearman(&x, &y).unwrap());
                assert_eq!(set.ndcg, ndcg(&y, &x).unwrap());
                assert_eq!(set.rbo, rbo_ext(&x, &y, DEFAULT_RBO_P).unwrap());
            }
            Err(e) => assert!(!defined, "case {i} ({label}): correlations() failed: {e}"),
        }
    }
}

#[test]
fn exact_permutation_p_matches_scipy() {
    let f = fixture();
    let mut checked = 0;
    for case in f["cases"].as_array().unwrap() {
        let i = case["index"].as_u64().unwrap();
        let label = case["label"].as_str().unwrap();
        let (x, y) = (floats(&case["x"]), floats(&case["y"]));
        let got = spearman_permutation_p(&x, &y, 9_999, 0);
        match case["permutation_p"].as_f64() {
            Some(want) => {
                let t = got.unwrap_or_else(|e| panic!("case {i} ({label}): {e}"));
                assert!(t.exact, "case {i} ({label}) not exact");
                assert_eq!(t.permutations, (1..=x.len() as u64).product::<u64>());
                assert!(
                    (t.p_value - want).abs() <= 1e-12,
                    "case {i} ({label}): p {} vs scipy {want}",
                    t.p_value
                );
                checked += 1;
            }
            None if x.len() <= 7 => {
                // Small n without a reference p: scipy's rho was nan.
                assert!(
                    matches!(got, Err(RankError::ConstantInput { .. })),
                    "case {i} ({label}): {got:?}"
                );
            }
            None => {}
        }
    }
    assert!(checked >= 10);
}

/// The n = 10 case for the Monte-Carlo test: ties in y, rho about 0.45.
const X10: [f64; 10] = [0.61, 0.55, 0.72, 0.48, 0.66, 0.59, 0.70, 0.52, 0.64, 0.57];
const Y10: [f64; 10] = [1.2, 0.9, 1.4, 1.1, 0.8, 1.2, 1.0, 0.7, 1.5, 0.9];

/// Test-only exact enumeration of all 10! pairings by lexicographic next-permutation, with its
/// own rank code: returns (#{S ≤ S_obs}, #{S ≥ S_obs}, 10!) for S = Σ rank(x_i)·rank(y_π(i)).
fn enumerate_tails(x: &[f64], y: &[f64]) -> (u64, u64, u64) {
    fn ranks(v: &[f64]) -> Vec<f64> {
        // Average rank: 1 + #{smaller} + (#{equal} − 1)/2.
        v.iter()
            .map(|&a| {
                let less = v.iter().filter(|&&b| b < a).count() as f64;
                let equal = v.iter().filter(|&&b| b == a).count() as f64;
                1.0 + less + (equal - 1.0) / 2.0
            })
            .collect()
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len();
    // Ranks are multiples of 1/2, so every S is an exact multiple of 1/4 in f64.
    let s = |perm: &[usize]| -> f64 { (0..n).map(|i| rx[i] * ry[perm[i]]).sum() };
    let mut perm: Vec<usize> = (0..n).collect();
    let observed = s(&perm);
    let (mut le, mut ge, mut total) = (0u64, 0u64, 0u64);
    loop {
        let v = s(&perm);
        le += (v <= observed) as u64;
        ge += (v >= observed) as u64;
        total += 1;
        // next permutation
        let Some(i) = (0..n - 1).rev().find(|&i| perm[i] < perm[i + 1]) else {
            break;
        };
        let j = (i + 1..n).rev().find(|&j| perm[j] > perm[i]).unwrap();
        perm.swap(i, j);
        perm[i + 1..].reverse();
    }
    (le, ge, total)
}

#[test]
fn monte_carlo_permutation_p_is_seeded_and_close_to_exact() {
    let (le, ge, total) = enumerate_tails(&X10, &Y10);
    assert_eq!(total, 3_628_800);
    let tail = le.min(ge) as f64 / total as f64;
    let exact_p = (2.0 * tail).min(1.0);
    assert!(exact_p > 0.05 && exact_p < 0.5, "case should have a moderate p: {exact_p}");
    // The library's exact branch agrees with the test-only enumeration.
    let ex = spearman_permutation_p(&X10, &Y10, 3_628_800, 0).unwrap();
    assert!(ex.exact);
    assert!((ex.p_value - exact_p).abs() <= 1e-12, "{} vs {exact_p}", ex.p_value);
    // Monte Carlo: deterministic per seed, within 4 binomial standard errors of the exact value.
    let r = 20_000;
    let a = spearman_permutation_p(&X10, &Y10, r, 7).unwrap();
    let b = spearman_permutation_p(&X10, &Y10, r, 7).unwrap();
    assert_eq!(a, b);
    assert!(!a.exact);
    assert_eq!(a.permutations, r as u64);
    assert_eq!(a.rho, spearman(&X10, &Y10).unwrap());
    let se = 2.0 * (tail * (1.0 - tail) / r as f64).sqrt();
    for seed in [7, 8, 9] {
        let p = spearman_permutation_p(&X10, &Y10, r, seed).unwrap().p_value;
        assert!((p - exact_p).abs() <= 4.0 * se, "seed {seed}: {p} vs exact {exact_p} (se {se})");
    }
    let c = spearman_permutation_p(&X10, &Y10, r, 8).unwrap();
    assert_ne!(a.p_value, c.p_value, "different seeds should (generally) differ");
}

#[test]
fn permutation_errors() {
    assert_eq!(spearman_permutation_p(&X10, &Y10, 0, 1), Err(RankError::NoResamples));
    assert_eq!(
        spearman_permutation_p(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0], 100, 1),
        Err(RankError::ConstantInput { input: Input::Benchmark })
    );
}

#[test]
fn perfect_agreement_exact_p() {
    // n = 5, distinct values, identical order: only the identity pairing reaches rho = 1, so
    // p = 2 · 1/120 (scipy: 0.016666666666666666, fixture case 0).
    let x = [1.0, 2.0, 3.0, 4.0, 5.0];
    let t = spearman_permutation_p(&x, &x, 10_000, 0).unwrap();
    assert!(t.exact);
    assert!((t.p_value - 2.0 / 120.0).abs() < 1e-15);
}

const X12: [f64; 12] = [0.71, 0.64, 0.58, 0.69, 0.52, 0.66, 0.61, 0.49, 0.73, 0.55, 0.60, 0.67];
const Y12: [f64; 12] = [1.35, 1.10, 1.02, 1.41, 0.88, 1.05, 1.20, 0.95, 1.28, 1.12, 0.91, 1.30];

#[test]
fn bootstrap_is_seeded() {
    let a = bootstrap_correlations(&X12, &Y12, DEFAULT_RBO_P, 2_000, 42, 0.95).unwrap();
    let b = bootstrap_correlations(&X12, &Y12, DEFAULT_RBO_P, 2_000, 42, 0.95).unwrap();
    assert_eq!(a, b);
    let c = bootstrap_correlations(&X12, &Y12, DEFAULT_RBO_P, 2_000, 43, 0.95).unwrap();
    assert_ne!(a.stats.spearman.ci, c.stats.spearman.ci);
    assert_ne!(a.stats.weighted_tau.ci, c.stats.weighted_tau.ci);
    let point = correlations(&X12, &Y12, DEFAULT_RBO_P).unwrap();
    let pairs = [
        (a.stats.spearman, point.spearman),
        (a.stats.kendall_tau_b, point.kendall_tau_b),
        (a.stats.weighted_tau, point.weighted_tau),
        (a.stats.ndcg, point.ndcg),
        (a.stats.rbo, point.rbo),
    ];
    for (s, p) in pairs {
        assert_eq!(s.point, p);
        assert_eq!(s.defined + s.undefined, 2_000);
        let ci = s.ci.unwrap();
        assert!(ci.lo <= ci.hi && ci.lo >= -1.0 && ci.hi <= 1.0, "{ci:?}");
    }
    // Spearman's interval holds the point estimate for this clearly positive case.
    let ci = a.stats.spearman.ci.unwrap();
    assert!(ci.lo < point.spearman && point.spearman < ci.hi, "{ci:?}");
    // Serializable for the CLI.
    let json = serde_json::to_value(&a).unwrap();
    assert_eq!(json["stats"]["rbo"]["defined"].as_u64(), Some(a.stats.rbo.defined as u64));
}

#[test]
fn bootstrap_counts_undefined_resamples() {
    // n = 3 with two equal benchmark scores: a resample is constant in x when every draw is
    // from models {0, 1} (8/27) or all model 2 (1/27), so rho, tau-b and weighted tau are
    // undefined on 1/3 of resamples; NDCG and RBO are always defined.
    let x = [0.5, 0.5, 0.7];
    let y = [1.0, 2.0, 3.0];
    let r = 10_000;
    let bs = bootstrap_correlations(&x, &y, DEFAULT_RBO_P, r, 1, 0.95).unwrap();
    let se = ((1.0 / 3.0) * (2.0 / 3.0) / r as f64).sqrt();
    for s in [bs.stats.spearman, bs.stats.kendall_tau_b, bs.stats.weighted_tau] {
        assert_eq!(s.defined + s.undefined, r);
        let share = s.undefined as f64 / r as f64;
        assert!((share - 1.0 / 3.0).abs() <= 4.0 * se, "undefined share {share}");
        assert!(s.ci.is_some());
    }
    // The three tau/rho statistics are undefined on exactly the same resamples.
    assert_eq!(bs.stats.spearman.undefined, bs.stats.kendall_tau_b.undefined);
    assert_eq!(bs.stats.spearman.undefined, bs.stats.weighted_tau.undefined);
    assert_eq!((bs.stats.ndcg.undefined, bs.stats.rbo.undefined), (0, 0));
    assert_eq!((bs.stats.ndcg.defined, bs.stats.rbo.defined), (r, r));
}

#[test]
fn bootstrap_errors() {
    assert_eq!(
        bootstrap_correlations(&X12, &Y12, DEFAULT_RBO_P, 0, 1, 0.95),
        Err(RankError::NoResamples)
    );
    assert_eq!(
        bootstrap_correlations(&X12, &Y12, DEFAULT_RBO_P, 10, 1, 1.0),
        Err(RankError::InvalidLevel { level: 1.0 })
    );
    assert_eq!(
        bootstrap_correlations(&[1.0; 4], &[1.0, 2.0, 3.0, 4.0], DEFAULT_RBO_P, 10, 1, 0.9),
        Err(RankError::ConstantInput { input: Input::Benchmark })
    );
    assert_eq!(
        bootstrap_correlations(&X12, &Y12, 1.0, 10, 1, 0.9),
        Err(RankError::InvalidPersistence { p: 1.0 })
    );
}

#[test]
fn leave_one_out_matches_manual_drops() {
    let loo = leave_one_out(&X12, &Y12, 0.5).unwrap();
    assert_eq!(loo.drops.len(), 12);
    let mut min_rho = f64::INFINITY;
    let mut max_rbo = f64::NEG_INFINITY;
    for (i, d) in loo.drops.iter().enumerate() {
        assert_eq!(d.dropped, i);
        let xs: Vec<f64> =
            X12.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &v)| v).collect();
        let ys: Vec<f64> =
            Y12.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &v)| v).collect();
        let want = correlations(&xs, &ys, 0.5).unwrap();
        assert_eq!(d.stats.spearman, Ok(want.spearman));
        assert_eq!(d.stats.kendall_tau_b, Ok(want.kendall_tau_b));
        assert_eq!(d.stats.weighted_tau, Ok(want.weighted_tau));
        assert_eq!(d.stats.ndcg, Ok(want.ndcg));
        assert_eq!(d.stats.rbo, Ok(want.rbo));
        min_rho = min_rho.min(want.spearman);
        max_rbo = max_rbo.max(want.rbo);
    }
    assert_eq!(loo.range.spearman.min, Some(min_rho));
    assert_eq!(loo.range.rbo.max, Some(max_rbo));
    assert_eq!(loo.range.ndcg.undefined, 0);
}

#[test]
fn leave_one_out_reports_undefined_drops() {
    // Dropping model 0 leaves a constant benchmark: rank correlations undefined for that drop
    // only; NDCG and RBO stay defined.
    let x = [0.9, 0.5, 0.5, 0.5, 0.5];
    let y = [2.0, 1.0, 1.5, 0.5, 1.2];
    let loo = leave_one_out(&x, &y, DEFAULT_RBO_P).unwrap();
    let c = RankError::ConstantInput { input: Input::Benchmark };
    assert_eq!(loo.drops[0].stats.spearman, Err(c.clone()));
    assert_eq!(loo.drops[0].stats.kendall_tau_b, Err(c.clone()));
    assert_eq!(loo.drops[0].stats.weighted_tau, Err(c));
    assert!(loo.drops[0].stats.ndcg.is_ok() && loo.drops[0].stats.rbo.is_ok());
    assert!(loo.drops[1..].iter().all(|d| d.stats.spearman.is_ok()));
    assert_eq!(loo.range.spearman.undefined, 1);
    assert_eq!(loo.range.weighted_tau.undefined, 1);
    assert_eq!(loo.range.rbo.undefined, 0);
    let (lo, hi) = (loo.range.spearman.min.unwrap(), loo.range.spearman.max.unwrap());
    assert!(lo <= hi);
    let json = serde_json::to_value(&loo).unwrap();
    assert_eq!(json["drops"][0]["stats"]["spearman"]["Err"]["error"], "constant_input");
    // Whole-input errors.
    assert_eq!(
        leave_one_out(&x, &[2.0, -1.0, 1.5, 0.5, 1.2], DEFAULT_RBO_P).map(|_| ()),
        Err(RankError::NegativeRelevance { index: 1, value: -1.0 })
    );
    assert_eq!(
        leave_one_out(&x[..2], &y[..2], DEFAULT_RBO_P).map(|_| ()),
        Err(RankError::TooFewModels { n: 2, min: 3 })
    );
}

#[test]
fn input_errors() {
    let x = [1.0, 2.0, 3.0];
    assert_eq!(
        correlations(&x, &[1.0, 2.0, 3.0, 4.0], DEFAULT_RBO_P),
        Err(RankError::LengthMismatch { benchmark: 3, downstream: 4 })
    );
    assert!(matches!(
        correlations(&[1.0, f64::INFINITY, 3.0], &x, DEFAULT_RBO_P),
        Err(RankError::NonFinite { input: Input::Benchmark, index: 1, .. })
    ));
    assert_eq!(correlations(&x, &x, 0.0), Err(RankError::InvalidPersistence { p: 0.0 }));
    assert_eq!(
        spearman(&[1.0; 3], &[2.0; 3]),
        Err(RankError::ConstantInput { input: Input::Both })
    );
    let json = serde_json::to_value(RankError::TooFewModels { n: 2, min: 3 }).unwrap();
    assert_eq!(json, serde_json::json!({"error": "too_few_models", "n": 2, "min": 3}));
}
