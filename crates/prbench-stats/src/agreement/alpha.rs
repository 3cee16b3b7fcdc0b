//! Krippendorff's alpha by the coincidence-matrix method (Krippendorff 2011, "Computing
//! Krippendorff's Alpha-Reliability", sections B–E):
//!
//! ```text
//! α = 1 − D_o / D_e = 1 − (n − 1) · Σ_c Σ_k o_ck δ²_ck / Σ_c Σ_k n_c n_k δ²_ck
//! D_o = (1/n) Σ_c Σ_k o_ck δ²_ck          D_e = (1/(n(n − 1))) Σ_c Σ_k n_c n_k δ²_ck
//! ```
//!
//! with `o_ck`, `n_c` and `n = Σ_c n_c` from [`coincidence`](super::coincidence) (pairable units
//! only) and the difference function `δ²` of the [`Level`]. `Σ o_ck δ²_ck` is summed unit by unit,
//! `Σ_u (1/(m_u − 1)) Σ_{c≠k} n_uc n_uk δ²_ck`, which is the same sum without the `V × V` matrix.
//!
//! **Parity with the Python `krippendorff` package** (0.9.0, `tools/make_alpha_fixtures.py`):
//! the package's default value domain is the sorted unique observed values, single ratings
//! included; ours is the sorted unique values of pairable units. The two differ only by values
//! with `n_c = 0`, which add nothing to any sum at any level (the ordinal `δ²` sums `n_g` over the
//! domain, and a zero adds nothing), so alphas agree; an explicit `value_domain` likewise only
//! adds zero counts. Where alpha is undefined the package raises or returns nan, ours returns
//! an [`AlphaUndefined`]:
//!
//! | package                                                              | ours |
//! |----------------------------------------------------------------------|------|
//! | `ValueError: There has to be at least one unit with values assigned by at least two coders.` | [`AlphaUndefined::NoPairableUnit`] |
//! | `ValueError: There has to be more than one value in the domain.` (all ratings, single ones included, equal) | [`AlphaUndefined::NoVariation`], or `NoPairableUnit` when no unit is rated twice |
//! | `nan` (0/0 with a RuntimeWarning: all pairable ratings equal, but a single rating or the explicit `value_domain` adds a value) | [`AlphaUndefined::NoVariation`] |

use serde::Serialize;

use super::coincidence::Pairable;
use super::data::ReliabilityData;

/// Level of measurement: which difference function `δ²_ck` alpha uses (Krippendorff 2011,
/// section E).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// `δ² = 0` if `c = k`, else 1.
    Nominal,
    /// `δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²`, `g` running over the value domain in
    /// ascending order: the squared distance between the values' mid-ranks among the pairable
    /// values (the package's `_ordinal_metric`).
    Ordinal,
    /// `δ²_ck = (c − k)²`.
    Interval,
}

impl Level {
    /// The three levels, in the order reports show them.
    pub const ALL: [Level; 3] = [Level::Interval, Level::Ordinal, Level::Nominal];

    /// Lower-case name (`nominal`, `ordinal`, `interval`), as in JSON field names.
    pub fn name(self) -> &'static str {
        match self {
            Level::Nominal => "nominal",
            Level::Ordinal => "ordinal",
            Level::Interval => "interval",
        }
    }
}

/// A defined alpha with the counts behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlphaValue {
    /// The level it was computed at.
    pub level: Level,
    /// Krippendorff's alpha (no unit): 1 is perfect agreement, 0 agreement at chance level,
    /// below 0 disagreement beyond chance; never above 1.
    pub alpha: f64,
    /// Observed disagreement `D_o`, in units of `δ²` (squared value units at the interval level,
    /// squared mid-rank units at the ordinal level, a proportion at the nominal level).
    pub observed_disagreement: f64,
    /// Expected disagreement `D_e`, in the same units; > 0.
    pub expected_disagreement: f64,
    /// Pairable units (two or more ratings).
    pub n_units: usize,
    /// Pairable values `n` (the ratings of pairable units).
    pub n_values: usize,
    /// Units left out for having a single rating.
    pub n_single: usize,
}

/// Why alpha is undefined on a data set.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum AlphaUndefined {
    /// No unit has two or more ratings, so there is no pair of values to compare.
    #[error("no unit has two or more ratings ({n_single} rated once): alpha needs units rated by at least two annotators")]
    NoPairableUnit {
        /// Units left out for having a single rating.
        n_single: usize,
    },
    /// Every pairable value is the same, so the expected disagreement is 0 and alpha is 0/0.
    #[error("all {n_values} ratings of units rated twice or more are {value}: with no variation alpha is 0/0")]
    NoVariation {
        /// The one value.
        value: f64,
        /// Pairable values.
        n_values: usize,
    },
    /// The disagreement sums overflow or underflow `f64` (values beyond about ±1e150, or
    /// distinct values closer than about 1e-150).
    #[error("the disagreement sums overflow or underflow f64: rescale the values")]
    NotRepresentable,
}

/// Krippendorff's alpha of `data` at `level` (see the [module docs](self) for the formula and
/// its source). Units rated once are left out and counted in [`AlphaValue::n_single`].
///
/// # Errors
/// [`AlphaUndefined`] when no unit is rated twice, when all pairable values are equal, or when
/// the sums are not representable; never a NaN.
pub fn alpha(data: &ReliabilityData, level: Level) -> Result<AlphaValue, AlphaUndefined> {
    let p = Pairable::new(data);
    Sample::new(&p, None).alpha(level)
}

/// The pairable units of a data set, each counted `weights[u]` times (all once without
/// weights): the full sample or a bootstrap resample.
pub(crate) struct Sample<'a> {
    p: &'a Pairable,
    weights: Option<&'a [u32]>,
    /// `n_c` over `p.domain`.
    n_c: Vec<f64>,
    n: f64,
    n_units: usize,
}

impl<'a> Sample<'a> {
    /// # Panics
    /// If `weights` is given with a length other than the number of pairable units.
    pub(crate) fn new(p: &'a Pairable, weights: Option<&'a [u32]>) -> Self {
        if let Some(w) = weights {
            assert_eq!(w.len(), p.units.len(), "one weight per pairable unit");
        }
        let mut n_c = vec![0.0; p.domain.len()];
        let mut n_units = 0;
        for (i, u) in p.units.iter().enumerate() {
            let w = weight(weights, i);
            if w > 0.0 {
                n_units += w as usize;
                for &(c, nc) in &u.counts {
                    n_c[c] += w * nc;
                }
            }
        }
        let n = n_c.iter().sum();
        Sample { p, weights, n_c, n, n_units }
    }

    pub(crate) fn alpha(&self, level: Level) -> Result<AlphaValue, AlphaUndefined> {
        if self.n_units == 0 {
            return Err(AlphaUndefined::NoPairableUnit { n_single: self.p.n_single });
        }
        let mut present = self.n_c.iter().enumerate().filter(|(_, &n)| n > 0.0);
        let (first, _) = present.next().expect("a pairable unit has values");
        if present.next().is_none() {
            return Err(AlphaUndefined::NoVariation {
                value: self.p.domain[first],
                n_values: self.n as usize,
            });
        }
        let pos = self.positions(level);
        let observed = self.observed_sum(level, &pos);
        let expected = self.expected_sum(level, &pos);
        let n = self.n;
        let alpha = 1.0 - (n - 1.0) * observed / expected;
        if !(expected > 0.0 && expected.is_finite() && alpha.is_finite()) {
            return Err(AlphaUndefined::NotRepresentable);
        }
        Ok(AlphaValue {
            level,
            alpha,
            observed_disagreement: observed / n,
            expected_disagreement: expected / (n * (n - 1.0)),
            n_units: self.n_units,
            n_values: n as usize,
            n_single: self.p.n_single,
        })
    }

    /// Each domain value's position on the line whose squared distances are `δ²`: the value
    /// itself (interval) or its mid-rank `Σ_{g<c} n_g + n_c/2` (ordinal, since
    /// `Σ_{g=c..k} n_g − (n_c + n_k)/2` is the difference of the mid-ranks of `k` and `c`).
    /// Empty for nominal.
    fn positions(&self, level: Level) -> Vec<f64> {
        match level {
            Level::Nominal => Vec::new(),
            Level::Interval => self.p.domain.clone(),
            Level::Ordinal => {
                let mut below = 0.0;
                self.n_c
                    .iter()
                    .map(|&n| {
                        let mid = below + n / 2.0;
                        below += n;
                        mid
                    })
                    .collect()
            }
        }
    }

    fn delta2(level: Level, pos: &[f64], c: usize, k: usize) -> f64 {
        match level {
            Level::Nominal => f64::from(u8::from(c != k)),
            Level::Ordinal | Level::Interval => (pos[c] - pos[k]).powi(2),
        }
    }

    /// `Σ_c Σ_k o_ck δ²_ck`, unit by unit.
    fn observed_sum(&self, level: Level, pos: &[f64]) -> f64 {
        let mut total = 0.0;
        for (i, u) in self.p.units.iter().enumerate() {
            let w = weight(self.weights, i);
            if w == 0.0 {
                continue;
            }
            let mut s = 0.0;
            for (a, &(c, nc)) in u.counts.iter().enumerate() {
                for &(k, nk) in &u.counts[a + 1..] {
                    s += nc * nk * Self::delta2(level, pos, c, k);
                }
            }
            total += w * 2.0 * s / (u.m - 1.0);
        }
        total
    }

    /// `Σ_c Σ_k n_c n_k δ²_ck`: `n² − Σ n_c²` (nominal) or `2n Σ_c n_c (x_c − x̄)²` for
    /// positions `x` (the identity `Σ_c Σ_k n_c n_k (x_c − x_k)² = 2n Σ_c n_c (x_c − x̄)²`, with
    /// the mean `x̄` taken first for accuracy).
    fn expected_sum(&self, level: Level, pos: &[f64]) -> f64 {
        let n = self.n;
        match level {
            Level::Nominal => n * n - self.n_c.iter().map(|c| c * c).sum::<f64>(),
            Level::Ordinal | Level::Interval => {
                let mean = self.n_c.iter().zip(pos).map(|(c, x)| c * x).sum::<f64>() / n;
                2.0 * n * self.n_c.iter().zip(pos).map(|(c, x)| c * (x - mean).powi(2)).sum::<f64>()
            }
        }
    }
}

fn weight(weights: Option<&[u32]>, i: usize) -> f64 {
    weights.map_or(1.0, |w| f64::from(w[i]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agreement::coincidence::coincidences;

    fn m(rows: &[&[Option<f64>]]) -> ReliabilityData {
        ReliabilityData::from_matrix(&rows.iter().map(|r| r.to_vec()).collect::<Vec<_>>()).unwrap()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    /// Two annotators, three units {1, 1}, {1, 2}, {2, 3}. n = 6, n_1 = 3, n_2 = 2, n_3 = 1;
    /// o_11 = 2, o_12 = o_21 = 1, o_23 = o_32 = 1 (coincidence.rs).
    ///
    /// Nominal: Σ o δ² = o_12 + o_21 + o_23 + o_32 = 4; Σ n_c n_k δ² = n² − Σ n_c² = 36 − 14 =
    /// 22; α = 1 − 5 · 4/22 = 1/11.
    ///
    /// Interval: δ²_12 = δ²_23 = 1, δ²_13 = 4. Σ o δ² = 4; Σ n_c n_k δ² = 2 (3·2·1 + 2·1·1 +
    /// 3·1·4) = 40; α = 1 − 5 · 4/40 = 1/2.
    ///
    /// Ordinal: δ²_12 = (3 + 2 − (3+2)/2)² = 6.25, δ²_23 = (2 + 1 − (2+1)/2)² = 2.25,
    /// δ²_13 = (3 + 2 + 1 − (3+1)/2)² = 16. Σ o δ² = 2·6.25 + 2·2.25 = 17; Σ n_c n_k δ² =
    /// 2 (3·2·6.25 + 2·1·2.25 + 3·1·16) = 180; α = 1 − 5 · 17/180 = 19/36.
    #[test]
    fn two_annotators_three_units_by_hand() {
        let d = m(&[&[Some(1.0), Some(1.0), Some(2.0)], &[Some(1.0), Some(2.0), Some(3.0)]]);
        let nom = alpha(&d, Level::Nominal).unwrap();
        close(nom.alpha, 1.0 / 11.0);
        close(nom.observed_disagreement, 4.0 / 6.0);
        close(nom.expected_disagreement, 22.0 / 30.0);
        let int = alpha(&d, Level::Interval).unwrap();
        close(int.alpha, 0.5);
        close(int.expected_disagreement, 40.0 / 30.0);
        let ord = alpha(&d, Level::Ordinal).unwrap();
        close(ord.alpha, 19.0 / 36.0);
        close(ord.observed_disagreement, 17.0 / 6.0);
        assert_eq!((ord.n_units, ord.n_values, ord.n_single), (3, 6, 0));
    }

    /// The unit-by-unit observed sum equals Σ o_ck δ²_ck over the explicit matrix, with units
    /// of 2, 3 and 4 ratings (weights 1, 1/2, 1/3).
    #[test]
    fn unit_sums_equal_the_matrix_sums() {
        let d = m(&[
            &[Some(1.0), Some(2.0), Some(4.0), Some(1.0)],
            &[Some(2.0), Some(2.0), Some(3.0), None],
            &[None, Some(3.0), Some(4.0), None],
            &[None, None, Some(1.0), None],
        ]);
        let c = coincidences(&d);
        let n: f64 = c.n.iter().sum();
        for level in Level::ALL {
            let mut below = 0.0;
            let pos: Vec<f64> = match level {
                Level::Ordinal => {
                    c.n.iter()
                        .map(|&x| {
                            let m = below + x / 2.0;
                            below += x;
                            m
                        })
                        .collect()
                }
                _ => c.values.clone(),
            };
            let d2 = |i: usize, k: usize| match level {
                Level::Nominal => f64::from(u8::from(i != k)),
                _ => (pos[i] - pos[k]).powi(2),
            };
            let (mut obs, mut exp) = (0.0, 0.0);
            for i in 0..c.values.len() {
                for k in 0..c.values.len() {
                    obs += c.o[i][k] * d2(i, k);
                    exp += c.n[i] * c.n[k] * d2(i, k);
                }
            }
            let a = alpha(&d, level).unwrap();
            close(a.alpha, 1.0 - (n - 1.0) * obs / exp);
            assert_eq!(a.n_single, 1, "{level:?}");
        }
    }

    /// A unit rated once is left out and counted: the same alpha as without it.
    #[test]
    fn single_ratings_are_left_out_and_counted() {
        let with = m(&[
            &[Some(1.0), Some(2.0), Some(5.0), None],
            &[Some(1.0), Some(3.0), None, Some(4.0)],
        ]);
        let without = m(&[&[Some(1.0), Some(2.0)], &[Some(1.0), Some(3.0)]]);
        for level in Level::ALL {
            let (a, b) = (alpha(&with, level).unwrap(), alpha(&without, level).unwrap());
            assert_eq!(a.alpha, b.alpha, "{level:?}");
            assert_eq!((a.n_units, a.n_values, a.n_single), (2, 4, 2));
            assert_eq!(b.n_single, 0);
        }
    }

    #[test]
    fn undefined_cases() {
        let singles = m(&[&[Some(1.0), None], &[None, Some(2.0)]]);
        assert_eq!(
            alpha(&singles, Level::Nominal),
            Err(AlphaUndefined::NoPairableUnit { n_single: 2 })
        );
        let empty = ReliabilityData::new([]).unwrap();
        assert_eq!(
            alpha(&empty, Level::Interval),
            Err(AlphaUndefined::NoPairableUnit { n_single: 0 })
        );
        let same = m(&[&[Some(3.0), Some(3.0), None], &[Some(3.0), Some(3.0), Some(5.0)]]);
        for level in Level::ALL {
            assert_eq!(
                alpha(&same, level),
                Err(AlphaUndefined::NoVariation { value: 3.0, n_values: 4 })
            );
        }
        let huge = m(&[&[Some(1e200), Some(-1e200)], &[Some(1e200), Some(1e200)]]);
        assert_eq!(alpha(&huge, Level::Interval), Err(AlphaUndefined::NotRepresentable));
        // Ordinal and nominal only see ranks and identities: still defined.
        assert!(alpha(&huge, Level::Ordinal).is_ok());
        let msg = AlphaUndefined::NoVariation { value: 3.0, n_values: 4 }.to_string();
        assert!(msg.contains("all 4 ratings") && msg.contains("are 3"), "{msg}");
    }

    /// Perfect agreement is 1 and does not depend on the values.
    #[test]
    fn perfect_agreement_is_one() {
        let d = m(&[
            &[Some(1.0), Some(7.5), Some(-2.0)],
            &[Some(1.0), Some(7.5), Some(-2.0)],
            &[None, Some(7.5), None],
        ]);
        for level in Level::ALL {
            assert_eq!(alpha(&d, level).unwrap().alpha, 1.0);
        }
    }
}
