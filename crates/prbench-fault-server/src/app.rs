//! Request dispatch: record, pick a fault, serve it or the normal answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::config::{Fault, RequestRecord, ServerConfig};
use crate::conn::ConnHandle;
use crate::{engines, next_token, openai, reward};

/// State shared by every request of one server.
pub(crate) struct Shared {
    pub(crate) cfg: ServerConfig,
    pub(crate) requests: AtomicU64,
    pub(crate) log: Mutex<Vec<RequestRecord>>,
    /// Attempts seen per (rule index, body SHA-256), for rules with `times`.
    counts: Mutex<HashMap<(usize, [u8; 32]), u32>>,
}

impl Shared {
    pub(crate) fn new(cfg: ServerConfig) -> Self {
        Shared {
            cfg,
            requests: AtomicU64::new(0),
            log: Mutex::new(Vec::new()),
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// The first rule that matches `body` and still has attempts left for it, counting the
    /// attempt. Never awaits, so the lock is never held across an await point.
    fn pick_fault(&self, body: &[u8], digest: &mut impl FnMut() -> [u8; 32]) -> Option<&Fault> {
        if self.cfg.rules.is_empty() {
            return None;
        }
        let text = String::from_utf8_lossy(body);
        for (i, rule) in self.cfg.rules.iter().enumerate() {
            if !rule.marker.is_empty() && !text.contains(rule.marker.as_str()) {
                continue;
            }
            match rule.times {
                None => return Some(&rule.fault),
                Some(n) => {
                    let key = (i, digest());
                    let mut counts = lock(&self.counts);
                    let seen = counts.entry(key).or_insert(0);
                    if *seen < n {
                        *seen += 1;
                        return Some(&rule.fault);
                    }
                }
            }
        }
        None
    }
}

/// Locks a mutex, ignoring poisoning (a panicking handler must not wedge the server).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A client error (malformed request): `400` with an OpenAI-style error body.
#[derive(Debug)]
pub(crate) struct BadRequest(String);

impl BadRequest {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        BadRequest(msg.into())
    }

    pub(crate) fn json(e: serde_json::Error) -> Self {
        BadRequest(format!("invalid request body: {e}"))
    }
}

/// Number of whitespace-separated words: the server's stand-in for a token count.
pub(crate) fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Models,
    Chat,
    Completions,
    Props,
    Score,
    ScoreBatch,
    Classify,
    Pooling,
    SglangClassify,
    TeiPredict,
    TeiInfo,
    OpenRlhfReward,
}

impl Endpoint {
    fn route(method: &Method, path: &str) -> Option<Endpoint> {
        let post = *method == Method::POST;
        Some(match path {
            "/v1/models" | "/models" if *method == Method::GET => Endpoint::Models,
            "/v1/chat/completions" | "/chat/completions" if post => Endpoint::Chat,
            "/v1/completions" | "/completions" if post => Endpoint::Completions,
            "/props" if *method == Method::GET => Endpoint::Props,
            "/score" if post => Endpoint::Score,
            "/score/batch" if post => Endpoint::ScoreBatch,
            "/classify" | "/v1/classify" if post => Endpoint::Classify,
            "/pooling" | "/v1/pooling" if post => Endpoint::Pooling,
            // SGLang's `/classify` under its own root: `/classify` here is vLLM's.
            "/sglang/classify" if post || *method == Method::PUT => Endpoint::SglangClassify,
            "/predict" if post => Endpoint::TeiPredict,
            "/info" if *method == Method::GET => Endpoint::TeiInfo,
            "/get_reward" if post => Endpoint::OpenRlhfReward,
            _ => return None,
        })
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(DefaultBodyLimit::max(256 * 1024 * 1024))
        .with_state(shared)
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn json_bytes(status: StatusCode, bytes: Vec<u8>) -> Response {
    let mut resp = (status, bytes).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn json_value(status: StatusCode, value: &Value) -> Response {
    json_bytes(status, serde_json::to_vec(value).unwrap_or_default())
}

fn error_body(status: StatusCode, message: &str, kind: &str) -> Response {
    json_value(
        status,
        &json!({"error": {"message": message, "type": kind, "code": status.as_u16()}}),
    )
}

/// The normal answer of an endpoint, as status and serialized JSON.
fn answer(endpoint: Endpoint, shared: &Shared, body: &[u8], seq: u64) -> (StatusCode, Vec<u8>) {
    let created = unix_now();
    let result = match endpoint {
        Endpoint::Models => Ok(openai::models()),
        Endpoint::TeiInfo => Ok(engines::tei_info()),
        Endpoint::Chat => openai::chat(&shared.cfg, body, seq, created),
        Endpoint::Completions => next_token::completions(&shared.cfg, body, seq, created),
        Endpoint::Props => Ok(next_token::props()),
        Endpoint::Score => reward::score(body),
        Endpoint::ScoreBatch => reward::score_batch(body),
        Endpoint::Classify => reward::classify(body, seq, created),
        Endpoint::Pooling => reward::pooling(body, seq, created),
        Endpoint::SglangClassify | Endpoint::TeiPredict | Endpoint::OpenRlhfReward => {
            let r = match endpoint {
                Endpoint::SglangClassify => engines::sglang_classify(body, seq),
                Endpoint::TeiPredict => engines::tei_predict(body),
                _ => engines::openrlhf_reward(body),
            };
            return match r {
                Ok(v) => (StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default()),
                Err(engines::Refused { status, body }) => (status, body),
            };
        }
    };
    match result {
        Ok(v) => (StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default()),
        Err(BadRequest(msg)) => (
            StatusCode::BAD_REQUEST,
            serde_json::to_vec(&json!({"error": {
                "message": msg, "type": "invalid_request_error", "code": 400
            }}))
            .unwrap_or_default(),
        ),
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<ConnHandle>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seq = shared.requests.fetch_add(1, Ordering::Relaxed);
    let endpoint = Endpoint::route(&method, uri.path()).filter(|e| {
        shared.cfg.completions || !matches!(e, Endpoint::Completions | Endpoint::Props)
    });

    let mut cached: Option<[u8; 32]> = None;
    let mut digest = || *cached.get_or_insert_with(|| Sha256::digest(&body).into());

    let fault = match endpoint {
        Some(e) if !matches!(e, Endpoint::Models | Endpoint::TeiInfo | Endpoint::Props) => {
            shared.pick_fault(&body, &mut digest).cloned()
        }
        _ => None,
    };

    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());

    if shared.cfg.record {
        let record = RequestRecord {
            method: method.as_str().to_owned(),
            path: uri.path().to_owned(),
            body_sha256: hex::encode(digest()),
            body: parse_for_log(&body),
            authorization: authorization.clone(),
            fault: fault.as_ref().map(Fault::name),
        };
        lock(&shared.log).push(record);
    }

    let Some(endpoint) = endpoint else {
        let status = if matches!(
            uri.path(),
            "/v1/models"
                | "/models"
                | "/v1/chat/completions"
                | "/chat/completions"
                | "/score"
                | "/score/batch"
                | "/classify"
                | "/v1/classify"
                | "/pooling"
                | "/v1/pooling"
                | "/sglang/classify"
                | "/predict"
                | "/info"
                | "/get_reward"
        ) {
            StatusCode::METHOD_NOT_ALLOWED
        } else {
            StatusCode::NOT_FOUND
        };
        return error_body(status, &format!("no route for {method} {}", uri.path()), "not_found");
    };

    match fault {
        None => normal(endpoint, &shared, &body, seq, None).await,
        Some(Fault::Slow(d)) => normal(endpoint, &shared, &body, seq, Some(d)).await,
        Some(Fault::RateLimited { retry_after }) => {
            let mut resp = error_body(
                StatusCode::TOO_MANY_REQUESTS,
                "Rate limit reached (injected by prbench-fault-server)",
                "rate_limit_error",
            );
            if let Some(v) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            resp
        }
        Some(Fault::ServerError) => error_body(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal server error (injected by prbench-fault-server)",
            "server_error",
        ),
        Some(Fault::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error_body(
                status,
                &format!("injected status {code} (prbench-fault-server)"),
                "injected_fault",
            )
        }
        Some(Fault::EchoAuthorization) => {
            let echoed = authorization.as_deref().unwrap_or("<none>");
            error_body(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("internal error while handling request with Authorization: {echoed}"),
                "server_error",
            )
        }
        Some(Fault::TruncatedJson) => {
            let (status, mut bytes) = answer(endpoint, &shared, &body, seq);
            bytes.truncate(bytes.len() / 2);
            json_bytes(status, bytes)
        }
        Some(Fault::DropConnection) => {
            // FIN to the client now; the response below can no longer be written, so hyper
            // fails its write and drops the connection.
            conn.kill();
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
        Some(Fault::DropMidBody) => {
            let (status, bytes) = answer(endpoint, &shared, &body, seq);
            let full_len = bytes.len();
            let half = Bytes::from(bytes).slice(..full_len / 2);
            let stream = futures::stream::unfold(0u8, move |step| {
                let half = half.clone();
                let conn = conn.clone();
                async move {
                    match step {
                        0 => Some((Ok::<Bytes, std::io::Error>(half), 1)),
                        1 => {
                            // Let hyper flush the head and the first half before the abort.
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            conn.kill();
                            Some((
                                Err(std::io::Error::new(
                                    std::io::ErrorKind::ConnectionAborted,
                                    "injected mid-body drop",
                                )),
                                2,
                            ))
                        }
                        _ => None,
                    }
                }
            });
            let mut resp = Response::new(Body::from_stream(stream));
            *resp.status_mut() = status;
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            resp.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(full_len));
            resp
        }
    }
}

/// The normal answer, after `extra` (a `Slow` fault) and the configured delay when it succeeds.
async fn normal(
    endpoint: Endpoint,
    shared: &Shared,
    body: &[u8],
    seq: u64,
    extra: Option<Duration>,
) -> Response {
    if let Some(d) = extra {
        tokio::time::sleep(d).await;
    }
    let (status, bytes) = answer(endpoint, shared, body, seq);
    if status.is_success() && endpoint != Endpoint::Models {
        if let Some(d) = shared.cfg.delay {
            tokio::time::sleep(d).await;
        }
    }
    json_bytes(status, bytes)
}

fn parse_for_log(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}
