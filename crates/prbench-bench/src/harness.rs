//! `bench harness`: the harness's own cost at full benchmark scale, with a zero-cost
//! backend.
//!
//! A synthetic benchmark the size of the real one ([`prbench_data::synthetic`]: 3 parquet
//! configs, 2,830 rows, ~100 MB of profile text, the real schema) is written once under
//! `--work`. Each round then runs, as child processes of this binary (so wall time and peak RSS
//! are each workload's own, from `wait4`):
//!
//! 1. `prbench data validate` — load + validate;
//! 2. `prbench eval --model baseline:slot-a --condition none --both-orders` — plus render every
//!    judge prompt (both orders), the leakage guard, the control baselines, the summary
//!    (bootstrap) and writing the run;
//! 3. the same under `--condition profile:10` — plus BM25 retrieval over every profile.
//!
//! Each eval runs twice per round with the run cache `<work>/harness-cache/cache.sqlite`:
//! **cold**, the cache removed first (nothing in it: the control baselines' rows are computed and
//! stored), then **warm**, right after, on the cache the cold run filled (the rows are read
//! from it; `baseline:slot-a` itself makes no cached calls). Both figures are reported; the cold
//! one is what a first `eval` of a dataset costs.
//!
//! `baseline:slot-a` answers A without looking, so what is measured is the harness. Targets:
//! `eval none` < 2 s and `eval profile:10` < 3 s wall, < 1 GB peak RSS beyond the profile text
//! itself.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use prbench_data::synthetic::{write_synthetic, SyntheticSpec};

use crate::child::{machine, median, run_measured, ChildRun};

/// What `bench harness` measures.
#[derive(Debug, Clone)]
pub struct HarnessOptions {
    /// Size as a fraction of the real benchmark, in [0.001, 1].
    pub scale: f64,
    /// Rounds of the three workloads.
    pub rounds: usize,
    /// Seed of the synthetic data and the runs.
    pub seed: u64,
    /// Folder for the synthetic data, the runs and the child logs.
    pub work: PathBuf,
}

/// The synthetic data folder for a spec, written when absent (a hidden `.synthetic.json` summary marks
/// a complete write). Returns the folder and the profile text bytes. `bench report` reads the
/// same folder.
pub(crate) fn synthetic_data(
    work: &Path,
    spec: &SyntheticSpec,
    log: &dyn Fn(&str),
) -> Result<(PathBuf, usize, usize)> {
    let dir = work.join(format!(
        "synthetic-{}rows-{}B-seed{}-v{}",
        spec.total_rows(),
        spec.profile_bytes,
        spec.seed,
        prbench_data::synthetic::GENERATOR_VERSION
    ));
    let marker = dir.join(".synthetic.json");
    if let Ok(text) = std::fs::read_to_string(&marker) {
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("reading `{}`", marker.display()))?;
        let profile = v["profile_bytes"].as_u64().context("profile_bytes")? as usize;
        let text_bytes = v["text_bytes"].as_u64().context("text_bytes")? as usize;
        return Ok((dir, profile, text_bytes));
    }
    log(&format!("bench harness: writing the synthetic benchmark to {}", dir.display()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = write_synthetic(&dir, spec)?;
    let summary = serde_json::json!({
        "rows": s.rows, "posts": s.posts, "profile_bytes": s.profile_bytes,
        "text_bytes": s.text_bytes, "file_bytes": s.file_bytes, "seed": spec.seed,
    });
    std::fs::write(&marker, serde_json::to_string_pretty(&summary)?)?;
    log(&format!(
        "bench harness: {} rows, {} posts, {:.1} MB of profile text, {:.1} MB of parquet",
        s.rows,
        s.posts,
        s.profile_bytes as f64 / 1e6,
        s.file_bytes as f64 / 1e6
    ));
    Ok((dir, s.profile_bytes, s.text_bytes))
}

/// The state of the run cache an eval workload starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CacheState {
    /// Removed before the run.
    Cold,
    /// As the cold run before it left it.
    Warm,
}

struct Workload {
    name: &'static str,
    args: Vec<String>,
    cache: Option<CacheState>,
}

fn workloads(data: &Path, runs: &Path, cache: &Path, seed: u64) -> Vec<Workload> {
    let data = data.display().to_string();
    let eval = |condition: &str| {
        let mut a: Vec<String> = [
            "eval",
            "--data",
            &data,
            "--model",
            "baseline:slot-a",
            "--condition",
            condition,
            "--both-orders",
            "--quiet",
        ]
        .map(String::from)
        .to_vec();
        a.extend(["--cache".into(), cache.display().to_string()]);
        a.extend(["--seed".into(), seed.to_string(), "--out".into(), runs.display().to_string()]);
        a
    };
    vec![
        Workload {
            name: "load + validate (`data validate`)",
            args: vec!["data".into(), "validate".into(), "--data".into(), data.clone()],
            cache: None,
        },
        Workload {
            name: "eval, `none`, both orders, cold cache",
            args: eval("none"),
            cache: Some(CacheState::Cold),
        },
        Workload {
            name: "eval, `none`, both orders, warm cache",
            args: eval("none"),
            cache: Some(CacheState::Warm),
        },
        Workload {
            name: "eval, `profile:10` (BM25), both orders, cold cache",
            args: eval("profile:10"),
            cache: Some(CacheState::Cold),
        },
        Workload {
            name: "eval, `profile:10` (BM25), both orders, warm cache",
            args: eval("profile:10"),
            cache: Some(CacheState::Warm),
        },
    ]
}

/// The command line equivalent to `args`, for tables.
pub fn command_line(args: &HarnessOptions) -> String {
    format!(
        "prbench bench harness --scale {} --rounds {} --seed {}",
        args.scale, args.rounds, args.seed
    )
}

/// Writes the synthetic data when absent, measures the three workloads and returns
/// `{machine, rows, profile_text_mib, all_text_mib, rounds, workloads: [...]}`.
///
/// # Errors
/// Writing the data, a child that fails.
pub fn measure(args: &HarnessOptions, log: &dyn Fn(&str)) -> Result<serde_json::Value> {
    std::fs::create_dir_all(&args.work)
        .with_context(|| format!("creating `{}`", args.work.display()))?;
    let spec = if args.scale == 1.0 {
        SyntheticSpec::full_scale(args.seed)
    } else {
        SyntheticSpec::scaled(args.seed, args.scale)
    };
    let (data, profile_bytes, text_bytes) = synthetic_data(&args.work, &spec, log)?;
    let exe = crate::prbench_exe()?;
    let runs = args.work.join("harness-runs");
    let logs = args.work.join("harness-logs");
    std::fs::create_dir_all(&logs)?;
    let cache_dir = args.work.join("harness-cache");
    let loads = workloads(&data, &runs, &cache_dir.join("cache.sqlite"), args.seed);
    let mut results: Vec<Vec<ChildRun>> = vec![Vec::new(); loads.len()];
    for round in 0..args.rounds {
        for (i, w) in loads.iter().enumerate() {
            let _ = std::fs::remove_dir_all(&runs);
            if w.cache == Some(CacheState::Cold) {
                // The cache file with its WAL and shared-memory files.
                let _ = std::fs::remove_dir_all(&cache_dir);
            }
            let mut cmd = Command::new(&exe);
            cmd.args(&w.args);
            if w.args[0] == "eval" {
                cmd.args(["--run-id", &format!("harness-{i}-r{round}")]);
            }
            let r = run_measured(&mut cmd, &logs.join(format!("w{i}-r{round}")))?;
            log(&format!(
                "  round {}: {}: {:.2} s, peak RSS {:.0} MiB ({})",
                round + 1,
                w.name,
                r.wall_s,
                r.peak_rss_mib,
                r.rss_source
            ));
            results[i].push(r);
        }
    }
    let profile_mib = profile_bytes as f64 / (1024.0 * 1024.0);
    let rows: Vec<serde_json::Value> = loads
        .iter()
        .zip(&results)
        .map(|(w, rs)| {
            let wall = median(rs.iter().map(|r| r.wall_s).collect());
            let rss = rs.iter().map(|r| r.peak_rss_mib).fold(0.0, f64::max);
            serde_json::json!({
                "workload": w.name,
                "wall_s_median": wall,
                "wall_s": rs.iter().map(|r| r.wall_s).collect::<Vec<_>>(),
                "peak_rss_mib": rss,
                "peak_rss_beyond_profile_mib": rss - profile_mib,
                "rss_source": rs.iter().map(|r| r.rss_source).collect::<Vec<_>>(),
                "cache": w.cache.map(|c| if c == CacheState::Cold { "cold" } else { "warm" }),
                "command": format!("prbench {}", w.args.join(" ")),
            })
        })
        .collect();
    let report = serde_json::json!({
        "machine": machine(),
        "rows": spec.total_rows(),
        "profile_text_mib": profile_mib,
        "all_text_mib": text_bytes as f64 / (1024.0 * 1024.0),
        "rounds": args.rounds,
        "workloads": rows,
        "command": command_line(args),
    });
    Ok(report)
}

/// The `bench harness` table of a [`measure`] report.
pub fn table(report: &serde_json::Value) -> String {
    let rows = report["workloads"].as_array().cloned().unwrap_or_default();
    let profile_mib = report["profile_text_mib"].as_f64().unwrap_or(f64::NAN);
    let text_mib = report["all_text_mib"].as_f64().unwrap_or(f64::NAN);
    let mut s = format!(
        "Synthetic benchmark: {} rows, {:.1} MiB of profile text ({:.1} MiB of text in all); {} rounds; {}\n",
        report["rows"],
        profile_mib,
        text_mib,
        report["rounds"],
        machine()
    );
    s += "| workload | wall s (median) | wall s (rounds) | peak RSS MiB (max) | peak RSS beyond profile text MiB |\n|---|---|---|---|---|\n";
    for r in &rows {
        s += &format!(
            "| {} | {:.2} | {} | {:.0} | {:.0} |\n",
            r["workload"].as_str().unwrap_or(""),
            r["wall_s_median"].as_f64().unwrap_or(f64::NAN),
            r["wall_s"]
                .as_array()
                .map(|a| a
                    .iter()
                    .map(|v| format!("{:.2}", v.as_f64().unwrap_or(f64::NAN)))
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default(),
            r["peak_rss_mib"].as_f64().unwrap_or(f64::NAN),
            r["peak_rss_beyond_profile_mib"].as_f64().unwrap_or(f64::NAN),
        );
    }
    s += "Commands (each a child process of this binary; --run-id harness-<workload>-r<round> added to evals; a cold eval runs after removing the cache folder, the warm one right after it):\n";
    for r in &rows {
        s += &format!("  {}\n", r["command"].as_str().unwrap_or(""));
    }
    s
}
