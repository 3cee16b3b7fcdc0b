//! `prbench bench serve`: the reward server under load (issue 6's load test).
//!
//! The server runs in this process on `127.0.0.1:0` with the given model and settings; waves of
//! `--requests` `POST /score` requests (default 1,000) go out with `--concurrency` in flight
//! (default 1,000), the bodies built from the dataset's examples (question numbered so no two
//! bodies are equal, the first `--posts` profile posts as context, chosen and rejected answers
//! alternating). Reported per wave: requests/s, latency p50/p99/max, answers by status ("nothing
//! dropped" = every request got an answer), and resident memory after the wave ("memory flat"
//! = the second wave does not grow it).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use prbench_downstream::serve::load::{load_test, LoadOptions};
use prbench_downstream::serve::ScoreItem;
use prbench_eval::condition::profile_context;

use crate::cli::{BenchServeArgs, RemoteArgs};
use crate::commands::serve_reward::{load_reward_model, serve_options};

fn mib(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |m| format!("{m:.1}"))
}

/// Runs `prbench bench serve`.
pub fn run(args: BenchServeArgs) -> Result<()> {
    let data = prbench_data::load::load(&args.data, &[]).with_context(|| format!("loading `{}`", args.data))?;
    if data.examples.is_empty() {
        bail!("`{}` holds no examples", args.data);
    }
    let items: Vec<ScoreItem> = (0..args.requests)
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
        .collect();
    let model = load_reward_model(&args.model, &RemoteArgs::default())?;
    let serve = serve_options(&args.serve, SocketAddr::from(([127, 0, 0, 1], 0)), false);
    let opts = LoadOptions {
        requests: args.requests,
        concurrency: args.concurrency,
        waves: args.waves,
        timeout: Duration::from_secs(args.timeout.max(1)),
    };
    let report = load_test(Arc::from(model), serve, &items, &opts)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("| wave | requests | concurrency | wall s | requests/s | p50 ms | p99 ms | max ms | 200 | 503 | other | no answer | RSS MiB after |");
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (i, w) in report.waves.iter().enumerate() {
            println!(
                "| {} | {} | {} | {:.2} | {:.0} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} | {} |",
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
        println!(
            "\nmodel `{}`, reward {}; server: max batch {}, batch wait {} ms, queue {} items; {} model calls, largest {} items; RSS MiB before the first wave: {}",
            report.model,
            report.normalize,
            report.max_batch,
            report.batch_wait_ms,
            report.queue_capacity,
            report.batches,
            report.largest_batch,
            mib(report.rss_mib_before)
        );
    }
    let dropped: usize = report.waves.iter().map(|w| w.no_answer).sum();
    if dropped > 0 {
        bail!("{dropped} requests got no answer (connection error or over --timeout {} s)", args.timeout);
    }
    Ok(())
}
