//! The exact expected judge score of a best-of-k choice (PROTOCOL.md §6).
//!
//! For one question a policy produced N samples; the reward model (RM) under test scored each
//! (higher is better) and the rubric judge scored each. Best-of-k draws k of the N samples and
//! keeps the one the RM scores highest. The authors took the *first* k samples (one noisy draw)
//! and let k exceed N; prbench instead averages exactly over all C(N, k) k-subsets, drawn
//! uniformly, and refuses k > N.
//!
//! **Ties.** When several samples of a subset share its top RM score, the choice among them is
//! uniform, i.e. the subset contributes the mean judge score of its tied top samples.
//!
//! **Closed form (derived here; a standard order-statistics argument).** Group the samples by
//! equal RM score, `v_1 < v_2 < … < v_G`; for group `g` let `n_le(g)` be the number of samples
//! with RM score ≤ `v_g` and `n_lt(g)` those with RM score < `v_g`. A uniform k-subset has its top
//! RM score ≤ `v_g` iff it lies inside those `n_le(g)` samples, with probability
//! `C(n_le(g), k) / C(N, k)` (`C(m, k) = 0` for `m < k`), so
//!
//! `P(top group is g) = [C(n_le(g), k) − C(n_lt(g), k)] / C(N, k)`.
//!
//! Given that the top group is `g`, the subset is uniform among those meeting group `g` and no
//! higher group, an event invariant under permuting the members of `g`; the chosen sample is
//! uniform among the subset's members of `g`; so by exchangeability every member of `g` is
//! chosen with the same probability and the conditional expected judge score is the mean judge
//! score `J̄_g` of group `g`. Hence
//!
//! `E[best-of-k judge score] = Σ_g P(top group is g) · J̄_g`.
//!
//! **Numerics.** With `F(m) = C(m, k) / C(N, k)` (so `F(N) = 1`, `F(m − 1) = F(m)·(m − k)/m`,
//! `F(k − 1) = 0`), each difference telescopes into positive terms,
//! `F(m) − F(m − 1) = F(m)·k/m`, so `P(top group is g) = Σ_{m = n_lt(g)+1}^{n_le(g)} F(m)·k/m`:
//! no binomial coefficient is formed (C(256, 128) ≈ 5.8e75 would still fit, but a difference of
//! two close ratios would lose digits), no subtraction cancels, and the relative error is a few
//! hundred ulps at most for N = 256. Cost O(N log N) to sort, O(N) per k.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Which score list an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScoreList {
    /// The reward-model scores.
    Rm,
    /// The judge scores.
    Judge,
}

impl fmt::Display for ScoreList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScoreList::Rm => "RM",
            ScoreList::Judge => "judge",
        })
    }
}

/// Why an expected best-of-k score could not be computed.
#[derive(Debug, Clone, PartialEq, Error, Serialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum BestOfKError {
    /// No samples.
    #[error("no samples: best-of-k needs at least one")]
    Empty,
    /// The two score lists differ in length.
    #[error("{rm} RM scores but {judge} judge scores; one of each per sample is required")]
    LengthMismatch {
        /// Number of RM scores.
        rm: usize,
        /// Number of judge scores.
        judge: usize,
    },
    /// k = 0.
    #[error("k = 0: best-of-k needs at least one sample")]
    ZeroK,
    /// k larger than the number of samples (the authors' scripts silently fell back to best-of-N).
    #[error("k = {k} exceeds the {n} samples available")]
    KExceedsN {
        /// The k asked for.
        k: usize,
        /// The number of samples.
        n: usize,
    },
    /// A NaN or infinite score.
    #[error("{list} score of sample {index} is not finite ({value})")]
    NonFinite {
        /// Which list.
        list: ScoreList,
        /// Index of the sample.
        index: usize,
        /// The value.
        value: f64,
    },
}

/// One point of a best-of-k curve ([`best_of_k_curve`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Subset size.
    pub k: usize,
    /// Expected judge score of the best-of-k choice ([`expected_best_of_k`]), in the judge's
    /// units.
    pub expected: f64,
}

/// Samples grouped by equal RM score, ascending: (group size, mean judge score).
struct Groups {
    n: usize,
    groups: Vec<(usize, f64)>,
}

impl Groups {
    fn new(rm: &[f64], judge: &[f64]) -> Result<Groups, BestOfKError> {
        if rm.len() != judge.len() {
            return Err(BestOfKError::LengthMismatch { rm: rm.len(), judge: judge.len() });
        }
        if rm.is_empty() {
            return Err(BestOfKError::Empty);
        }
        for (list, v) in [(ScoreList::Rm, rm), (ScoreList::Judge, judge)] {
            if let Some(index) = v.iter().position(|a| !a.is_finite()) {
                return Err(BestOfKError::NonFinite { list, index, value: v[index] });
            }
        }
        let n = rm.len();
        let mut order: Vec<usize> = (0..n).collect();
        // Finite, so partial_cmp never fails; it treats -0.0 == 0.0 like `==` below.
        order.sort_by(|&a, &b| rm[a].partial_cmp(&rm[b]).unwrap_or(Ordering::Equal));
        let mut groups = Vec::new();
        let mut i = 0;
        while i < n {
            let mut j = i;
            let mut sum = 0.0;
            while j < n && rm[order[j]] == rm[order[i]] {
                sum += judge[order[j]];
                j += 1;
            }
            groups.push((j - i, sum / (j - i) as f64));
            i = j;
        }
        Ok(Groups { n, groups })
    }

    fn expected(&self, k: usize) -> Result<f64, BestOfKError> {
        if k == 0 {
            return Err(BestOfKError::ZeroK);
        }
        if k > self.n {
            return Err(BestOfKError::KExceedsN { k, n: self.n });
        }
        // Walk groups from the top; m runs over N, N − 1, …, k with F(m) = C(m, k) / C(N, k).
        let kf = k as f64;
        let mut f = 1.0f64;
        let mut m = self.n;
        let mut total = 0.0;
        for &(size, mean) in self.groups.iter().rev() {
            let mut p_group = 0.0;
            for _ in 0..size {
                if m < k {
                    break;
                }
                p_group += f * kf / m as f64;
                f *= (m - k) as f64 / m as f64;
                m -= 1;
            }
            total += p_group * mean;
            if m < k {
                break;
            }
        }
        Ok(total)
    }
}

/// The expected judge score of the best-of-k choice among N samples of one question, averaged
/// exactly over all C(N, k) k-subsets (uniformly), with ties in the subset's top RM score broken
/// uniformly (see the [module docs](self) for the closed form and its derivation).
///
/// `rm_scores[i]` and `judge_scores[i]` belong to sample `i` (any finite reals; higher RM score
/// is better). The result is in the judge's units. `k = 1` gives the mean judge score (a random
/// pick); `k = N` gives the mean judge score of the samples sharing the top RM score.
///
/// # Errors
/// [`BestOfKError::LengthMismatch`], [`BestOfKError::Empty`], [`BestOfKError::NonFinite`],
/// [`BestOfKError::ZeroK`], [`BestOfKError::KExceedsN`] (never a silent best-of-N).
pub fn expected_best_of_k(
    rm_scores: &[f64],
    judge_scores: &[f64],
    k: usize,
) -> Result<f64, BestOfKError> {
    Groups::new(rm_scores, judge_scores)?.expected(k)
}

/// [`expected_best_of_k`] for each `k` in `ks` (in the given order), sorting the samples once.
///
/// # Errors
/// As [`expected_best_of_k`]; the first `k` in `ks` that is 0 or exceeds N fails the whole curve.
pub fn best_of_k_curve(
    rm_scores: &[f64],
    judge_scores: &[f64],
    ks: &[usize],
) -> Result<Vec<CurvePoint>, BestOfKError> {
    let groups = Groups::new(rm_scores, judge_scores)?;
    ks.iter().map(|&k| groups.expected(k).map(|expected| CurvePoint { k, expected })).collect()
}

/// The default k sweep for N samples: 1, 2, 4, 8, … (powers of two up to N), followed by N
/// itself when N is not a power of two. N = 16 gives [1, 2, 4, 8, 16] (PROTOCOL.md §6); N = 12
/// gives [1, 2, 4, 8, 12]; N = 0 gives [].
pub fn default_ks(n: usize) -> Vec<usize> {
    let mut ks = Vec::new();
    let mut k = 1usize;
    while k <= n {
        ks.push(k);
        match k.checked_mul(2) {
            Some(next) => k = next,
            None => break,
        }
    }
    if n > 0 && !n.is_power_of_two() {
        ks.push(n);
    }
    ks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ks_examples() {
        assert_eq!(default_ks(16), vec![1, 2, 4, 8, 16]);
        assert_eq!(default_ks(12), vec![1, 2, 4, 8, 12]);
        assert_eq!(default_ks(1), vec![1]);
        assert_eq!(default_ks(3), vec![1, 2, 3]);
        assert!(default_ks(0).is_empty());
    }

    #[test]
    fn two_samples_by_hand() {
        // k = 2 always picks the higher RM score (judge 5); k = 1 is the mean 3.
        assert_eq!(expected_best_of_k(&[0.1, 0.9], &[1.0, 5.0], 2), Ok(5.0));
        assert_eq!(expected_best_of_k(&[0.1, 0.9], &[1.0, 5.0], 1), Ok(3.0));
        // Tied RM scores: the tie is broken uniformly.
        assert_eq!(expected_best_of_k(&[0.5, 0.5], &[1.0, 5.0], 2), Ok(3.0));
    }
}
