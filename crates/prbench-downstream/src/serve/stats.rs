//! Counters since start, shown by `GET /health`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::Serialize;

/// Live counters shared by the handlers and the batch worker (relaxed atomics: figures for
/// people and tests, not for synchronisation).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// HTTP requests received (every path).
    pub(crate) requests: AtomicU64,
    /// Items accepted into the queue and not yet answered (waiting, batching or scoring).
    pub(crate) in_flight: AtomicUsize,
    /// Items answered with a score.
    pub(crate) scored: AtomicU64,
    /// Items answered with an error (model failure, non-finite score, panic).
    pub(crate) failed: AtomicU64,
    /// Items whose client had gone before the answer was ready (dropped, never sent).
    pub(crate) abandoned: AtomicU64,
    /// Requests refused with 503 because the queue was full.
    pub(crate) rejected_full: AtomicU64,
    /// Requests whose client closed the connection before the answer.
    pub(crate) client_closed: AtomicU64,
    /// Model calls made.
    pub(crate) batches: AtomicU64,
    /// Items in the largest model call so far.
    pub(crate) largest_batch: AtomicUsize,
}

/// A copy of the counters at one moment (the `stats` object of `GET /health`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct StatsSnapshot {
    /// HTTP requests received since start (every path, `/health` included).
    pub requests: u64,
    /// Items accepted and not yet answered.
    pub in_flight: usize,
    /// Items answered with a score.
    pub scored: u64,
    /// Items answered with an error.
    pub failed: u64,
    /// Items scored or skipped after their client had gone.
    pub abandoned: u64,
    /// Requests refused with 503 (queue full).
    pub rejected_full: u64,
    /// Requests whose client disconnected before the answer.
    pub client_closed: u64,
    /// Model calls made.
    pub batches: u64,
    /// Items in the largest model call.
    pub largest_batch: usize,
}

impl Stats {
    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        let r = Ordering::Relaxed;
        StatsSnapshot {
            requests: self.requests.load(r),
            in_flight: self.in_flight.load(r),
            scored: self.scored.load(r),
            failed: self.failed.load(r),
            abandoned: self.abandoned.load(r),
            rejected_full: self.rejected_full.load(r),
            client_closed: self.client_closed.load(r),
            batches: self.batches.load(r),
            largest_batch: self.largest_batch.load(r),
        }
    }
}
