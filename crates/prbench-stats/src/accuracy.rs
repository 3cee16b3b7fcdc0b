//! Accuracy under the three tie rules (PROTOCOL.md §3 and §5).

use serde::{Deserialize, Serialize};

use crate::outcome::ItemResult;

/// How ties (and, for [`Excluded`](TieMode::Excluded), unparsed and error items) enter the
/// accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TieMode {
    /// `correct / n`: ties, unparsed and errors all count as not correct (the authors' rule).
    Strict,
    /// `(correct + 0.5 · ties) / n`: a tie earns half credit; unparsed and errors earn nothing.
    Half,
    /// `correct / (correct + wrong)`: ties, unparsed and errors leave the denominator.
    Excluded,
}

/// One item's contribution to an accuracy: `num` to the numerator, `den` to the denominator.
///
/// An accuracy over a set of items is `Σ num / Σ den`. See [`Ratio::of`] for the mapping from
/// an [`ItemResult`]; an item with `den == 0` is excluded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// Numerator contribution (1 for a correct item, 0.5 for a half-credit tie, else 0).
    pub num: f64,
    /// Denominator contribution (1 for a counted item, 0 for an excluded one).
    pub den: f64,
}

impl Ratio {
    /// The contribution of one item under `mode`:
    ///
    /// | result | Strict | Half | Excluded |
    /// |---|---|---|---|
    /// | correct | (1, 1) | (1, 1) | (1, 1) |
    /// | wrong | (0, 1) | (0, 1) | (0, 1) |
    /// | tie | (0, 1) | (0.5, 1) | (0, 0) |
    /// | unparsed, error | (0, 1) | (0, 1) | (0, 0) |
    pub fn of(result: ItemResult, mode: TieMode) -> Self {
        let (num, den) = match (result, mode) {
            (ItemResult::Correct, _) => (1.0, 1.0),
            (ItemResult::Wrong, _) => (0.0, 1.0),
            (ItemResult::Tie, TieMode::Half) => (0.5, 1.0),
            (ItemResult::Tie | ItemResult::Unparsed | ItemResult::Error, TieMode::Excluded) => {
                (0.0, 0.0)
            }
            (ItemResult::Tie | ItemResult::Unparsed | ItemResult::Error, _) => (0.0, 1.0),
        };
        Ratio { num, den }
    }

    /// A per-item value as a contribution: NaN → excluded `(0, 0)`, any other `v` → `(v, 1)`.
    pub fn from_value(v: f64) -> Self {
        if v.is_nan() {
            Ratio { num: 0.0, den: 0.0 }
        } else {
            Ratio { num: v, den: 1.0 }
        }
    }

    /// The contributions of a list of results under `mode`, in order.
    pub fn of_all(results: &[ItemResult], mode: TieMode) -> Vec<Ratio> {
        results.iter().map(|&r| Ratio::of(r, mode)).collect()
    }
}

/// Counts of item results. `n` is the number of items, so
/// `n == correct + wrong + ties + unparsed + errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tally {
    /// All items.
    pub n: usize,
    /// Items with [`ItemResult::Correct`].
    pub correct: usize,
    /// Items with [`ItemResult::Wrong`].
    pub wrong: usize,
    /// Items with [`ItemResult::Tie`].
    pub ties: usize,
    /// Items with [`ItemResult::Unparsed`].
    pub unparsed: usize,
    /// Items with [`ItemResult::Error`].
    pub errors: usize,
}

impl Tally {
    /// Counts a list of results.
    pub fn from_results(results: &[ItemResult]) -> Self {
        let mut t = Tally::default();
        for &r in results {
            t.add(r);
        }
        t
    }

    /// Counts one more result.
    pub fn add(&mut self, result: ItemResult) {
        self.n += 1;
        match result {
            ItemResult::Correct => self.correct += 1,
            ItemResult::Wrong => self.wrong += 1,
            ItemResult::Tie => self.ties += 1,
            ItemResult::Unparsed => self.unparsed += 1,
            ItemResult::Error => self.errors += 1,
        }
    }

    /// The accuracy under `mode`, in [0, 1]:
    ///
    /// - [`TieMode::Strict`]: `correct / n`;
    /// - [`TieMode::Half`]: `(correct + 0.5 · ties) / n`;
    /// - [`TieMode::Excluded`]: `correct / (correct + wrong)`.
    ///
    /// `None` when the denominator is 0 (no items; or, for `Excluded`, no correct or wrong
    /// item). Equal to `Σ num / Σ den` over [`Ratio::of`] of the same items.
    pub fn accuracy(&self, mode: TieMode) -> Option<f64> {
        let (num, den) = match mode {
            TieMode::Strict => (self.correct as f64, self.n),
            TieMode::Half => (self.correct as f64 + 0.5 * self.ties as f64, self.n),
            TieMode::Excluded => (self.correct as f64, self.correct + self.wrong),
        };
        (den > 0).then(|| num / den as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ItemResult::*;

    /// Hand-made list: 3 correct, 1 wrong, 2 ties, 1 unparsed, 1 error (n = 8).
    const LIST: [ItemResult; 8] = [Correct, Tie, Correct, Wrong, Unparsed, Tie, Error, Correct];

    #[test]
    fn tally_counts() {
        let t = Tally::from_results(&LIST);
        assert_eq!(t, Tally { n: 8, correct: 3, wrong: 1, ties: 2, unparsed: 1, errors: 1 });
    }

    #[test]
    fn tie_modes_on_a_hand_made_list() {
        let t = Tally::from_results(&LIST);
        assert_eq!(t.accuracy(TieMode::Strict), Some(3.0 / 8.0)); // 0.375
        assert_eq!(t.accuracy(TieMode::Half), Some(4.0 / 8.0)); // (3 + 0.5·2) / 8 = 0.5
        assert_eq!(t.accuracy(TieMode::Excluded), Some(3.0 / 4.0)); // 3 / (3 + 1) = 0.75
    }

    #[test]
    fn ratios_agree_with_the_tally() {
        let t = Tally::from_results(&LIST);
        for mode in [TieMode::Strict, TieMode::Half, TieMode::Excluded] {
            let r = Ratio::of_all(&LIST, mode);
            let num: f64 = r.iter().map(|x| x.num).sum();
            let den: f64 = r.iter().map(|x| x.den).sum();
            assert_eq!(Some(num / den), t.accuracy(mode), "{mode:?}");
        }
    }

    #[test]
    fn zero_denominators() {
        let empty = Tally::from_results(&[]);
        for mode in [TieMode::Strict, TieMode::Half, TieMode::Excluded] {
            assert_eq!(empty.accuracy(mode), None);
        }
        let ties = Tally::from_results(&[Tie, Tie, Unparsed, Error]);
        assert_eq!(ties.accuracy(TieMode::Strict), Some(0.0));
        assert_eq!(ties.accuracy(TieMode::Half), Some(0.25));
        assert_eq!(ties.accuracy(TieMode::Excluded), None);
    }

    #[test]
    fn ratio_from_value() {
        assert_eq!(Ratio::from_value(0.5), Ratio { num: 0.5, den: 1.0 });
        assert_eq!(Ratio::from_value(f64::NAN), Ratio { num: 0.0, den: 0.0 });
    }
}
