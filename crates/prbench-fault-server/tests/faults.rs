//! Each scripted fault produces what it claims, as a reqwest client sees it.

use std::error::Error as _;
use std::io::{Read, Write};
use std::time::Duration;

use prbench_fault_server::{Fault, FaultRule, FaultServer, ServerConfig};
use serde_json::{json, Value};

fn chat_body(prompt: &str) -> Value {
    json!({"model": "fault-model", "messages": [{"role": "user", "content": prompt}]})
}

fn start(rule: FaultRule) -> FaultServer {
    FaultServer::start(ServerConfig::default().with_rule(rule)).expect("start fault server")
}

fn chat_url(server: &FaultServer) -> String {
    format!("{}/v1/chat/completions", server.base_url())
}

/// The error and all its sources, for assertion messages.
fn chain(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(" <- ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

#[tokio::test]
async fn rate_limited_is_429_with_retry_after() {
    let server = start(FaultRule::always(Fault::RateLimited { retry_after: Some("1".into()) }));
    let resp =
        reqwest::Client::new().post(chat_url(&server)).json(&chat_body("hi")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let server = start(FaultRule::always(Fault::RateLimited { retry_after: None }));
    let resp =
        reqwest::Client::new().post(chat_url(&server)).json(&chat_body("hi")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert!(resp.headers().get("retry-after").is_none());
}

#[tokio::test]
async fn server_error_and_any_status() {
    let server = FaultServer::start(
        ServerConfig::default()
            .with_rule(FaultRule::new("boom", Fault::ServerError))
            .with_rule(FaultRule::new("busy", Fault::Status(503))),
    )
    .unwrap();
    let client = reqwest::Client::new();
    for (prompt, status) in [("boom", 500), ("busy", 503), ("fine", 200)] {
        let resp = client.post(chat_url(&server)).json(&chat_body(prompt)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), status, "prompt {prompt}");
        let _: Value = resp.json().await.unwrap();
    }
    let faults: Vec<Option<String>> = server.log().into_iter().map(|r| r.fault).collect();
    assert_eq!(faults, vec![Some("server_error".into()), Some("status_503".into()), None]);
}

#[tokio::test]
async fn slow_past_client_timeout_is_a_client_timeout() {
    let server = start(FaultRule::new("slowly", Fault::Slow(Duration::from_secs(3))));
    let client = reqwest::Client::builder().timeout(Duration::from_millis(200)).build().unwrap();
    let t0 = std::time::Instant::now();
    let err =
        client.post(chat_url(&server)).json(&chat_body("answer slowly")).send().await.unwrap_err();
    assert!(err.is_timeout(), "expected a timeout, got {}", chain(&err));
    assert!(t0.elapsed() < Duration::from_secs(2));

    // Slow is "then a normal answer".
    let server = start(FaultRule::always(Fault::Slow(Duration::from_millis(100))));
    let t0 = std::time::Instant::now();
    let resp =
        reqwest::Client::new().post(chat_url(&server)).json(&chat_body("x")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.unwrap();
    assert!(body["choices"][0]["message"]["content"].is_string());
    assert!(t0.elapsed() >= Duration::from_millis(100));
}

#[tokio::test]
async fn truncated_json_is_200_with_unparsable_body() {
    let server = start(FaultRule::always(Fault::TruncatedJson));
    let resp =
        reqwest::Client::new().post(chat_url(&server)).json(&chat_body("hi")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let text = resp.text().await.expect("the body itself arrives whole");
    assert!(text.starts_with("{\"") && !text.is_empty());
    assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
}

#[tokio::test]
async fn drop_connection_is_a_connection_error_not_a_status() {
    let server = start(FaultRule::new("drop-me", Fault::DropConnection));
    let client = reqwest::Client::new();

    // Warm a keep-alive connection first, so the drop also hits a pooled connection.
    let ok = client.post(chat_url(&server)).json(&chat_body("fine")).send().await.unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    ok.bytes().await.unwrap();

    for attempt in 0..3 {
        let err = client
            .post(chat_url(&server))
            .json(&chat_body("please drop-me"))
            .send()
            .await
            .expect_err("a dropped connection must not produce a response");
        assert!(err.status().is_none());
        assert!(!err.is_timeout());
        assert!(err.is_request() || err.is_connect(), "{}", chain(&err));
        let text = chain(&err).to_lowercase();
        if attempt == 0 {
            println!("client error on DropConnection: {text}");
        }
        assert!(
            text.contains("closed") || text.contains("reset") || text.contains("incomplete"),
            "unexpected error: {text}"
        );
    }

    // The server itself survives.
    let ok = client.post(chat_url(&server)).json(&chat_body("fine again")).send().await.unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    let faults: Vec<Option<String>> = server.log().into_iter().map(|r| r.fault).collect();
    assert_eq!(faults.iter().filter(|f| f.is_some()).count(), 3);
    assert_eq!(faults[1].as_deref(), Some("drop_connection"));
}

#[test]
fn drop_connection_sends_no_byte_at_all() {
    let server = start(FaultRule::always(Fault::DropConnection));
    let body = serde_json::to_string(&chat_body("raw")).unwrap();
    let mut sock = std::net::TcpStream::connect(server.addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        sock,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        body
    )
    .unwrap();
    let mut got = Vec::new();
    match sock.read_to_end(&mut got) {
        Ok(_) => assert!(got.is_empty(), "got bytes: {:?}", String::from_utf8_lossy(&got)),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
}

#[tokio::test]
async fn drop_mid_body_gives_status_then_body_error() {
    let server = start(FaultRule::always(Fault::DropMidBody));
    let resp =
        reqwest::Client::new().post(chat_url(&server)).json(&chat_body("hi")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let err = resp.bytes().await.expect_err("the body must be cut");
    assert!(err.is_body() || err.is_decode() || err.is_request(), "{}", chain(&err));
}

#[tokio::test]
async fn echo_authorization_echoes_the_header() {
    let server = start(FaultRule::always(Fault::EchoAuthorization));
    let resp = reqwest::Client::new()
        .post(chat_url(&server))
        .bearer_auth("sk-test-SECRET-1234")
        .json(&chat_body("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 500);
    let text = resp.text().await.unwrap();
    assert!(text.contains("Bearer sk-test-SECRET-1234"), "{text}");
}

#[tokio::test]
async fn times_counts_per_distinct_body() {
    let server = start(FaultRule::always(Fault::ServerError).times(2));
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    // Interleaved: X, Y, X, Y, X, Y — each body fails twice, then succeeds.
    for _ in 0..3 {
        for prompt in ["body X", "body Y"] {
            let resp =
                client.post(chat_url(&server)).json(&chat_body(prompt)).send().await.unwrap();
            statuses.push(resp.status().as_u16());
        }
    }
    assert_eq!(statuses, vec![500, 500, 500, 500, 200, 200]);
    // And it stays fixed afterwards.
    let resp = client.post(chat_url(&server)).json(&chat_body("body X")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}

#[tokio::test]
async fn times_is_independent_of_concurrency() {
    let server = start(FaultRule::new("flaky", Fault::Status(503)).times(1));
    let client = reqwest::Client::new();
    let url = chat_url(&server);
    // 20 distinct bodies, each sent 3 times concurrently: exactly one 503 per body.
    let mut tasks = Vec::new();
    for i in 0..20 {
        for _ in 0..3 {
            let (client, url) = (client.clone(), url.clone());
            tasks.push(tokio::spawn(async move {
                let resp =
                    client.post(url).json(&chat_body(&format!("flaky {i}"))).send().await.unwrap();
                (i, resp.status().as_u16())
            }));
        }
    }
    let mut fails = [0u32; 20];
    for t in tasks {
        let (i, status) = t.await.unwrap();
        if status == 503 {
            fails[i] += 1;
        } else {
            assert_eq!(status, 200);
        }
    }
    assert_eq!(fails, [1; 20]);
}

#[tokio::test]
async fn rules_chain_in_order_and_apply_to_every_post_endpoint() {
    let server = FaultServer::start(
        ServerConfig::default()
            .with_rule(
                FaultRule::always(Fault::RateLimited { retry_after: Some("0".into()) }).times(1),
            )
            .with_rule(FaultRule::always(Fault::ServerError).times(1)),
    )
    .unwrap();
    let client = reqwest::Client::new();
    let base = server.base_url();
    let bodies = [
        ("/v1/chat/completions", chat_body("x")),
        ("/score", json!({"query": "q", "profile": "p", "response_text": "r"})),
        ("/classify", json!({"model": "m", "input": "abc"})),
        // Counting is per body, not per path: a different body for /pooling.
        ("/pooling", json!({"model": "m", "input": "abcd"})),
    ];
    for (path, body) in &bodies {
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let resp = client.post(format!("{base}{path}")).json(body).send().await.unwrap();
            statuses.push(resp.status().as_u16());
        }
        assert_eq!(statuses, vec![429, 500, 200], "{path}");
    }
    // GET /v1/models is never faulted.
    let resp = client.get(format!("{base}/v1/models")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}

#[tokio::test]
async fn marker_selects_requests() {
    let server = start(FaultRule::new("MARK-7", Fault::Status(401)));
    let client = reqwest::Client::new();
    let hit =
        client.post(chat_url(&server)).json(&chat_body("has MARK-7 inside")).send().await.unwrap();
    let miss =
        client.post(chat_url(&server)).json(&chat_body("has MARK-8 inside")).send().await.unwrap();
    assert_eq!(hit.status().as_u16(), 401);
    assert_eq!(miss.status().as_u16(), 200);
}
