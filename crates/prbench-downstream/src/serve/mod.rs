//! The reward server for PPO (PROTOCOL.md §7): any pointwise [`RewardModel`] behind HTTP.
//!
//! | endpoint | request | answer |
//! |---|---|---|
//! | `POST /score` | `{"query", "profile"?, "response_text", "id"?}` | `{"score": reward}` |
//! | `POST /score/batch` | `{"items": [item, …]}` | `{"scores": [reward, …]}`, in order |
//! | `GET /health` | | `{"status", "model", "engine", "normalize", "queue", "capacity", …, "stats"}` |
//!
//! The reward is the model's raw score unless [`ServeOptions::normalize`] says otherwise. Each
//! answer is rendered as `prbench eval` renders it (user turn = `profile` as context + `query`,
//! assistant turn = `response_text`), so a served model sees what the benchmark showed it.
//!
//! Failures are HTTP errors with a JSON body `{"error": "…"}`, never a made-up reward
//! (PROTOCOL.md §10 item 9): 400 for malformed JSON or a missing, unknown or mistyped field, 413
//! for a body over [`ServeOptions::max_body_bytes`] or a batch larger than the queue, 503 with
//! `Retry-After: 1` when the queue is full, 500 when the model fails or returns a non-finite
//! score. A batch is all or nothing: the first failing item's error, naming `items[i]`.
//!
//! Handlers put items into a bounded queue ([`ServeOptions::queue_capacity`] items); one worker
//! takes up to [`ServeOptions::max_batch`] at a time, waiting at most
//! [`ServeOptions::batch_wait`] for a batch to fill, and scores them in one model call on a
//! blocking thread. On shutdown the server stops accepting connections, scores and answers
//! everything already accepted, and returns.
//!
//! ```no_run
//! use std::sync::Arc;
//! use prbench_downstream::serve::{Server, ServeOptions};
//! use prbench_models::baselines::Baseline;
//!
//! # async fn demo() -> Result<(), prbench_downstream::ServeError> {
//! let opts = ServeOptions { addr: "127.0.0.1:0".parse().unwrap(), ..ServeOptions::default() };
//! let server = Server::bind(Arc::new(Baseline::Longer), opts).await?;
//! println!("listening on http://{}", server.local_addr());
//! server.run(prbench_downstream::serve::shutdown_signal()).await
//! # }
//! ```

mod app;
mod batcher;
pub mod flags;
mod handle;

pub mod log;
mod normalize;
mod protocol;
mod stats;

use std::fmt;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use prbench_eval::prompt::Prompts;
use prbench_models::RewardModel;
use tokio::sync::watch;

pub use handle::ServerHandle;
pub use log::{stderr_writer, LogWriter};
pub use normalize::Normalize;
pub use protocol::{ApiError, ScoreItem};
pub use stats::StatsSnapshot;

use crate::error::ServeError;

/// Server settings. The defaults suit a single CPU or GPU reward model behind a PPO trainer.
#[derive(Clone)]
pub struct ServeOptions {
    /// Address to listen on (default `127.0.0.1:8000`; port 0 = any free port, see
    /// [`Server::local_addr`]). The server has no authentication: keep it on loopback unless the
    /// network is trusted.
    pub addr: SocketAddr,
    /// Most items per model call (default 16, at least 1).
    pub max_batch: usize,
    /// How long the worker waits for more items once one has arrived, before scoring a batch
    /// that is not full (default 5 ms; 0 = never wait). It adds at most this much latency to a
    /// lone request.
    pub batch_wait: Duration,
    /// Items that may wait in the queue (default 1,024, at least 1). A request that does not
    /// fit is answered 503 at once; a batch request with more items than this, 413.
    pub queue_capacity: usize,
    /// Largest request body in bytes (default 1 MiB); larger ones are answered 413.
    pub max_body_bytes: usize,
    /// How the raw score becomes the reward (default: unchanged).
    pub normalize: Normalize,
    /// Where the one-JSON-line-per-request log goes (default stderr; `None` = no log).
    pub log: Option<LogWriter>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 8000)),
            max_batch: 16,
            batch_wait: Duration::from_millis(5),
            queue_capacity: 1024,
            max_body_bytes: 1024 * 1024,
            normalize: Normalize::None,
            log: Some(stderr_writer()),
        }
    }
}

impl fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServeOptions")
            .field("addr", &self.addr)
            .field("max_batch", &self.max_batch)
            .field("batch_wait", &self.batch_wait)
            .field("queue_capacity", &self.queue_capacity)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("normalize", &self.normalize)
            .field("log", &self.log.is_some())
            .finish()
    }
}

impl ServeOptions {
    /// Checks the ranges.
    ///
    /// # Errors
    /// [`ServeError::Options`] naming the setting.
    pub fn validate(&self) -> Result<(), ServeError> {
        if self.max_batch == 0 {
            return Err(ServeError::Options("the largest batch must be at least 1 item".into()));
        }
        if self.queue_capacity == 0 {
            return Err(ServeError::Options("the queue must hold at least 1 item".into()));
        }
        // tokio's bounded channel holds at most this many.
        if self.queue_capacity > (usize::MAX >> 3) {
            return Err(ServeError::Options(format!(
                "a queue of {} items is too large",
                self.queue_capacity
            )));
        }
        if self.max_body_bytes == 0 {
            return Err(ServeError::Options("the body limit must be at least 1 byte".into()));
        }
        Ok(())
    }
}

/// A bound reward server, not yet serving. Create it inside a tokio runtime.
pub struct Server {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    app: axum::Router,
    worker: tokio::task::JoinHandle<()>,
    stop: watch::Sender<bool>,
    log: Option<LogWriter>,
    stats: Arc<stats::Stats>,
}

impl Server {
    /// Binds `opts.addr` and starts the batch worker for `model`. Requests are accepted only
    /// once [`Server::run`] is called.
    ///
    /// # Errors
    /// [`ServeError::Options`] for out-of-range settings, [`ServeError::Bind`] when the address
    /// cannot be bound.
    pub async fn bind(
        model: Arc<dyn RewardModel>,
        opts: ServeOptions,
    ) -> Result<Server, ServeError> {
        opts.validate()?;
        let listener = tokio::net::TcpListener::bind(opts.addr)
            .await
            .map_err(|source| ServeError::Bind { addr: opts.addr, source })?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(stats::Stats::default());
        let (queue, rx) = batcher::Queue::new(opts.queue_capacity, Arc::clone(&stats));
        let (stop, stopping) = watch::channel(false);
        let cfg = batcher::WorkerConfig {
            max_batch: opts.max_batch,
            batch_wait: opts.batch_wait,
            normalize: opts.normalize,
        };
        let info = app::Info {
            identity: model.identity(),
            normalize: opts.normalize,
            max_batch: opts.max_batch,
            batch_wait_ms: opts.batch_wait.as_secs_f64() * 1e3,
            max_body_bytes: opts.max_body_bytes,
        };
        let worker =
            tokio::spawn(batcher::run_worker(model, rx, cfg, Arc::clone(&stats), stopping.clone()));
        let state = Arc::new(app::AppState {
            queue,
            prompts: Prompts::new(),
            stats: Arc::clone(&stats),
            info,
            log: opts.log.clone(),
            next_id: AtomicU64::new(0),
            stopping,
        });
        Ok(Server { listener, addr, app: app::router(state), worker, stop, log: opts.log, stats })
    }

    /// The address actually bound (the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` completes, then stops accepting connections, answers every
    /// request already accepted (queued items are scored) and returns. Writes a
    /// `{"event":"shutdown"}` and a `{"event":"stopped"}` line to the log.
    ///
    /// # Errors
    /// [`ServeError::Io`] if the accept loop fails.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let Server { listener, app, worker, stop, log: writer, stats, .. } = self;
        // Shared so the worker's stop flag outlives the signal future: it must stay set until
        // the worker has drained the queue.
        let stop = Arc::new(stop);
        let signal = {
            let (stop, writer, stats) = (Arc::clone(&stop), writer.clone(), Arc::clone(&stats));
            async move {
                shutdown.await;
                stop.send_replace(true);
                if let Some(w) = &writer {
                    let in_flight = stats.snapshot().in_flight;
                    log::write_event(
                        w,
                        &serde_json::json!({ "ts": log::now(), "event": "shutdown", "in_flight": in_flight }),
                    );
                }
            }
        };
        let result = axum::serve(listener, app).with_graceful_shutdown(signal).await;
        stop.send_replace(true);
        // Every connection has finished, so the router and the queue's sender are gone: the
        // worker scores what is left and ends.
        let _ = worker.await;
        if let Some(w) = &writer {
            let s = stats.snapshot();
            log::write_event(
                w,
                &serde_json::json!({ "ts": log::now(), "event": "stopped", "scored": s.scored, "failed": s.failed, "abandoned": s.abandoned }),
            );
        }
        result.map_err(ServeError::Io)
    }
}

/// Binds and serves `model` until `shutdown` completes (see [`Server::run`]).
///
/// # Errors
/// As [`Server::bind`] and [`Server::run`].
pub async fn serve(
    model: Arc<dyn RewardModel>,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    Server::bind(model, opts).await?.run(shutdown).await
}

/// A future that completes on SIGTERM or Ctrl-C (SIGINT). The handlers are installed when this
/// is called, not when the future is first polled, so a signal that arrives right after
/// (e.g. once the start line is printed) is not lost. Call it inside a tokio runtime. A signal
/// that cannot be watched is ignored; the other one still ends the server.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async fn recv(s: Option<Signal>) {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        async move {
            tokio::select! {
                _ = recv(term) => {}
                _ = recv(int) => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Serves `model` on a new tokio runtime until SIGTERM or Ctrl-C, then finishes in-flight
/// requests and returns: the blocking entry point of `prbench serve-reward`. `on_ready` is
/// called with the bound address once the socket listens. A second SIGTERM or Ctrl-C while
/// requests are being finished ends the process at once with exit status 130 (for a model
/// that hangs).
///
/// # Errors
/// As [`Server::bind`] and [`Server::run`]; [`ServeError::Io`] if the runtime cannot start.
pub fn run_until_signal(
    model: Arc<dyn RewardModel>,
    opts: ServeOptions,
    on_ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    // Held here so the model is dropped outside the runtime (an engine may own a runtime of
    // its own, which cannot be dropped inside another).
    let _keep = Arc::clone(&model);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("reward-server")
        .build()?;
    let result = rt.block_on(async move {
        let server = Server::bind(model, opts).await?;
        let first = shutdown_signal();
        on_ready(server.local_addr());
        server
            .run(async {
                first.await;
                let second = shutdown_signal();
                tokio::spawn(async {
                    second.await;
                    std::process::exit(130);
                });
            })
            .await
    });
    drop(rt);
    result
}
