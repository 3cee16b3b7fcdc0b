//! A page served on 127.0.0.1 (as the rating page will be), with a cross-site iframe: the
//! iframe runs in its own renderer process, and its requests must still be in the page's log.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use prbench_browser::chromium_or_skip;

/// Serves a few fixed paths on 127.0.0.1 for at most 50 connections; returns the port.
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(50) {
            let Ok(stream) = stream else { continue };
            // A thread per connection: Chromium opens speculative connections that send nothing.
            std::thread::spawn(move || answer(stream, port));
        }
    });
    port
}

fn answer(mut stream: std::net::TcpStream, port: u16) {
    {
        let mut line = String::new();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        if reader.read_line(&mut line).is_err() {
            return;
        }
        while let Ok(n) = reader.read_line(&mut String::new()) {
            if n <= 2 {
                break; // end of headers
            }
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
        let (status, body) = match path.as_str() {
            // localhost is another site than 127.0.0.1, so the frame gets its own process.
            "/" => (
                "200 OK",
                format!(
                    r#"<!doctype html><script src="/app.js"></script><iframe src="http://localhost:{port}/frame"></iframe>"#
                ),
            ),
            "/app.js" => ("200 OK", "document.title = 'rate';".to_owned()),
            "/frame" => {
                ("200 OK", "<!doctype html><script>fetch('/from-frame')</script>".to_owned())
            }
            _ => ("404 Not Found", String::new()),
        };
        let ctype = if path.ends_with(".js") { "text/javascript" } else { "text/html" };
        let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
    }
}

#[test]
fn served_page_logs_its_scripts_and_its_cross_site_iframe() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let port = serve();
    let base = format!("http://127.0.0.1:{port}");
    let page = browser.open(&format!("{base}/")).unwrap();
    assert_eq!(page.eval("document.title").unwrap(), "rate");
    let from_frame = format!("http://localhost:{port}/from-frame");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !page.requests().contains(&from_frame) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let requests = page.requests();
    assert!(requests.starts_with(&[format!("{base}/"), format!("{base}/app.js")]), "{requests:?}");
    assert!(requests.contains(&format!("http://localhost:{port}/frame")), "{requests:?}");
    assert!(requests.contains(&from_frame), "{requests:?}");
}
