//! Seeded percentile-bootstrap confidence intervals of alpha over units.
//!
//! **Procedure** (deterministic given [`AlphaBootstrapConfig::seed`]; the same style as
//! `prbench_stats::bootstrap`):
//!
//! 1. The pairable units (two or more ratings) are taken in ascending id order, each unit's
//!    ratings in ascending annotator order (the canonical order of [`ReliabilityData`]), so the
//!    result does not depend on the order the ratings came in. Units rated once are not
//!    resampled: they add nothing to alpha, and drawing them would only make the number of
//!    pairable units vary between resamples.
//! 2. One generator, `ChaCha8Rng::seed_from_u64(seed)`, serves all resamples. For resample
//!    `r = 0, 1, …, resamples − 1`, `P` indices are drawn with `rng.random_range(0..P)` (rand
//!    0.9), `P` being the number of pairable units; a unit drawn `k` times counts `k` times.
//! 3. Alpha is computed on each resample at every requested level (one stream for all levels,
//!    so a level's interval is the same whichever other levels are asked for). A resample on
//!    which alpha is undefined (all its values equal) is dropped and counted.
//! 4. The interval is the percentile interval of the kept alphas: the `100·(1 − confidence)/2`
//!    and `100·(1 + confidence)/2` percentiles with linear interpolation
//!    ([`crate::percentile`], numpy's `np.percentile` default).
//!
//! Nothing runs in parallel, so the result does not depend on the thread count either.

use crate::bootstrap::MAX_RESAMPLES;
use crate::{percentile, Interval};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::alpha::{Level, Sample};
use super::coincidence::Pairable;
use super::data::ReliabilityData;

/// Bootstrap settings, valid by construction ([`AlphaBootstrapConfig::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AlphaBootstrapConfig {
    resamples: usize,
    seed: u64,
    confidence: f64,
}

/// Why bootstrap settings are rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// Resamples outside `1..=MAX_RESAMPLES`.
    #[error("{got} resamples: ask for 1 to {max} (1,000 is the default)")]
    Resamples {
        /// The number asked for.
        got: usize,
        /// [`crate::bootstrap::MAX_RESAMPLES`].
        max: usize,
    },
    /// Confidence not strictly between 0 and 1.
    #[error("confidence {got}: give a number strictly between 0 and 1, such as 0.95")]
    Confidence {
        /// The value asked for.
        got: f64,
    },
}

impl AlphaBootstrapConfig {
    /// Default number of resamples.
    pub const DEFAULT_RESAMPLES: usize = 1_000;
    /// Default seed.
    pub const DEFAULT_SEED: u64 = 42;
    /// Default confidence (coverage of the interval).
    pub const DEFAULT_CONFIDENCE: f64 = 0.95;

    /// Settings with `resamples` resamples from `seed` for intervals of coverage `confidence`.
    ///
    /// # Errors
    /// [`ConfigError`] when `resamples` is 0 or above
    /// [`MAX_RESAMPLES`], or `confidence` is not
    /// strictly between 0 and 1.
    pub fn new(resamples: usize, seed: u64, confidence: f64) -> Result<Self, ConfigError> {
        if !(1..=MAX_RESAMPLES).contains(&resamples) {
            return Err(ConfigError::Resamples { got: resamples, max: MAX_RESAMPLES });
        }
        if !(confidence > 0.0 && confidence < 1.0) {
            return Err(ConfigError::Confidence { got: confidence });
        }
        Ok(AlphaBootstrapConfig { resamples, seed, confidence })
    }

    /// Number of resamples.
    pub fn resamples(&self) -> usize {
        self.resamples
    }

    /// Seed of the `ChaCha8Rng`.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Coverage of the interval, in (0, 1).
    pub fn confidence(&self) -> f64 {
        self.confidence
    }
}

impl Default for AlphaBootstrapConfig {
    /// 1,000 resamples, seed 42, confidence 0.95.
    fn default() -> Self {
        AlphaBootstrapConfig {
            resamples: Self::DEFAULT_RESAMPLES,
            seed: Self::DEFAULT_SEED,
            confidence: Self::DEFAULT_CONFIDENCE,
        }
    }
}

/// Why there is no interval.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum CiUndefined {
    /// Alpha is undefined on the full sample, so no resample was drawn.
    #[error("alpha is undefined, so it has no interval")]
    AlphaUndefined,
    /// Alpha was undefined on every resample.
    #[error("alpha is undefined on all {dropped} resamples (each drew units with one value only): rate more units")]
    AllResamplesUndefined {
        /// The resamples drawn (all dropped).
        dropped: usize,
    },
}

/// The bootstrap interval of alpha at one level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlphaBootstrap {
    /// The level of measurement.
    pub level: Level,
    /// The percentile interval of the kept resamples' alphas.
    pub interval: Result<Interval, CiUndefined>,
    /// Resamples with a defined alpha.
    pub kept: usize,
    /// Resamples dropped because alpha was undefined on them.
    pub dropped: usize,
}

/// Bootstrap intervals of alpha at each of `levels` from one seeded stream of resamples (see
/// the [module docs](self) for the procedure); entry `i` is for `levels[i]`.
pub fn bootstrap_alpha(
    data: &ReliabilityData,
    levels: &[Level],
    cfg: &AlphaBootstrapConfig,
) -> Vec<AlphaBootstrap> {
    let p = Pairable::new(data);
    let full = Sample::new(&p, None);
    let defined: Vec<bool> = levels.iter().map(|&l| full.alpha(l).is_ok()).collect();
    let mut alphas: Vec<Vec<f64>> = levels.iter().map(|_| Vec::new()).collect();
    let mut dropped = vec![0usize; levels.len()];
    if defined.iter().any(|&d| d) {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let units = p.units.len();
        let mut weights = vec![0u32; units];
        for a in alphas.iter_mut().zip(&defined).filter(|(_, &d)| d).map(|(a, _)| a) {
            a.reserve_exact(cfg.resamples);
        }
        for _ in 0..cfg.resamples {
            weights.fill(0);
            for _ in 0..units {
                weights[rng.random_range(0..units)] += 1;
            }
            let sample = Sample::new(&p, Some(&weights));
            for (i, &level) in levels.iter().enumerate().filter(|&(i, _)| defined[i]) {
                match sample.alpha(level) {
                    Ok(a) => alphas[i].push(a.alpha),
                    Err(_) => dropped[i] += 1,
                }
            }
        }
    }
    // 100·(1 − confidence) is computed as 100 − 100·confidence so that 0.95 gives exactly 2.5
    // and 97.5, as in prbench_stats::bootstrap.
    let tail = (100.0 - 100.0 * cfg.confidence) / 2.0;
    levels
        .iter()
        .enumerate()
        .map(|(i, &level)| {
            let values = &mut alphas[i];
            values.sort_by(f64::total_cmp);
            let interval = if !defined[i] {
                Err(CiUndefined::AlphaUndefined)
            } else {
                match (percentile(values, tail / 100.0), percentile(values, (100.0 - tail) / 100.0))
                {
                    (Some(lo), Some(hi)) => Ok(Interval { lo, hi }),
                    _ => Err(CiUndefined::AllResamplesUndefined { dropped: dropped[i] }),
                }
            };
            AlphaBootstrap { level, interval, kept: values.len(), dropped: dropped[i] }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agreement::alpha::alpha;
    use crate::agreement::data::Rating;

    /// 30 units, three annotators, scores 1–5 with some noise and some missing ratings.
    fn data() -> ReliabilityData {
        let units = (0..30).map(|u| {
            let truth = 1 + (u * 7 % 5) as i32;
            let ratings = (0..3)
                .filter(|a| (u + a) % 7 != 0)
                .map(|a| {
                    let noise = [0, 1, -1, 0, 0][(u * 3 + a * 2) % 5];
                    Rating::new(format!("r{a}"), f64::from((truth + noise).clamp(1, 5)))
                })
                .collect();
            (format!("unit-{u:02}"), ratings)
        });
        ReliabilityData::new(units).unwrap()
    }

    #[test]
    fn default_config_and_validation() {
        let c = AlphaBootstrapConfig::default();
        assert_eq!((c.resamples(), c.seed(), c.confidence()), (1000, 42, 0.95));
        assert!(matches!(
            AlphaBootstrapConfig::new(0, 1, 0.9),
            Err(ConfigError::Resamples { got: 0, .. })
        ));
        assert!(AlphaBootstrapConfig::new(MAX_RESAMPLES + 1, 1, 0.9).is_err());
        for bad in [0.0, 1.0, f64::NAN, -0.5] {
            assert!(
                matches!(
                    AlphaBootstrapConfig::new(10, 1, bad),
                    Err(ConfigError::Confidence { .. })
                ),
                "{bad}"
            );
        }
    }

    /// Same seed, same intervals; another seed, other intervals; the interval holds the point.
    #[test]
    fn seeded_and_reproducible() {
        let d = data();
        let cfg = AlphaBootstrapConfig::default();
        let a = bootstrap_alpha(&d, &Level::ALL, &cfg);
        assert_eq!(a, bootstrap_alpha(&d, &Level::ALL, &cfg));
        let other =
            bootstrap_alpha(&d, &Level::ALL, &AlphaBootstrapConfig::new(1000, 43, 0.95).unwrap());
        for ((x, y), level) in a.iter().zip(&other).zip(Level::ALL) {
            let (ix, iy) = (x.interval.clone().unwrap(), y.interval.clone().unwrap());
            assert_ne!(ix, iy, "{level:?}");
            let point = alpha(&d, level).unwrap().alpha;
            assert!(ix.lo < point && point < ix.hi, "{level:?}: {point} not in {ix:?}");
            assert_eq!(x.kept + x.dropped, 1000);
        }
    }

    /// Units and ratings given in another order give bit-identical intervals.
    #[test]
    fn input_order_does_not_matter() {
        let d = data();
        let mut units: Vec<(String, Vec<Rating>)> =
            d.units().iter().map(|u| (u.id().to_string(), u.ratings().to_vec())).collect();
        units.reverse();
        for (_, r) in &mut units {
            r.reverse();
        }
        units.swap(3, 17);
        let shuffled = ReliabilityData::new(units).unwrap();
        let cfg = AlphaBootstrapConfig::new(500, 7, 0.9).unwrap();
        assert_eq!(
            bootstrap_alpha(&d, &Level::ALL, &cfg),
            bootstrap_alpha(&shuffled, &Level::ALL, &cfg)
        );
    }

    /// A level's interval does not depend on which other levels share the stream.
    #[test]
    fn levels_share_one_stream() {
        let d = data();
        let cfg = AlphaBootstrapConfig::new(300, 3, 0.95).unwrap();
        let all = bootstrap_alpha(&d, &Level::ALL, &cfg);
        for (i, &level) in Level::ALL.iter().enumerate() {
            assert_eq!(bootstrap_alpha(&d, &[level], &cfg)[0], all[i]);
        }
    }

    /// Two pairable units, {1, 1} and {2, 2}, plus one unit rated once: a resample drawing the
    /// same unit twice (probability 1/2) has one value only and is dropped; the others are
    /// {1,1},{2,2} with alpha 1. Single-rated units are not drawn, so dropping stays at 1/2.
    #[test]
    fn undefined_resamples_are_dropped_and_counted() {
        let d = ReliabilityData::from_matrix(&[
            vec![Some(1.0), Some(2.0), Some(5.0)],
            vec![Some(1.0), Some(2.0), None],
        ])
        .unwrap();
        let cfg = AlphaBootstrapConfig::new(2000, 11, 0.95).unwrap();
        for b in bootstrap_alpha(&d, &Level::ALL, &cfg) {
            assert_eq!(b.kept + b.dropped, 2000);
            assert!((b.dropped as f64 / 2000.0 - 0.5).abs() < 0.05, "{}", b.dropped);
            assert_eq!(b.interval, Ok(Interval { lo: 1.0, hi: 1.0 }));
        }
    }

    /// With a single resample, a seed whose one resample draws the same unit twice leaves no
    /// alpha to take percentiles of.
    #[test]
    fn all_resamples_undefined() {
        let d =
            ReliabilityData::from_matrix(&[vec![Some(1.0), Some(2.0)], vec![Some(1.0), Some(2.0)]])
                .unwrap();
        let outcomes: Vec<AlphaBootstrap> = (0..32)
            .map(|seed| {
                bootstrap_alpha(
                    &d,
                    &[Level::Nominal],
                    &AlphaBootstrapConfig::new(1, seed, 0.95).unwrap(),
                )
                .remove(0)
            })
            .collect();
        let none =
            outcomes.iter().find(|b| b.dropped == 1).expect("some seed draws one unit twice");
        assert_eq!(none.interval, Err(CiUndefined::AllResamplesUndefined { dropped: 1 }));
        let some = outcomes.iter().find(|b| b.kept == 1).expect("some seed draws both units");
        assert_eq!(some.interval, Ok(Interval { lo: 1.0, hi: 1.0 }));
    }

    #[test]
    fn undefined_alpha_has_no_interval() {
        let same =
            ReliabilityData::from_matrix(&[vec![Some(2.0), Some(2.0)], vec![Some(2.0), Some(2.0)]])
                .unwrap();
        let b = &bootstrap_alpha(&same, &[Level::Ordinal], &AlphaBootstrapConfig::default())[0];
        assert_eq!((&b.interval, b.kept, b.dropped), (&Err(CiUndefined::AlphaUndefined), 0, 0));
        // One pairable unit with two values: every resample draws it, alpha defined (0).
        let one = ReliabilityData::from_matrix(&[vec![Some(1.0)], vec![Some(2.0)]]).unwrap();
        let b = &bootstrap_alpha(&one, &[Level::Interval], &AlphaBootstrapConfig::default())[0];
        assert_eq!(b.interval, Ok(Interval { lo: 0.0, hi: 0.0 }));
    }
}
