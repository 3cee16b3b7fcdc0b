//! Counters of what a remote backend did, shared by its concurrent requests and read as
//! [`prbench_models::CallStats`] for the run summary.

use std::sync::atomic::{AtomicU64, Ordering};

use prbench_models::CallStats;

/// Lock-free counters behind [`CallStats`].
#[derive(Debug, Default)]
pub struct Counters {
    requests: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
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

    /// Tokens a server reported for one successful reply.
    pub fn usage(&self, prompt_tokens: u64, completion_tokens: u64) {
        self.prompt_tokens.fetch_add(prompt_tokens, Ordering::Relaxed);
        self.completion_tokens.fetch_add(completion_tokens, Ordering::Relaxed);
    }

    /// A snapshot (each counter read on its own; exact once no batch is running).
    pub fn snapshot(&self) -> CallStats {
        CallStats {
            requests: self.requests.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: self.completion_tokens.load(Ordering::Relaxed),
        }
    }
}
