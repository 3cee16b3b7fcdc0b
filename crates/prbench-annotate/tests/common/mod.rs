//! Shared set-up of the annotate tests: small datasets and a plain HTTP/1.1 client.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use prbench_data::{Example, ProfilePost, RubricAspect};

/// The probes every text field of [`hostile_example`] carries.
pub const XSS: &str = "<script>alert(1)</script> <img src=x onerror=alert(2)> </svg>";

/// `n` examples in two subsets, ids `q0…`, chosen `CHOSEN i`, rejected `REJECTED i`.
pub fn examples(n: usize) -> Vec<Example> {
    (0..n)
        .map(|i| Example {
            id: format!("q{i}"),
            subset: if i % 2 == 0 {
                "Art_and_Entertainment".into()
            } else {
                "Lifestyle_and_Personal_Development".into()
            },
            question: format!("QUESTION {i}: how do I start?"),
            profile: vec![
                ProfilePost {
                    id: format!("p{i}a"),
                    category: "Hobbies".into(),
                    text: format!("POST {i} A"),
                },
                ProfilePost {
                    id: format!("p{i}b"),
                    category: String::new(),
                    text: format!("POST {i} B"),
                },
            ],
            rubric_aspects: vec![RubricAspect {
                aspect: format!("ASPECT {i}"),
                evidence: format!("EVIDENCE {i}"),
                reason: format!("REASON {i}"),
            }],
            narrative: format!("NARRATIVE {i}"),
            category: "Hobbies".into(),
            chosen: format!("CHOSEN {i}"),
            rejected: format!("REJECTED {i}"),
        })
        .collect()
}

/// An example whose every text holds [`XSS`].
pub fn hostile_example() -> Example {
    let mut e = examples(1).remove(0);
    e.id = "xss".into();
    e.question = format!("Q {XSS}");
    e.profile[0].text = format!("post {XSS}");
    e.profile[0].category = format!("cat {XSS}");
    e.rubric_aspects[0].aspect = format!("aspect {XSS}");
    e.rubric_aspects[0].reason = format!("reason {XSS}");
    e.chosen = format!("chosen {XSS}");
    e.rejected = format!("rejected {XSS}");
    e
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// One request over a fresh connection (`Connection: close`), body as given.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    if let Some(b) = body {
        s.write_all(b)?;
    }
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// A full rating: every score of answer 1 is `a`, of answer 2 is `b`, `better` as given.
pub fn rating(a: u8, b: u8, better: u8) -> serde_json::Value {
    let ans = |s: u8, c: &str| serde_json::json!({"factuality": s, "relevance": s, "helpfulness": s, "rubric_fit": s, "comment": c});
    serde_json::json!({"answers": [ans(a, "first"), ans(b, "")], "better": better})
}

/// A rating server over `store` on a loopback port, on its own runtime thread; it stops when
/// the returned sender is dropped.
pub fn spawn_server(
    store: std::sync::Arc<prbench_annotate::Store>,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            prbench_annotate::server::serve(listener, store, async move {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
    });
    (addr_rx.recv().unwrap(), tx)
}

/// A new store in `dir` over `examples`, annotators `names`, `k` per item, seed 7; the tokens.
pub fn new_store(
    dir: &std::path::Path,
    examples: &[Example],
    names: &[&str],
    k: usize,
) -> (prbench_annotate::Store, Vec<(String, String)>) {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let spec = prbench_annotate::StoreSpec {
        examples,
        source: "test",
        dataset_hash: "hash-1",
        annotators: &names,
        per_item: k,
        seed: 7,
    };
    match prbench_annotate::Store::open_or_create(dir, &spec).unwrap() {
        (s, prbench_annotate::Opened::Created(t)) => (s, t),
        (_, prbench_annotate::Opened::Resumed) => panic!("expected a new store"),
    }
}
