//! Several base URLs serving the same model, and which one the next request goes to.
//!
//! Rule, in order:
//! 1. Replicas are in one of two tiers. The second holds the replica this item's previous
//!    attempt failed on and every replica "cooling down" after a transient failure (a 5xx,
//!    429, timeout or dropped connection; its last `n` requests failed, and less than
//!    `min(backoff_max, backoff_base · 2^(n−1))` has passed since the last one). The first tier
//!    holds the rest. A retry therefore moves to another replica, and a failing replica gets
//!    only an occasional probe while healthy ones are available; one success ends its cooldown.
//! 2. Within the best non-empty tier, the replica with the fewest requests in flight wins
//!    ("least outstanding requests").
//! 3. Ties are broken round robin (a rotating start index), so sequential requests spread
//!    evenly over idle replicas instead of all landing on the first.
//!
//! Loads are read without a lock, so two requests choosing at the same instant may both pick
//! the same replica; the rule is a preference, not an invariant.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use crate::retry::Backoff;

/// One base URL and its load and health.
#[derive(Debug)]
pub struct Replica {
    /// Base URL without a trailing `/`.
    pub url: String,
    in_flight: AtomicUsize,
    /// Transient failures since the last success.
    failures: AtomicU32,
    /// End of the cooldown, in microseconds since [`Replicas::epoch`].
    cool_until_us: AtomicU64,
}

/// The replicas of one backend.
#[derive(Debug)]
pub struct Replicas {
    list: Vec<Replica>,
    next: AtomicUsize,
    backoff: Backoff,
    epoch: Instant,
}

/// A request in flight on one replica; dropping it ends the request's count.
#[derive(Debug)]
pub struct Lease<'a> {
    set: &'a Replicas,
    replica: &'a Replica,
    /// Index of the replica in the list given to [`Replicas::new`].
    pub index: usize,
}

impl Lease<'_> {
    /// The replica's base URL.
    pub fn url(&self) -> &str {
        &self.replica.url
    }

    /// The request got a reply that was not a transient failure: the replica is healthy.
    pub fn healthy(&self) {
        self.replica.failures.store(0, Ordering::Relaxed);
        self.replica.cool_until_us.store(0, Ordering::Relaxed);
    }

    /// The request failed transiently: the replica cools down (see the module docs).
    pub fn transient_failure(&self) {
        let n = self.replica.failures.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        let until =
            self.set.now_us().saturating_add(self.set.backoff.ceiling(n - 1).as_micros() as u64);
        self.replica.cool_until_us.fetch_max(until, Ordering::Relaxed);
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.replica.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Replicas {
    /// Replicas for `urls` (trailing `/` removed); `backoff` sets the cooldowns. The caller
    /// checks that `urls` is not empty.
    pub fn new(urls: &[String], backoff: Backoff) -> Self {
        let list = urls
            .iter()
            .map(|u| Replica {
                url: u.trim_end_matches('/').to_string(),
                in_flight: AtomicUsize::new(0),
                failures: AtomicU32::new(0),
                cool_until_us: AtomicU64::new(0),
            })
            .collect();
        Self { list, next: AtomicUsize::new(0), backoff, epoch: Instant::now() }
    }

    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// Base URLs in the order given.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|r| r.url.as_str())
    }

    /// Picks a replica by the module's rule; `avoid` is the replica this item last failed on.
    pub fn acquire(&self, avoid: Option<usize>) -> Lease<'_> {
        let n = self.list.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let now = self.now_us();
        let key = |i: usize| {
            let r = &self.list[i];
            let second_tier = avoid == Some(i) || r.cool_until_us.load(Ordering::Relaxed) > now;
            (second_tier, r.in_flight.load(Ordering::Acquire))
        };
        let index =
            (0..n).map(|k| (start + k) % n).min_by_key(|&i| key(i)).expect("at least one replica");
        let replica = &self.list[index];
        replica.in_flight.fetch_add(1, Ordering::AcqRel);
        Lease { set: self, replica, index }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn three(cooldown: Duration) -> Replicas {
        Replicas::new(
            &["http://a/".into(), "http://b".into(), "http://c".into()],
            Backoff { base: cooldown, max: cooldown },
        )
    }

    #[test]
    fn idle_replicas_take_turns() {
        let r = three(Duration::ZERO);
        let picks: Vec<usize> = (0..6).map(|_| r.acquire(None).index).collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(r.urls().next(), Some("http://a"));
    }

    #[test]
    fn least_outstanding_wins_and_a_failed_replica_is_avoided() {
        let r = three(Duration::ZERO);
        let a = r.acquire(None); // 0
        let b = r.acquire(None); // 1
                                 // 2 is the only idle replica, whatever the rotation.
        assert_eq!(r.acquire(None).index, 2);
        // An item that failed on 2 goes to a busy replica rather than back to 2.
        assert_ne!(r.acquire(Some(2)).index, 2);
        drop(a);
        drop(b);
        for _ in 0..6 {
            assert_ne!(r.acquire(Some(0)).index, 0);
        }
        // A lone replica is used even when it failed.
        let one = Replicas::new(
            &["http://x".into()],
            Backoff { base: Duration::ZERO, max: Duration::ZERO },
        );
        assert_eq!(one.acquire(Some(0)).index, 0);
    }

    #[test]
    fn a_cooling_replica_is_skipped_until_it_recovers() {
        let r = three(Duration::from_secs(60));
        let l = r.acquire(None);
        assert_eq!(l.index, 0);
        l.transient_failure();
        drop(l);
        let busy: Vec<_> = (0..4).map(|_| r.acquire(None)).collect();
        assert!(busy.iter().all(|l| l.index != 0), "replica 0 is cooling down");
        // Only when every replica is cooling does load alone decide again.
        for l in &busy {
            l.transient_failure();
        }
        drop(busy);
        let hold = r.acquire(None);
        assert_ne!(r.acquire(None).index, hold.index);
        // A success ends a cooldown.
        let r = three(Duration::from_secs(60));
        let l = r.acquire(None);
        l.transient_failure();
        l.healthy();
        drop(l);
        let picks: Vec<usize> = (0..3).map(|_| r.acquire(None).index).collect();
        assert!(picks.contains(&0));
    }
}
