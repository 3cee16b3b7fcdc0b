//! Values by unit, and Krippendorff's coincidence matrix (2011, section B).
//!
//! A pairable unit `u` (with `m_u ≥ 2` values) contributes to the coincidence of values `c` and
//! `k` its number of ordered pairs of values `(c, k)` from different annotators, divided by
//! `m_u − 1`:
//!
//! ```text
//! o_ck = Σ_u (n_uc · n_uk − [c = k] · n_uc) / (m_u − 1)        n_c = Σ_k o_ck = Σ_u n_uc
//! ```
//!
//! where `n_uc` is how many annotators gave unit `u` the value `c`. Units rated once contribute
//! nothing (they have no pairs) and are left out.

use serde::Serialize;

use super::data::ReliabilityData;

/// One pairable unit as value counts: `(domain index, n_uc)` for each distinct value, ascending
/// by index, and `m_u`.
#[derive(Debug, Clone)]
pub(crate) struct UnitCounts {
    pub(crate) counts: Vec<(usize, f64)>,
    pub(crate) m: f64,
}

/// The pairable units of a data set over their value domain.
#[derive(Debug, Clone)]
pub(crate) struct Pairable {
    /// The distinct values of pairable units, ascending.
    pub(crate) domain: Vec<f64>,
    /// The pairable units, in the data's (canonical) order.
    pub(crate) units: Vec<UnitCounts>,
    /// Units left out for having a single rating.
    pub(crate) n_single: usize,
}

impl Pairable {
    pub(crate) fn new(data: &ReliabilityData) -> Self {
        let pairable: Vec<_> = data.units().iter().filter(|u| u.is_pairable()).collect();
        let mut domain: Vec<f64> =
            pairable.iter().flat_map(|u| u.ratings().iter().map(|r| r.value)).collect();
        domain.sort_by(f64::total_cmp);
        // -0.0 and 0.0 are one value (as for numpy's `==`).
        domain.dedup_by(|a, b| a == b);
        let index = |v: f64| domain.partition_point(|&d| d < v);
        let units = pairable
            .iter()
            .map(|u| {
                let mut idx: Vec<usize> = u.ratings().iter().map(|r| index(r.value)).collect();
                idx.sort_unstable();
                let mut counts: Vec<(usize, f64)> = Vec::new();
                for i in idx {
                    match counts.last_mut() {
                        Some((last, n)) if *last == i => *n += 1.0,
                        _ => counts.push((i, 1.0)),
                    }
                }
                UnitCounts { counts, m: u.ratings().len() as f64 }
            })
            .collect();
        Pairable { domain, units, n_single: data.n_single_units() }
    }
}

/// Krippendorff's coincidence matrix of a data set's pairable units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoincidenceMatrix {
    /// The value domain: the distinct values of pairable units, ascending.
    pub values: Vec<f64>,
    /// `o[c][k]`, the coincidences of `values[c]` and `values[k]` (see the
    /// [module docs](self)); symmetric, `values.len()²` entries.
    pub o: Vec<Vec<f64>>,
    /// `n[c] = Σ_k o[c][k]`, the number of pairable values equal to `values[c]`.
    pub n: Vec<f64>,
}

/// The coincidence matrix of `data` (Krippendorff 2011, section B), for inspection: [`alpha`]
/// computes the same sums without building the `V × V` matrix.
///
/// [`alpha`]: super::alpha()
pub fn coincidences(data: &ReliabilityData) -> CoincidenceMatrix {
    let p = Pairable::new(data);
    let v = p.domain.len();
    let mut o = vec![vec![0.0; v]; v];
    let mut n = vec![0.0; v];
    for u in &p.units {
        for &(c, nc) in &u.counts {
            n[c] += nc;
            for &(k, nk) in &u.counts {
                let pairs = if c == k { nc * nk - nc } else { nc * nk };
                o[c][k] += pairs / (u.m - 1.0);
            }
        }
    }
    CoincidenceMatrix { values: p.domain, o, n }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rows: &[&[Option<f64>]]) -> ReliabilityData {
        ReliabilityData::from_matrix(&rows.iter().map(|r| r.to_vec()).collect::<Vec<_>>()).unwrap()
    }

    /// Two annotators, units {1, 1}, {1, 2}, {2, 3}: each unit has m_u = 2, so each ordered pair
    /// of its two values counts 1/(2 − 1) = 1. Unit 1 gives o_11 = 2 (the pair (1,1) both ways),
    /// unit 2 gives o_12 = o_21 = 1, unit 3 o_23 = o_32 = 1.
    #[test]
    fn two_annotators_by_hand() {
        let d = m(&[&[Some(1.0), Some(1.0), Some(2.0)], &[Some(1.0), Some(2.0), Some(3.0)]]);
        let c = coincidences(&d);
        assert_eq!(c.values, [1.0, 2.0, 3.0]);
        assert_eq!(c.o, [[2.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]);
        assert_eq!(c.n, [3.0, 2.0, 1.0]);
    }

    /// Three annotators on one unit {1, 1, 2} (m_u = 3, weight 1/2): the pairs (1,1) twice,
    /// (1,2) twice, (2,1) twice, so o_11 = 1, o_12 = o_21 = 1, o_22 = 0. A unit rated once (the
    /// 5) adds nothing and stays out of the value domain.
    #[test]
    fn three_annotators_and_a_single_rating() {
        let d = m(&[&[Some(1.0), Some(5.0)], &[Some(1.0), None], &[Some(2.0), None]]);
        let c = coincidences(&d);
        assert_eq!(c.values, [1.0, 2.0]);
        assert_eq!(c.o, [[1.0, 1.0], [1.0, 0.0]]);
        assert_eq!(c.n, [2.0, 1.0]);
    }

    /// Row sums of o are the value counts, on the 2011 paper's example (n = 40 pairable
    /// values: units 1–11 hold 3, 4, 4, 4, 4, 4, 4, 4, 4, 3 and 2 values; unit 12 is rated once).
    #[test]
    fn row_sums_are_value_counts() {
        let x = None;
        let s = Some;
        let d = m(&[
            &[s(1.), s(2.), s(3.), s(3.), s(2.), s(1.), s(4.), s(1.), s(2.), x, x, x],
            &[s(1.), s(2.), s(3.), s(3.), s(2.), s(2.), s(4.), s(1.), s(2.), s(5.), x, s(3.)],
            &[x, s(3.), s(3.), s(3.), s(2.), s(3.), s(4.), s(2.), s(2.), s(5.), s(1.), x],
            &[s(1.), s(2.), s(3.), s(3.), s(2.), s(4.), s(4.), s(1.), s(2.), s(5.), s(1.), x],
        ]);
        let c = coincidences(&d);
        assert_eq!(c.n, [9.0, 13.0, 10.0, 5.0, 3.0]);
        for (row, &n) in c.o.iter().zip(&c.n) {
            assert!((row.iter().sum::<f64>() - n).abs() < 1e-12, "{row:?} vs {n}");
        }
        assert_eq!(c.n.iter().sum::<f64>(), 40.0);
    }
}
