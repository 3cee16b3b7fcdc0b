//! When to retry a request and how long to wait first: exponential backoff with full jitter
//! (delay drawn uniformly from `[0, min(max, base · 2^attempt)]`, as in the AWS Architecture
//! Blog's "Exponential Backoff And Jitter"), and the `Retry-After` header of RFC 9110 §10.2.3.

use std::time::{Duration, SystemTime};

use rand::Rng;

/// How many multiples of `backoff_max` a server's `Retry-After` may make us wait at most.
pub const RETRY_AFTER_CAP_FACTOR: u32 = 4;

/// The backoff policy of [`crate::RemoteOptions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Scale of the first retry's delay range.
    pub base: Duration,
    /// Upper bound of any jittered delay; `RETRY_AFTER_CAP_FACTOR ×` this bounds `Retry-After`.
    pub max: Duration,
}

/// The wait before one retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// Time to sleep.
    pub delay: Duration,
    /// The server's `Retry-After` when it exceeded the cap and was cut to it.
    pub capped_from: Option<Duration>,
}

impl Backoff {
    /// Upper end of the jitter range before retry `attempt` (0 for the first retry):
    /// `min(max, base · 2^attempt)`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.min(31));
        self.base.saturating_mul(factor).min(self.max)
    }

    /// Largest `Retry-After` honoured in full: `RETRY_AFTER_CAP_FACTOR · max`.
    pub fn retry_after_cap(&self) -> Duration {
        self.max.saturating_mul(RETRY_AFTER_CAP_FACTOR)
    }

    /// The wait before retry `attempt` (0-based): a jittered delay, raised to the server's
    /// `Retry-After` (capped at [`Backoff::retry_after_cap`]) when one was given.
    pub fn wait(&self, attempt: u32, retry_after: Option<Duration>, rng: &mut impl Rng) -> Wait {
        let ceiling = self.ceiling(attempt);
        let jitter = if ceiling.is_zero() {
            Duration::ZERO
        } else {
            rng.random_range(Duration::ZERO..=ceiling)
        };
        let cap = self.retry_after_cap();
        match retry_after {
            Some(ra) if ra > cap => Wait { delay: jitter.max(cap), capped_from: Some(ra) },
            Some(ra) => Wait { delay: jitter.max(ra), capped_from: None },
            None => Wait { delay: jitter, capped_from: None },
        }
    }
}

/// Parses a `Retry-After` value: delta-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`) measured from `now`. A date in the past gives zero;
/// anything else unreadable gives `None` (the header is then ignored).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    // Some servers send fractional seconds; RFC 9110 does not allow them, but honouring them
    // costs nothing.
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whether an HTTP status is worth another try: 408 (request timeout), 429 (rate limit) and
/// every 5xx. Other 4xx mean the request itself is wrong and fail the item at once.
pub fn retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}

/// Whether a `Retry-After` header on this status is honoured (RFC 9110 defines it for 429 and
/// 503; other statuses' headers are ignored).
pub fn honours_retry_after(status: u16) -> bool {
    status == 429 || status == 503
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn policy() -> Backoff {
        Backoff { base: Duration::from_millis(500), max: Duration::from_secs(30) }
    }

    #[test]
    fn ceiling_doubles_then_saturates() {
        let b = policy();
        assert_eq!(b.ceiling(0), Duration::from_millis(500));
        assert_eq!(b.ceiling(1), Duration::from_secs(1));
        assert_eq!(b.ceiling(5), Duration::from_secs(16));
        assert_eq!(b.ceiling(6), Duration::from_secs(30));
        assert_eq!(b.ceiling(200), Duration::from_secs(30));
    }

    #[test]
    fn jitter_stays_in_range_and_retry_after_is_a_floor() {
        let b = policy();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for attempt in 0..10 {
            let w = b.wait(attempt, None, &mut rng);
            assert!(w.delay <= b.ceiling(attempt));
            let w = b.wait(attempt, Some(Duration::from_secs(3)), &mut rng);
            assert!(w.delay >= Duration::from_secs(3) && w.capped_from.is_none());
        }
        let w = b.wait(0, Some(Duration::from_secs(7200)), &mut rng);
        assert_eq!(w.delay, Duration::from_secs(120));
        assert_eq!(w.capped_from, Some(Duration::from_secs(7200)));
        let zero = Backoff { base: Duration::ZERO, max: Duration::ZERO };
        assert_eq!(zero.wait(3, None, &mut rng).delay, Duration::ZERO);
    }

    #[test]
    fn retry_after_forms() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("1.5", now), Some(Duration::from_millis(1500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn statuses() {
        for s in [408, 429, 500, 502, 503, 504, 599] {
            assert!(retryable_status(s), "{s}");
        }
        for s in [200, 400, 401, 403, 404, 413, 422] {
            assert!(!retryable_status(s), "{s}");
        }
    }
}
