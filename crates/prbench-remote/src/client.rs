//! The HTTP core every remote backend shares: replicas, the concurrency limit, per-request
//! timeouts, retries with backoff, the API key, counters, and the driver that runs a batch of
//! items concurrently behind a synchronous call.
//!
//! Each backend owns one [`RemoteClient`], and each client owns a tokio runtime with two worker
//! threads; the public methods `block_on` it, so calling code stays synchronous. They must
//! not be called from inside another tokio runtime (tokio panics: "Cannot start a runtime
//! from within a runtime").

use std::future::Future;
use std::time::{Duration, SystemTime};

use futures::stream::{self, StreamExt};
use prbench_models::{CallStats, ItemDone, ModelError};
use reqwest::header::{HeaderValue, AUTHORIZATION, RETRY_AFTER};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use crate::options::RemoteOptions;
use crate::redact::{Redactor, Secret, REDACTED};
use crate::replicas::Replicas;
use crate::retry::{honours_retry_after, parse_retry_after, retryable_status, Backoff};
use crate::stats::Counters;

/// Most characters of a server reply quoted in an error message.
const EXCERPT_CHARS: usize = 300;

/// The shared HTTP core of one backend. See the module docs.
pub(crate) struct RemoteClient {
    runtime: tokio::runtime::Runtime,
    http: reqwest::Client,
    replicas: Replicas,
    permits: Semaphore,
    opts: RemoteOptions,
    key: Option<Secret>,
    redactor: Redactor,
    counters: Counters,
}

impl std::fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteClient")
            .field("replicas", &self.replicas.urls().collect::<Vec<_>>())
            .field("options", &self.opts)
            .field("api_key", &self.key.as_ref().map(|_| REDACTED))
            .finish_non_exhaustive()
    }
}

/// How one attempt ended when it did not produce a value.
enum Attempt {
    /// Worth another try; `retry_after` is the server's `Retry-After`, when it gave one.
    /// `answered`: the server sent an HTTP response (a status), as opposed to a transport failure.
    Retry { cause: String, retry_after: Option<Duration>, answered: bool },
    /// The request itself is at fault (4xx, a well-formed reply of the wrong shape): fail now.
    /// `status` is the HTTP status when the failure is one.
    Fatal { cause: String, status: Option<u16>, answered: bool },
}

/// A request that failed for good. Converts into [`ModelError::Engine`] with `message`.
#[derive(Debug)]
pub(crate) struct CallError {
    /// HTTP status of a failure that was not retried (a 4xx); `None` otherwise.
    pub(crate) fatal_status: Option<u16>,
    /// The (last) attempt got an HTTP response from the server (any status, or a 2xx whose body
    /// could not be used): the server is up and reachable, its answer was the problem.
    pub(crate) answered: bool,
    /// The full message, key redacted.
    pub(crate) message: String,
}

impl From<CallError> for ModelError {
    fn from(e: CallError) -> Self {
        ModelError::Engine(e.message)
    }
}

impl RemoteClient {
    /// A client for `base_urls` (replicas of one model).
    ///
    /// # Errors
    /// [`ModelError::Engine`] when `base_urls` is empty or a URL is not `http(s)://`, or when
    /// the runtime or HTTP client cannot be built.
    pub(crate) fn new(base_urls: &[String], opts: RemoteOptions) -> Result<Self, ModelError> {
        if base_urls.is_empty() {
            return Err(ModelError::Engine("no server URL given".into()));
        }
        if let Some(bad) =
            base_urls.iter().find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
        {
            return Err(ModelError::Engine(format!("`{bad}` is not an http:// or https:// URL")));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("prbench-remote")
            .enable_all()
            .build()
            .map_err(|e| ModelError::engine("cannot start the HTTP runtime", e))?;
        let http = reqwest::Client::builder()
            .timeout(opts.timeout)
            .user_agent(concat!("prbench-remote/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::engine("cannot build the HTTP client", e))?;
        let key = opts.api_key_env.as_deref().and_then(Secret::from_env);
        let redactor = Redactor::new(key.as_ref());
        Ok(Self {
            runtime,
            http,
            replicas: Replicas::new(
                base_urls,
                Backoff { base: opts.backoff_base, max: opts.backoff_max },
            ),
            permits: Semaphore::new(opts.concurrency.max(1)),
            opts,
            key,
            redactor,
            counters: Counters::default(),
        })
    }

    /// The options the client was built with.
    pub(crate) fn options(&self) -> &RemoteOptions {
        &self.opts
    }

    /// Base URLs in the order given.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.replicas.urls().map(str::to_string).collect()
    }

    /// Counters since the client was built.
    pub(crate) fn stats(&self) -> CallStats {
        self.counters.snapshot()
    }

    /// Item latency percentiles since the client was built.
    pub(crate) fn latency(&self) -> Option<crate::stats::LatencySummary> {
        self.counters.latency_summary()
    }

    /// Adds server-reported tokens of one successful reply to the counters (`None`: the reply
    /// gave no count).
    pub(crate) fn add_usage(&self, prompt_tokens: Option<u64>, completion_tokens: Option<u64>) {
        self.counters.usage(prompt_tokens, completion_tokens);
    }

    /// `text` with the API key replaced by `[REDACTED]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.redactor.redact(text)
    }

    /// Runs `fut` on the client's runtime and waits for it (a one-off request such as a probe).
    pub(crate) fn block_on<F: Future>(&self, fut: F) -> F::Output {
        self.runtime.block_on(fut)
    }

    /// Runs `one(i, item)` for every item, at most `concurrency` at a time, and returns the
    /// results in input order. `done(i, &value)` is called for each success the moment it
    /// arrives (on the calling thread, before this returns); each failure counts in
    /// [`CallStats::failures`] and is redacted.
    pub(crate) fn run_each<'a, I, T, F, Fut>(
        &self,
        items: &'a [I],
        done: ItemDone<'_, T>,
        one: F,
    ) -> Vec<Result<T, ModelError>>
    where
        F: Fn(usize, &'a I) -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let width = self.opts.concurrency.max(1);
        self.runtime.block_on(async {
            let mut out: Vec<Option<Result<T, ModelError>>> =
                (0..items.len()).map(|_| None).collect();
            let mut results = stream::iter(items.iter().enumerate())
                .map(|(i, item)| {
                    let fut = one(i, item);
                    async move {
                        let started = std::time::Instant::now();
                        let r = fut.await;
                        self.counters.latency(started.elapsed());
                        (i, r)
                    }
                })
                .buffer_unordered(width);
            while let Some((i, r)) = results.next().await {
                let r = match r {
                    Ok(v) => {
                        done(i, &v);
                        Ok(v)
                    }
                    Err(e) => {
                        self.counters.failure();
                        Err(self.redact_error(e))
                    }
                };
                out[i] = Some(r);
            }
            out.into_iter().map(|r| r.expect("every item yields one result")).collect()
        })
    }

    fn redact_error(&self, e: ModelError) -> ModelError {
        match e {
            ModelError::Engine(m) => ModelError::Engine(self.redact(&m)),
            other => {
                // The key may sit in a cause as well as in the message: look at the whole chain,
                // and when it is there the redacted chain becomes the message.
                let text = prbench_models::error::chain(&other);
                let clean = self.redact(&text);
                if clean == text {
                    other
                } else {
                    ModelError::Engine(clean)
                }
            }
        }
    }

    /// `POST {replica}{path}` with JSON `body`, retried per [`RemoteOptions`], and the reply
    /// decoded as `T`.
    ///
    /// Retried: 408, 429, 5xx, timeouts, connection errors (refused, reset, dropped mid-body)
    /// and a 2xx whose body is not JSON or ends early. Not retried: other statuses, and a 2xx
    /// whose body is well-formed JSON of the wrong shape (the server would send it again).
    ///
    /// # Errors
    /// [`ModelError::Engine`] naming the method, URL, attempts and last cause, e.g.
    /// `POST http://h/v1/chat/completions: 7 attempts, last: HTTP 500: {...}`; the key is
    /// redacted.
    pub(crate) async fn post_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<T, CallError> {
        self.send_json(path, Some(body)).await
    }

    /// `GET {replica}{path}`, retried and decoded as [`RemoteClient::post_json`] does (errors name
    /// `GET`).
    ///
    /// # Errors
    /// As [`RemoteClient::post_json`].
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, CallError> {
        self.send_json(path, None).await
    }

    /// `POST` with `body`, or `GET` without one; see [`RemoteClient::post_json`].
    async fn send_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, CallError> {
        let method = if body.is_some() { "POST" } else { "GET" };
        let backoff = Backoff { base: self.opts.backoff_base, max: self.opts.backoff_max };
        let attempts = self.opts.max_retries.saturating_add(1);
        let mut avoid = None;
        let mut capped_note = String::new();
        let mut attempt = 0u32;
        loop {
            let (url, outcome) = {
                let _permit = self.permits.acquire().await.map_err(|_| CallError {
                    fatal_status: None,
                    answered: false,
                    message: "HTTP client closed".into(),
                })?;
                let lease = self.replicas.acquire(avoid);
                avoid = Some(lease.index);
                let url = format!("{}{}", lease.url(), path);
                self.counters.request(attempt > 0);
                let outcome = self.attempt::<T>(&url, body).await;
                match &outcome {
                    Err(Attempt::Retry { .. }) => lease.transient_failure(),
                    _ => lease.healthy(),
                }
                (url, outcome)
            };
            attempt += 1;
            let (cause, retry_after, last_answered) = match outcome {
                Ok(v) => return Ok(v),
                Err(Attempt::Fatal { cause, status, answered }) => {
                    let tries =
                        if attempt == 1 { String::new() } else { format!(" (attempt {attempt})") };
                    let message =
                        self.redact(&format!("{method} {url}: {cause}{tries}, not retried"));
                    return Err(CallError { fatal_status: status, answered, message });
                }
                Err(Attempt::Retry { cause, retry_after, answered }) => {
                    (cause, retry_after, answered)
                }
            };
            if attempt >= attempts {
                let plural = if attempts == 1 { "attempt" } else { "attempts" };
                let message = self.redact(&format!(
                    "{method} {url}: {attempts} {plural}, last: {cause}{capped_note}"
                ));
                return Err(CallError { fatal_status: None, answered: last_answered, message });
            }
            let wait = backoff.wait(attempt - 1, retry_after, &mut rand::rng());
            if let Some(asked) = wait.capped_from {
                capped_note = format!(
                    " (the server asked to wait {} s (Retry-After); waited the cap of {} s = 4 × backoff_max)",
                    asked.as_secs_f64(),
                    wait.delay.as_secs_f64()
                );
            }
            tokio::time::sleep(wait.delay).await;
        }
    }

    /// One HTTP attempt.
    async fn attempt<T: DeserializeOwned>(
        &self,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, Attempt> {
        let mut req = match body {
            Some(body) => self.http.post(url).json(body),
            None => self.http.get(url),
        };
        if let Some(key) = &self.key {
            let mut v =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    Attempt::Fatal {
                        cause: format!(
                            "the API key in ${} holds characters an HTTP header cannot carry",
                            self.opts.api_key_env.as_deref().unwrap_or("?")
                        ),
                        status: None,
                        answered: false,
                    }
                })?;
            v.set_sensitive(true);
            req = req.header(AUTHORIZATION, v);
        }
        let resp = req.send().await.map_err(|e| self.transport(&e))?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .filter(|_| honours_retry_after(status))
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let bytes = resp.bytes().await.map_err(|e| self.transport(&e))?;
        if (200..300).contains(&status) {
            return serde_json::from_slice::<T>(&bytes).map_err(|e| {
                let detail = format!(
                    "HTTP {status} but the reply is not the expected JSON ({e}): {}",
                    self.excerpt(&bytes)
                );
                if e.is_data() {
                    Attempt::Fatal { cause: detail, status: None, answered: true }
                } else {
                    Attempt::Retry { cause: detail, retry_after: None, answered: true }
                }
            });
        }
        let cause = format!("HTTP {status}: {}", self.excerpt(&bytes));
        if retryable_status(status) {
            Err(Attempt::Retry { cause, retry_after, answered: true })
        } else {
            Err(Attempt::Fatal { cause, status: Some(status), answered: true })
        }
    }

    /// A transport failure (no complete HTTP reply): retried unless the request could not be
    /// built at all.
    fn transport(&self, e: &reqwest::Error) -> Attempt {
        let what = if e.is_timeout() {
            format!("timed out after {} s", self.opts.timeout.as_secs_f64())
        } else if e.is_connect() {
            "connection failed".to_string()
        } else if e.is_body() || e.is_decode() {
            "reading the reply failed".to_string()
        } else {
            "request failed".to_string()
        };
        let mut cause = what;
        let mut src = std::error::Error::source(e);
        while let Some(s) = src {
            let s_text = s.to_string();
            if !cause.ends_with(&s_text) {
                cause.push_str(": ");
                cause.push_str(&s_text);
            }
            src = s.source();
        }
        if e.is_builder() {
            Attempt::Fatal { cause, status: None, answered: false }
        } else {
            Attempt::Retry { cause, retry_after: None, answered: false }
        }
    }

    /// The start of a reply body for an error message, key redacted before it is cut (so no
    /// prefix of the key survives the cut).
    fn excerpt(&self, bytes: &[u8]) -> String {
        let text = self.redact(&String::from_utf8_lossy(bytes));
        let text = text.trim();
        if text.is_empty() {
            return "(empty body)".to_string();
        }
        let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
        if text.chars().count() > EXCERPT_CHARS {
            out.push('…');
        }
        out
    }
}
