//! Agreement per dimension: counts, alpha at the three levels and their bootstrap intervals.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::alpha::{alpha, AlphaUndefined, AlphaValue, Level};
use super::bootstrap::{bootstrap_alpha, AlphaBootstrap, AlphaBootstrapConfig};
use super::ratings::Ratings;

/// Settings of [`agreement`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct AgreementConfig {
    /// The bootstrap of the intervals (default: 1,000 resamples, seed 42, 95%).
    pub bootstrap: AlphaBootstrapConfig,
}

/// Alpha at one level with its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelAgreement {
    /// Alpha on all pairable units.
    pub alpha: Result<AlphaValue, AlphaUndefined>,
    /// Its bootstrap interval over units.
    pub bootstrap: AlphaBootstrap,
}

/// The agreement on one dimension.
///
/// Serializes as one flat JSON object: `n_units`, `n_single`, `n_ratings`, `n_annotators`,
/// `n_values`, and for each level `L` in `interval`, `ordinal`, `nominal`: `alpha_L` (number or
/// null), `alpha_L_undefined` (why it is null, else null), `ci_L` (`[lo, hi]` or null),
/// `ci_L_undefined` (why it is null, else null) and `ci_L_dropped` (resamples dropped because
/// alpha was undefined on them).
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionAgreement {
    /// Pairable units (rated by two or more annotators): the units alpha is computed on.
    pub n_units: usize,
    /// Units left out for having a single rating.
    pub n_single: usize,
    /// All ratings of the dimension, single ones included.
    pub n_ratings: usize,
    /// Distinct annotators of the dimension.
    pub n_annotators: usize,
    /// Pairable values (the ratings of pairable units; Krippendorff's `n`).
    pub n_values: usize,
    /// Interval level.
    pub interval: LevelAgreement,
    /// Ordinal level.
    pub ordinal: LevelAgreement,
    /// Nominal level.
    pub nominal: LevelAgreement,
}

impl DimensionAgreement {
    /// The result at `level`.
    pub fn level(&self, level: Level) -> &LevelAgreement {
        match level {
            Level::Interval => &self.interval,
            Level::Ordinal => &self.ordinal,
            Level::Nominal => &self.nominal,
        }
    }
}

impl Serialize for DimensionAgreement {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5 + 5 * Level::ALL.len()))?;
        m.serialize_entry("n_units", &self.n_units)?;
        m.serialize_entry("n_single", &self.n_single)?;
        m.serialize_entry("n_ratings", &self.n_ratings)?;
        m.serialize_entry("n_annotators", &self.n_annotators)?;
        m.serialize_entry("n_values", &self.n_values)?;
        for level in Level::ALL {
            let r = self.level(level);
            let name = level.name();
            m.serialize_entry(&format!("alpha_{name}"), &r.alpha.as_ref().ok().map(|a| a.alpha))?;
            m.serialize_entry(
                &format!("alpha_{name}_undefined"),
                &r.alpha.as_ref().err().map(ToString::to_string),
            )?;
            let ci = r.bootstrap.interval.as_ref();
            m.serialize_entry(&format!("ci_{name}"), &ci.ok().map(|i| [i.lo, i.hi]))?;
            m.serialize_entry(&format!("ci_{name}_undefined"), &ci.err().map(ToString::to_string))?;
            m.serialize_entry(&format!("ci_{name}_dropped"), &r.bootstrap.dropped)?;
        }
        m.end()
    }
}

/// Agreement on every dimension of a ratings file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgreementReport {
    /// The ratings' source ([`Ratings::source`]).
    pub source: String,
    /// Columns of the CSV that were not used ([`Ratings::ignored_columns`]).
    pub ignored_columns: Vec<String>,
    /// The settings used.
    pub config: AgreementConfig,
    /// Per dimension, ascending by name; serializes as one JSON object keyed by dimension.
    pub dimensions: BTreeMap<String, DimensionAgreement>,
}

/// Krippendorff's alpha at the interval, ordinal and nominal levels, with seeded bootstrap
/// intervals over units ([`bootstrap_alpha`], one resample stream per dimension shared by the
/// three levels), for every dimension of `ratings`.
pub fn agreement(ratings: &Ratings, cfg: &AgreementConfig) -> AgreementReport {
    let dimensions = ratings
        .dimensions()
        .iter()
        .map(|(name, dim)| {
            let data = dim.data();
            let boots = bootstrap_alpha(data, &Level::ALL, &cfg.bootstrap);
            let at = |level| LevelAgreement {
                alpha: alpha(data, level),
                bootstrap: boots
                    .iter()
                    .find(|b| b.level == level)
                    .expect("one interval per level")
                    .clone(),
            };
            let (interval, ordinal, nominal) =
                (at(Level::Interval), at(Level::Ordinal), at(Level::Nominal));
            let agreement = DimensionAgreement {
                n_units: data.n_pairable_units(),
                n_single: data.n_single_units(),
                n_ratings: dim.n_ratings(),
                n_annotators: dim.n_annotators(),
                n_values: data.n_pairable_values(),
                interval,
                ordinal,
                nominal,
            };
            (name.clone(), agreement)
        })
        .collect();
    AgreementReport {
        source: ratings.source().to_string(),
        ignored_columns: ratings.ignored_columns().to_vec(),
        config: *cfg,
        dimensions,
    }
}
