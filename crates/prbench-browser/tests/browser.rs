//! Each test writes a page to a fresh temp dir, opens it in a real headless Chromium, and
//! checks what the browser itself reports. Without Chromium they skip (print why), except
//! under `CI`, where they fail.

use std::path::PathBuf;
use std::time::Duration;

use prbench_browser::{chromium_or_skip, BrowserError};

/// Writes `html` to `page.html` in a new temp dir; returns the dir (keep it alive) and the URL.
fn page_file(html: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("page.html");
    std::fs::write(&path, html).unwrap();
    (dir, format!("file://{}", path.display()))
}

#[test]
fn img_to_an_outside_address_is_in_requests() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (_dir, url) =
        page_file(r#"<!doctype html><body><img src="http://127.0.0.1:9/x.png"></body>"#);
    let page = browser.open(&url).unwrap();
    let requests = page.requests();
    assert_eq!(requests.first(), Some(&url), "{requests:?}");
    assert!(requests.iter().any(|r| r == "http://127.0.0.1:9/x.png"), "{requests:?}");
}

#[test]
fn fetch_after_load_is_in_requests() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (_dir, url) = page_file(
        r#"<!doctype html><body><script>
        window.addEventListener('load', () => setTimeout(() => { fetch('http://127.0.0.1:9/').catch(() => {}); }, 50));
        </script></body>"#,
    );
    let page = browser.open(&url).unwrap();
    page.eval("new Promise(r => setTimeout(r, 300))").unwrap();
    let requests = page.requests();
    assert!(requests.iter().any(|r| r == "http://127.0.0.1:9/"), "{requests:?}");
}

#[test]
fn static_page_requests_only_itself() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (_dir, url) =
        page_file("<!doctype html><title>t</title><style>p{color:red}</style><p>static</p>");
    let page = browser.open(&url).unwrap();
    // Give a late request (Chromium's or the page's) time to show up.
    page.eval("new Promise(r => setTimeout(r, 300))").unwrap();
    assert_eq!(page.requests(), vec![url]);
    assert!(page.load_ms() > 0.0);
    assert_eq!(page.dialogs(), Vec::<String>::new());
    assert_eq!(page.console_errors(), Vec::<String>::new());
}

#[test]
fn alert_is_recorded_and_dismissed() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (_dir, url) = page_file("<!doctype html><script>alert('x')</script><p id=after>after</p>");
    let page = browser.open(&url).unwrap();
    assert_eq!(page.dialogs(), ["x"]);
    // Dismissed: the page went on, and confirm() saw Cancel.
    assert_eq!(page.eval("document.getElementById('after').textContent").unwrap(), "after");
    assert_eq!(page.eval("confirm('sure?')").unwrap(), false);
    assert_eq!(page.dialogs(), ["x", "sure?"]);
}

#[test]
fn eval_reads_text_content_and_reports_throws() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (_dir, url) = page_file("<!doctype html><h1 id=t>Per-user <b>accuracy</b></h1>");
    let page = browser.open(&url).unwrap();
    assert_eq!(page.eval("document.querySelector('#t').textContent").unwrap(), "Per-user accuracy");
    assert_eq!(
        page.eval("Promise.resolve({a: [1, 2]})").unwrap(),
        serde_json::json!({"a": [1, 2]})
    );
    let err = page.eval("nope()").unwrap_err();
    assert!(matches!(err, BrowserError::Js { ref message } if message.contains("nope")), "{err}");
}

#[test]
fn click_and_type_change_the_dom() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (_dir, url) = page_file(
        r#"<!doctype html><body style="height:3000px">
        <input id=q><button id=b style="margin-top:2000px" onclick="document.body.dataset.clicked = document.getElementById('q').value">go</button>
        <script>setTimeout(() => document.body.insertAdjacentHTML('beforeend', '<p id=late>late</p>'), 200)</script>"#,
    );
    let page = browser.open(&url).unwrap();
    page.type_text("#q", "héllo").unwrap();
    page.click("#b").unwrap(); // below the fold: scrolled into view first
    assert_eq!(page.eval("document.body.dataset.clicked").unwrap(), "héllo");
    page.wait_for("#late", Duration::from_secs(5)).unwrap();
    assert!(matches!(page.click("#missing"), Err(BrowserError::NoElement { .. })));
    assert!(matches!(
        page.wait_for("#never", Duration::from_millis(100)),
        Err(BrowserError::Timeout { .. })
    ));
}

#[test]
fn goto_a_hash_is_a_deep_link_in_the_same_page() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (_dir, url) = page_file("<!doctype html><script>window.marker = 1</script><p id=x>x</p>");
    let page = browser.open(&url).unwrap();
    page.goto(&format!("{url}#x")).unwrap();
    assert_eq!(page.eval("[location.hash, window.marker]").unwrap(), serde_json::json!(["#x", 1]));
    assert_eq!(page.requests(), vec![url.clone()], "a hash change fetches nothing");
    page.goto(&url).unwrap(); // a real navigation: a new document
    assert_eq!(page.eval("window.marker").unwrap(), 1);
    assert_eq!(page.requests(), vec![url.clone(), url]);
}

/// Width and height from a PNG's IHDR, after checking the signature.
fn png_size(path: &PathBuf) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.len() > 33, "{} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn screenshots_are_pngs_of_the_page_and_of_one_element() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (dir, url) = page_file(
        r#"<!doctype html><body style="margin:0"><div id=box style="width:200px;height:120px;background:#36c">box</div>
        <div style="height:2000px"></div></body>"#,
    );
    let page = browser.open(&url).unwrap();
    let whole = dir.path().join("whole.png");
    page.screenshot(&whole).unwrap();
    let (w, h) = png_size(&whole);
    assert_eq!(w, prbench_browser::WINDOW_SIZE.0);
    assert!(h >= 2120, "whole page, not the viewport: {h}");
    let one = dir.path().join("box.png");
    page.screenshot_element("#box", &one).unwrap();
    assert_eq!(png_size(&one), (200, 120));
}

#[test]
fn missing_file_is_a_navigation_error() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    assert!(browser.version().contains("Chrome"), "{}", browser.version());
    let err = browser.open("file:///nonexistent/prbench.html").err().unwrap();
    assert!(matches!(err, BrowserError::Navigation { .. }), "{err}");
}
