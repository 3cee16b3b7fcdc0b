//! Structured request logs: one JSON line per request, with what a person running the server
//! needs (status, item count, latency, queue depth) and never the request's text.
//!
//! A line looks like
//! `{"ts":"2026-11-30T10:00:00.123Z","method":"POST","path":"/score","status":200,"items":1,"latency_ms":6.1,"queue":0,"id":"req-17"}`;
//! a failed request adds `"error":"queue_full"` (the error's class, never its message: a message
//! may quote the request). A client that disconnects before its answer is logged with status
//! 499 and `"error":"client_closed"`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde::Serialize;

/// Where request log lines go; shared between requests, so writes are serialised.
pub type LogWriter = Arc<Mutex<dyn Write + Send>>;

/// A writer to the process's stderr, for [`super::ServeOptions::log`].
pub fn stderr_writer() -> LogWriter {
    Arc::new(Mutex::new(std::io::stderr()))
}

/// Longest `id` written to the log, in characters (ids come from clients).
const MAX_ID_CHARS: usize = 64;

/// One log line.
#[derive(Debug, Serialize)]
pub(crate) struct LogLine<'a> {
    pub(crate) ts: String,
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) status: u16,
    pub(crate) items: usize,
    pub(crate) latency_ms: f64,
    /// Items waiting in the queue when the request arrived.
    pub(crate) queue: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<&'a str>,
}

/// Writes `line` as one JSON line; a failing writer is ignored (logging never fails a request).
pub(crate) fn write_line(writer: &LogWriter, line: &LogLine<'_>) {
    let Ok(mut text) = serde_json::to_vec(line) else { return };
    text.push(b'\n');
    let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
    let _ = w.write_all(&text);
    let _ = w.flush();
}

/// Writes a server event (`{"event": "shutdown", …}`) as one JSON line.
pub(crate) fn write_event(writer: &LogWriter, event: &serde_json::Value) {
    let mut text = event.to_string().into_bytes();
    text.push(b'\n');
    let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
    let _ = w.write_all(&text);
    let _ = w.flush();
}

/// A client-given id as the log shows it: at most [`MAX_ID_CHARS`] characters.
pub(crate) fn short_id(id: &str) -> String {
    if id.chars().count() <= MAX_ID_CHARS {
        id.to_string()
    } else {
        let mut s: String = id.chars().take(MAX_ID_CHARS).collect();
        s.push('…');
        s
    }
}

/// The current UTC time, RFC 3339 with milliseconds.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
