//! Reliability data (Krippendorff 2011, section A): units, each with the values some annotators
//! gave it. A missing value is simply absent.
//!
//! The data are kept in a canonical order, units by id and each unit's ratings by annotator (both
//! byte-wise), so that every computation on them, alpha and its bootstrap included, is the same
//! bit for bit whatever order the ratings came in.

use serde::Serialize;

/// One annotator's value for one unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rating {
    /// Who gave the value.
    pub annotator: String,
    /// The value (a score such as 1–5; any finite number).
    pub value: f64,
}

impl Rating {
    /// A rating of `value` by `annotator`.
    pub fn new(annotator: impl Into<String>, value: f64) -> Self {
        Rating { annotator: annotator.into(), value }
    }
}

/// A unit (an item rated, e.g. one answer on one dimension) with its ratings, sorted by
/// annotator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unit {
    id: String,
    ratings: Vec<Rating>,
}

impl Unit {
    /// The unit's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its ratings, sorted by annotator; at least one.
    pub fn ratings(&self) -> &[Rating] {
        &self.ratings
    }

    /// Whether the unit has two or more ratings, so that its values form pairs (Krippendorff's
    /// `m_u ≥ 2`). A unit rated once takes no part in alpha.
    pub fn is_pairable(&self) -> bool {
        self.ratings.len() >= 2
    }
}

/// Why a set of units is not reliability data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DataError {
    /// Two units share an id.
    #[error("unit `{unit}` appears twice: give each unit one entry with all its ratings")]
    DuplicateUnit {
        /// The repeated id.
        unit: String,
    },
    /// An annotator rated the same unit twice.
    #[error("annotator `{annotator}` rated unit `{unit}` twice: keep one of the two ratings")]
    DuplicateRating {
        /// The unit.
        unit: String,
        /// The annotator.
        annotator: String,
    },
    /// A value is NaN or infinite.
    #[error("unit `{unit}`, annotator `{annotator}`: value {value} is not a finite number")]
    NotFinite {
        /// The unit.
        unit: String,
        /// The annotator.
        annotator: String,
        /// The value.
        value: f64,
    },
    /// A unit without ratings (leave it out: it says nothing about agreement).
    #[error("unit `{unit}` has no ratings: leave it out")]
    EmptyUnit {
        /// The unit.
        unit: String,
    },
    /// The rows of a matrix differ in length.
    #[error("matrix row {row} has {len} entries, row 0 has {expected}: every annotator's row needs one entry per unit")]
    RaggedMatrix {
        /// The 0-based row.
        row: usize,
        /// Its length.
        len: usize,
        /// The length of row 0.
        expected: usize,
    },
}

/// A reliability data set: units with their ratings, in canonical order (units ascending by id,
/// ratings by annotator).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReliabilityData {
    units: Vec<Unit>,
}

impl ReliabilityData {
    /// Reliability data from `(unit id, ratings)` pairs, in any order.
    ///
    /// # Errors
    /// A [`DataError`] when a unit id repeats, an annotator rates a unit twice, a value is not
    /// finite, or a unit has no ratings.
    pub fn new(units: impl IntoIterator<Item = (String, Vec<Rating>)>) -> Result<Self, DataError> {
        let mut out = Vec::new();
        for (id, mut ratings) in units {
            if ratings.is_empty() {
                return Err(DataError::EmptyUnit { unit: id });
            }
            if let Some(r) = ratings.iter().find(|r| !r.value.is_finite()) {
                return Err(DataError::NotFinite {
                    unit: id,
                    annotator: r.annotator.clone(),
                    value: r.value,
                });
            }
            ratings.sort_by(|a, b| a.annotator.cmp(&b.annotator));
            if let Some(w) = ratings.windows(2).find(|w| w[0].annotator == w[1].annotator) {
                return Err(DataError::DuplicateRating {
                    annotator: w[0].annotator.clone(),
                    unit: id,
                });
            }
            out.push(Unit { id, ratings });
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        if let Some(w) = out.windows(2).find(|w| w[0].id == w[1].id) {
            return Err(DataError::DuplicateUnit { unit: w[0].id.clone() });
        }
        Ok(ReliabilityData { units: out })
    }

    /// Reliability data from a matrix `rows[annotator][unit]` (`None` = missing), the layout of
    /// Krippendorff (2011) and of the Python `krippendorff` package's `reliability_data`.
    ///
    /// Annotator `i` is named `a<i>` and unit `j` `u<j>`, both zero-padded to the same width so
    /// that the canonical order is the matrix order. A column without any value is left out, as
    /// it contributes nothing (the package counts it as 0 pairable values).
    ///
    /// # Errors
    /// [`DataError::RaggedMatrix`] when the rows differ in length, [`DataError::NotFinite`]
    /// for a NaN or infinite entry (write a missing value as `None`).
    pub fn from_matrix(rows: &[Vec<Option<f64>>]) -> Result<Self, DataError> {
        let n_units = rows.first().map_or(0, Vec::len);
        if let Some((row, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != n_units) {
            return Err(DataError::RaggedMatrix { row, len: r.len(), expected: n_units });
        }
        let aw = digits(rows.len());
        let uw = digits(n_units);
        let units = (0..n_units).filter_map(|j| {
            let ratings: Vec<Rating> = rows
                .iter()
                .enumerate()
                .filter_map(|(i, row)| row[j].map(|v| Rating::new(format!("a{i:0aw$}"), v)))
                .collect();
            (!ratings.is_empty()).then(|| (format!("u{j:0uw$}"), ratings))
        });
        ReliabilityData::new(units)
    }

    /// The units, ascending by id.
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// Units with two or more ratings (the units alpha is computed on).
    pub fn n_pairable_units(&self) -> usize {
        self.units.iter().filter(|u| u.is_pairable()).count()
    }

    /// Units with a single rating (left out of alpha).
    pub fn n_single_units(&self) -> usize {
        self.units.len() - self.n_pairable_units()
    }

    /// All ratings, in pairable and single units alike.
    pub fn n_ratings(&self) -> usize {
        self.units.iter().map(|u| u.ratings.len()).sum()
    }

    /// The ratings of pairable units (Krippendorff's `n`, the pairable values).
    pub fn n_pairable_values(&self) -> usize {
        self.units.iter().filter(|u| u.is_pairable()).map(|u| u.ratings.len()).sum()
    }
}

/// Decimal digits of the largest index below `n` (at least 1).
fn digits(n: usize) -> usize {
    n.saturating_sub(1).max(1).ilog10() as usize + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(id: &str, ratings: &[(&str, f64)]) -> (String, Vec<Rating>) {
        (id.to_string(), ratings.iter().map(|&(a, v)| Rating::new(a, v)).collect())
    }

    #[test]
    fn canonical_order_and_counts() {
        let d = ReliabilityData::new([
            unit("u2", &[("b", 1.0), ("a", 2.0)]),
            unit("u1", &[("c", 3.0)]),
            unit("u3", &[("a", 1.0), ("c", 1.0), ("b", 1.0)]),
        ])
        .unwrap();
        let ids: Vec<&str> = d.units().iter().map(Unit::id).collect();
        assert_eq!(ids, ["u1", "u2", "u3"]);
        let u2: Vec<&str> = d.units()[1].ratings().iter().map(|r| r.annotator.as_str()).collect();
        assert_eq!(u2, ["a", "b"]);
        assert_eq!((d.n_pairable_units(), d.n_single_units()), (2, 1));
        assert_eq!((d.n_ratings(), d.n_pairable_values()), (6, 5));
    }

    #[test]
    fn invalid_units_are_errors() {
        let dup = ReliabilityData::new([unit("x", &[("a", 1.0)]), unit("x", &[("b", 1.0)])]);
        assert_eq!(dup, Err(DataError::DuplicateUnit { unit: "x".into() }));
        let twice = ReliabilityData::new([unit("x", &[("a", 1.0), ("a", 2.0)])]);
        assert_eq!(
            twice,
            Err(DataError::DuplicateRating { unit: "x".into(), annotator: "a".into() })
        );
        let nan = ReliabilityData::new([unit("x", &[("a", f64::NAN)])]).unwrap_err();
        assert!(matches!(nan, DataError::NotFinite { .. }), "{nan}");
        let empty = ReliabilityData::new([unit("x", &[])]);
        assert_eq!(empty, Err(DataError::EmptyUnit { unit: "x".into() }));
    }

    #[test]
    fn matrix_layout() {
        let rows: Vec<Vec<Option<f64>>> = (0..11)
            .map(|i| (0..3).map(|j| (i == 0 || j == 0).then_some((i + j) as f64)).collect())
            .collect();
        let d = ReliabilityData::from_matrix(&rows).unwrap();
        let ids: Vec<&str> = d.units().iter().map(Unit::id).collect();
        assert_eq!(ids, ["u0", "u1", "u2"]);
        assert_eq!(d.units()[0].ratings().len(), 11);
        assert_eq!(d.units()[0].ratings()[10].annotator, "a10");
        assert_eq!(d.units()[0].ratings()[2].annotator, "a02");
        // A column without values is left out.
        let d =
            ReliabilityData::from_matrix(&[vec![Some(1.0), None], vec![Some(2.0), None]]).unwrap();
        assert_eq!(d.units().len(), 1);
        let ragged = ReliabilityData::from_matrix(&[vec![Some(1.0)], vec![]]);
        assert_eq!(ragged, Err(DataError::RaggedMatrix { row: 1, len: 0, expected: 1 }));
    }
}
