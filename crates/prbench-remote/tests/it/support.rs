//! Small scripted HTTP servers on 127.0.0.1:0 for the tests, each on its own tokio runtime so
//! the synchronous backends under test can block on theirs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use prbench_models::{ChatMessage, ChatPrompt, JudgeRequest, PairInput, RmInput, RmRequest, Role};
use prbench_remote::RemoteOptions;
use serde_json::{json, Value};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Hit {
    /// 0-based arrival order over the server's life.
    pub n: usize,
    /// Request path.
    pub path: String,
    /// Parsed JSON body (`Null` if not JSON).
    pub body: Value,
    /// `Authorization` header, if any.
    pub auth: Option<String>,
}

/// What the script answers.
pub enum Reply {
    /// 200 with this JSON.
    Json(Value),
    /// Status, raw body, extra headers.
    Raw(u16, String, Vec<(&'static str, String)>),
    /// Sleep, then answer.
    After(Duration, Box<Reply>),
}

type Script = dyn Fn(&Hit) -> Reply + Send + Sync;

#[derive(Default)]
pub struct Log {
    pub hits: Mutex<Vec<Hit>>,
    in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    count: AtomicUsize,
}

impl Log {
    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

pub struct Server {
    pub url: String,
    pub log: Arc<Log>,
    _rt: tokio::runtime::Runtime,
}

#[derive(Clone)]
struct AppState {
    log: Arc<Log>,
    script: Arc<Script>,
}

async fn handle(State(st): State<AppState>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let n = st.log.count.fetch_add(1, Ordering::SeqCst);
    let now = st.log.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    st.log.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let hit = Hit {
        n,
        path: uri.path().to_string(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        auth: headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string),
    };
    st.log.hits.lock().unwrap().push(hit.clone());
    let mut reply = (st.script)(&hit);
    let resp = loop {
        match reply {
            Reply::After(d, inner) => {
                tokio::time::sleep(d).await;
                reply = *inner;
            }
            Reply::Json(v) => {
                break (
                    StatusCode::OK,
                    [("content-type", "application/json".to_string())],
                    v.to_string(),
                )
                    .into_response()
            }
            Reply::Raw(status, body, extra) => {
                let mut r = (StatusCode::from_u16(status).unwrap(), body).into_response();
                for (k, v) in extra {
                    r.headers_mut().insert(k, v.parse().unwrap());
                }
                break r;
            }
        }
    };
    st.log.in_flight.fetch_sub(1, Ordering::SeqCst);
    resp
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Starts a server answering every request with `script`.
pub fn serve(script: impl Fn(&Hit) -> Reply + Send + Sync + 'static) -> Server {
    let rt = runtime();
    let log = Arc::new(Log::default());
    let state = AppState { log: log.clone(), script: Arc::new(script) };
    let app = Router::new().fallback(handle).with_state(state);
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
    Server { url: format!("http://{addr}"), log, _rt: rt }
}

/// A raw TCP server: the first `drop_first` connections are closed right after the request is
/// read, with no response; later ones get `200` with `reply`.
pub fn serve_dropping(drop_first: usize, reply: Value) -> Server {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = runtime();
    let log = Arc::new(Log::default());
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let log2 = log.clone();
    rt.spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            let log = log2.clone();
            let reply = reply.to_string();
            tokio::spawn(async move {
                // Serve requests on this connection until it closes.
                let mut buf = Vec::new();
                loop {
                    let mut chunk = [0u8; 4096];
                    let head_end = loop {
                        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break p + 4;
                        }
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                        }
                    }
                    buf.drain(..head_end + len);
                    let n = log.count.fetch_add(1, Ordering::SeqCst);
                    if n < drop_first {
                        return; // drops the socket: no response at all
                    }
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
                        reply.len(),
                        reply
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Server { url: format!("http://{addr}"), log, _rt: rt }
}

/// Options for fast tests: short timeout, millisecond backoff.
pub fn fast_opts(concurrency: usize) -> RemoteOptions {
    RemoteOptions {
        concurrency,
        timeout: Duration::from_secs(3),
        max_retries: 3,
        backoff_base: Duration::from_millis(1),
        backoff_max: Duration::from_millis(10),
        api_key_env: None,
    }
}

/// An OpenAI chat completion reply.
pub fn chat_json(content: &str, prompt_tokens: u64, completion_tokens: u64) -> Value {
    json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
    })
}

/// The user message of a chat or classify request.
pub fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The number after `item ` in a text.
pub fn item_no(text: &str) -> usize {
    let rest = &text[text.find("item ").expect("item marker") + 5..];
    rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// A judge request whose user message names item `i`.
pub fn judge_req(i: usize) -> JudgeRequest {
    JudgeRequest {
        pair: PairInput {
            example_id: format!("ex-{i}"),
            question: "q".into(),
            context: None,
            a: "a".into(),
            b: "b".into(),
        },
        prompt: ChatPrompt {
            messages: vec![
                ChatMessage::new(Role::System, "You judge."),
                ChatMessage::new(Role::User, format!("Judge item {i}.")),
            ],
            assistant_prefix: String::new(),
        },
        prompt_b: None,
    }
}

/// A pointwise request for item `i` (context on even items only).
pub fn rm_req(i: usize) -> RmRequest {
    let context = i.is_multiple_of(2).then(|| format!("likes item {i}"));
    let question = format!("question for item {i}");
    let answer = format!("answer {i}");
    let user = match &context {
        Some(c) => format!("{question}\n\n{c}"),
        None => question.clone(),
    };
    RmRequest {
        input: RmInput { example_id: format!("ex-{i}"), question, context, answer: answer.clone() },
        prompt: ChatPrompt {
            messages: vec![
                ChatMessage::new(Role::User, user),
                ChatMessage::new(Role::Assistant, answer),
            ],
            assistant_prefix: String::new(),
        },
    }
}

/// Records `done` calls: index → times called.
#[derive(Default)]
pub struct DoneLog(pub Mutex<HashMap<usize, usize>>);

impl DoneLog {
    pub fn mark(&self, i: usize) {
        *self.0.lock().unwrap().entry(i).or_default() += 1;
    }
    pub fn indices(&self) -> Vec<usize> {
        let m = self.0.lock().unwrap();
        assert!(m.values().all(|&c| c == 1), "done called more than once for an item: {m:?}");
        let mut v: Vec<usize> = m.keys().copied().collect();
        v.sort_unstable();
        v
    }
}

/// A deterministic pseudo-random delay for item `i` in `0..max_ms` milliseconds.
pub fn jitter_ms(i: usize, max_ms: u64) -> Duration {
    let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    Duration::from_millis(x % max_ms)
}
