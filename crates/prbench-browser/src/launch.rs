//! Finding and starting Chromium.

use std::os::fd::AsRawFd;
use std::os::raw::c_int;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use crate::cdp::Conn;
use crate::{BrowserError, WINDOW_SIZE};

/// Debian's `/usr/bin/chromium` is a shell script that adds flags of its own (remote
/// extensions, `--load-extension`, Google API keys) before running this binary; we run the
/// binary directly so that the flags below are the whole command line.
const DEBIAN_WRAPPER: &str = "/usr/bin/chromium";
const DEBIAN_BINARY: &str = "/usr/lib/chromium/chromium";

/// Flags that keep Chromium from making requests of its own (component and safe-browsing
/// updates, field trials, sync, translate, metrics) and from throttling timers, so that a
/// page's request log and timings are the page's.
const QUIET_FLAGS: &[&str] = &[
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-client-side-phishing-detection",
    "--disable-domain-reliability",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,\
CertificateTransparencyComponentUpdater,AutofillServerCommunication,InterestFeedContentSuggestions",
    "--metrics-recording-only",
    "--no-first-run",
    "--no-default-browser-check",
    "--password-store=basic",
    "--use-mock-keychain",
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    "--force-color-profile=srgb",
];

/// `$PRBENCH_CHROMIUM`, else `/usr/bin/chromium`, else `chromium` on `PATH`.
pub(crate) fn find_chromium() -> Result<PathBuf, BrowserError> {
    if let Some(p) = std::env::var_os("PRBENCH_CHROMIUM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(BrowserError::NotFound {
                tried: format!("PRBENCH_CHROMIUM=`{}` is not a file", p.display()),
            })
        };
    }
    let mut found = Path::new(DEBIAN_WRAPPER).is_file().then(|| PathBuf::from(DEBIAN_WRAPPER));
    if found.is_none() {
        found = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path).map(|d| d.join("chromium")).find(|p| p.is_file())
        });
    }
    match found {
        Some(p) if p == Path::new(DEBIAN_WRAPPER) && Path::new(DEBIAN_BINARY).is_file() => {
            Ok(DEBIAN_BINARY.into())
        }
        Some(p) => Ok(p),
        None => Err(BrowserError::NotFound {
            tried: format!("PRBENCH_CHROMIUM unset, no `{DEBIAN_WRAPPER}`, no `chromium` on PATH"),
        }),
    }
}

extern "C" {
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
    fn dup2(old: c_int, new: c_int) -> c_int;
}
const F_DUPFD_CLOEXEC: c_int = 1030;

/// Starts `binary` headless with a new profile and the DevTools pipe on its fds 3 and 4.
pub(crate) fn spawn(binary: &Path) -> Result<(Child, Arc<Conn>, tempfile::TempDir), BrowserError> {
    let launch_err = |message: String| BrowserError::Launch { binary: binary.to_owned(), message };
    let profile = tempfile::Builder::new()
        .prefix("prbench-chromium-")
        .tempdir()
        .map_err(|source| BrowserError::Io { path: std::env::temp_dir(), source })?;
    let stderr_path = profile.path().join("stderr.log");
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|source| BrowserError::Io { path: stderr_path.clone(), source })?;
    let user_data = profile.path().join("profile");

    // Chromium reads commands from fd 3 and writes to fd 4.
    let pipe_err = |e: std::io::Error| launch_err(format!("cannot make a pipe: {e}"));
    let (to_chrome_r, to_chrome_w) = std::io::pipe().map_err(pipe_err)?;
    let (from_chrome_r, from_chrome_w) = std::io::pipe().map_err(pipe_err)?;
    let (r, w) = (to_chrome_r.as_raw_fd(), from_chrome_w.as_raw_fd());

    let mut cmd = Command::new(binary);
    cmd.args(["--headless=new", "--no-sandbox", "--remote-debugging-pipe"])
        .arg(format!("--user-data-dir={}", user_data.display()))
        .arg(format!("--window-size={},{}", WINDOW_SIZE.0, WINDOW_SIZE.1))
        .args(QUIET_FLAGS)
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    // SAFETY: only async-signal-safe calls between fork and exec. The pipe ends are first
    // moved above 10 (so that dup2 onto 3 and 4 cannot clobber one another), then dup2 puts
    // them on 3 and 4 without close-on-exec; the copies above 10 close at exec.
    unsafe {
        cmd.pre_exec(move || {
            let r2 = fcntl(r, F_DUPFD_CLOEXEC, 10);
            let w2 = fcntl(w, F_DUPFD_CLOEXEC, 10);
            if r2 < 0 || w2 < 0 || dup2(r2, 3) < 0 || dup2(w2, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| launch_err(format!("cannot run it: {e}")))?;
    // Our copies of Chromium's ends: closed, so that its exit shows as end of file.
    drop(to_chrome_r);
    drop(from_chrome_w);
    Ok((child, Conn::start(to_chrome_w, from_chrome_r), profile))
}

/// The last lines of Chromium's stderr, for a launch error.
pub(crate) fn stderr_tail(profile: &Path) -> String {
    let text = std::fs::read_to_string(profile.join("stderr.log")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(10)..].join("\n");
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends:\n{tail}")
    }
}
