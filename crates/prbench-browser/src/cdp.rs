//! The DevTools protocol over `--remote-debugging-pipe`: Chromium reads commands from its fd 3
//! and writes replies and events to its fd 4, each message one JSON text ended by a NUL byte.
//!
//! One reader thread parses everything Chromium sends: replies go to the waiting caller, events
//! go into the [`Log`] of the page (session) they belong to. That thread also dismisses
//! JavaScript dialogs at once, since a page blocked on `alert()` would block every later call.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, PipeReader, PipeWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::BrowserError;

/// What one page did, as Chromium reported it.
#[derive(Debug, Default)]
pub(crate) struct Log {
    /// URL of every `Network.requestWillBeSent`, redirects included.
    pub requests: Vec<String>,
    /// Message of every `Page.javascriptDialogOpening`.
    pub dialogs: Vec<String>,
    /// Console errors, uncaught exceptions and Chromium's own error log entries.
    pub console_errors: Vec<String>,
    /// Loader ids whose `load` lifecycle event fired.
    pub loaded: HashSet<String>,
}

#[derive(Default)]
struct State {
    replies: HashMap<u64, Value>,
    /// Ids of commands nobody waits for; their replies are dropped.
    forgotten: HashSet<u64>,
    /// Page session id -> its log.
    logs: HashMap<String, Log>,
    /// Child session (an iframe in its own process, a worker) -> the page session it belongs to.
    parents: HashMap<String, String>,
    closed: bool,
}

/// The connection to one Chromium process.
pub(crate) struct Conn {
    writer: Mutex<PipeWriter>,
    next_id: AtomicU64,
    state: Mutex<State>,
    changed: Condvar,
}

impl Conn {
    /// Starts the reader thread on `reader`.
    pub fn start(writer: PipeWriter, reader: PipeReader) -> Arc<Conn> {
        let conn = Arc::new(Conn {
            writer: Mutex::new(writer),
            next_id: AtomicU64::new(1),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let c = Arc::clone(&conn);
        std::thread::Builder::new()
            .name("cdp-reader".into())
            .spawn(move || c.read_loop(reader))
            .expect("spawn the DevTools reader thread");
        conn
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn write(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<u64, BrowserError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s.to_owned());
        }
        let mut bytes = serde_json::to_vec(&msg).expect("a JSON value serializes");
        bytes.push(0);
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        w.write_all(&bytes).map_err(|_| BrowserError::Closed)?;
        Ok(id)
    }

    /// Sends a command whose reply nobody waits for.
    pub fn send(&self, session: Option<&str>, method: &str, params: Value) {
        if let Ok(id) = self.write(session, method, params) {
            let mut st = self.lock();
            if st.replies.remove(&id).is_none() {
                st.forgotten.insert(id);
            }
        }
    }

    /// Sends a command and waits up to `timeout` for its result.
    pub fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, BrowserError> {
        let id = self.write(session, method, params)?;
        let deadline = Instant::now() + timeout;
        let mut st = self.lock();
        loop {
            if let Some(mut reply) = st.replies.remove(&id) {
                if let Some(err) = reply.get("error") {
                    let message = err["message"].as_str().unwrap_or("unknown error").to_owned();
                    return Err(BrowserError::Protocol { method: method.to_owned(), message });
                }
                return Ok(reply["result"].take());
            }
            if st.closed {
                return Err(BrowserError::Closed);
            }
            let now = Instant::now();
            if now >= deadline {
                st.forgotten.insert(id);
                return Err(BrowserError::Timeout {
                    what: format!("a reply to `{method}`"),
                    after: timeout,
                });
            }
            st = self.changed.wait_timeout(st, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Registers a page session so that its events are kept.
    pub fn add_page(&self, session: &str) {
        self.lock().logs.entry(session.to_owned()).or_default();
    }

    /// Forgets a page session and its children.
    pub fn remove_page(&self, session: &str) {
        let mut st = self.lock();
        st.logs.remove(session);
        st.parents.retain(|_, p| p != session);
    }

    /// Reads the log of page `session`.
    pub fn with_log<T>(&self, session: &str, f: impl FnOnce(&Log) -> T) -> T {
        let st = self.lock();
        match st.logs.get(session) {
            Some(log) => f(log),
            None => f(&Log::default()),
        }
    }

    /// Waits until `done` holds for the log of page `session`.
    pub fn wait_log(
        &self,
        session: &str,
        timeout: Duration,
        what: impl Fn() -> String,
        done: impl Fn(&Log) -> bool,
    ) -> Result<(), BrowserError> {
        let deadline = Instant::now() + timeout;
        let mut st = self.lock();
        loop {
            if st.logs.get(session).is_some_and(&done) {
                return Ok(());
            }
            if st.closed {
                return Err(BrowserError::Closed);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(BrowserError::Timeout { what: what(), after: timeout });
            }
            st = self.changed.wait_timeout(st, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    fn read_loop(&self, reader: PipeReader) {
        let mut reader = BufReader::new(reader);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(0, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if buf.last() == Some(&0) {
                buf.pop();
            }
            let Ok(msg) = serde_json::from_slice::<Value>(&buf) else {
                continue;
            };
            if let Some(id) = msg.get("id").and_then(Value::as_u64) {
                let mut st = self.lock();
                if !st.forgotten.remove(&id) {
                    st.replies.insert(id, msg);
                }
            } else {
                self.on_event(msg);
            }
            self.changed.notify_all();
        }
        self.lock().closed = true;
        self.changed.notify_all();
    }

    fn on_event(&self, mut msg: Value) {
        let Some(session) = msg.get("sessionId").and_then(Value::as_str).map(str::to_owned) else {
            return; // browser-level events: nothing we record
        };
        let method = msg["method"].as_str().unwrap_or_default().to_owned();
        let p = msg["params"].take();
        let mut st = self.lock();
        let page = match st.parents.get(&session) {
            Some(parent) => parent.clone(),
            None => session.clone(),
        };
        if method == "Target.attachedToTarget" {
            // An iframe in another process or a worker of this page: listen to it too, then let
            // it run (it waits for us, so none of its requests is missed).
            if let Some(child) = p["sessionId"].as_str() {
                st.parents.insert(child.to_owned(), page);
                drop(st);
                for m in ["Network.enable", "Page.enable", "Runtime.enable"] {
                    self.send(Some(child), m, json!({}));
                }
                self.send(Some(child), "Target.setAutoAttach", auto_attach());
                self.send(Some(child), "Runtime.runIfWaitingForDebugger", json!({}));
            }
            return;
        }
        let Some(log) = st.logs.get_mut(&page) else {
            return;
        };
        match method.as_str() {
            "Network.requestWillBeSent" => {
                if let Some(url) = p["request"]["url"].as_str() {
                    log.requests.push(url.to_owned());
                }
            }
            "Page.javascriptDialogOpening" => {
                log.dialogs.push(p["message"].as_str().unwrap_or_default().to_owned());
                drop(st);
                self.send(
                    Some(&session),
                    "Page.handleJavaScriptDialog",
                    json!({ "accept": false }),
                );
            }
            "Page.lifecycleEvent" if p["name"] == "load" => {
                if let Some(loader) = p["loaderId"].as_str() {
                    log.loaded.insert(loader.to_owned());
                }
            }
            "Runtime.consoleAPICalled" if p["type"] == "error" => {
                let args = p["args"].as_array().map(Vec::as_slice).unwrap_or_default();
                let text: Vec<String> = args.iter().map(remote_object_text).collect();
                log.console_errors.push(text.join(" "));
            }
            "Runtime.exceptionThrown" => {
                let d = &p["exceptionDetails"];
                let text = d["exception"]["description"].as_str().or(d["text"].as_str());
                log.console_errors.push(text.unwrap_or("uncaught exception").to_owned());
            }
            "Log.entryAdded" if p["entry"]["level"] == "error" => {
                let e = &p["entry"];
                let text = e["text"].as_str().unwrap_or_default();
                log.console_errors.push(match e["url"].as_str() {
                    Some(url) if !url.is_empty() => format!("{text} ({url})"),
                    _ => text.to_owned(),
                });
            }
            _ => {}
        }
    }
}

/// `Target.setAutoAttach` parameters: attach to every child target, paused until we listen.
pub(crate) fn auto_attach() -> Value {
    json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true })
}

/// A short text for a `Runtime.RemoteObject` (a console argument).
fn remote_object_text(o: &Value) -> String {
    match (&o["value"], o["description"].as_str()) {
        (Value::String(s), _) => s.clone(),
        (Value::Null, Some(d)) => d.to_owned(),
        (Value::Null, None) => o["type"].as_str().unwrap_or_default().to_owned(),
        (v, _) => v.to_string(),
    }
}
