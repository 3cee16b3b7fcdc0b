//! `prbench bench report`: how large the HTML report of a full-scale benchmark is and how long
//! it takes to write and to open in Chromium (issue 17).
//!
//! The synthetic benchmark of `bench harness` (2,830 rows, the real schema) is evaluated by
//! three control baselines run as models (`baseline:slot-a` as a judge in both orders,
//! `baseline:longer`, `baseline:shorter`) under four conditions (`none`, `profile:3`,
//! `profile:10`, `oracle`), as child processes of this binary; the report of the twelve runs is
//! then rendered and opened in headless Chromium. Measured: render time, file size, time to the
//! load event, time until the page's script has built the item browser, and the time of one
//! filter (result = wrong over every outcome), in the page.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use prbench_data::synthetic::{write_synthetic, SyntheticSpec};

use crate::cli::BenchReportArgs;

const MODELS: [&str; 3] = ["baseline:slot-a", "baseline:longer", "baseline:shorter"];
const CONDITIONS: &str = "none,profile:3,profile:10,oracle";

fn eval_runs(exe: &Path, data: &Path, runs: &Path, seed: u64) -> Result<()> {
    for (i, m) in MODELS.iter().enumerate() {
        let id = format!("report-bench-{i}");
        if runs.join(format!("{id}-matrix.json")).is_file() {
            continue;
        }
        eprintln!("bench report: eval {m} under {CONDITIONS}");
        let status = Command::new(exe)
            .args(["eval", "--data"])
            .arg(data)
            .args(["--model", m, "--condition", CONDITIONS, "--both-orders", "--no-cache", "--quiet", "--no-report", "--seed", &seed.to_string(), "--run-id", &id, "--out"])
            .arg(runs)
            .stdout(std::process::Stdio::null())
            .status()
            .with_context(|| format!("running eval for {m}"))?;
        if !status.success() {
            anyhow::bail!("bench report: eval of {m} failed ({status})");
        }
    }
    Ok(())
}

/// Runs `prbench bench report`.
pub fn run(args: BenchReportArgs) -> Result<()> {
    std::fs::create_dir_all(&args.work).with_context(|| format!("creating `{}`", args.work.display()))?;
    let spec = if args.scale == 1.0 { SyntheticSpec::full_scale(args.seed) } else { SyntheticSpec::scaled(args.seed, args.scale) };
    let data = args.work.join(format!("report-synthetic-{}rows-seed{}", spec.total_rows(), spec.seed));
    if !data.join(".complete").is_file() {
        let _ = std::fs::remove_dir_all(&data);
        eprintln!("bench report: writing the synthetic benchmark to {}", data.display());
        write_synthetic(&data, &spec)?;
        std::fs::write(data.join(".complete"), "")?;
    }
    let runs = args.work.join(format!("report-runs-{}rows-seed{}", spec.total_rows(), spec.seed));
    let exe = std::env::current_exe().context("locating the prbench binary")?;
    eval_runs(&exe, &data, &runs, args.seed)?;
    let start = Instant::now();
    let sources = prbench_report::sources::load(&[runs.clone()])?;
    let read_s = start.elapsed().as_secs_f64();
    let opts = prbench_report::html::ReportOptions { data: None, title: Some("bench report".into()), generator: format!("prbench {}", crate::code_version()) };
    let start = Instant::now();
    let html = prbench_report::html::render(&sources, &opts)?;
    let render_s = start.elapsed().as_secs_f64();
    let out = args.work.join("bench-report.html");
    std::fs::write(&out, &html)?;
    let outcomes: usize = sources.runs.iter().map(|r| r.outcomes.len()).sum();
    let browser = prbench_browser::Browser::launch()?;
    let url = format!("file://{}", std::fs::canonicalize(&out)?.display());
    let mut opened = Vec::new();
    for round in 0..args.rounds {
        let page = browser.open(&url)?;
        let load_ms = page.load_ms();
        let t = Instant::now();
        page.wait_for("body[data-ready='1']", Duration::from_secs(120))?;
        let ready_ms = load_ms + t.elapsed().as_secs_f64() * 1000.0;
        let filter_ms = page
            .eval("(() => { const s = document.getElementById('f-result'); const t0 = performance.now(); s.value = 'wrong'; s.dispatchEvent(new Event('change')); return performance.now() - t0; })()")?
            .as_f64()
            .unwrap_or(f64::NAN);
        let requests = page.requests().len();
        eprintln!("  round {}: load {load_ms:.0} ms, ready {ready_ms:.0} ms, filter {filter_ms:.0} ms, {requests} request(s)", round + 1);
        opened.push((load_ms, ready_ms, filter_ms, requests));
    }
    let med = |f: fn(&(f64, f64, f64, usize)) -> f64| crate::commands::bench_child::median(opened.iter().map(f).collect());
    let report = serde_json::json!({
        "rows": spec.total_rows(), "runs": sources.runs.len(), "outcomes": outcomes,
        "file_bytes": html.len(), "read_s": read_s, "render_s": render_s,
        "load_ms_median": med(|r| r.0), "ready_ms_median": med(|r| r.1), "filter_ms_median": med(|r| r.2),
        "requests": opened.iter().map(|r| r.3).max().unwrap_or(0),
        "browser": browser.version(), "machine": crate::commands::bench_child::machine(), "rounds": args.rounds,
        "file": out.display().to_string(),
    });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!(
        "HTML report of {} runs ({} models × 4 conditions) on a synthetic {}-row benchmark: {} outcomes; {}; {}; {} rounds",
        sources.runs.len(),
        MODELS.len(),
        spec.total_rows(),
        outcomes,
        browser.version(),
        crate::commands::bench_child::machine(),
        args.rounds
    );
    println!("| measure | value |\n|---|---:|");
    println!("| file size | {:.1} MB |", html.len() as f64 / 1e6);
    println!("| read run folders | {read_s:.2} s |");
    println!("| render HTML | {render_s:.2} s |");
    println!("| open: load event (median) | {:.0} ms |", report["load_ms_median"].as_f64().unwrap_or(f64::NAN));
    println!("| open: item browser ready (median) | {:.0} ms |", report["ready_ms_median"].as_f64().unwrap_or(f64::NAN));
    println!("| filter result = wrong over all outcomes (median) | {:.0} ms |", report["filter_ms_median"].as_f64().unwrap_or(f64::NAN));
    println!("| network requests besides the file itself | {} |", report["requests"].as_u64().unwrap_or(0).saturating_sub(1));
    println!("Report: {}", out.display());
    Ok(())
}
