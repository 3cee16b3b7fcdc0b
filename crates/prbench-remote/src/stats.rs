//! Counters of what a remote backend did, shared by its concurrent requests and read as
//! [`prbench_models::CallStats`] for the run summary.

use std::sync::atomic::{AtomicU64, Ordering};

use prbench_models::CallStats;
pub use prbench_stats::latency::LatencySummary;

/// Lock-free counters behind [`CallStats`].
#[derive(Debug, Default)]
pub struct Counters {
    requests: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    unreported_prompt_tokens: AtomicU64,
    unreported_completion_tokens: AtomicU64,
    latency: LatencyHistogram,
}

/// Buckets of the latency histogram: bucket `b` holds durations in
/// `[GROWTH^b, GROWTH^(b+1))` microseconds, so a percentile read from it is within 1% of the
/// exact one; 2,400 buckets reach 6.6 hours. Fixed size: memory does not grow with the run.
const BUCKETS: usize = 2400;
const GROWTH: f64 = 1.01;

/// Item latencies (first attempt to final result, retries and backoff included), in a
/// fixed-size log-scale histogram: the streaming collector of [`LatencySummary`], for runs too
/// long to keep every latency.
///
/// How close it is: [`LatencyHistogram::summary`] applies the nearest-rank rule of
/// [`prbench_stats::latency`] to the bucket counts (the same rank `⌈q·n⌉`, so the same order
/// statistic falls in the chosen bucket) and reports the bucket's geometric middle,
/// `GROWTH^(b+½)` µs, which is within a factor `√1.01` (0.5%) of every value in the bucket;
/// `max_ms` is the upper bound of the last non-empty bucket, within 1% above the true maximum.
/// Latencies under 1 µs share bucket 0 and those over 6.6 hours the last bucket.
#[derive(Debug)]
pub struct LatencyHistogram {
    counts: Box<[AtomicU64]>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self { counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect() }
    }
}

impl LatencyHistogram {
    fn bucket(d: std::time::Duration) -> usize {
        let us = d.as_secs_f64() * 1e6;
        if us < 1.0 {
            return 0;
        }
        ((us.ln() / GROWTH.ln()) as usize).min(BUCKETS - 1)
    }

    /// Records one item's latency.
    pub fn record(&self, d: std::time::Duration) {
        self.counts[Self::bucket(d)].fetch_add(1, Ordering::Relaxed);
    }

    /// Percentiles of what was recorded (each within 1% of the exact nearest-rank value: see
    /// the type's docs); `None` before the first item.
    pub fn summary(&self) -> Option<LatencySummary> {
        let counts: Vec<u64> = self.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let n: u64 = counts.iter().sum();
        if n == 0 {
            return None;
        }
        let mid_ms = |b: usize| GROWTH.powf(b as f64 + 0.5) / 1000.0;
        // The smallest bucket whose cumulative count reaches rank ceil(q·n) (nearest-rank).
        let at = |q: f64| {
            let rank = prbench_stats::latency::nearest_rank_index(n, q);
            let mut seen = 0;
            for (b, &c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return mid_ms(b);
                }
            }
            mid_ms(BUCKETS - 1)
        };
        let last = counts.iter().rposition(|&c| c > 0).unwrap_or(0);
        Some(LatencySummary {
            count: n,
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: GROWTH.powf(last as f64 + 1.0) / 1000.0,
        })
    }
}

impl Counters {
    /// One HTTP request sent; `retry` when it was not the item's first attempt.
    pub fn request(&self, retry: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if retry {
            self.retries.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One item failed for good.
    pub fn failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Tokens a server reported for one successful reply; `None` where it gave no count (counted
    /// apart, so a total that misses them is never shown as the total).
    pub fn usage(&self, prompt_tokens: Option<u64>, completion_tokens: Option<u64>) {
        for (n, sum, unreported) in [
            (prompt_tokens, &self.prompt_tokens, &self.unreported_prompt_tokens),
            (completion_tokens, &self.completion_tokens, &self.unreported_completion_tokens),
        ] {
            match n {
                Some(n) => sum.fetch_add(n, Ordering::Relaxed),
                None => unreported.fetch_add(1, Ordering::Relaxed),
            };
        }
    }

    /// One item finished (success or failure) after `d`.
    pub fn latency(&self, d: std::time::Duration) {
        self.latency.record(d);
    }

    /// Item latency percentiles so far.
    pub fn latency_summary(&self) -> Option<LatencySummary> {
        self.latency.summary()
    }

    /// A snapshot (each counter read on its own; exact once no batch is running).
    pub fn snapshot(&self) -> CallStats {
        CallStats {
            requests: self.requests.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: self.completion_tokens.load(Ordering::Relaxed),
            unreported_prompt_tokens: self.unreported_prompt_tokens.load(Ordering::Relaxed),
            unreported_completion_tokens: self.unreported_completion_tokens.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn percentiles_are_within_one_percent_of_the_exact_nearest_rank_values() {
        let h = LatencyHistogram::default();
        // 1..=1000 ms: nearest-rank p50 = 500 ms, p99 = 990 ms, max = 1000 ms.
        for ms in 1..=1000u64 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.summary().unwrap();
        assert_eq!(s.count, 1000);
        for (got, want) in [(s.p50_ms, 500.0), (s.p99_ms, 990.0), (s.max_ms, 1000.0)] {
            assert!((got / want - 1.0).abs() <= 0.01, "{got} vs {want}");
        }
        assert!(LatencyHistogram::default().summary().is_none());
    }
}
