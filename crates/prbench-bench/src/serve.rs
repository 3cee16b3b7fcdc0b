//! `bench serve`: the reward server under load.
//!
//! The server runs in this process on `127.0.0.1:0` with the given model and settings; waves of
//! `--requests` `POST /score` requests (default 1,000) go out with `--concurrency` in flight
//! (default 1,000), the bodies built from the dataset's examples (question numbered so no two
//! bodies are equal, the first `--posts` profile posts as context, chosen and rejected answers
//! alternating). Reported per wave: requests/s, latency p50/p99/max, answers by status ("nothing
//! dropped" = every request got an answer), and resident memory after the wave ("memory flat"
//! = the second wave does not grow it).

use std::sync::Arc;
use std::time::Duration;

use crate::serve_load::{load_test, LoadOptions, LoadReport};
use anyhow::{bail, Context, Result};
use prbench_downstream::serve::{ScoreItem, ServeOptions};
use prbench_eval::condition::profile_context;
use prbench_models::RewardModel;

/// The load `bench serve` puts on the server.
#[derive(Debug, Clone)]
pub struct ServeLoadOptions {
    /// `POST /score` requests per wave.
    pub requests: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Identical waves, one after the other.
    pub waves: usize,
    /// Seconds before a request without an answer counts as dropped.
    pub timeout: u64,
    /// Dataset whose examples fill the requests (cycled).
    pub data: String,
    /// Profile posts per request, rendered as the `profile:k` condition renders them.
    pub posts: usize,
}

fn mib(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |m| format!("{m:.1}"))
}

/// The request bodies: the dataset's examples cycled, each question numbered so no two bodies
/// are equal, the first `posts` profile posts as context, chosen and rejected answers alternating.
///
/// # Errors
/// Data that cannot be loaded or holds no examples.
pub fn requests(args: &ServeLoadOptions) -> Result<Vec<ScoreItem>> {
    let data = prbench_data::load::load(&args.data, &[])
        .with_context(|| format!("loading `{}`", args.data))?;
    if data.examples.is_empty() {
        bail!("`{}` holds no examples", args.data);
    }
    Ok((0..args.requests)
        .map(|i| {
            let ex = &data.examples[i % data.examples.len()];
            let posts = &ex.profile[..args.posts.min(ex.profile.len())];
            ScoreItem {
                query: format!("[{i}] {}", ex.question),
                profile: (args.posts > 0).then(|| profile_context(posts)),
                response_text: if i % 2 == 0 { ex.chosen.clone() } else { ex.rejected.clone() },
                id: Some(format!("bench-{i}")),
            }
        })
        .collect())
}

/// Serves `model` in this process with `serve` (its address should be `127.0.0.1:0`) and sends
/// the waves of `items`.
///
/// # Errors
/// A server that cannot start.
pub fn measure(
    model: Arc<dyn RewardModel>,
    serve: ServeOptions,
    items: &[ScoreItem],
    args: &ServeLoadOptions,
) -> Result<LoadReport> {
    let opts = LoadOptions {
        requests: args.requests,
        concurrency: args.concurrency,
        waves: args.waves,
        timeout: Duration::from_secs(args.timeout.max(1)),
    };
    Ok(load_test(model, serve, items, &opts)?)
}

/// Requests that got no answer in any wave.
pub fn dropped(report: &LoadReport) -> usize {
    report.waves.iter().map(|w| w.no_answer).sum()
}

/// The `bench serve` table: one row per wave, then the server's settings.
pub fn table(report: &LoadReport) -> String {
    let mut s = String::from("| wave | requests | concurrency | wall s | requests/s | p50 ms | p99 ms | max ms | 200 | 503 | other | no answer | RSS MiB after |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (i, w) in report.waves.iter().enumerate() {
        s += &format!(
            "| {} | {} | {} | {:.2} | {:.0} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} | {} |\n",
            i + 1,
            w.requests,
            report.concurrency,
            w.wall_seconds,
            w.requests_per_second,
            w.latency.p50_ms,
            w.latency.p99_ms,
            w.latency.max_ms,
            w.ok,
            w.unavailable,
            w.other,
            w.no_answer,
            mib(w.rss_mib_after)
        );
    }
    s += &format!(
        "\nmodel `{}`, reward {}; server: max batch {}, batch wait {} ms, queue {} items; {} model calls, largest {} items; RSS MiB before the first wave: {}\n",
        report.model,
        report.normalize,
        report.max_batch,
        report.batch_wait_ms,
        report.queue_capacity,
        report.batches,
        report.largest_batch,
        mib(report.rss_mib_before)
    );
    s
}
