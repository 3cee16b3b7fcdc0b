//! Sanity check of the fast path: 2,000 judge requests at concurrency 64, no log, no delay.
//! Prints the rate; asserts only that every request succeeds (timings vary by machine).

use std::time::Instant;

use futures::StreamExt;
use prbench_fault_server::{FaultServer, ServerConfig};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_requests_at_concurrency_64() {
    const N: usize = 2_000;
    const CONCURRENCY: usize = 64;
    let server = FaultServer::start(ServerConfig::default().with_record(false)).unwrap();
    let url = format!("{}/v1/chat/completions", server.base_url());
    let client = reqwest::Client::builder().pool_max_idle_per_host(CONCURRENCY).build().unwrap();

    let t0 = Instant::now();
    let results: Vec<u16> = futures::stream::iter(0..N)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let body = json!({
                    "model": "fault-model",
                    "messages": [
                        {"role": "system", "content": "You are a careful judge of personalized answers."},
                        {"role": "user", "content": format!("Question {i}. Answer A: ... Answer B: ... Which fits the user?")}
                    ],
                    "logprobs": true,
                    "top_logprobs": 2,
                });
                let resp = client.post(&url).json(&body).send().await.unwrap();
                let status = resp.status().as_u16();
                let v: Value = resp.json().await.unwrap();
                assert!(v["choices"][0]["message"]["content"].is_string());
                status
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let elapsed = t0.elapsed();

    assert_eq!(results.len(), N);
    assert!(results.iter().all(|&s| s == 200));
    assert_eq!(server.requests(), N as u64);
    assert!(server.log().is_empty());
    println!(
        "fault-server load: {N} requests at concurrency {CONCURRENCY} in {:.3} s = {:.0} requests/s",
        elapsed.as_secs_f64(),
        N as f64 / elapsed.as_secs_f64()
    );
}
