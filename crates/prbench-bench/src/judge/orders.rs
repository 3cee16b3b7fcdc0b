//! `bench judge-orders`: the logprob judge in both orders, three ways, each a child process per
//! round, on the same GGUF and the same prompts:
//!
//! - **prbench forked**: `LogprobJudge` on `GgufEngine` with the shared prefix on (the
//!   default): the two orders of a pair share the system prompt, context and question, decoded
//!   once, each order's suffix decoded after it; and each group of prompts continues from the
//!   prefix the group before left in the cache (`GgufEngine::keep_prefix`, the default), so
//!   the judge's fixed system prompt and instructions are decoded once per run;
//! - **prbench per group**: the same with `GgufEngine::set_keep_prefix(false)`: each group of
//!   prompts from a cleared cache (how prbench decoded before the kept prefix);
//! - **prbench unforked**: the same with `GgufEngine::set_share_prefix(false)`: each prompt
//!   decoded alone;
//! - **llama.cpp naive**: llama.cpp driven directly (`llama-cpp-2`, the same build), each
//!   order's full prompt decoded from a cleared cache, as a plain llama.cpp loop would.
//!
//! Prompts: eval's `--both-orders` judge requests ([`crate::inputs`]): per example, chosen in
//! slot A then in slot B, rendered under `--condition` (default `profile:10`, BM25-ranked
//! posts fitted to `--max-prompt-tokens` as eval fits them to a judge's window), all handed to
//! one `judge` call. tokens/s
//! counts every prompt token of both orders, shared or not. Checks: forked margins within
//! [`MARGIN_TOLERANCE`] of unforked, identical verdicts (sign of the margin), and the largest
//! margin difference to llama.cpp. Each prbench side warms up on the first prompt alone,
//! which leaves nothing in the cache for the timed call to keep.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use prbench_models::judge::LogprobJudge;
use prbench_models::Judge;
use serde::Serialize;

use super::{
    load_engine, models_or_default, prefill_ids, run_worker, slot_ids, WorkerInput, WorkerOutput,
};
use crate::child::median;
use crate::inputs;

/// Largest |forked − unforked| verdict margin (nats) the agreement check accepts.
pub const MARGIN_TOLERANCE: f64 = 1e-5;

/// The four sides, in the order of the report's arrays.
const SIDES: [&str; 4] = ["prbench-forked", "prbench-unforked", "llama.cpp", "prbench-groups"];

/// What `bench judge-orders` measures and with what.
#[derive(Debug, Clone)]
pub struct OrdersOptions {
    /// GGUF files (empty: as `bench judge`).
    pub models: Vec<PathBuf>,
    /// Input sets ([`inputs::input_sets`]).
    pub sets: Vec<String>,
    /// Condition the prompts are rendered under (`none` or `profile:k`).
    pub condition: String,
    /// Examples per input set (each judged in both orders).
    pub examples: usize,
    /// The judge's window for this bench, in prompt tokens: under `profile:k` the posts shown
    /// are fitted to it as eval fits them to a judge's window (2,048 keeps PRB-length synthetic
    /// contexts near the benchmark's ~1,500 tokens).
    pub max_prompt_tokens: usize,
    /// Rounds; the side that goes first rotates.
    pub rounds: usize,
    /// CPU threads of every side.
    pub threads: usize,
    /// Folder for worker inputs, logs and the synthetic data.
    pub work: PathBuf,
}

/// One (model, input set) row.
#[derive(Debug, Clone, Serialize)]
pub struct OrdersRow {
    /// GGUF file name.
    pub model: String,
    /// Input set.
    pub set: String,
    /// Condition.
    pub condition: String,
    /// Prompts judged (2 per example).
    pub prompts: usize,
    /// Mean tokens per prompt (`Result:` included).
    pub mean_prompt_tokens: f64,
    /// Prompt tokens the forked side did not decode (the shared prefixes), over all tokens.
    pub prefix_share: f64,
    /// Prompt tokens the per-group side did not decode, over all tokens.
    pub group_share: f64,
    /// Prompt tokens/s, medians over rounds: forked, unforked, llama.cpp naive, per group.
    pub tok_s: [f64; 4],
    /// Median over rounds of forked / llama.cpp naive.
    pub ratio_vs_naive: f64,
    /// Median over rounds of forked / unforked.
    pub ratio_vs_unforked: f64,
    /// Median over rounds of forked / per group (what the kept prefix adds).
    pub ratio_vs_groups: f64,
    /// Peak RSS of each side, MiB (the largest over rounds), in [`Self::tok_s`]'s order.
    pub peak_rss_mib: [f64; 4],
    /// max |forked − unforked| and |per group − unforked| margin.
    pub max_margin_diff_unforked: f64,
    /// Verdicts (sign of the margin) that differ between forked or per group and unforked.
    pub verdicts_differing: usize,
    /// max |forked − llama.cpp naive| margin.
    pub max_margin_diff_naive: f64,
    /// Margins within [`MARGIN_TOLERANCE`] and no verdict differing.
    pub agreement_met: bool,
}

/// The command line equivalent to `args`, for tables.
pub fn command_line(args: &OrdersOptions) -> String {
    let mut c = format!(
        "prbench bench judge-orders --sets {} --condition {} --examples {} --max-prompt-tokens {} --rounds {} --threads {}",
        args.sets.join(","),
        args.condition,
        args.examples,
        args.max_prompt_tokens,
        args.rounds,
        args.threads
    );
    if !args.models.is_empty() {
        c.push_str(&format!(
            " --models {}",
            args.models.iter().map(|m| m.display().to_string()).collect::<Vec<_>>().join(",")
        ));
    }
    c
}

fn sign(m: f64) -> i8 {
    if m > 0.0 {
        1
    } else if m < 0.0 {
        -1
    } else {
        0
    }
}

impl OrdersRow {
    /// Why this row's agreement check failed (forked or per-group margins more than 1e-5 from
    /// the unforked ones, or a verdict differing), or `None` when it passed.
    pub fn failed_check(&self) -> Option<String> {
        (!self.agreement_met).then(|| {
            format!(
                "judge in both orders, {}, {}, `{}`: forked and per group vs unforked max |Δ margin| {:.1e} (tolerance 1e-5), {} verdicts differing",
                self.model, self.set, self.condition, self.max_margin_diff_unforked, self.verdicts_differing
            )
        })
    }
}

/// Every row's failed agreement check ([`OrdersRow::failed_check`]); empty when all passed.
pub fn failed_checks(rows: &[OrdersRow]) -> Vec<String> {
    rows.iter().filter_map(OrdersRow::failed_check).collect()
}

/// Measures every (model, input set) (see the module docs).
///
/// # Errors
/// Inputs, model loading, a failing worker, sides that disagree on the tokens they decoded.
pub fn measure(args: &OrdersOptions, log: &dyn Fn(&str)) -> Result<Vec<OrdersRow>> {
    std::fs::create_dir_all(&args.work)
        .with_context(|| format!("creating `{}`", args.work.display()))?;
    let sets = inputs::input_sets(&args.sets, &args.work, log)?;
    let exe = crate::prbench_exe()?;
    let logs = args.work.join("judge-orders-logs");
    std::fs::create_dir_all(&logs)?;
    let mut rows = Vec::new();
    for model in models_or_default(&args.models, log) {
        let name = model
            .file_name()
            .map_or_else(|| model.display().to_string(), |n| n.to_string_lossy().into_owned());
        for set in &sets {
            let (engine, chat_template) = load_engine(&model)?;
            let judge = LogprobJudge::new(&engine);
            // Over the bench's window by the prompt the verdict is read after, or over the
            // engine's own window (whichever says more).
            let overflow = |r: &prbench_models::JudgeRequest| -> Result<Option<usize>, prbench_models::ModelError> {
                let own = judge.input_overflow(r)?.unwrap_or(0);
                let tokens = prefill_ids(&engine, std::slice::from_ref(r)).map_err(|e| prbench_models::ModelError::engine("rendering and tokenizing the judge prompt", e))?[0].len();
                Ok(Some(own.max(tokens.saturating_sub(args.max_prompt_tokens))))
            };
            let rendered = inputs::prepare(set, &args.condition, args.examples)?;
            let mut requests = Vec::new();
            for ex in &rendered.examples {
                requests.extend(rendered.judge_requests(ex, &overflow)?);
            }
            let ids = prefill_ids(&engine, &requests)?;
            let longest = ids.iter().map(Vec::len).max().unwrap_or(0);
            if longest > args.max_prompt_tokens {
                bail!(
                    "{name}, {}, `{}`: a prompt is {longest} tokens after dropping the profile posts that do not fit, over --max-prompt-tokens {}: raise it to at least {longest}",
                    set.name,
                    args.condition,
                    args.max_prompt_tokens
                );
            }
            let input = WorkerInput {
                requests,
                prefill_ids: ids,
                gen_ids: Vec::new(),
                slot_ids: slot_ids(&engine, &name)?,
                gen_prompts: 0,
                max_new_tokens: 0,
                threads: args.threads as i32,
                ref_ctx: (longest + 1) as u32,
                chat_template,
                share_prefix: None,
            };
            drop(judge);
            drop(engine);
            let tag = format!("{name}-{}", set.name);
            let input_path = args.work.join(format!("judge-orders-input-{tag}.json"));
            std::fs::write(&input_path, serde_json::to_string(&input)?)?;
            let mut runs: [Vec<WorkerOutput>; 4] = Default::default();
            for round in 0..args.rounds {
                for j in 0..SIDES.len() {
                    let k = (round + j) % SIDES.len();
                    let (out, _) = run_worker(
                        &exe,
                        SIDES[k],
                        &model,
                        &input_path,
                        &logs.join(format!("{tag}-{}-r{round}", SIDES[k])),
                    )?;
                    log(&format!(
                        "  {tag} round {}: {}: {:.0} tok/s, peak RSS {:.0} MiB",
                        round + 1,
                        SIDES[k],
                        out.prefill_tokens as f64 / out.prefill_s,
                        out.vm_hwm_mib
                    ));
                    runs[k].push(out);
                }
            }
            let [f, u, n, g] = [&runs[0][0], &runs[1][0], &runs[2][0], &runs[3][0]];
            if [f, u, g].iter().any(|w| w.prefill_tokens != n.prefill_tokens) {
                bail!(
                    "{tag}: the sides decoded {} / {} / {} / {} prompt tokens",
                    f.prefill_tokens,
                    u.prefill_tokens,
                    n.prefill_tokens,
                    g.prefill_tokens
                );
            }
            let diff = |a: &[f64], b: &[f64]| {
                a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
            };
            let tps = |w: &WorkerOutput| w.prefill_tokens as f64 / w.prefill_s;
            let ratio = |a: usize, b: usize| {
                median(runs[a].iter().zip(&runs[b]).map(|(x, y)| tps(x) / tps(y)).collect())
            };
            let max_unforked = diff(&f.margins, &u.margins).max(diff(&g.margins, &u.margins));
            let differs = |x: &WorkerOutput| {
                x.margins.iter().zip(&u.margins).filter(|(a, b)| sign(**a) != sign(**b)).count()
            };
            let differing = differs(f) + differs(g);
            let share = |w: &WorkerOutput| {
                w.shared_prefix_tokens.unwrap_or(0) as f64 / w.prefill_tokens.max(1) as f64
            };
            rows.push(OrdersRow {
                model: name.clone(),
                set: set.name.clone(),
                condition: args.condition.clone(),
                prompts: f.margins.len(),
                mean_prompt_tokens: f.prefill_tokens as f64 / f.margins.len().max(1) as f64,
                prefix_share: share(f),
                group_share: share(g),
                tok_s: [0, 1, 2, 3].map(|k| median(runs[k].iter().map(tps).collect())),
                ratio_vs_naive: ratio(0, 2),
                ratio_vs_unforked: ratio(0, 1),
                ratio_vs_groups: ratio(0, 3),
                peak_rss_mib: [0, 1, 2, 3]
                    .map(|k| runs[k].iter().map(|w| w.vm_hwm_mib).fold(0.0, f64::max)),
                max_margin_diff_unforked: max_unforked,
                verdicts_differing: differing,
                max_margin_diff_naive: diff(&f.margins, &n.margins),
                agreement_met: max_unforked <= MARGIN_TOLERANCE && differing == 0,
            });
        }
    }
    if rows.is_empty() {
        bail!("no workloads: every input set was skipped (see the lines above)");
    }
    Ok(rows)
}

/// The `bench judge-orders` table.
pub fn table(args: &OrdersOptions, rows: &[OrdersRow]) -> String {
    let mut s =
        format!("Judge in both orders: {}; `{}`\n\n", crate::child::machine(), command_line(args));
    s += "| model | set | condition | prompts | tokens/prompt | prefix share (per group) | forked tok/s | per group tok/s | unforked tok/s | llama.cpp naive tok/s | forked / naive | forked / per group | forked / unforked | peak RSS MiB (forked / per group / unforked / naive) | max Δ margin vs unforked | verdicts differing | max Δ margin vs naive |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {} | {:.0} | {:.0}% ({:.0}%) | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}× | {:.2}× | {:.2}× | {:.0} / {:.0} / {:.0} / {:.0} | {:.1e} | {} | {:.1e} |\n",
            r.model,
            r.set,
            r.condition,
            r.prompts,
            r.mean_prompt_tokens,
            100.0 * r.prefix_share,
            100.0 * r.group_share,
            r.tok_s[0],
            r.tok_s[3],
            r.tok_s[1],
            r.tok_s[2],
            r.ratio_vs_naive,
            r.ratio_vs_groups,
            r.ratio_vs_unforked,
            r.peak_rss_mib[0],
            r.peak_rss_mib[3],
            r.peak_rss_mib[1],
            r.peak_rss_mib[2],
            r.max_margin_diff_unforked,
            r.verdicts_differing,
            r.max_margin_diff_naive,
        );
    }
    s
}
