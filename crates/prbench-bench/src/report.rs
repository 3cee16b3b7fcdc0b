//! `prbench bench report`: how large the HTML report of a full-scale benchmark is and how long
//! it takes to write and to open in Chromium.
//!
//! The synthetic benchmark of [`crate::harness`] (2,830 rows, the real schema) is evaluated by
//! three control baselines run as models (`baseline:slot-a` as a judge in both orders,
//! `baseline:longer`, `baseline:shorter`) under four conditions (`none`, `profile:3`,
//! `profile:10`, `oracle`), as child processes of the `prbench` binary; the report of the twelve
//! runs is then rendered and opened in headless Chromium ([`prbench_browser`]). Measured: read
//! and render time, file size, time to the load event, time until the page's script has built
//! the item browser, and the time of one filter (result = wrong over every outcome), in the
//! page. These are benchmark figures, not timed tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use prbench_data::synthetic::SyntheticSpec;

use crate::child::{machine, median};

/// The models evaluated, each under [`CONDITIONS`].
pub const MODELS: [&str; 3] = ["baseline:slot-a", "baseline:longer", "baseline:shorter"];
/// The conditions of every model.
pub const CONDITIONS: &str = "none,profile:3,profile:10,oracle";

/// Options of [`measure`].
#[derive(Debug, Clone)]
pub struct ReportBenchOptions {
    /// Size as a fraction of the real benchmark, in [0.001, 1].
    pub scale: f64,
    /// Times the report is opened (the table gives medians).
    pub rounds: usize,
    /// Seed of the synthetic data and the runs.
    pub seed: u64,
    /// Folder for the synthetic data, the runs and the report.
    pub work: PathBuf,
    /// The `prbench` binary that runs the evaluations.
    pub exe: PathBuf,
    /// Written into the page's footer.
    pub generator: String,
}

fn eval_runs(exe: &Path, data: &Path, runs: &Path, seed: u64, log: &dyn Fn(&str)) -> Result<()> {
    for (i, m) in MODELS.iter().enumerate() {
        let id = format!("report-bench-{i}");
        if runs.join(format!("{id}-matrix.json")).is_file() {
            continue;
        }
        log(&format!("bench report: eval {m} under {CONDITIONS}"));
        let mut cmd = Command::new(exe);
        cmd.args(["eval", "--data"])
            .arg(data)
            .args([
                "--model",
                m,
                "--condition",
                CONDITIONS,
                "--no-cache",
                "--quiet",
                "--no-report",
                "--seed",
                &seed.to_string(),
                "--run-id",
                &id,
                "--out",
            ])
            .arg(runs);
        // The judge is judged in both orders (two verdicts per item); the pointwise baselines
        // score each answer once.
        if *m == "baseline:slot-a" {
            cmd.arg("--both-orders");
        }
        let status = cmd
            .stdout(std::process::Stdio::null())
            .status()
            .with_context(|| format!("running eval for {m}"))?;
        if !status.success() {
            anyhow::bail!("bench report: eval of {m} failed ({status})");
        }
    }
    Ok(())
}

/// Writes the data and runs when absent, renders the report and opens it `rounds` times.
/// Returns `{rows, runs, outcomes, file_bytes, read_s, render_s, load_ms_median,
/// ready_ms_median, filter_ms_median, requests, browser, machine, rounds, file}`.
///
/// # Errors
/// Writing the data, an eval child that fails, rendering, or Chromium missing or failing.
pub fn measure(opts: &ReportBenchOptions, log: &dyn Fn(&str)) -> Result<serde_json::Value> {
    std::fs::create_dir_all(&opts.work)
        .with_context(|| format!("creating `{}`", opts.work.display()))?;
    let spec = if opts.scale == 1.0 {
        SyntheticSpec::full_scale(opts.seed)
    } else {
        SyntheticSpec::scaled(opts.seed, opts.scale)
    };
    let (data, _, _) = crate::harness::synthetic_data(&opts.work, &spec, log)?;
    let runs = opts.work.join(format!(
        "report-runs-{}rows-{}B-seed{}",
        spec.total_rows(),
        spec.profile_bytes,
        spec.seed
    ));
    eval_runs(&opts.exe, &data, &runs, opts.seed, log)?;
    let start = Instant::now();
    let sources = prbench_report::sources::load(std::slice::from_ref(&runs))?;
    let read_s = start.elapsed().as_secs_f64();
    let ropts = prbench_report::html::ReportOptions {
        data: Vec::new(),
        title: Some("bench report".into()),
        generator: opts.generator.clone(),
        study: Vec::new(),
    };
    let start = Instant::now();
    let html = prbench_report::html::render(&sources, &ropts)?;
    let render_s = start.elapsed().as_secs_f64();
    let out = opts.work.join("bench-report.html");
    std::fs::write(&out, &html)?;
    let outcomes: usize = sources.runs.iter().map(|r| r.outcomes.len()).sum();
    let browser = prbench_browser::Browser::launch()?;
    let url = format!("file://{}", std::fs::canonicalize(&out)?.display());
    let mut opened: Vec<[f64; 4]> = Vec::new();
    for round in 0..opts.rounds {
        let page = browser.open(&url)?;
        let load_ms = page.load_ms();
        let t = Instant::now();
        page.wait_for("body[data-ready='1']", Duration::from_secs(120))?;
        let ready_ms = load_ms + t.elapsed().as_secs_f64() * 1000.0;
        let filter_ms = page
            .eval("(() => { const s = document.getElementById('f-result'); const t0 = performance.now(); s.value = 'wrong'; s.dispatchEvent(new Event('change')); return performance.now() - t0; })()")?
            .as_f64()
            .unwrap_or(f64::NAN);
        let requests = page.requests().len() as f64;
        log(&format!("  round {}: load {load_ms:.0} ms, ready {ready_ms:.0} ms, filter {filter_ms:.0} ms, {requests} request(s)", round + 1));
        opened.push([load_ms, ready_ms, filter_ms, requests]);
    }
    let med = |i: usize| median(opened.iter().map(|r| r[i]).collect());
    Ok(serde_json::json!({
        "rows": spec.total_rows(), "runs": sources.runs.len(), "models": MODELS.len(), "outcomes": outcomes,
        "file_bytes": html.len(), "read_s": read_s, "render_s": render_s,
        "load_ms_median": med(0), "ready_ms_median": med(1), "filter_ms_median": med(2),
        "requests": opened.iter().map(|r| r[3] as u64).max().unwrap_or(0),
        "browser": browser.version(), "machine": machine(), "rounds": opts.rounds,
        "file": out.display().to_string(),
    }))
}

/// The table `prbench bench report` prints.
pub fn table(r: &serde_json::Value) -> String {
    let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    let mut s = format!(
        "HTML report of {} runs ({} models × 4 conditions) on a synthetic {}-row benchmark: {} outcomes; {}; {}; {} rounds\n",
        r["runs"], r["models"], r["rows"], r["outcomes"], r["browser"].as_str().unwrap_or(""), r["machine"].as_str().unwrap_or(""), r["rounds"]
    );
    s.push_str("| measure | value |\n|---|---:|\n");
    s.push_str(&format!("| file size | {:.1} MB |\n", f("file_bytes") / 1e6));
    s.push_str(&format!("| read run folders | {:.2} s |\n", f("read_s")));
    s.push_str(&format!("| render HTML | {:.2} s |\n", f("render_s")));
    s.push_str(&format!("| open: load event (median) | {:.0} ms |\n", f("load_ms_median")));
    s.push_str(&format!(
        "| open: item browser ready (median) | {:.0} ms |\n",
        f("ready_ms_median")
    ));
    s.push_str(&format!(
        "| filter result = wrong over all outcomes (median) | {:.0} ms |\n",
        f("filter_ms_median")
    ));
    s.push_str(&format!(
        "| network requests besides the file itself | {} |\n",
        r["requests"].as_u64().unwrap_or(0).saturating_sub(1)
    ));
    s.push_str(&format!("Report: {}\n", r["file"].as_str().unwrap_or("")));
    s
}
