//! What every remote backend is configured with: concurrency, timeouts, retries, the API key's
//! environment variable.

use std::time::Duration;

/// Settings shared by every remote backend ([`crate::OpenAiChat`], [`crate::VllmClassify`],
/// [`crate::RewardServer`]).
///
/// Nothing here changes results, only how they are fetched, so none of it is part of a
/// backend's identity or decoding record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteOptions {
    /// Most HTTP requests in flight at once, across all replicas of one backend (default 16;
    /// 0 is taken as 1). Also the number of items a batch call works on at once.
    pub concurrency: usize,
    /// Time limit of one HTTP request, from sending it to reading the last byte of the reply
    /// (default 120 s). A request over the limit is retried like a dropped connection.
    pub timeout: Duration,
    /// Retries after the first attempt of one item (default 6, so at most 7 attempts).
    pub max_retries: u32,
    /// Backoff before retry `n` (0-based) is drawn uniformly from
    /// `[0, min(backoff_max, backoff_base · 2^n)]` ("full jitter"); default 0.5 s.
    pub backoff_base: Duration,
    /// Upper bound of one jittered backoff (default 30 s). A server's `Retry-After` is honoured
    /// up to four times this value.
    pub backoff_max: Duration,
    /// Name of the environment variable holding the API key (e.g. `OPENAI_API_KEY`), read once
    /// when the backend is built. Unset, or naming an unset or empty variable: no
    /// `Authorization` header is sent. The key itself is never accepted as a value.
    pub api_key_env: Option<String>,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        Self {
            concurrency: 16,
            timeout: Duration::from_secs(120),
            max_retries: 6,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            api_key_env: None,
        }
    }
}
