//! Latency summaries (p50, p99, max) with one percentile rule, shared by the load benches
//! (`prbench bench serve`, `bench annotate`) and the remote engines' streaming histogram
//! (`prbench bench remote`, run summaries).
//!
//! **The rule: nearest rank.** The `q`-quantile of `n` sorted values is the value at 1-based
//! rank `⌈q·n⌉` (clamped to `1..=n`): always a value that was observed, never an interpolation
//! between two. This is the nearest-rank method of Hyndman & Fan (1996), "Sample quantiles in
//! statistical packages", *The American Statistician* 50(4), definition 1 (the inverse of the
//! empirical distribution function), the usual rule for latency percentiles. It differs from
//! [`crate::bootstrap::percentile`] (linear interpolation, numpy's default), which is for
//! confidence intervals over bootstrap draws.

use serde::Serialize;

/// p50, p99 and max of a set of latencies, milliseconds, by the nearest-rank rule (module
/// docs). The JSON field names (`count`, `p50_ms`, `p99_ms`, `max_ms`) are part of the bench
/// reports' `--json` output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Latencies summarised.
    pub count: u64,
    /// Median (nearest rank, `⌈n/2⌉`), ms.
    pub p50_ms: f64,
    /// 99th percentile (nearest rank, `⌈0.99·n⌉`), ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
}

/// The nearest-rank `q`-quantile of ascending `sorted` (`q` in 0..=1): the value at 1-based
/// rank `⌈q·n⌉`, clamped to `1..=n` (module docs). NaN when `sorted` is empty.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The 1-based nearest rank `⌈q·n⌉` (at least 1) of the `q`-quantile among `n` values: for a
/// collector that counts values (a histogram) instead of keeping them.
pub fn nearest_rank_index(n: u64, q: f64) -> u64 {
    ((q * n as f64).ceil() as u64).max(1)
}

impl LatencySummary {
    /// The summary of `ms` (latencies in milliseconds, any order; NaNs sort last by
    /// [`f64::total_cmp`]); `None` when `ms` is empty.
    pub fn of_ms(mut ms: Vec<f64>) -> Option<LatencySummary> {
        ms.sort_by(f64::total_cmp);
        Some(LatencySummary {
            count: ms.len() as u64,
            p50_ms: nearest_rank(&ms, 0.50),
            p99_ms: nearest_rank(&ms, 0.99),
            max_ms: *ms.last()?,
        })
    }

    /// The summary of nothing measured, every figure `value` (a report that shows zeros, or NaN
    /// for "none", where there was no latency).
    pub fn empty(value: f64) -> LatencySummary {
        LatencySummary { count: 0, p50_ms: value, p99_ms: value, max_ms: value }
    }
}

#[cfg(test)]
mod tests {
    use super::nearest_rank as percentile;
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn nearest_rank_takes_an_observed_value() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.0), 1.0);
        assert_eq!(nearest_rank(&v, 1.0), 100.0);
        // Between two order statistics it takes the upper one, never a mean: of 4 values, p50
        // is rank 2.
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.0);
        assert_eq!(nearest_rank_index(1000, 0.99), 990);
        assert_eq!(nearest_rank_index(3, 0.0), 1);
    }

    #[test]
    fn summary_sorts_and_counts() {
        let s = LatencySummary::of_ms(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!(s, LatencySummary { count: 3, p50_ms: 2.0, p99_ms: 3.0, max_ms: 3.0 });
        assert_eq!(LatencySummary::of_ms(Vec::new()), None);
        assert_eq!(LatencySummary::empty(0.0).p99_ms, 0.0);
    }
}
