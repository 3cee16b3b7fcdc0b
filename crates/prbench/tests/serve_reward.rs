//! The real `prbench serve-reward` binary: start on a free port, answer /health and /score,
//! refuse judges, and on SIGTERM answer the request in flight before exiting 0.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use common::*;

/// A running server process; killed if a test fails before it exits.
struct Served {
    child: Child,
    addr: String,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl Served {
    fn start(args: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_prbench"))
            .arg("serve-reward")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary starts");
        let (tx, rx) = channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Served { child, addr: String::new(), stderr: rx, seen: Vec::new() };
        // The start line names the address (a warning may come first).
        for _ in 0..5 {
            let line = served.line();
            if let Some(at) = line.find("http://") {
                served.addr = line[at + 7..]
                    .split(|c: char| c.is_whitespace() || c == ';')
                    .next()
                    .unwrap()
                    .to_string();
                return served;
            }
        }
        panic!("no address on stderr: {:?}", served.seen)
    }

    /// The next stderr line (30 s at most).
    fn line(&mut self) -> String {
        let l = self
            .stderr
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no more stderr; so far: {:?}", self.seen));
        self.seen.push(l.clone());
        l
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// Waits for the process to end (30 s at most) and returns the rest of stderr.
    fn wait(&mut self) -> (std::process::ExitStatus, Vec<String>) {
        for _ in 0..300 {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut all = self.seen.clone();
                // Until the reader thread sees the pipe close.
                while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
                    all.push(line);
                }
                return (status, all);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the server did not exit; stderr: {:?}", self.seen);
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One HTTP/1.1 request on its own connection; returns status and body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad reply: {reply}"));
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {reply}")))
}

fn sigterm(pid: &str) {
    let ok = Command::new("kill").args(["-TERM", pid]).status().unwrap().success();
    assert!(ok, "kill -TERM {pid} failed");
}

#[test]
fn serves_health_and_score_on_a_free_port() {
    let mut s = Served::start(&["--model", "baseline:longer", "--port", "0"]);
    assert!(
        s.seen[0].contains("baseline:longer") && s.seen[0].contains("--normalize none"),
        "{:?}",
        s.seen
    );
    let (status, health) = http(&s.addr, "GET", "/health", "");
    assert_eq!(status, 200);
    assert_eq!(
        (health["status"].as_str(), health["model"].as_str(), health["normalize"].as_str()),
        (Some("ok"), Some("baseline:longer"), Some("none"))
    );
    let (status, v) = http(
        &s.addr,
        "POST",
        "/score",
        r#"{"query":"q","profile":"my posts","response_text":"hello"}"#,
    );
    assert_eq!((status, v["score"].as_f64()), (200, Some(5.0)));
    let (status, v) = http(&s.addr, "POST", "/score", r#"{"query":"q","response":"hello"}"#);
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().contains("unknown field `response`"), "{v}");
    // One log line per request, without the text.
    let logs: Vec<String> = (0..3).map(|_| s.line()).collect();
    assert!(logs.iter().all(|l| l.starts_with("{\"ts\":")), "{logs:?}");
    assert!(!logs.iter().any(|l| l.contains("hello") || l.contains("my posts")), "{logs:?}");
    sigterm(&s.pid());
    let (status, _) = s.wait();
    assert!(status.success(), "{status}");
}

#[test]
fn sigterm_answers_the_request_in_flight_then_exits_0() {
    // A long batch wait holds the lone request in the server until shutdown flushes it.
    let mut s = Served::start(&[
        "--model",
        "baseline:longer",
        "--port",
        "0",
        "--batch-wait-ms",
        "20000",
        "--max-batch",
        "64",
    ]);
    let addr = s.addr.clone();
    let in_flight = std::thread::spawn(move || {
        http(&addr, "POST", "/score", r#"{"query":"q","response_text":"abcdefg"}"#)
    });
    let mut waiting = false;
    for _ in 0..200 {
        let (_, h) = http(&s.addr, "GET", "/health", "");
        if h["stats"]["in_flight"] == 1 {
            waiting = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(waiting, "the request never reached the queue");
    sigterm(&s.pid());
    let (status, v) = in_flight.join().unwrap();
    assert_eq!((status, v["score"].as_f64()), (200, Some(7.0)), "{v}");
    let (exit, stderr) = s.wait();
    assert_eq!(exit.code(), Some(0), "{stderr:?}");
    let all = stderr.join("\n");
    assert!(
        all.contains("\"event\":\"shutdown\"") && all.contains("reward server stopped"),
        "{all}"
    );
}

#[test]
fn judges_and_bad_normalizations_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(&["serve-reward", "--model", "baseline:slot-a", "--port", "0"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("is a pairwise judge"), "{}", text(&out.stderr));
    let out = prbench(
        &["serve-reward", "--model", "baseline:longer", "--normalize", "affine:0,1"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("SCALE 0"), "{}", text(&out.stderr));
    let out =
        prbench(&["serve-reward", "--model", "baseline:longer", "--timeout", "5"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--timeout applies to remote engines"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_non_loopback_host_prints_a_warning() {
    let mut s = Served::start(&[
        "--model",
        "baseline:longer",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--quiet",
    ]);
    assert!(s.seen[0].contains("no authentication"), "{:?}", s.seen);
    assert!(s.addr.starts_with("0.0.0.0:"), "{}", s.addr);
    sigterm(&s.pid());
    assert!(s.wait().0.success());
}
