//! Headless Chromium for tests and benchmarks of prbench's self-contained HTML pages.
//!
//! [`Browser::launch`] starts Debian's `chromium` headless with a fresh profile and speaks the
//! DevTools protocol to it over a pipe (`--remote-debugging-pipe`), so no client crate, no
//! WebSocket and no browser download is involved. [`Browser::open`] gives a [`Page`] that
//! records, from before its first navigation, every network request it makes and every
//! JavaScript dialog it opens (dismissing them), and can evaluate JavaScript, click, type,
//! wait for elements and take PNG screenshots.
//!
//! ```no_run
//! use std::time::Duration;
//! # fn main() -> Result<(), prbench_browser::BrowserError> {
//! let Some(browser) = prbench_browser::chromium_or_skip() else { return Ok(()) };
//! let page = browser.open("file:///tmp/report.html")?;
//! page.wait_for("table", Duration::from_secs(5))?;
//! let rows = page.eval("document.querySelectorAll('tr').length")?;
//! page.screenshot("/tmp/report.png")?;
//! assert_eq!(page.requests(), ["file:///tmp/report.html"]); // nothing fetched from outside
//! println!("{rows} rows, loaded in {:.0} ms", page.load_ms());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod cdp;
mod error;
mod launch;
mod page;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

pub use error::BrowserError;
pub use page::Page;

/// How long one DevTools command, or one page load, may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// The viewport every page gets, in CSS pixels.
pub const WINDOW_SIZE: (u32, u32) = (1280, 900);

/// A running headless Chromium; it is closed when dropped.
pub struct Browser {
    conn: Arc<cdp::Conn>,
    child: Child,
    binary: PathBuf,
    version: String,
    // Dropped after the child has exited (fields drop in order, and `drop` waits for it).
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium headless with a fresh temporary profile.
    ///
    /// The binary is `$PRBENCH_CHROMIUM` if set, else `/usr/bin/chromium`, else `chromium` on
    /// `PATH`; none found is [`BrowserError::NotFound`].
    pub fn launch() -> Result<Browser, BrowserError> {
        Browser::launch_binary(&launch::find_chromium()?)
    }

    /// Starts the given Chromium binary headless with a fresh temporary profile.
    pub fn launch_binary(binary: &Path) -> Result<Browser, BrowserError> {
        let (child, conn, profile) = launch::spawn(binary)?;
        let mut browser = Browser {
            conn,
            child,
            binary: binary.to_owned(),
            version: String::new(),
            _profile: profile,
        };
        match browser.conn.call(None, "Browser.getVersion", json!({}), TIMEOUT) {
            Ok(v) => browser.version = v["product"].as_str().unwrap_or_default().to_owned(),
            Err(e) => {
                let _ = browser.child.kill();
                let _ = browser.child.wait();
                return Err(BrowserError::Launch {
                    binary: binary.to_owned(),
                    message: format!(
                        "no answer on the DevTools pipe ({e}){}",
                        launch::stderr_tail(browser._profile.path())
                    ),
                });
            }
        }
        Ok(browser)
    }

    /// Chromium's product string, e.g. `HeadlessChrome/156.0.8078.114`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The binary that was started.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// Opens `url` in a new page and returns once its `load` event has fired.
    ///
    /// The page's request log starts before the navigation, so it holds the main document too.
    pub fn open(&self, url: &str) -> Result<Page, BrowserError> {
        Page::open(Arc::clone(&self.conn), url)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.conn.send(None, "Browser.close", json!({}));
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// For tests: a launched [`Browser`], or `None` with the reason on stderr when Chromium is not
/// installed.
///
/// When the environment variable `CI` is set it panics instead of skipping: CI must run the
/// browser tests. Chromium that is installed but fails to start always panics.
pub fn chromium_or_skip() -> Option<Browser> {
    match Browser::launch() {
        Ok(b) => Some(b),
        Err(e @ BrowserError::NotFound { .. }) => {
            prbench_testkit::unavailable(format!("the browser test needs Chromium: {e}"));
            None
        }
        Err(e) => panic!("{e}"),
    }
}
