//! A loopback HTTP test server with scripted faults, for prbench's remote engines.
//!
//! It speaks just enough of the protocols prbench talks to:
//!
//! | endpoint | answer |
//! |---|---|
//! | `GET /v1/models` | `{"object":"list","data":[{"id":"fault-model","object":"model",…}]}` |
//! | `POST /v1/chat/completions` | an OpenAI chat completion shaped like llama.cpp's server; reply `"Looks fine.\nResult: A"` / `"…B"` by [`VerdictRule`] (or a [`ScriptedReply`] whose marker the request holds), logprobs on request |
//! | `POST /v1/chat/completions` ending with an assistant message, `POST /v1/completions` | one token for a logprob verdict: the letter (ln 0.8) and the other (ln 0.2) among its top log-probabilities (see `next_token.rs`; [`ServerConfig::prefill`], [`ServerConfig::completions`], [`ServerConfig::lone_letter_markers`]) |
//! | `GET /props` | llama.cpp's server properties: `chat_template` = [`PROPS_TEMPLATE`] (ChatML) |
//! | `POST /score`, `POST /score/batch` | the reward protocol of PROTOCOL.md §7: score = chars(response_text) / 100 |
//! | `POST /classify`, `POST /pooling` | vLLM's classification and pooling shapes for a one-label head: value = chars / 100 |
//! | `POST /sglang/classify` | SGLang's native `/classify` (`{"text"}` → `{"embedding": [chars/100], "meta_info"}`), under a `/sglang` root because `/classify` is vLLM's |
//! | `POST /predict` | text-embeddings-inference's `/predict` (`{"inputs", "raw_scores"}` → `[{"score", "label"}]`; sigmoid unless `raw_scores`) |
//! | `GET /info` | text-embeddings-inference's model info, the one-label head of `/predict`: `{"model_type": {"reranker": {"id2label": {"0": "LABEL_0"}, …}}, …}` (no faults) |
//! | `POST /get_reward` | OpenRLHF's `serve_rm.py` (`{"query": [...]}` → `{"rewards", "scores", "extra_logs"}`) |
//!
//! (`/chat/completions`, `/models`, `/v1/classify` and `/v1/pooling` are accepted as aliases.)
//!
//! Before the normal answer of every POST endpoint, the [`FaultRule`]s of the [`ServerConfig`]
//! may serve a [`Fault`] instead: 429 with `Retry-After`, 500, any status, a slow answer, a
//! truncated JSON body, a dropped connection (no response at all), a drop in the middle of the
//! body, or a 500 echoing the `Authorization` header. Counting (`times`) is per distinct request
//! body, so retries of the same request see the same script whatever the concurrency.
//!
//! The server runs on its own thread with its own tokio runtime, so plain `#[test]` functions and
//! synchronous callers can use it:
//!
//! ```no_run
//! use prbench_fault_server::{Fault, FaultRule, FaultServer, ServerConfig};
//!
//! let server = FaultServer::start(
//!     ServerConfig::default().with_rule(FaultRule::new("flaky", Fault::ServerError).times(2)),
//! )
//! .unwrap();
//! let openai_base = server.openai_base(); // "http://127.0.0.1:PORT/v1"
//! // … point a client at `openai_base`; afterwards inspect `server.log()` …
//! # let _ = openai_base;
//! ```
//!
//! The fast path takes no lock except the request log's (one push per request, off with
//! `record: false`) and the `times` counters (only for rules with `times`), never holds a lock
//! across an await, and writes nothing to stdout or stderr.
#![deny(missing_docs)]

mod app;
mod config;
mod conn;
mod engines;
mod next_token;
mod openai;
mod reward;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use config::{
    Fault, FaultRule, Letter, RequestRecord, ScriptedReply, ServerConfig, VerdictRule,
};
pub use next_token::{PROPS_SPECIAL, PROPS_TEMPLATE};
pub use openai::{tokenize, verdict_reply, GARBAGE_REPLY};
pub use reward::length_score;

/// Model id reported by `GET /v1/models` and echoed when a request names no model.
pub const MODEL_ID: &str = openai::MODEL_ID;

/// A running fault server. Stops when [`shutdown`](FaultServer::shutdown) is called or the
/// handle is dropped; open connections and in-flight requests are cut at that point.
pub struct FaultServer {
    addr: SocketAddr,
    shared: Arc<app::Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FaultServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultServer")
            .field("addr", &self.addr)
            .field("requests", &self.requests())
            .finish_non_exhaustive()
    }
}

impl FaultServer {
    /// Starts on `127.0.0.1` with a free port, on its own thread with its own tokio runtime (so
    /// sync tests and sync callers can use it); returns once the socket is listening.
    pub fn start(cfg: ServerConfig) -> io::Result<FaultServer> {
        Self::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), cfg)
    }

    /// Like [`start`](FaultServer::start), on a given address (port 0 = any free port).
    pub fn start_on(addr: SocketAddr, cfg: ServerConfig) -> io::Result<FaultServer> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(app::Shared::new(cfg));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();

        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
        let app_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("fault-server-{}", addr.port()))
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers)
                    .thread_name("fault-server-worker")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    let service = app::router(app_shared)
                        .into_make_service_with_connect_info::<conn::ConnHandle>();
                    let serve = axum::serve(conn::KillableListener { inner: listener }, service);
                    tokio::select! {
                        _ = serve => {}
                        _ = stop_rx => {}
                    }
                });
                // Cancels every connection task (in-flight slow requests included).
                rt.shutdown_timeout(Duration::from_secs(1));
            })?;

        match ready_rx.recv() {
            Ok(Ok(())) => {
                Ok(FaultServer { addr, shared, stop: Some(stop_tx), thread: Some(thread) })
            }
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(io::Error::other("fault server thread exited during start-up"))
            }
        }
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The root an SGLang client is given: `base_url() + "/sglang"` (its `/classify` hangs there).
    pub fn sglang_base(&self) -> String {
        format!("http://{}/sglang", self.addr)
    }

    /// `"http://127.0.0.1:PORT"`; the OpenAI base URL is `base_url() + "/v1"`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `"http://127.0.0.1:PORT/v1"`, the base URL an OpenAI client wants
    /// (`openai:MODEL@<this>`).
    pub fn openai_base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in arrival order (empty when `record` is off).
    pub fn log(&self) -> Vec<RequestRecord> {
        app::lock(&self.shared.log).clone()
    }

    /// Empties the request log (the request counter keeps counting).
    pub fn clear_log(&self) {
        app::lock(&self.shared.log).clear();
    }

    /// Number of requests received so far, whatever their answer (cheap: one atomic load).
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// The configuration the server runs with.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.cfg
    }

    /// Stops the server and waits for its thread. Same as dropping the handle.
    pub fn shutdown(self) {}

    /// Blocks the calling thread until the server stops on its own (which it does not, short of
    /// a failure): for a binary that serves until killed.
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
