//! `bench remote`: the `openai:` judge client under load.
//!
//! `--requests` judge requests (default 2,000) at `--concurrency` (default 64) through the same
//! `OpenAiJudge` that `prbench eval --model openai:…` uses: prompts rendered by prbench's judge
//! template from the bundled sample (each request's question numbered, so no two bodies are
//! equal), logprob verdicts detected by the probe, replies parsed. By default the target is our
//! fault server in fast mode (no faults, no delay, request log off), started in this process on
//! loopback, so the figures measure the client and the harness around it rather than a model.
//! Reported: requests/s over the wall time of the batch, item latency p50/p99 (first attempt
//! to parsed verdict, from a histogram within 1%), and resident memory (VmRSS) when 25/50/75/100%
//! of the requests were done, plus the process peak (VmHWM; it includes the in-process server).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use prbench_eval::prompt::Prompts;
use prbench_fault_server::{FaultServer, ServerConfig};
use prbench_models::{Choice, Judge, JudgeRequest, PairInput};
use prbench_remote::{JudgeConfig, OpenAiChat, OpenAiJudge, RemoteOptions, VerdictSource};

use crate::child::self_kib as proc_kib;

/// What `bench remote` sends, and where.
#[derive(Debug, Clone)]
pub struct RemoteLoadOptions {
    /// Judge requests to send (at least 1).
    pub requests: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// An OpenAI-compatible base URL to load instead of the in-process fault server.
    pub url: Option<String>,
    /// Model name sent in each request.
    pub model: String,
    /// Dataset whose examples fill the prompts (cycled).
    pub data: String,
}

/// What [`measure`] found: the JSON report (`bench remote --json`) and what the table adds.
pub struct RemoteLoadReport {
    /// The report as one JSON object.
    pub json: serde_json::Value,
    /// Requests that failed after retries.
    pub errors: usize,
    requests: usize,
    concurrency: usize,
    wall: f64,
    rps: f64,
    latency: Option<prbench_remote::LatencySummary>,
    rss_start: Option<u64>,
    marks: Vec<(usize, Option<u64>)>,
    peak: Option<u64>,
    unparsed: usize,
    with_p_a: usize,
    http_requests: u64,
    retries: u64,
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "n/a".into(), |k| format!("{:.1}", k as f64 / 1024.0))
}

/// Sends the requests (see the module docs) and measures them.
///
/// # Errors
/// No requests, data that cannot be loaded or holds no examples, a server that cannot start,
/// a judge that cannot be built.
pub fn measure(args: &RemoteLoadOptions) -> Result<RemoteLoadReport> {
    if args.requests == 0 {
        bail!("--requests must be at least 1");
    }
    let data = prbench_data::load::load(&args.data, &[])
        .with_context(|| format!("loading `{}`", args.data))?;
    if data.examples.is_empty() {
        bail!("`{}` holds no examples", args.data);
    }
    let server = match &args.url {
        Some(_) => None,
        None => Some(
            FaultServer::start(ServerConfig::default().with_record(false))
                .context("starting the loopback fault server")?,
        ),
    };
    let base = args.url.clone().unwrap_or_else(|| server.as_ref().expect("started").openai_base());
    let prompts = Prompts::new();
    let requests: Vec<JudgeRequest> = (0..args.requests)
        .map(|i| {
            let ex = &data.examples[i % data.examples.len()];
            let pair = PairInput {
                example_id: format!("bench-{i}"),
                question: format!("[{i}] {}", ex.question),
                context: None,
                a: ex.chosen.clone(),
                b: ex.rejected.clone(),
            };
            Ok(JudgeRequest { prompt: prompts.judge(&pair)?, pair, prompt_b: None })
        })
        .collect::<Result<_, prbench_eval::EvalError>>()?;
    let opts = RemoteOptions {
        concurrency: args.concurrency,
        timeout: Duration::from_secs(30),
        ..RemoteOptions::default()
    };
    let chat = OpenAiChat::new(&args.model, vec![base.clone()], opts)?;
    let judge = OpenAiJudge::new(
        chat,
        JudgeConfig { verdict: VerdictSource::Auto, ..JudgeConfig::default() },
    )?;

    let rss_start = proc_kib("VmRSS:");
    let done = AtomicUsize::new(0);
    let marks = Mutex::new(Vec::new());
    let quarter = args.requests.div_ceil(4);
    let clock = Instant::now();
    let results = judge.judge_each(&requests, &|_, _| {
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(quarter) || n == args.requests {
            marks.lock().unwrap().push((n, proc_kib("VmRSS:")));
        }
    });
    let wall = clock.elapsed().as_secs_f64();
    let errors = results.iter().filter(|r| r.is_err()).count();
    let unparsed =
        results.iter().filter(|r| matches!(r, Ok(v) if v.choice == Choice::Unparsed)).count();
    let with_p_a = results.iter().filter(|r| matches!(r, Ok(v) if v.p_a.is_some())).count();
    let latency = judge.chat().latency();
    let calls = judge.call_stats().unwrap_or_default();
    let rps = args.requests as f64 / wall;

    let marks = marks.into_inner().unwrap();
    let report = serde_json::json!({
        "target": if server.is_some() { "in-process fault server, fast mode".to_string() } else { base.clone() },
        "requests": args.requests,
        "concurrency": args.concurrency,
        "wall_seconds": wall,
        "requests_per_second": rps,
        "latency_ms": latency,
        "http_requests": calls.requests,
        "retries": calls.retries,
        "errors": errors,
        "unparsed": unparsed,
        "verdicts_with_p_a": with_p_a,
        "rss_mib_start": rss_start.map(|k| k as f64 / 1024.0),
        "rss_mib_by_done": marks.iter().map(|(n, k)| serde_json::json!({"done": n, "rss_mib": k.map(|k| k as f64 / 1024.0)})).collect::<Vec<_>>(),
        "peak_rss_mib": proc_kib("VmHWM:").map(|k| k as f64 / 1024.0),
    });
    Ok(RemoteLoadReport {
        json: report,
        errors,
        requests: args.requests,
        concurrency: args.concurrency,
        wall,
        rps,
        latency,
        rss_start,
        marks,
        peak: proc_kib("VmHWM:"),
        unparsed,
        with_p_a,
        http_requests: calls.requests,
        retries: calls.retries,
    })
}

impl RemoteLoadReport {
    /// The `bench remote` table and the memory and verdict lines under it.
    pub fn table(&self) -> String {
        let latency = self.latency;
        let mut s = String::from("| target | requests | concurrency | wall s | requests/s | p50 ms | p99 ms | errors | peak RSS MiB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        s += &format!(
            "| {} | {} | {} | {:.2} | {:.0} | {} | {} | {} | {} |\n",
            self.json["target"].as_str().unwrap_or(""),
            self.requests,
            self.concurrency,
            self.wall,
            self.rps,
            latency.map_or("n/a".into(), |l| format!("{:.1}", l.p50_ms)),
            latency.map_or("n/a".into(), |l| format!("{:.1}", l.p99_ms)),
            self.errors,
            mib(self.peak)
        );
        let by_done: Vec<String> =
            self.marks.iter().map(|(n, k)| format!("{n}: {}", mib(*k))).collect();
        s += &format!(
            "\nRSS MiB at start: {}; after N requests done: {}\n",
            mib(self.rss_start),
            by_done.join(", ")
        );
        s += &format!(
            "verdicts: {} with p_A from log-probabilities, {} unparsed, {} errors; {} HTTP requests, {} retries\n",
            self.with_p_a, self.unparsed, self.errors, self.http_requests, self.retries
        );
        s
    }
}
