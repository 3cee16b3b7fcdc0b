//! The HTTP side: routes, handlers, the request-log middleware.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use prbench_eval::prompt::Prompts;
use prbench_models::{ModelIdentity, RmInput, RmRequest};
use serde_json::{json, Value};
use tokio::sync::watch;

use super::batcher::{ItemResult, Queue};
use super::log::{self, LogLine, LogWriter};
use super::normalize::Normalize;
use super::protocol::{ApiError, BatchBody, ErrorKind, ScoreItem};
use super::stats::Stats;

/// What `/health` reports about the configuration.
pub(crate) struct Info {
    pub(crate) identity: ModelIdentity,
    pub(crate) normalize: Normalize,
    pub(crate) max_batch: usize,
    pub(crate) batch_wait_ms: f64,
    pub(crate) max_body_bytes: usize,
}

/// State shared by every request.
pub(crate) struct AppState {
    pub(crate) queue: Queue,
    pub(crate) prompts: Prompts,
    pub(crate) stats: Arc<Stats>,
    pub(crate) info: Info,
    pub(crate) log: Option<LogWriter>,
    pub(crate) next_id: AtomicU64,
    pub(crate) stopping: watch::Receiver<bool>,
}

impl AppState {
    /// The structured input and the conversation the reward model sees, rendered exactly as
    /// `prbench eval` renders it (`prompts/rm-user.jinja`).
    fn render(&self, item: ScoreItem, id: String) -> Result<RmRequest, ApiError> {
        let context = item.context();
        let input =
            RmInput { example_id: id, question: item.query, context, answer: item.response_text };
        let prompt = self.prompts.reward_model(&input).map_err(|e| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "template", e.to_string())
        })?;
        Ok(RmRequest { input, prompt })
    }

    fn body_error(&self, rejection: BytesRejection) -> ApiError {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!(
                    "the request body is over the server's limit of {} bytes; send fewer items per batch, or restart the server with a larger --max-body-bytes",
                    self.info.max_body_bytes
                ),
            )
        } else {
            ApiError::new(rejection.status(), "invalid_request", rejection.body_text())
        }
    }

    fn id(&self, given: Option<String>) -> (u64, Option<String>) {
        (self.next_id.fetch_add(1, Ordering::Relaxed), given)
    }
}

/// Per-request facts a handler hands to the log middleware (shared, so they survive a
/// handler that is cancelled when its client disconnects).
#[derive(Debug, Default)]
pub(crate) struct Note {
    items: AtomicUsize,
    id: Mutex<Option<String>>,
}

impl Note {
    fn set(&self, items: usize, id: Option<&str>) {
        self.items.store(items, Ordering::Relaxed);
        if let Some(id) = id {
            *self.id.lock().unwrap_or_else(|e| e.into_inner()) = Some(log::short_id(id));
        }
    }
}

pub(crate) fn router(state: Arc<AppState>) -> Router {
    let limit = state.info.max_body_bytes;
    Router::new()
        .route("/health", get(health))
        .route("/score", post(score))
        .route("/score/batch", post(score_batch))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), log_requests))
        .with_state(state)
}

fn worker_gone() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "shutting_down",
        "the reward server stopped before answering",
    )
}

async fn answer(rx: tokio::sync::oneshot::Receiver<ItemResult>) -> ItemResult {
    rx.await.map_err(|_| worker_gone())?
}

/// The request body as JSON: 413 when it was over the limit, 400 when it is not JSON.
fn json_body(st: &AppState, body: Result<Bytes, BytesRejection>) -> Result<Value, ApiError> {
    let body = body.map_err(|r| st.body_error(r))?;
    serde_json::from_slice(&body).map_err(|e| ApiError::from_json(&e, "the request body"))
}

/// `POST /score`: `{query, profile, response_text, id?}` → `{"score": reward}`.
async fn score(
    State(st): State<Arc<AppState>>,
    Extension(note): Extension<Arc<Note>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let value = json_body(&st, body)?;
    let item = ScoreItem::from_json(value, "the request body")?;
    let (n, given) = st.id(item.id.clone());
    let id = given.unwrap_or_else(|| format!("req-{n}"));
    note.set(1, Some(&id));
    let request = st.render(item, id)?;
    let rx = st.queue.submit(vec![request])?.pop().expect("one receiver per item");
    Ok(Json(json!({ "score": answer(rx).await? })))
}

/// `POST /score/batch`: `{"items": [item, …]}` → `{"scores": [reward, …]}` in order; all or
/// nothing (the first failing item's error, naming its index).
async fn score_batch(
    State(st): State<Arc<AppState>>,
    Extension(note): Extension<Arc<Note>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let value = json_body(&st, body)?;
    let shape = |reason: String| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("the request body: {reason} (expected {{\"items\": [{{\"query\", \"profile\", \"response_text\", \"id\"?}}, …]}})"),
        )
    };
    if !value.is_object() {
        return Err(shape("not a JSON object".into()));
    }
    let batch: BatchBody = serde_json::from_value(value).map_err(|e| shape(e.to_string()))?;
    let (n, _) = st.id(None);
    note.set(batch.items.len(), Some(&format!("req-{n}")));
    let requests = batch
        .items
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            let item = ScoreItem::from_json(value, &format!("items[{i}]"))?;
            let id = item.id.clone().unwrap_or_else(|| format!("req-{n}.{i}"));
            st.render(item, id)
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    if requests.is_empty() {
        return Ok(Json(json!({ "scores": [] })));
    }
    let receivers = st.queue.submit(requests)?;
    let results = futures::future::join_all(receivers.into_iter().map(answer)).await;
    let mut scores = Vec::with_capacity(results.len());
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(s) => scores.push(s),
            Err(e) => return Err(ApiError { message: format!("items[{i}]: {}", e.message), ..e }),
        }
    }
    Ok(Json(json!({ "scores": scores })))
}

/// `GET /health`: model, settings, queue depth and counters.
async fn health(State(st): State<Arc<AppState>>) -> Json<Value> {
    let id = &st.info.identity;
    Json(json!({
        "status": if *st.stopping.borrow() { "shutting_down" } else { "ok" },
        "model": id.spec,
        "engine": id.engine,
        "file_hash": id.file_hash,
        "normalize": st.info.normalize.to_string(),
        "queue": st.queue.depth(),
        "capacity": st.queue.capacity(),
        "max_batch": st.info.max_batch,
        "batch_wait_ms": st.info.batch_wait_ms,
        "max_body_bytes": st.info.max_body_bytes,
        "stats": st.stats.snapshot(),
    }))
}

const ENDPOINTS: &str = "GET /health, POST /score, POST /score/batch";

async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "no endpoint `{method} {}`; this server has {ENDPOINTS}",
            log::short_id(uri.path())
        ),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "`{}` does not take {method}; this server has {ENDPOINTS}",
            log::short_id(uri.path())
        ),
    )
}

/// Logs one line per request when it is answered, or with status 499 when the client goes
/// first (the handler future is then dropped, and with it this guard).
struct Pending {
    st: Arc<AppState>,
    method: String,
    path: String,
    start: Instant,
    queue: usize,
    note: Arc<Note>,
    done: bool,
}

impl Pending {
    fn write(&mut self, status: u16, error: Option<&str>) {
        self.done = true;
        let Some(writer) = &self.st.log else { return };
        let line = LogLine {
            ts: log::now(),
            method: &self.method,
            path: &self.path,
            status,
            items: self.note.items.load(Ordering::Relaxed),
            latency_ms: (self.start.elapsed().as_secs_f64() * 1e3 * 1000.0).round() / 1000.0,
            queue: self.queue,
            id: self.note.id.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            error,
        };
        log::write_line(writer, &line);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            self.st.stats.client_closed.fetch_add(1, Ordering::Relaxed);
            self.write(499, Some("client_closed"));
        }
    }
}

async fn log_requests(State(st): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    st.stats.requests.fetch_add(1, Ordering::Relaxed);
    let note = Arc::new(Note::default());
    req.extensions_mut().insert(Arc::clone(&note));
    let mut pending = Pending {
        queue: st.queue.depth(),
        st,
        method: req.method().to_string(),
        path: log::short_id(req.uri().path()),
        start: Instant::now(),
        note,
        done: false,
    };
    let resp = next.run(req).await.into_response();
    let error = resp.extensions().get::<ErrorKind>().map(|k| k.0);
    pending.write(resp.status().as_u16(), error);
    resp
}
