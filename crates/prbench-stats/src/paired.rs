//! Paired comparison of two models on the same items (PROTOCOL.md §5): the exact McNemar test
//! on the discordant items, and Holm's step-down correction when several comparisons are
//! reported together.

use serde::{Deserialize, Serialize};

use crate::outcome::ItemResult;

/// The exact McNemar test of two models on the same items.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct McNemar {
    /// Items the first model got right and the second did not (strict: ties, unparsed and
    /// errors are not right).
    pub only_first: u64,
    /// Items the second model got right and the first did not.
    pub only_second: u64,
    /// Two-sided p-value: `min(1, 2 · P(X ≤ min(b, c)))` for X ~ Binomial(b + c, 1/2)
    /// (McNemar 1947, exact form; equals scipy.stats.binomtest(min(b, c), b + c, 0.5)); 1 when
    /// no item is discordant.
    pub p_value: f64,
}

/// Counts the discordant items of two aligned result lists and runs [`mcnemar_exact`].
///
/// # Panics
/// If the lists differ in length (they must describe the same items in the same order).
pub fn mcnemar(first: &[ItemResult], second: &[ItemResult]) -> McNemar {
    assert_eq!(first.len(), second.len(), "paired results must cover the same items");
    let (mut b, mut c) = (0, 0);
    for (x, y) in first.iter().zip(second) {
        match (*x == ItemResult::Correct, *y == ItemResult::Correct) {
            (true, false) => b += 1,
            (false, true) => c += 1,
            _ => {}
        }
    }
    mcnemar_exact(b, c)
}

/// The exact McNemar test from the discordant counts `b` (first right only) and `c` (second
/// right only). Up to 1,000 discordant items the binomial tail is summed directly (exact
/// integers for small counts); above that, relative to its largest term with that term in log
/// space (no underflow of 2^-n; ~1e-12 relative).
pub fn mcnemar_exact(b: u64, c: u64) -> McNemar {
    let n = b + c;
    let p_value = if n == 0 {
        1.0
    } else {
        let k = b.min(c);
        let tail = if n <= 1000 {
            // Binomial coefficients up to C(1000, 500) ≈ 2.7e299 and 2^1000 fit in an f64; for
            // small n every term is an exact integer.
            let mut term = 1.0f64;
            let mut sum = 1.0f64;
            for j in 1..=k {
                term = term * (n - j + 1) as f64 / j as f64;
                sum += term;
            }
            sum / 2f64.powi(n as i32)
        } else {
            // Terms relative to the largest one, C(n, k) (they fall off below k), times C(n, k) / 2^n
            // in log space.
            let (mut ratio, mut sum) = (1.0f64, 1.0f64);
            for j in (1..=k).rev() {
                ratio *= j as f64 / (n - j + 1) as f64;
                sum += ratio;
            }
            let log_choose: f64 =
                (1..=k).map(|j| ((n - j + 1) as f64).ln() - (j as f64).ln()).sum();
            sum * (log_choose - n as f64 * std::f64::consts::LN_2).exp()
        };
        (2.0 * tail).min(1.0)
    };
    McNemar { only_first: b, only_second: c, p_value }
}

/// Holm's step-down adjusted p-values (Holm 1979), in the input order: sort ascending,
/// adjusted_(i) = max over j ≤ i of min(1, (m − j) · p_(j)) with j 0-based. Reject a hypothesis
/// at family-wise level α iff its adjusted p-value ≤ α. Equals statsmodels'
/// `multipletests(p, method="holm")[1]`.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p_values[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (b, c, p) from tools/paired_reference.py (scipy.stats.binomtest, scipy 1.16.3).
    const SCIPY: [(u64, u64, f64); 10] = [
        (0, 0, 1.0),
        (1, 0, 1.0),
        (3, 1, 0.625),
        (5, 5, 1.0),
        (10, 2, 0.03857421875),
        (25, 40, 0.08168153394154003),
        (7, 0, 0.015625),
        (100, 130, 0.05561357778139264),
        (512, 600, 0.00905172637946708),
        (1500, 1350, 0.005245133154781659),
    ];

    #[test]
    fn exact_p_values_match_scipy() {
        for (b, c, want) in SCIPY {
            let got = mcnemar_exact(b, c).p_value;
            assert!((got - want).abs() <= 1e-11 * want, "b={b} c={c}: {got} vs {want}");
            assert_eq!(got, mcnemar_exact(c, b).p_value, "symmetric in b and c");
        }
    }

    #[test]
    fn counts_come_from_strict_correctness() {
        use ItemResult::*;
        let first = [Correct, Correct, Wrong, Tie, Unparsed, Correct, Error];
        let second = [Correct, Wrong, Correct, Correct, Wrong, Tie, Correct];
        let t = mcnemar(&first, &second);
        // Only-first: items 1 and 5 (a tie is not right); only-second: items 2, 3 and 6.
        assert_eq!((t.only_first, t.only_second), (2, 3));
        // Hand calculation: n = 5, P(X ≤ 2) = (1 + 5 + 10) / 32 = 0.5, doubled = 1.
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn holm_by_hand() {
        // m = 4, sorted p = 0.01 (i=1), 0.02 (i=3), 0.03 (i=0), 0.5 (i=2):
        // 4·0.01 = 0.04; max(0.04, 3·0.02 = 0.06) = 0.06; max(0.06, 2·0.03 = 0.06) = 0.06;
        // max(0.06, 1·0.5) = 0.5.
        let adj = holm(&[0.03, 0.01, 0.5, 0.02]);
        let want = [0.06, 0.04, 0.5, 0.06];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-15, "{adj:?}");
        }
        // Capped at 1 and monotone in the sorted order.
        assert_eq!(holm(&[0.4, 0.6]), vec![0.8, 0.8]);
        assert_eq!(holm(&[0.9, 0.95, 0.99]), vec![1.0, 1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    /// (p-values, Holm-adjusted) from tools/paired_reference.py
    /// (statsmodels.stats.multitest.multipletests(p, method="holm"), statsmodels 0.14.5).
    #[allow(clippy::type_complexity)]
    const STATSMODELS_HOLM: [(&[f64], &[f64]); 5] = [
        (&[0.03, 0.01, 0.5, 0.02], &[0.06, 0.04, 0.5, 0.06]),
        (&[0.001, 0.2, 0.04, 0.04, 0.9, 0.0125], &[0.006, 0.4, 0.16, 0.16, 0.9, 0.0625]),
        (
            &[0.0383, 0.0817, 1.0, 0.0156, 0.00905, 0.0556, 0.00525],
            &[0.1532, 0.1668, 1.0, 0.078, 0.0543, 0.1668, 0.036750000000000005],
        ),
        (&[1e-12, 0.5], &[2e-12, 0.5]),
        (&[0.7], &[0.7]),
    ];

    #[test]
    fn holm_matches_statsmodels() {
        for (ps, want) in STATSMODELS_HOLM {
            let got = holm(ps);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() <= 1e-12 * w.max(1e-300), "{ps:?}: {got:?} vs {want:?}");
            }
        }
    }
}
