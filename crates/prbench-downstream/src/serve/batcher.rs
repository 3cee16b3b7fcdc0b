//! Internal batching: handlers put items into a bounded queue and await their own answer; one
//! worker takes up to `max_batch` items (waiting at most `batch_wait` for the batch to fill),
//! scores them in one model call on a blocking thread, and answers each item.
//!
//! Nothing here blocks a handler: a full queue is refused at once (503), and an item whose
//! client has gone is skipped or its answer dropped, never waited on.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use prbench_models::{RewardModel, RmRequest};
use tokio::sync::mpsc::error::{TryRecvError, TrySendError};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::normalize::Normalize;
use super::protocol::ApiError;
use super::stats::Stats;

/// One item's answer: the served reward, or the error to return.
pub(crate) type ItemResult = Result<f64, ApiError>;

/// One queued item.
pub(crate) struct Job {
    pub(crate) request: RmRequest,
    pub(crate) reply: oneshot::Sender<ItemResult>,
}

/// The handlers' side of the queue.
pub(crate) struct Queue {
    tx: mpsc::Sender<Job>,
    capacity: usize,
    stats: Arc<Stats>,
}

impl Queue {
    /// A queue of `capacity` items and the receiver its worker drains.
    pub(crate) fn new(capacity: usize, stats: Arc<Stats>) -> (Queue, mpsc::Receiver<Job>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Queue { tx, capacity, stats }, rx)
    }

    /// Items waiting in the queue (not yet taken by the worker).
    pub(crate) fn depth(&self) -> usize {
        self.capacity - self.tx.capacity()
    }

    /// Queue capacity in items.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Enqueues all of `requests` or none: one receiver per item, in order.
    ///
    /// # Errors
    /// 413 `batch_too_large` when there are more items than the queue holds; 503 `queue_full`
    /// (with `Retry-After`) when they do not fit now; 503 `shutting_down` when the worker has
    /// stopped.
    pub(crate) fn submit(
        &self,
        requests: Vec<RmRequest>,
    ) -> Result<Vec<oneshot::Receiver<ItemResult>>, ApiError> {
        let n = requests.len();
        if n > self.capacity {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "batch_too_large",
                format!("a batch of {n} items exceeds the server's queue of {} items; send at most that many per request", self.capacity),
            ));
        }
        let permits = match self.tx.try_reserve_many(n) {
            Ok(p) => p,
            Err(TrySendError::Full(())) => {
                self.stats.rejected_full.fetch_add(1, Ordering::Relaxed);
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "queue_full",
                    format!("the server's queue is full ({} items waiting, {n} more asked for); retry after the Retry-After delay", self.depth()),
                ));
            }
            Err(TrySendError::Closed(())) => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "shutting_down",
                    "the reward server is shutting down",
                ));
            }
        };
        self.stats.in_flight.fetch_add(n, Ordering::Relaxed);
        Ok(permits
            .zip(requests)
            .map(|(permit, request)| {
                let (reply, rx) = oneshot::channel();
                permit.send(Job { request, reply });
                rx
            })
            .collect())
    }
}

/// How the worker forms batches and turns scores into rewards.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WorkerConfig {
    pub(crate) max_batch: usize,
    pub(crate) batch_wait: Duration,
    pub(crate) normalize: Normalize,
}

/// Drains the queue until every sender is gone and the queue is empty. After `stop` turns
/// true it no longer waits for batches to fill. The model is dropped on a blocking thread (an
/// engine may own a runtime, which must not be dropped on an async thread).
pub(crate) async fn run_worker(
    model: Arc<dyn RewardModel>,
    mut rx: mpsc::Receiver<Job>,
    cfg: WorkerConfig,
    stats: Arc<Stats>,
    mut stop: watch::Receiver<bool>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let deadline = Instant::now() + cfg.batch_wait;
        while batch.len() < cfg.max_batch {
            match rx.try_recv() {
                Ok(job) => {
                    batch.push(job);
                    continue;
                }
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {}
            }
            if cfg.batch_wait.is_zero() || *stop.borrow() {
                break;
            }
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => break,
                next = tokio::time::timeout_at(deadline, rx.recv()) => match next {
                    Ok(Some(job)) => batch.push(job),
                    Ok(None) | Err(_) => break,
                },
            }
        }
        score_batch(&model, batch, cfg.normalize, &stats).await;
    }
    let _ = tokio::task::spawn_blocking(move || drop(model)).await;
}

/// Scores one batch and answers each item; items whose client is gone are not scored.
async fn score_batch(
    model: &Arc<dyn RewardModel>,
    batch: Vec<Job>,
    normalize: Normalize,
    stats: &Stats,
) {
    let total = batch.len();
    let (live, gone): (Vec<Job>, Vec<Job>) = batch.into_iter().partition(|j| !j.reply.is_closed());
    stats.abandoned.fetch_add(gone.len() as u64, Ordering::Relaxed);
    if !live.is_empty() {
        let (requests, replies): (Vec<RmRequest>, Vec<oneshot::Sender<ItemResult>>) =
            live.into_iter().map(|j| (j.request, j.reply)).unzip();
        let ids: Vec<String> = requests.iter().map(|r| r.input.example_id.clone()).collect();
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats.largest_batch.fetch_max(requests.len(), Ordering::Relaxed);
        let m = Arc::clone(model);
        let n = requests.len();
        let results =
            tokio::task::spawn_blocking(move || m.score_each(&requests, &|_, _| {})).await;
        let answers: Vec<ItemResult> = match results {
            Ok(rs) if rs.len() == n => rs
                .into_iter()
                .zip(&ids)
                .map(|(r, id)| match r {
                    Ok(score) => reward(score.value, normalize, id),
                    Err(e) => Err(ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "model_error",
                        format!("the reward model failed on `{id}`: {e}"),
                    )),
                })
                .collect(),
            Ok(rs) => {
                let msg = format!("the reward model returned {} scores for {n} inputs", rs.len());
                (0..n)
                    .map(|_| {
                        Err(ApiError::new(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "model_error",
                            msg.clone(),
                        ))
                    })
                    .collect()
            }
            Err(join) => {
                let msg = format!("the reward model crashed while scoring this batch ({join})");
                (0..n)
                    .map(|_| {
                        Err(ApiError::new(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "model_error",
                            msg.clone(),
                        ))
                    })
                    .collect()
            }
        };
        for (answer, reply) in answers.into_iter().zip(replies) {
            let counter = if answer.is_ok() { &stats.scored } else { &stats.failed };
            counter.fetch_add(1, Ordering::Relaxed);
            if reply.send(answer).is_err() {
                // The client disconnected while its item was being scored.
                stats.abandoned.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    stats.in_flight.fetch_sub(total, Ordering::Relaxed);
}

/// The served reward for raw score `raw`, or a 500 if either is not a finite number: no
/// reward is ever made up (PROTOCOL.md §10 item 9).
fn reward(raw: f32, normalize: Normalize, id: &str) -> ItemResult {
    let value = normalize.apply(raw);
    if raw.is_finite() && value.is_finite() {
        Ok(value)
    } else {
        Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "non_finite_score",
            format!("the reward model gave `{id}` a non-finite score ({raw}, {value} after `{normalize}`); no reward is made up"),
        ))
    }
}
