//! `bench all`: every bench in one run, one table: workload, prbench, reference, ratio, agreement
//! check, peak RSS, target (met / NOT met), the exact command of each row, and the machine. The
//! benches:
//!
//! - `bench judge`: the judge's single-order prefill and generate verdict vs llama.cpp;
//! - `bench judge-orders`: the judge in both orders under `profile:10`, forked vs per group vs
//!   unforked vs llama.cpp driven naively, per input set; and under `none` on the sample, where
//!   the prefix kept across groups (the judge's fixed instructions) is the largest share;
//! - `bench rm-prefix`: the scalar RM on eval's pairs and on best-of-16, shared prefix vs
//!   unshared vs transformers, per input set and condition;
//! - `bench rm --models minilm`: the MiniLM encoder vs transformers;
//! - `bench harness`: load + validate, `eval none`, `eval profile:10` at full scale;
//! - `bench generate`: prbench generating 8 sequences together vs one at a time and vs
//!   llama.cpp's server with `--parallel 8`, on `bon sample`'s and `build`'s prompts.
//!
//! `--short` runs each bench on a few inputs for one round (about a minute each; what CI runs
//! so the benches cannot rot) and grades no target. The transformers references need python3
//! with torch and transformers; without them their columns say why they were skipped instead
//! of failing the run, and the shared-vs-unshared checks still run (on the committed parity
//! fixture when the bench decoder cannot be written without torch).

use anyhow::Result;

use crate::child::machine;
use crate::generate::{self, GenerateOptions, GenerateRow, Workload};
use crate::harness::{self, HarnessOptions};
use crate::judge::orders::{self, OrdersOptions, OrdersRow};
use crate::judge::{self, JudgeOptions};
use crate::rm::{self, Reference, RmOptions};
use crate::rm_prefix::{self, PrefixOptions, PrefixReport};

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
    check: String,
    rss: String,
    target: String,
    command: String,
    /// Why this row's agreement check failed (`None`: passed or no check).
    failure: Option<String>,
}

/// The input sets of the prefix benches: the sample only under `--short`.
fn sets(short: bool) -> Vec<String> {
    if short {
        vec!["sample".into()]
    } else {
        vec!["sample".into(), "psoups".into(), "prb-synthetic".into()]
    }
}

/// `bench judge-orders` under `condition` on `sets`.
fn orders_args(args: &AllOptions, condition: &str, sets: Vec<String>) -> OrdersOptions {
    OrdersOptions {
        models: Vec::new(),
        sets,
        condition: condition.into(),
        examples: if args.short { 2 } else { (args.judge_prompts / 4).max(1) },
        max_prompt_tokens: 2048,
        rounds: if args.short { 1 } else { args.rounds },
        threads: args.reference.threads,
        work: args.reference.work.clone(),
    }
}

fn prefix_args(args: &AllOptions) -> PrefixOptions {
    PrefixOptions {
        sets: sets(args.short),
        conditions: vec!["none".into(), "profile:10".into()],
        pairs: if args.short { 2 } else { 6 },
        bon_conditions: vec!["profile:10".into()],
        bon_prompts: 1,
        bon_n: 16,
        per_call: 8,
        max_batch: 8,
        repeats: 1,
        rounds: if args.short { 1 } else { args.rounds },
        model: None,
        allow_fixture: args.short,
        reference: args.reference.clone(),
        code_version: args.code_version.clone(),
    }
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
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
        models: vec!["minilm".into()],
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
    HarnessOptions {
        scale: if args.short { 0.002 } else { 1.0 },
        rounds: if args.short { 1 } else { args.rounds },
        seed: 42,
        work: args.reference.work.clone(),
    }
}

/// The generation bench at the target's shape: 8 sequences together (4 under `--short`).
fn generate_args(args: &AllOptions) -> GenerateOptions {
    let n = if args.short { 4 } else { 8 };
    GenerateOptions {
        models: if args.short {
            vec![prbench_models::assets::default_model_path()]
        } else {
            Vec::new()
        },
        workloads: if args.short {
            vec![Workload::Bon]
        } else {
            vec![Workload::Bon, Workload::Build]
        },
        data: "data/sample".into(),
        requests: n,
        max_new_tokens: if args.short { 8 } else { 128 },
        batches: vec![n],
        parallel: vec![n],
        threads: args.reference.threads,
        server_script: "scripts/llama-server.sh".into(),
        work: args.reference.work.clone(),
    }
}

/// One row per model and workload: prbench batched against prbench one at a time and
/// llama.cpp's server with as many slots.
fn generate_rows(opts: &GenerateOptions, rows: &[GenerateRow], short: bool) -> Vec<Row> {
    let n = opts.batches[0];
    let mut out = Vec::new();
    for batched in rows.iter().filter(|r| r.side == format!("prbench, --gen-batch {n}")) {
        let same = |side: &str| {
            rows.iter().find(|r| {
                r.model == batched.model && r.workload == batched.workload && r.side == side
            })
        };
        let (Some(one), Some(server)) =
            (same(generate::ONE_WHOLE), same(&format!("llama.cpp server, --parallel {n}")))
        else {
            continue;
        };
        let vs_server = batched.tok_s / server.tok_s;
        out.push(Row {
            workload: format!(
                "generation, {} requests at once, ≤ {} new tokens, `{}` prompts, {}",
                batched.requests, opts.max_new_tokens, batched.workload, batched.model
            ),
            prbench: format!("{:.1} tok/s at --gen-batch {n} (one at a time {:.1})", batched.tok_s, one.tok_s),
            reference: format!("{:.1} tok/s (llama.cpp server, --parallel {n})", server.tok_s),
            ratio: format!("{:.2}× one at a time, {vs_server:.2}× the server", batched.vs_one_at_a_time),
            check: format!(
                "outputs ≠ one at a time: {} of {} (reported, not graded: see docs/perf.md on k-quant weights)",
                batched.differ.unwrap_or(0),
                batched.requests
            ),
            rss: format!("{:.0} / {:.0}", batched.peak_rss_mib, server.peak_rss_mib),
            target: target(
                short,
                format!(
                    "≥ 2× one at a time: {}; ≥ 1.0× the server: {}",
                    met(batched.vs_one_at_a_time >= 2.0),
                    met(vs_server >= 1.0)
                ),
            ),
            command: generate::command_line(opts),
            failure: None,
        });
    }
    out
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
            workload: format!("judge prefill, logprob verdict, one order per prompt (no prefix shared), `none`, {name}: {} prompts, mean {:.0} tokens", m["prompts"], f(&m["mean_prompt_tokens"])),
            prbench: format!("{:.0} tok/s", f(&m["prefill_tok_s"][0])),
            reference: format!("{:.0} tok/s (llama.cpp)", f(&m["prefill_tok_s"][1])),
            ratio: format!("{pr:.2}×"),
            check: format!("max abs Δ margin vs llama.cpp {:.1e}", f(&m["max_abs_margin_diff"])),
            rss: format!("{:.0} / {:.0} ({rr:.2}×)", f(&m["peak_rss_mib"][0]), f(&m["peak_rss_mib"][1])),
            target: target(short, format!("prefill ≥ 0.8×: {}; RSS ≤ 1.5×: {}", met(pr >= 0.8), met(rr <= 1.5))),
            command: cmd.clone(),
            failure: None,
        });
        rows.push(Row {
            workload: format!(
                "judge generate verdict, {name}: {} prompts, ≤ {} new tokens (prefill included)",
                m["gen_prompts"],
                m["max_new_tokens"].as_u64().map_or("?".into(), |v| v.to_string())
            ),
            prbench: format!("{:.1} tok/s", f(&m["gen_tok_s"][0])),
            reference: format!(
                "{:.1} tok/s (llama.cpp; decode alone {:.1})",
                f(&m["gen_tok_s"][1]),
                f(&m["ref_decode_only_tok_s"])
            ),
            ratio: format!("{:.2}×", f(&m["gen_ratio"])),
            check: format!("tokens generated {} / {}", m["gen_tokens"][0], m["gen_tokens"][1]),
            rss: "same processes".into(),
            target: "(no target)".into(),
            command: cmd.clone(),
            failure: None,
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
                workload: format!(
                    "embedder, {} ({} × {} random word pieces)",
                    r.model, args.batch, args.seq_len
                ),
                prbench: format!("{:.0} tok/s", r.ours),
                reference: format!("{:.0} tok/s (transformers)", r.theirs),
                ratio: format!("{:.2}× ({:.2}–{:.2})", r.ratio, r.range.0, r.range.1),
                check: format!("max abs Δ output {:.1e}", r.max_diff),
                rss: "not measured".into(),
                target: target(short, format!("≥ 1.0×: {}", met(r.ratio >= 1.0))),
                command: cmd.clone(),
                failure: None,
            })
            .collect(),
        Err(e) => vec![Row {
            workload: "embedder, minilm".into(),
            prbench: "skipped".into(),
            check: "—".into(),
            reference: crate::child::skipped_because(&e).replace('|', "/"),
            ratio: "—".into(),
            rss: "—".into(),
            target: "≥ 1.0×: not measured".into(),
            command: cmd,
            failure: None,
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
            let name = w["workload"].as_str().unwrap_or("");
            // The harness targets: `eval profile:10` under 3 s; everything else under 2 s.
            let limit = if name.contains("profile:") { 3.0 } else { 2.0 };
            let polled = w["rss_source"]
                .as_array()
                .is_some_and(|a| a.iter().any(|s| s.as_str() == Some("polled VmHWM")));
            Row {
                workload: format!(
                    "harness, {} rows, {:.1} MiB of profile text: {name}",
                    report["rows"],
                    f(&report["profile_text_mib"])
                ),
                prbench: format!("{wall:.2} s"),
                reference: "(none: baseline:slot-a costs nothing)".into(),
                ratio: "—".into(),
                check: "—".into(),
                rss: format!(
                    "{:.0} ({beyond:.0} beyond the profile text){}",
                    f(&w["peak_rss_mib"]),
                    if polled {
                        "; polled every 5 ms, a lower bound for so short a process"
                    } else {
                        ""
                    }
                ),
                target: target(
                    short,
                    format!(
                        "< {limit:.0} s: {}; < 1 GB beyond data: {}",
                        met(wall < limit),
                        met(beyond < 1024.0)
                    ),
                ),
                command: cmd.clone(),
                failure: None,
            }
        })
        .collect()
}

fn orders_rows(args: &OrdersOptions, rows: &[OrdersRow], short: bool) -> Vec<Row> {
    let cmd = orders::command_line(args);
    rows.iter()
        .map(|r| Row {
            workload: format!(
                "judge in both orders, logprob verdict, `{}`, {}, {}: {} prompts, mean {:.0} tokens, {:.0}% in shared prefixes",
                r.condition,
                r.set,
                r.model,
                r.prompts,
                r.mean_prompt_tokens,
                100.0 * r.prefix_share
            ),
            prbench: format!(
                "{:.0} tok/s forked (per group {:.0}, unforked {:.0})",
                r.tok_s[0], r.tok_s[3], r.tok_s[1]
            ),
            reference: format!("{:.0} tok/s (llama.cpp, each order's prompt decoded alone)", r.tok_s[2]),
            ratio: format!(
                "{:.2}× (vs per group {:.2}×, vs unforked {:.2}×)",
                r.ratio_vs_naive, r.ratio_vs_groups, r.ratio_vs_unforked
            ),
            check: format!(
                "forked and per group vs unforked: max abs Δ margin {:.1e} ≤ 1e-5 and {} verdicts differing: {}; max abs Δ margin vs llama.cpp {:.1e}",
                r.max_margin_diff_unforked,
                r.verdicts_differing,
                if r.agreement_met { "passed" } else { "FAILED" },
                r.max_margin_diff_naive
            ),
            rss: format!("{:.0} / {:.0}", r.peak_rss_mib[0], r.peak_rss_mib[2]),
            target: target(
                short,
                if r.condition == "none" {
                    // The kept prefix's target: the fixed prefix is the largest share here.
                    format!("≥ 1.15× per group: {}", met(r.ratio_vs_groups >= 1.15))
                } else {
                    format!("≥ 1.5× llama.cpp: {}", met(r.ratio_vs_naive >= 1.5))
                },
            ),
            command: cmd.clone(),
            failure: r.failed_check(),
        })
        .collect()
}

fn prefix_rows(report: &PrefixReport, short: bool) -> Vec<Row> {
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "—".to_string(), f);
    report
        .rows
        .iter()
        .map(|r| {
            let what = if r.kind == "pairs" { format!("{} chosen/rejected pairs", r.groups) } else { format!("{} prompts × {} answers (best-of-N)", r.groups, r.items / r.groups.max(1)) };
            let goal = rm_prefix::target(r);
            Row {
                workload: format!(
                    "scalar RM, {what}, `{}`, {}: mean {:.0} tokens, {:.0}% in common prefixes, {:.0}% reused (model `{}`)",
                    r.condition,
                    r.set,
                    r.mean_tokens,
                    100.0 * r.prefix_share,
                    100.0 * r.reused_share,
                    report.model
                ),
                prbench: format!("{} shared (unshared {})", opt(r.tok_s[0], &|v| format!("{v:.0} tok/s")), opt(r.tok_s[1], &|v| format!("{v:.0} tok/s"))),
                reference: if report.reference_ran { format!("{} (transformers)", opt(r.tok_s[2], &|v| format!("{v:.0} tok/s"))) } else { report.reference.replace('|', "/") },
                ratio: format!("{} (vs unshared {:.2}×)", opt(r.ratio_vs_transformers, &|v| format!("{v:.2}×")), r.ratio_vs_unshared),
                check: format!(
                    "shared vs unshared: max abs Δ score {:.1e} ≤ 1e-5: {}; max abs Δ vs transformers {}",
                    r.max_diff_shared_unshared,
                    if r.agreement_met { "passed" } else { "FAILED" },
                    opt(r.max_diff_transformers, &|v| format!("{v:.1e}"))
                ),
                rss: "not measured".into(),
                target: match (goal, r.ratio_vs_transformers) {
                    (None, _) => "(no target)".into(),
                    (Some(g), _) if short => target(short, format!("≥ {g}×")),
                    (Some(g), Some(x)) => format!("≥ {g}× transformers: {}", met(x >= g)),
                    (Some(g), None) => format!("≥ {g}× transformers: not measured"),
                },
                command: report.command.clone(),
                failure: r.failed_check(),
            }
        })
        .collect()
}

/// Runs every bench (see the module docs) and returns the table's rows; a transformers
/// reference failing (no torch) gives cells that say why instead of an error.
///
/// # Errors
/// The working folder cannot be created; the judge or harness bench fails.
pub fn measure(args: &AllOptions, log: &dyn Fn(&str)) -> Result<Vec<Row>> {
    std::fs::create_dir_all(&args.reference.work)?;
    let judge = judge::measure(&judge_args(args, log), log)?;
    let mut rows = judge_rows(&judge, args.short);
    for oa in [
        orders_args(args, "profile:10", sets(args.short)),
        orders_args(args, "none", vec!["sample".into()]),
    ] {
        rows.extend(orders_rows(&oa, &orders::measure(&oa, log)?, args.short));
    }
    rows.extend(prefix_rows(&rm_prefix::measure(&prefix_args(args), log)?, args.short));
    rows.extend(rm_rows(&rm_args(args), args.short, log));
    rows.extend(harness_rows(&harness::measure(&harness_args(args), log)?, args.short));
    let ga = generate_args(args);
    rows.extend(generate_rows(&ga, &generate::measure(&ga, log)?, args.short));
    Ok(rows)
}

/// The agreement checks that failed, one line per row (empty when all passed): a bench whose
/// fast path disagrees with its exact one is a bug, and `prbench bench all` exits non-zero.
pub fn failed_checks(rows: &[Row]) -> Vec<String> {
    rows.iter().filter_map(|r| r.failure.clone()).collect()
}

/// The `bench all` table: the machine line (naming `invocation`, the command as typed), then
/// one row per workload.
pub fn table(rows: &[Row], code_version: &str, invocation: &str) -> String {
    let mut s = format!(
        "Machine: {}. Code version {code_version}. Command: `{invocation}`.\n\n",
        machine()
    );
    s += "| workload | prbench | reference | ratio | agreement check | peak RSS MiB (prbench / reference) | target | command |\n|---|---|---|---|---|---|---|---|\n";
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | `{}` |\n",
            r.workload, r.prbench, r.reference, r.ratio, r.check, r.rss, r.target, r.command
        );
    }
    s
}
