//! One page (a DevTools target and its session).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use crate::cdp::{auto_attach, Conn};
use crate::{BrowserError, TIMEOUT};

/// A page in the browser; it is closed when dropped.
///
/// From its creation it records the URL of every request it (and its frames and workers)
/// makes, every JavaScript dialog it opens (each dismissed at once, as if Cancel was pressed),
/// and its console errors.
pub struct Page {
    conn: Arc<Conn>,
    target: String,
    session: String,
    load_ms: Mutex<f64>,
}

impl Page {
    pub(crate) fn open(conn: Arc<Conn>, url: &str) -> Result<Page, BrowserError> {
        let t = conn.call(None, "Target.createTarget", json!({ "url": "about:blank" }), TIMEOUT)?;
        let target = t["targetId"].as_str().unwrap_or_default().to_owned();
        let a = conn.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
            TIMEOUT,
        );
        let session = match a {
            Ok(a) => a["sessionId"].as_str().unwrap_or_default().to_owned(),
            Err(e) => {
                conn.send(None, "Target.closeTarget", json!({ "targetId": target }));
                return Err(e);
            }
        };
        conn.add_page(&session);
        // From here on `Drop` closes the target.
        let page = Page { conn, target, session, load_ms: Mutex::new(0.0) };
        for method in ["Page.enable", "Network.enable", "Runtime.enable", "Log.enable"] {
            page.call(method, json!({}))?;
        }
        page.call("Page.setLifecycleEventsEnabled", json!({ "enabled": true }))?;
        page.call("Target.setAutoAttach", auto_attach())?;
        page.goto(url)?;
        Ok(page)
    }

    fn call(&self, method: &str, params: Value) -> Result<Value, BrowserError> {
        self.conn.call(Some(&self.session), method, params, TIMEOUT)
    }

    /// Navigates this page to `url` and returns once its `load` event has fired; a change of
    /// `#fragment` only (a deep link into the same document) returns once it is done.
    /// Requests and dialogs recorded so far are kept.
    pub fn goto(&self, url: &str) -> Result<(), BrowserError> {
        let start = Instant::now();
        let r = self.call("Page.navigate", json!({ "url": url }))?;
        if let Some(err) = r["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(BrowserError::Navigation { url: url.to_owned(), message: err.to_owned() });
        }
        // Without a loader id the navigation stayed in the same document: no load event comes.
        if let Some(loader) = r["loaderId"].as_str() {
            self.conn.wait_log(
                &self.session,
                TIMEOUT,
                || format!("the load event of `{url}`"),
                |log| log.loaded.contains(loader),
            )?;
        }
        *self.load_ms.lock().unwrap_or_else(|e| e.into_inner()) =
            start.elapsed().as_secs_f64() * 1e3;
        Ok(())
    }

    /// Milliseconds from the start of the last navigation ([`Browser::open`](crate::Browser::open)
    /// or [`goto`](Page::goto)) until its `load` event.
    pub fn load_ms(&self) -> f64 {
        *self.load_ms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Evaluates the JavaScript expression `js` in the page and returns its value as JSON; a
    /// promise is awaited. `undefined` becomes `null`; a throw or rejection is
    /// [`BrowserError::Js`].
    pub fn eval(&self, js: &str) -> Result<Value, BrowserError> {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": js, "awaitPromise": true, "returnByValue": true, "userGesture": true }),
        )?;
        if let Some(d) = r.get("exceptionDetails") {
            let message = d["exception"]["description"]
                .as_str()
                .or(d["text"].as_str())
                .unwrap_or("exception");
            return Err(BrowserError::Js { message: message.to_owned() });
        }
        let mut r = r;
        Ok(r["result"]["value"].take())
    }

    /// Runs `body` (a function body that sees the element as `e`) on the first element matching
    /// `selector`; no such element is [`BrowserError::NoElement`].
    fn on_element(&self, selector: &str, body: &str) -> Result<Value, BrowserError> {
        let sel = serde_json::to_string(selector).expect("a string serializes");
        let js = format!("(() => {{ const e = document.querySelector({sel}); if (!e) return {{ none: true }}; {body} }})()");
        let v = self.eval(&js)?;
        if v.get("none").is_some() {
            return Err(BrowserError::NoElement { selector: selector.to_owned() });
        }
        Ok(v)
    }

    /// The element's box in CSS pixels of the document `[x, y, width, height]`, scrolled into
    /// view; a box of zero size is an error.
    fn element_box(&self, selector: &str) -> Result<[f64; 4], BrowserError> {
        let v = self.on_element(
            selector,
            "e.scrollIntoView({ block: 'center', inline: 'center' }); const r = e.getBoundingClientRect(); \
             return [r.left, r.top, r.width, r.height, window.scrollX, window.scrollY];",
        )?;
        let n: Vec<f64> = v.as_array().into_iter().flatten().filter_map(Value::as_f64).collect();
        if n.len() != 6 || n[2] <= 0.0 || n[3] <= 0.0 {
            return Err(BrowserError::Js {
                message: format!("`{selector}` has no box on screen (hidden?)"),
            });
        }
        Ok([n[0] + n[4], n[1] + n[5], n[2], n[3]])
    }

    /// Clicks the middle of the first element matching `selector` with real mouse events
    /// (scrolled into view first), as a person would: whatever lies on top of it gets the click.
    pub fn click(&self, selector: &str) -> Result<(), BrowserError> {
        let [x, y, w, h] = self.element_box(selector)?;
        let scroll = self.eval("[window.scrollX, window.scrollY]")?;
        let (sx, sy) = (scroll[0].as_f64().unwrap_or(0.0), scroll[1].as_f64().unwrap_or(0.0));
        let (cx, cy) = (x - sx + w / 2.0, y - sy + h / 2.0);
        for (kind, buttons) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)] {
            let mut p = json!({ "type": kind, "x": cx, "y": cy, "buttons": buttons });
            if kind != "mouseMoved" {
                p["button"] = "left".into();
                p["clickCount"] = 1.into();
            }
            self.call("Input.dispatchMouseEvent", p)?;
        }
        Ok(())
    }

    /// Presses and releases one key with real key events (`Input.dispatchKeyEvent`), sent to
    /// whatever has the focus, as a person typing would. `key` is a DOM `KeyboardEvent.key`
    /// value: one printable character (`"3"`, `"p"`) or one of `Enter`, `Escape`, `Tab`,
    /// `Backspace`, `ArrowUp`, `ArrowDown`, `ArrowLeft`, `ArrowRight`.
    ///
    /// # Errors
    /// [`BrowserError::Js`] for a key this does not know; the CDP call's errors.
    pub fn press(&self, key: &str) -> Result<(), BrowserError> {
        let (code, vk, text): (String, u32, Option<String>) = match key {
            "Enter" => ("Enter".into(), 13, Some("\r".into())),
            "Escape" => ("Escape".into(), 27, None),
            "Tab" => ("Tab".into(), 9, None),
            "Backspace" => ("Backspace".into(), 8, None),
            "ArrowUp" => ("ArrowUp".into(), 38, None),
            "ArrowDown" => ("ArrowDown".into(), 40, None),
            "ArrowLeft" => ("ArrowLeft".into(), 37, None),
            "ArrowRight" => ("ArrowRight".into(), 39, None),
            k if k.chars().count() == 1 => {
                let c = k.chars().next().expect("one char");
                let code = if c.is_ascii_digit() {
                    format!("Digit{c}")
                } else if c.is_ascii_alphabetic() {
                    format!("Key{}", c.to_ascii_uppercase())
                } else {
                    String::new()
                };
                (code, c.to_ascii_uppercase() as u32, Some(k.to_string()))
            }
            other => {
                return Err(BrowserError::Js { message: format!("press: unknown key `{other}`") });
            }
        };
        let mut down = json!({ "type": if text.is_some() { "keyDown" } else { "rawKeyDown" }, "key": key, "code": code, "windowsVirtualKeyCode": vk });
        if let Some(t) = &text {
            down["text"] = t.clone().into();
        }
        self.call("Input.dispatchKeyEvent", down)?;
        self.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk }),
        )?;
        Ok(())
    }

    /// Focuses the first element matching `selector` and types `text` into it (one
    /// `Input.insertText`: `beforeinput` and `input` events fire, key events do not).
    pub fn type_text(&self, selector: &str, text: &str) -> Result<(), BrowserError> {
        let focused =
            self.on_element(selector, "e.focus(); return document.activeElement === e;")?;
        if focused != Value::Bool(true) {
            return Err(BrowserError::Js {
                message: format!("`{selector}` cannot take the focus"),
            });
        }
        self.call("Input.insertText", json!({ "text": text }))?;
        Ok(())
    }

    /// Waits until an element matches `selector`, checking every 25 ms.
    pub fn wait_for(&self, selector: &str, timeout: Duration) -> Result<(), BrowserError> {
        let sel = serde_json::to_string(selector).expect("a string serializes");
        let js = format!("document.querySelector({sel}) !== null");
        let deadline = Instant::now() + timeout;
        loop {
            if self.eval(&js)? == Value::Bool(true) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(BrowserError::Timeout {
                    what: format!("an element matching `{selector}`"),
                    after: timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Writes a PNG of the whole page (not just the viewport) to `path`.
    pub fn screenshot(&self, path: impl AsRef<Path>) -> Result<(), BrowserError> {
        let m = self.call("Page.getLayoutMetrics", json!({}))?;
        let size = &m["cssContentSize"];
        let (w, h) =
            (size["width"].as_f64().unwrap_or(0.0), size["height"].as_f64().unwrap_or(0.0));
        self.capture([0.0, 0.0, w.ceil(), h.ceil()], path.as_ref())
    }

    /// Writes a PNG of the first element matching `selector` to `path`.
    pub fn screenshot_element(
        &self,
        selector: &str,
        path: impl AsRef<Path>,
    ) -> Result<(), BrowserError> {
        let clip = self.element_box(selector)?;
        self.capture(clip, path.as_ref())
    }

    fn capture(&self, [x, y, width, height]: [f64; 4], path: &Path) -> Result<(), BrowserError> {
        let r = self.call(
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": { "x": x, "y": y, "width": width, "height": height, "scale": 1 },
            }),
        )?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap_or_default())
            .map_err(|e| BrowserError::Protocol {
                method: "Page.captureScreenshot".into(),
                message: e.to_string(),
            })?;
        std::fs::write(path, png)
            .map_err(|source| BrowserError::Io { path: path.to_owned(), source })
    }

    /// The URL of every request the page has made since it was opened, in order: the main
    /// document, subresources, `fetch`/XHR, redirects, and the requests of its frames and
    /// workers. Nothing is filtered out; Chromium's own background requests are not in it
    /// because they belong to no page.
    pub fn requests(&self) -> Vec<String> {
        self.conn.with_log(&self.session, |log| log.requests.clone())
    }

    /// The message of every `alert`, `confirm`, `prompt` or `beforeunload` dialog the page
    /// opened, in order. Each was dismissed (`confirm` returned `false`, `prompt` `null`).
    pub fn dialogs(&self) -> Vec<String> {
        self.conn.with_log(&self.session, |log| log.dialogs.clone())
    }

    /// `console.error` calls, uncaught exceptions and Chromium's error log entries (such as a
    /// failed resource load) of the page, in order.
    pub fn console_errors(&self) -> Vec<String> {
        self.conn.with_log(&self.session, |log| log.console_errors.clone())
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        self.conn.send(None, "Target.closeTarget", json!({ "targetId": self.target }));
        self.conn.remove_page(&self.session);
    }
}
