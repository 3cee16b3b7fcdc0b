//! Opens a URL in headless Chromium, writes a whole-page PNG and prints what the page did.
//!
//! ```sh
//! cargo run --release -p prbench-browser --example shot -- file:///abs/report.html /tmp/report.png
//! cargo run --release -p prbench-browser --example shot -- file:///abs/report.html /tmp/items.png '#sec-items'
//! ```
//!
//! With a CSS selector as third argument, only that element is captured.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, out, selector) = match args.as_slice() {
        [url, out] => (url, out, None),
        [url, out, selector] => (url, out, Some(selector)),
        _ => return Err("usage: shot URL OUT.png [CSS-SELECTOR]".into()),
    };
    let browser = prbench_browser::Browser::launch()?;
    let page = browser.open(url)?;
    match selector {
        Some(s) => page.screenshot_element(s, out)?,
        None => page.screenshot(out)?,
    }
    eprintln!("{} loaded {url} in {:.0} ms; wrote {out}", browser.version(), page.load_ms());
    for r in page.requests() {
        println!("request\t{r}");
    }
    for d in page.dialogs() {
        println!("dialog\t{d}");
    }
    for e in page.console_errors() {
        println!("console-error\t{e}");
    }
    Ok(())
}
