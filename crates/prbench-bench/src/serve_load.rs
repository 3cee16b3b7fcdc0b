//! A loopback load test of the reward server (`prbench bench serve`): the server runs in this
//! process on `127.0.0.1:0`, and waves of `POST /score` requests are fired at it with a fixed
//! number in flight. Reported per wave: requests/s, latency p50/p99/max, the count of each
//! answer (200, 503, other, none at all) and the process's resident memory after the wave.

use std::sync::Arc;
use std::time::{Duration, Instant};

use prbench_models::RewardModel;
use prbench_stats::LatencySummary;
use serde::Serialize;
use tokio::sync::Semaphore;

use prbench_downstream::error::ServeError;
use prbench_downstream::serve::{ScoreItem, ServeOptions, ServerHandle};

/// Load settings.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Requests per wave.
    pub requests: usize,
    /// Requests in flight at once (each on its own connection until the pool is warm).
    pub concurrency: usize,
    /// Identical waves, one after the other (the second shows whether memory grows).
    pub waves: usize,
    /// Client timeout per request; a request over it counts as "no answer".
    pub timeout: Duration,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            requests: 1000,
            concurrency: 1000,
            waves: 2,
            timeout: Duration::from_secs(300),
        }
    }
}

/// One wave's figures.
#[derive(Debug, Clone, Serialize)]
pub struct WaveReport {
    /// Requests sent.
    pub requests: usize,
    /// Wall time of the wave, seconds.
    pub wall_seconds: f64,
    /// `requests / wall_seconds`.
    pub requests_per_second: f64,
    /// Per request, from sending to the last byte of the answer (nearest-rank percentiles,
    /// [`prbench_stats::latency`]; NaN when no request got an answer).
    pub latency: LatencySummary,
    /// Answers 200 with a finite `score`.
    pub ok: usize,
    /// Answers 503 (queue full).
    pub unavailable: usize,
    /// Any other answer (including a 200 without a finite score).
    pub other: usize,
    /// Requests that got no answer (connection error, timeout): "dropped".
    pub no_answer: usize,
    /// Resident memory of the process after the wave, MiB (`None` off Linux).
    pub rss_mib_after: Option<f64>,
}

/// The whole test.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// The served model's spec.
    pub model: String,
    /// The server's normalization.
    pub normalize: String,
    /// Requests in flight.
    pub concurrency: usize,
    /// Server batch limit.
    pub max_batch: usize,
    /// Server batch wait, ms.
    pub batch_wait_ms: f64,
    /// Server queue capacity, items.
    pub queue_capacity: usize,
    /// Resident memory with the server up and the requests built, before the first request, MiB.
    pub rss_mib_before: Option<f64>,
    /// Each wave in order.
    pub waves: Vec<WaveReport>,
    /// Model calls the server made.
    pub batches: u64,
    /// Items in the largest model call.
    pub largest_batch: usize,
}

/// The `VmRSS` of this process in MiB, from `/proc/self/status`; `None` where that is missing.
pub fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

enum Answer {
    Ok,
    Unavailable,
    Other,
    None,
}

/// Serves `model` on loopback with `serve` (its address and log are overridden: port 0, no
/// log) and fires `opts.waves` waves of `opts.requests` `POST /score` requests, the bodies
/// taken from `items` in turn.
///
/// # Errors
/// [`ServeError::Options`] for zero requests, concurrency or waves or no items; server start-up
/// errors; [`ServeError::Client`] if the HTTP client cannot be built.
pub fn load_test(
    model: Arc<dyn RewardModel>,
    mut serve: ServeOptions,
    items: &[ScoreItem],
    opts: &LoadOptions,
) -> Result<LoadReport, ServeError> {
    if opts.requests == 0 || opts.concurrency == 0 || opts.waves == 0 {
        return Err(ServeError::Options(
            "requests, concurrency and waves must each be at least 1".into(),
        ));
    }
    if items.is_empty() {
        return Err(ServeError::Options("the load test needs at least one request body".into()));
    }
    serve.addr = "127.0.0.1:0".parse().expect("valid address");
    serve.log = None;
    let identity = model.identity();
    let report_head = (
        serve.normalize.to_string(),
        serve.max_batch,
        serve.batch_wait.as_secs_f64() * 1e3,
        serve.queue_capacity,
    );
    let server = ServerHandle::start(model, serve)?;
    let url = format!("{}/score", server.base_url());
    let bodies: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..opts.requests)
            .map(|i| serde_json::to_vec(&items[i % items.len()]).expect("items serialize"))
            .collect(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("load-client")
        .build()?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(opts.timeout)
        .pool_max_idle_per_host(opts.concurrency)
        .build()
        .map_err(|e| ServeError::Client(e.to_string()))?;
    let rss_before = rss_mib();
    let mut waves = Vec::with_capacity(opts.waves);
    for _ in 0..opts.waves {
        waves.push(rt.block_on(wave(&client, &url, &bodies, opts.concurrency)));
    }
    let health: serde_json::Value = rt
        .block_on(async {
            client.get(format!("{}/health", server.base_url())).send().await?.json().await
        })
        .unwrap_or_default();
    drop(client);
    drop(rt);
    server.shutdown()?;
    let stat = |k: &str| health["stats"][k].as_u64().unwrap_or(0);
    Ok(LoadReport {
        model: identity.spec,
        normalize: report_head.0,
        concurrency: opts.concurrency,
        max_batch: report_head.1,
        batch_wait_ms: report_head.2,
        queue_capacity: report_head.3,
        rss_mib_before: rss_before,
        waves,
        batches: stat("batches"),
        largest_batch: stat("largest_batch") as usize,
    })
}

async fn wave(
    client: &reqwest::Client,
    url: &str,
    bodies: &Arc<Vec<Vec<u8>>>,
    concurrency: usize,
) -> WaveReport {
    let gate = Arc::new(Semaphore::new(concurrency));
    let clock = Instant::now();
    let tasks: Vec<_> = (0..bodies.len())
        .map(|i| {
            let (client, url, bodies, gate) =
                (client.clone(), url.to_string(), Arc::clone(bodies), Arc::clone(&gate));
            tokio::spawn(async move {
                let _permit = gate.acquire_owned().await.expect("semaphore open");
                let start = Instant::now();
                let sent = client
                    .post(&url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(bodies[i].clone())
                    .send()
                    .await;
                let answer = match sent {
                    Err(_) => Answer::None,
                    Ok(resp) => {
                        let status = resp.status().as_u16();
                        match resp.bytes().await {
                            Err(_) => Answer::None,
                            Ok(body) => match status {
                                200 => {
                                    let v: serde_json::Value =
                                        serde_json::from_slice(&body).unwrap_or_default();
                                    if v["score"].as_f64().is_some_and(f64::is_finite) {
                                        Answer::Ok
                                    } else {
                                        Answer::Other
                                    }
                                }
                                503 => Answer::Unavailable,
                                _ => Answer::Other,
                            },
                        }
                    }
                };
                (answer, start.elapsed().as_secs_f64() * 1e3)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(tasks.len());
    let (mut ok, mut unavailable, mut other, mut none) = (0, 0, 0, 0);
    for t in tasks {
        match t.await {
            Ok((answer, ms)) => {
                latencies.push(ms);
                match answer {
                    Answer::Ok => ok += 1,
                    Answer::Unavailable => unavailable += 1,
                    Answer::Other => other += 1,
                    Answer::None => none += 1,
                }
            }
            Err(_) => none += 1,
        }
    }
    let wall = clock.elapsed().as_secs_f64();
    let requests = bodies.len();
    WaveReport {
        requests,
        wall_seconds: wall,
        requests_per_second: requests as f64 / wall,
        latency: LatencySummary::of_ms(latencies).unwrap_or(LatencySummary::empty(f64::NAN)),
        ok,
        unavailable,
        other,
        no_answer: none,
        rss_mib_after: rss_mib(),
    }
}
