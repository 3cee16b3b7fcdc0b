//! `bench all`: the judge, scalar-RM and harness benches in one run, one table
//! (issue 7): workload, prbench, reference, ratio, peak RSS, target, the exact command of each
//! row, and the machine.
//!
//! `--short` runs each bench on a few inputs for one round (seconds; what CI runs so the
//! benches cannot rot). `bench rm` needs python3 with torch and transformers; without them its
//! rows say why they were skipped instead of failing the run.

use anyhow::Result;

use crate::child::machine;
use crate::harness::{self, HarnessOptions};
use crate::judge::{self, JudgeOptions};
use crate::rm::{self, Reference, RmOptions};

/// What `bench all` runs.
#[derive(Debug, Clone)]
pub struct AllOptions {
    /// A few inputs, one round (seconds): checks that every bench runs, measures little.
    pub short: bool,
    /// Alternating rounds of each bench.
    pub rounds: usize,
    /// Judge prompts per dataset.
    pub judge_prompts: usize,
    /// Threads, the PyTorch reference and the working folder (shared with `bench rm`).
    pub reference: Reference,
    /// The prbench version the rows name.
    pub code_version: String,
}

/// One row of the table.
pub struct Row {
    workload: String,
    prbench: String,
    reference: String,
    ratio: String,
    rss: String,
    target: String,
    command: String,
}

fn judge_args(args: &AllOptions, log: &dyn Fn(&str)) -> JudgeOptions {
    let data = if args.short { vec!["data/sample".to_string()] } else { judge::default_data(log) };
    JudgeOptions {
        models: Vec::new(),
        data,
        condition: "none".into(),
        prompts: if args.short { 2 } else { args.judge_prompts },
        gen_prompts: if args.short { 1 } else { 4 },
        max_new_tokens: if args.short { 4 } else { 64 },
        rounds: if args.short { 1 } else { args.rounds },
        threads: args.reference.threads,
        ref_ctx: None,
        work: args.reference.work.clone(),
    }
}

fn rm_args(args: &AllOptions) -> RmOptions {
    RmOptions {
        models: vec!["decoder".into(), "minilm".into()],
        batch: if args.short { 2 } else { 8 },
        seq_len: if args.short { 32 } else { 256 },
        batches: if args.short { 1 } else { 4 },
        repeats: if args.short { 1 } else { 3 },
        rounds: if args.short { 1 } else { args.rounds },
        seed: 42,
        reference: args.reference.clone(),
        embedder: None,
        code_version: args.code_version.clone(),
    }
}

fn harness_args(args: &AllOptions) -> HarnessOptions {
    HarnessOptions { scale: if args.short { 0.002 } else { 1.0 }, rounds: if args.short { 1 } else { args.rounds }, seed: 42, work: args.reference.work.clone() }
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The target cell: the verdict, or in `--short` mode a note that the workload is too small to
/// judge the target by.
fn target(short: bool, verdict: String) -> String {
    if short {
        "not assessed (--short: too small and too few rounds for the targets)".into()
    } else {
        verdict
    }
}

fn judge_rows(report: &serde_json::Value, short: bool) -> Vec<Row> {
    let cmd = report["command"].as_str().unwrap_or("").to_string();
    let mut rows = Vec::new();
    for m in report["models"].as_array().into_iter().flatten() {
        let name = m["model"].as_str().unwrap_or("");
        let (pr, rr) = (f(&m["prefill_ratio"]), f(&m["rss_ratio"]));
        rows.push(Row {
            workload: format!("judge prefill, logprob verdict, {name}: {} prompts, mean {:.0} tokens", m["prompts"], f(&m["mean_prompt_tokens"])),
            prbench: format!("{:.0} tok/s", f(&m["prefill_tok_s"][0])),
            reference: format!("{:.0} tok/s (llama.cpp)", f(&m["prefill_tok_s"][1])),
            ratio: format!("{pr:.2}×"),
            rss: format!("{:.0} / {:.0} ({rr:.2}×)", f(&m["peak_rss_mib"][0]), f(&m["peak_rss_mib"][1])),
            target: format!(
                "{}; check: max abs Δ margin {:.1e}",
                target(short, format!("prefill ≥ 0.8×: {}; RSS ≤ 1.5×: {}", if pr >= 0.8 { "met" } else { "NOT met" }, if rr <= 1.5 { "met" } else { "NOT met" })),
                f(&m["max_abs_margin_diff"])
            ),
            command: cmd.clone(),
        });
        rows.push(Row {
            workload: format!("judge generate verdict, {name}: {} prompts, ≤ {} new tokens (prefill included)", m["gen_prompts"], m["max_new_tokens"].as_u64().map_or("?".into(), |v| v.to_string())),
            prbench: format!("{:.1} tok/s", f(&m["gen_tok_s"][0])),
            reference: format!("{:.1} tok/s (llama.cpp; decode alone {:.1})", f(&m["gen_tok_s"][1]), f(&m["ref_decode_only_tok_s"])),
            ratio: format!("{:.2}×", f(&m["gen_ratio"])),
            rss: "same processes".into(),
            target: format!("(no target); check: tokens generated {} / {}", m["gen_tokens"][0], m["gen_tokens"][1]),
            command: cmd.clone(),
        });
    }
    rows
}

fn rm_rows(args: &RmOptions, short: bool, log: &dyn Fn(&str)) -> Vec<Row> {
    let cmd = rm::command_line(args);
    match rm::measure(args, log) {
        Ok(rs) => rs
            .into_iter()
            .map(|r| Row {
                workload: format!("scalar RM scoring, {} ({} × {} tokens)", r.model, args.batch, args.seq_len),
                prbench: format!("{:.0} tok/s", r.ours),
                reference: format!("{:.0} tok/s (transformers)", r.theirs),
                ratio: format!("{:.2}× ({:.2}–{:.2})", r.ratio, r.range.0, r.range.1),
                rss: "not measured".into(),
                target: format!("{}; check: max abs Δ output {:.1e}", target(short, format!("≥ 1.5×: {}", if r.ratio >= 1.5 { "met" } else { "NOT met" })), r.max_diff),
                command: cmd.clone(),
            })
            .collect(),
        Err(e) => vec![Row {
            workload: "scalar RM scoring".into(),
            prbench: "skipped".into(),
            reference: {
                // The first line says what failed; the last non-empty line of the chain why.
                let text = format!("{e:#}");
                let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
                match (lines.first(), lines.last()) {
                    (Some(a), Some(b)) if a != b => format!("skipped: {a} {b}"),
                    (Some(a), _) => format!("skipped: {a}"),
                    _ => "skipped".into(),
                }
            }
            .replace('|', "/"),
            ratio: "—".into(),
            rss: "—".into(),
            target: "≥ 1.5×: not measured".into(),
            command: cmd,
        }],
    }
}

fn harness_rows(report: &serde_json::Value, short: bool) -> Vec<Row> {
    let cmd = report["command"].as_str().unwrap_or("").to_string();
    report["workloads"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            let (wall, beyond) = (f(&w["wall_s_median"]), f(&w["peak_rss_beyond_profile_mib"]));
            let polled = w["rss_source"].as_array().is_some_and(|a| a.iter().any(|s| s.as_str() == Some("polled VmHWM")));
            Row {
                workload: format!("harness, {} rows, {:.1} MiB of profile text: {}", report["rows"], f(&report["profile_text_mib"]), w["workload"].as_str().unwrap_or("")),
                prbench: format!("{wall:.2} s"),
                reference: "(none: baseline:slot-a costs nothing)".into(),
                ratio: "—".into(),
                rss: format!(
                    "{:.0} ({beyond:.0} beyond the profile text){}",
                    f(&w["peak_rss_mib"]),
                    if polled { "; polled every 5 ms, a lower bound for so short a process" } else { "" }
                ),
                target: target(short, format!("< 2 s: {}; < 1 GB beyond data: {}", if wall < 2.0 { "met" } else { "NOT met" }, if beyond < 1024.0 { "met" } else { "NOT met" })),
                command: cmd.clone(),
            }
        })
        .collect()
}

/// Runs every bench (judge, scalar RM, harness) and returns the table's rows; `bench rm`
/// failing (no torch) gives rows that say why instead of an error.
///
/// # Errors
/// The working folder cannot be created; the judge or harness bench fails.
pub fn measure(args: &AllOptions, log: &dyn Fn(&str)) -> Result<Vec<Row>> {
    std::fs::create_dir_all(&args.reference.work)?;
    let judge = judge::measure(&judge_args(args, log), log)?;
    let mut rows = judge_rows(&judge, args.short);
    rows.extend(rm_rows(&rm_args(args), args.short, log));
    rows.extend(harness_rows(&harness::measure(&harness_args(args), log)?, args.short));
    Ok(rows)
}

/// The `bench all` table: the machine line (naming `invocation`, the command as typed), then
/// one row per workload.
pub fn table(rows: &[Row], code_version: &str, invocation: &str) -> String {
    let mut s = format!("Machine: {}. Code version {code_version}. Command: `{invocation}`.\n\n", machine());
    s += "| workload | prbench | reference | ratio | peak RSS MiB (prbench / reference) | target | command |\n|---|---|---|---|---|---|---|\n";
    for r in rows {
        s += &format!("| {} | {} | {} | {} | {} | {} | `{}` |\n", r.workload, r.prbench, r.reference, r.ratio, r.rss, r.target, r.command);
    }
    s
}
