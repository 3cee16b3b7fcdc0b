//! The rating server under load (`prbench bench annotate`): simulated annotators on loopback,
//! each loading an item and saving a rating, then the next, for a fixed time; then a check
//! that every acknowledged rating is in the export.
//!
//! **What runs.** A new store in a temporary folder, `items` synthetic items (a question,
//! three posts and two answers of about 60 words each), every item rated by 2 of the
//! `annotators`; the server ([`prbench_annotate::server`]) on `127.0.0.1:0` in this process. Each
//! simulated annotator is one task with its own HTTP connection pool: `GET` its item, `PUT` a
//! rating whose comment names (annotator, request number), move to its next position, wrap
//! around at the end of its list (so later saves are changes, new revisions) until the time
//! is up. Latency is from sending to the last byte of the answer.
//!
//! **The check.** After the server stops, the store is reopened from disk: for every
//! (annotator, position) the export's comment must be the last acknowledged one, and its
//! revision the number of acknowledged saves; a mismatch counts as lost.
//!
//! **Reference.** The same loads and saves straight into a store of the same shape
//! ([`Store::item`] then [`Store::submit`], one OS thread per annotator, no HTTP), for
//! `reference_seconds`: the ratio is the HTTP server's figure over the bare store's. Both sides
//! share one SQLite connection behind a mutex, so a save's latency is mostly its wait for the
//! commits ahead of it; the direct threads never pause for a network round trip, so they
//! queue harder and their latency can exceed the server's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prbench_data::{Example, ProfilePost, RubricAspect};
use prbench_stats::LatencySummary;
use serde::Serialize;

use prbench_annotate::error::AnnotateError;
use prbench_annotate::export;
use prbench_annotate::store::{Store, StoreSpec};
use prbench_annotate::submission::{AnswerRating, Submission};

/// Load settings.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Simulated annotators, all at once.
    pub annotators: usize,
    /// How long they submit, in seconds.
    pub seconds: f64,
    /// Items in the store (each rated by 2 annotators).
    pub items: usize,
    /// Seconds of the reference (direct store) run; 0 skips it.
    pub reference_seconds: f64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { annotators: 50, seconds: 60.0, items: 500, reference_seconds: 10.0 }
    }
}

/// One side's figures.
#[derive(Debug, Clone, Serialize)]
pub struct SideReport {
    /// Saves acknowledged (200, or `submit` returned).
    pub saves: usize,
    /// Saves that failed (any other answer, or no answer).
    pub failed_saves: usize,
    /// Item loads (HTTP side only).
    pub loads: usize,
    /// Wall time, seconds.
    pub wall_seconds: f64,
    /// `saves / wall_seconds`.
    pub saves_per_second: f64,
    /// Latency of a save (nearest-rank percentiles, [`prbench_stats::latency`]).
    pub save_latency: LatencySummary,
    /// Latency of an item load (HTTP side; zeros on the reference side).
    pub load_latency: LatencySummary,
}

/// The load test's result.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// Simulated annotators.
    pub annotators: usize,
    /// Items in the store.
    pub items: usize,
    /// The server under load.
    pub http: SideReport,
    /// Direct store commits (no HTTP), if run.
    pub reference: Option<SideReport>,
    /// Acknowledged saves checked against the reopened store's export.
    pub checked: usize,
    /// Acknowledged saves whose rating is not in the export (must be 0).
    pub lost: usize,
    /// Export rows (8 per rated item).
    pub export_rows: usize,
}

/// The summary of `ms`; zeros when nothing was measured (the reference side loads no item).
fn latency(ms: Vec<f64>) -> LatencySummary {
    LatencySummary::of_ms(ms).unwrap_or(LatencySummary::empty(0.0))
}

fn words(seed: usize, n: usize) -> String {
    const W: [&str; 12] = [
        "garden", "light", "practice", "budget", "weekly", "simple", "careful", "plan", "music",
        "travel", "notes", "start",
    ];
    (0..n).map(|i| W[(seed * 7 + i * 3) % W.len()]).collect::<Vec<_>>().join(" ")
}

fn items(n: usize) -> Vec<Example> {
    (0..n)
        .map(|i| Example {
            id: format!("load-{i}"),
            subset: "Lifestyle_and_Personal_Development".into(),
            question: format!("Question {i}: {}", words(i, 20)),
            profile: (0..3)
                .map(|p| ProfilePost {
                    id: format!("p{p}"),
                    category: "Hobbies".into(),
                    text: words(i + p, 80),
                })
                .collect(),
            rubric_aspects: vec![RubricAspect {
                aspect: words(i, 6),
                evidence: String::new(),
                reason: words(i + 1, 10),
            }],
            narrative: String::new(),
            category: "Hobbies".into(),
            chosen: words(i + 2, 60),
            rejected: words(i + 3, 60),
            user_id: None,
        })
        .collect()
}

fn submission(comment: String, k: usize) -> Submission {
    let s = (k % 5) as u8 + 1;
    let a = AnswerRating { factuality: s, relevance: 4, helpfulness: 4, rubric_fit: s, comment };
    let b = AnswerRating {
        factuality: 4,
        relevance: 4,
        helpfulness: 4,
        rubric_fit: 6 - s,
        comment: String::new(),
    };
    Submission { answers: [a, b], better: 1 + (k % 2) as u8 }
}

fn make_store(
    dir: &std::path::Path,
    examples: &[Example],
    names: &[String],
) -> Result<(Store, Vec<(String, String)>), AnnotateError> {
    let spec = StoreSpec {
        examples,
        source: "synthetic load",
        dataset_hash: "load",
        annotators: names,
        per_item: 2.min(names.len()),
        seed: 1,
        selection: "all items",
    };
    match Store::open_or_create(dir, &spec)? {
        (s, prbench_annotate::store::Opened::Created(t)) => Ok((s, t)),
        (_, prbench_annotate::store::Opened::Resumed) => {
            Err(AnnotateError::Items("the load test's folder was not new".into()))
        }
    }
}

/// What one simulated annotator saw: per position, (last acknowledged comment, acks).
type Acks = HashMap<usize, (String, u32)>;

/// Whether a request got a 2xx answer whose body arrived in full.
async fn answered(sent: reqwest::Result<reqwest::Response>) -> bool {
    match sent {
        Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
        Err(_) => false,
    }
}

async fn annotator(
    base: String,
    name: String,
    total: usize,
    deadline: Instant,
) -> (Acks, Vec<f64>, Vec<f64>, usize) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("an HTTP client builds");
    let (mut acks, mut loads, mut saves, mut failed) =
        (Acks::new(), Vec::new(), Vec::new(), 0usize);
    let mut k = 0usize;
    while Instant::now() < deadline {
        let pos = k % total + 1;
        let t = Instant::now();
        if answered(client.get(format!("{base}/api/items/{pos}")).send().await).await {
            loads.push(t.elapsed().as_secs_f64() * 1e3);
        } else {
            failed += 1;
            k += 1;
            continue;
        }
        let comment = format!("{name} request {k}");
        let body = serde_json::to_vec(&submission(comment.clone(), k)).expect("serializes");
        let t = Instant::now();
        let sent = client
            .put(format!("{base}/api/items/{pos}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await;
        if answered(sent).await {
            saves.push(t.elapsed().as_secs_f64() * 1e3);
            let e = acks.entry(pos).or_insert((String::new(), 0));
            *e = (comment, e.1 + 1);
        } else {
            failed += 1;
        }
        k += 1;
    }
    (acks, loads, saves, failed)
}

/// Runs the load test (module docs).
///
/// # Errors
/// [`AnnotateError::Annotators`] for 0 annotators or a duration that is not positive; store
/// and I/O errors (the temporary folder, the listener).
pub fn load_test(opts: &LoadOptions) -> Result<LoadReport, AnnotateError> {
    if opts.annotators == 0 || opts.seconds.is_nan() || opts.seconds <= 0.0 || opts.items == 0 {
        return Err(AnnotateError::Annotators(
            "the load test needs at least 1 annotator, 1 item and a positive duration".into(),
        ));
    }
    let io = |source: std::io::Error| AnnotateError::Io { path: std::env::temp_dir(), source };
    let tmp = tempfile::tempdir().map_err(io)?;
    let examples = items(opts.items);
    let names: Vec<String> = (0..opts.annotators).map(|i| format!("sim{i:03}")).collect();
    let (store, tokens) = make_store(&tmp.path().join("http"), &examples, &names)?;
    let totals: Vec<usize> =
        names.iter().map(|n| store.progress(n).map(|p| p.total)).collect::<Result<_, _>>()?;
    let store = Arc::new(store);

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(io)?;
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).map_err(io)?;
    let addr = listener.local_addr().map_err(io)?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server =
        rt.spawn(prbench_annotate::server::serve(listener, Arc::clone(&store), async move {
            let _ = stop_rx.await;
        }));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(opts.seconds);
    let results = rt.block_on(async {
        let tasks: Vec<_> = tokens
            .iter()
            .zip(&totals)
            .map(|((name, token), total)| {
                tokio::spawn(annotator(
                    format!("http://{addr}/r/{token}"),
                    name.clone(),
                    *total,
                    deadline,
                ))
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.expect("an annotator task finishes"));
        }
        out
    });
    let wall = start.elapsed().as_secs_f64();
    let _ = stop_tx.send(());
    let _ = rt.block_on(server);
    drop(rt);
    drop(store);

    // The check, from disk.
    let reopened = Store::open(&tmp.path().join("http"))?;
    let ratings = reopened.ratings()?;
    let rows = export::rows(&ratings);
    let saved: HashMap<(String, usize), (&str, u32)> = ratings
        .iter()
        .map(|r| {
            (
                (r.annotator.clone(), r.position),
                (r.submission.answers[0].comment.as_str(), r.revision),
            )
        })
        .collect();
    let (mut checked, mut lost) = (0, 0);
    let (mut loads, mut saves, mut failed) = (Vec::new(), Vec::new(), 0);
    for ((name, _), (acks, l, s, f)) in tokens.iter().zip(results) {
        for (pos, (comment, n)) in acks {
            checked += n as usize;
            if saved.get(&(name.clone(), pos)) != Some(&(comment.as_str(), n)) {
                lost += n as usize;
            }
        }
        loads.extend(l);
        saves.extend(s);
        failed += f;
    }
    let http = SideReport {
        saves: saves.len(),
        failed_saves: failed,
        loads: loads.len(),
        wall_seconds: wall,
        saves_per_second: saves.len() as f64 / wall,
        save_latency: latency(saves),
        load_latency: latency(loads),
    };
    let reference = if opts.reference_seconds > 0.0 {
        Some(reference(tmp.path(), &examples, &names, &totals, opts.reference_seconds)?)
    } else {
        None
    };
    Ok(LoadReport {
        annotators: opts.annotators,
        items: opts.items,
        http,
        reference,
        checked,
        lost,
        export_rows: rows.len(),
    })
}

fn reference(
    dir: &std::path::Path,
    examples: &[Example],
    names: &[String],
    totals: &[usize],
    seconds: f64,
) -> Result<SideReport, AnnotateError> {
    let (store, _) = make_store(&dir.join("direct"), examples, names)?;
    let store = Arc::new(store);
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = names
        .iter()
        .zip(totals)
        .map(|(name, total)| {
            let (store, stop, name, total) =
                (Arc::clone(&store), Arc::clone(&stop), name.clone(), *total);
            std::thread::spawn(move || {
                let (mut ms, mut failed, mut k) = (Vec::new(), 0usize, 0usize);
                while !stop.load(Ordering::Relaxed) {
                    // As a simulated annotator does: load the item, then save its rating.
                    if store.item(&name, k % total + 1).ok().flatten().is_none() {
                        failed += 1;
                    }
                    let t = Instant::now();
                    match store.submit(
                        &name,
                        k % total + 1,
                        &submission(format!("{name} request {k}"), k),
                    ) {
                        Ok(Some(_)) => ms.push(t.elapsed().as_secs_f64() * 1e3),
                        _ => failed += 1,
                    }
                    k += 1;
                }
                (ms, failed)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let (mut saves, mut failed) = (Vec::new(), 0);
    for h in handles {
        let (ms, f) = h.join().expect("a reference thread finishes");
        saves.extend(ms);
        failed += f;
    }
    let wall = start.elapsed().as_secs_f64();
    Ok(SideReport {
        saves: saves.len(),
        failed_saves: failed,
        loads: 0,
        wall_seconds: wall,
        saves_per_second: saves.len() as f64 / wall,
        save_latency: latency(saves),
        load_latency: latency(Vec::new()),
    })
}

/// The report as a table: the server beside the direct-store reference, with ratios.
pub fn table(r: &LoadReport) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "annotate load test: {} simulated annotators on loopback, {} items (2 annotators each)\n",
        r.annotators, r.items
    );
    let _ = writeln!(
        o,
        "| figure | HTTP server | direct store (reference) | HTTP / direct |\n|---|---:|---:|---:|"
    );
    let refs = r.reference.as_ref();
    let ratio = |a: f64, b: Option<f64>| {
        b.filter(|b| *b > 0.0).map_or("–".to_string(), |b| format!("{:.2}", a / b))
    };
    let cell = |v: Option<String>| v.unwrap_or_else(|| "–".into());
    let _ = writeln!(
        o,
        "| saves acknowledged (in each side's own time) | {} | {} | – |",
        r.http.saves,
        cell(refs.map(|x| x.saves.to_string()))
    );
    let rows: [(&str, f64, Option<f64>, usize); 4] = [
        ("saves / s", r.http.saves_per_second, refs.map(|x| x.saves_per_second), 1),
        (
            "save latency p50 (ms)",
            r.http.save_latency.p50_ms,
            refs.map(|x| x.save_latency.p50_ms),
            2,
        ),
        (
            "save latency p99 (ms)",
            r.http.save_latency.p99_ms,
            refs.map(|x| x.save_latency.p99_ms),
            2,
        ),
        (
            "save latency max (ms)",
            r.http.save_latency.max_ms,
            refs.map(|x| x.save_latency.max_ms),
            2,
        ),
    ];
    for (name, a, b, digits) in rows {
        let _ = writeln!(
            o,
            "| {name} | {a:.digits$} | {} | {} |",
            cell(b.map(|b| format!("{b:.digits$}"))),
            ratio(a, b)
        );
    }
    let _ = writeln!(
        o,
        "| item load latency p50 / p99 (ms) | {:.2} / {:.2} | – | – |",
        r.http.load_latency.p50_ms, r.http.load_latency.p99_ms
    );
    let _ = writeln!(
        o,
        "| failed saves | {} | {} | – |",
        r.http.failed_saves,
        cell(refs.map(|x| x.failed_saves.to_string()))
    );
    let _ = writeln!(
        o,
        "| wall time (s) | {:.1} | {} | – |",
        r.http.wall_seconds,
        cell(refs.map(|x| format!("{:.1}", x.wall_seconds)))
    );
    let _ = writeln!(
        o,
        "\nAcknowledged saves checked against the store reopened from disk: {}; lost: {}; export rows: {}.",
        r.checked, r.lost, r.export_rows
    );
    o
}
