//! `bench rm-prefix`: the scalar reward model on the inputs eval and best-of-N really send it,
//! three ways side by side in one run:
//!
//! - **prbench shared**: [`SeqClsRewardModel`] as eval loads it, with shared-prefix scoring on
//!   (`SeqClsOptions::shared_prefix`, the default): a call's items that share a token prefix
//!   run it once;
//! - **prbench unshared**: the same model with it off: every item whole, sorted by length and
//!   batched `--max-batch` at a time;
//! - **transformers** (`tools/bench_rm.py run-batches`): the same token ids in exactly the
//!   unshared path's batches, right-padded and masked, as transformers computes a batch.
//!
//! Workloads, per input set ([`crate::inputs`]) and condition:
//! - **pairs**: each example's chosen and rejected answers after the same context and
//!   question, `--per-call` examples per `score` call (eval's batch);
//! - **best-of-N**: `--bon-n` different answers (the chosen and rejected texts of the set's
//!   other examples) after one example's prompt, one `score` call per prompt (`bon score`).
//!
//! Token counts are every input token of every item, shared or not, so the three tok/s figures
//! are comparable. Each side scores the workload's first two items once to warm up, then
//! `--repeats` timed passes; `--rounds` rounds alternate which prbench path goes first, and
//! transformers runs all workloads once per round in its own process. The checks: shared and
//! unshared scores within [`SHARED_TOLERANCE`], and the largest difference to transformers.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use prbench_models::{RewardModel, RmRequest};
use prbench_rm::batch::by_length;
use prbench_rm::embed::default_embedder_dir;
use prbench_rm::reward::{SeqClsOptions, SeqClsRewardModel};
use serde::Serialize;

use crate::child::median;
use crate::inputs::{self, InputSet};
use crate::rm::{python, Reference};

/// Largest |shared − unshared| score difference the agreement check accepts.
pub const SHARED_TOLERANCE: f64 = 1e-5;

/// The committed parity fixture scored when the bench decoder cannot be written (no torch):
/// a 2-layer Qwen2 classifier with its own tokenizer and chat template (relative to the
/// repository root).
pub const FIXTURE_MODEL: &str = "crates/prbench-rm/tests/fixtures/seqcls/qwen2-f32";

/// What `bench rm-prefix` measures and with what.
#[derive(Debug, Clone)]
pub struct PrefixOptions {
    /// Input sets: `sample`, `psoups`, `prb-synthetic` ([`inputs::input_sets`]).
    pub sets: Vec<String>,
    /// Conditions of the pair workloads (`none`, `profile:k`).
    pub conditions: Vec<String>,
    /// Examples per input set in the pair workloads (each: chosen and rejected).
    pub pairs: usize,
    /// Conditions of the best-of-N workloads (empty: none).
    pub bon_conditions: Vec<String>,
    /// Prompts per input set in the best-of-N workloads.
    pub bon_prompts: usize,
    /// Answers per best-of-N prompt.
    pub bon_n: usize,
    /// Examples per `score` call in the pair workloads.
    pub per_call: usize,
    /// Sequences per forward pass (`SeqClsOptions::max_batch`; transformers' batches).
    pub max_batch: usize,
    /// Timed passes per round.
    pub repeats: usize,
    /// Rounds.
    pub rounds: usize,
    /// The model folder (default: the bench decoder, written once by `bench_rm.py
    /// make-decoder` with MiniLM's tokenizer).
    pub model: Option<PathBuf>,
    /// When the bench decoder cannot be written (no torch), score the committed parity fixture
    /// instead (logged) rather than fail: `bench all --short`'s smoke run, never a measurement
    /// the user asked for with `--python`.
    pub allow_fixture: bool,
    /// Threads, interpreter, tools and working folder.
    pub reference: Reference,
    /// The prbench version the rows name.
    pub code_version: String,
}

/// One workload's figures.
#[derive(Debug, Clone, Serialize)]
pub struct PrefixRow {
    /// `pairs` or `bon<N>`.
    pub kind: String,
    /// Input set name.
    pub set: String,
    /// Condition.
    pub condition: String,
    /// Items scored per pass.
    pub items: usize,
    /// Groups sharing a prompt (pairs: examples; best-of-N: prompts).
    pub groups: usize,
    /// Mean tokens per item.
    pub mean_tokens: f64,
    /// Share of all tokens a prefix cache skips: Σ over groups of (n − 1) × the group's
    /// longest common token prefix, over all tokens.
    pub prefix_share: f64,
    /// Share of all tokens the shared path did not recompute in its first timed pass (the
    /// model's own counters: it shares prefixes of at least `MIN_SHARED_PREFIX` tokens only).
    pub reused_share: f64,
    /// tokens/s, medians over rounds: prbench shared, prbench unshared, transformers (`None`
    /// when the reference did not run).
    pub tok_s: [Option<f64>; 3],
    /// Median over rounds of shared / transformers.
    pub ratio_vs_transformers: Option<f64>,
    /// Median over rounds of shared / unshared.
    pub ratio_vs_unshared: f64,
    /// max |shared − unshared| over every item.
    pub max_diff_shared_unshared: f64,
    /// max |unshared − transformers| over every item.
    pub max_diff_transformers: Option<f64>,
    /// Whether `max_diff_shared_unshared` ≤ [`SHARED_TOLERANCE`].
    pub agreement_met: bool,
}

/// `bench rm-prefix`'s result: the model, the reference's engine (or why it did not run), and
/// one row per workload.
#[derive(Debug, Clone, Serialize)]
pub struct PrefixReport {
    /// The model folder scored.
    pub model: String,
    /// The transformers engine line, or `skipped: <cause>`.
    pub reference: String,
    /// Whether transformers ran.
    pub reference_ran: bool,
    /// One row per workload.
    pub rows: Vec<PrefixRow>,
    /// The equivalent command line.
    pub command: String,
}

impl PrefixRow {
    /// Why this row's agreement check failed (shared-prefix scores more than 1e-5 from the
    /// unshared path's), or `None` when it passed.
    pub fn failed_check(&self) -> Option<String> {
        (!self.agreement_met).then(|| {
            format!(
                "scalar RM {}, {}, `{}`: shared vs unshared max |Δ score| {:.1e} > 1e-5",
                self.kind, self.set, self.condition, self.max_diff_shared_unshared
            )
        })
    }
}

impl PrefixReport {
    /// Every row's failed agreement check ([`PrefixRow::failed_check`]); empty when all passed.
    pub fn failed_checks(&self) -> Vec<String> {
        self.rows.iter().filter_map(PrefixRow::failed_check).collect()
    }
}

struct Workload {
    kind: String,
    set: String,
    condition: String,
    /// `score` calls, each a list of requests.
    calls: Vec<Vec<RmRequest>>,
    /// Token ids per call, per item (what the model scores).
    ids: Vec<Vec<Vec<u32>>>,
    /// Items per group (consecutive within a call) and the group's common prefix length.
    groups: Vec<(usize, usize)>,
}

impl Workload {
    fn tokens(&self) -> usize {
        self.ids.iter().flatten().map(Vec::len).sum()
    }
    fn items(&self) -> usize {
        self.ids.iter().map(Vec::len).sum()
    }
}

fn common_prefix(seqs: &[Vec<u32>]) -> usize {
    let Some(first) = seqs.first() else { return 0 };
    (0..first.len()).take_while(|&i| seqs.iter().all(|s| s.get(i) == Some(&first[i]))).count()
}

/// The command line equivalent to `args`, for tables.
pub fn command_line(args: &PrefixOptions) -> String {
    let mut c = format!(
        "prbench bench rm-prefix --sets {} --conditions {} --pairs {} --bon-conditions {} --bon-prompts {} --bon-n {} --per-call {} --max-batch {} --repeats {} --rounds {} --threads {}",
        args.sets.join(","),
        args.conditions.join(","),
        args.pairs,
        if args.bon_conditions.is_empty() { "''".to_string() } else { args.bon_conditions.join(",") },
        args.bon_prompts,
        args.bon_n,
        args.per_call,
        args.max_batch,
        args.repeats,
        args.rounds,
        args.reference.threads
    );
    if let Some(m) = &args.model {
        c.push_str(&format!(" --model {}", m.display()));
    }
    c
}

/// The model folder: `--model`, else the bench decoder under the working folder (written
/// with MiniLM's tokenizer when absent), else (with `allow_fixture`) the parity fixture with the
/// reason logged.
fn model_dir(args: &PrefixOptions, log: &dyn Fn(&str)) -> Result<PathBuf> {
    if let Some(m) = &args.model {
        return Ok(m.clone());
    }
    let dir = args.reference.work.join("decoder-6l");
    if dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file() {
        return Ok(dir);
    }
    let made = python(
        &args.reference,
        &[
            "make-decoder".into(),
            dir.display().to_string(),
            "--tokenizer-dir".into(),
            default_embedder_dir().display().to_string(),
        ],
    );
    match made {
        Ok(_) => Ok(dir),
        Err(e) if !args.allow_fixture => Err(e.context(format!(
            "writing the bench decoder with `{}` (give --python an interpreter with torch and transformers, or --model DIR to score a model folder of your own)",
            args.reference.python
        ))),
        Err(e) => {
            let fixture = PathBuf::from(FIXTURE_MODEL);
            if !fixture.join("config.json").is_file() {
                bail!("the bench decoder could not be written ({e:#}) and the fallback `{FIXTURE_MODEL}` is absent: run from the repository root");
            }
            log(&format!("bench rm-prefix: the bench decoder could not be written, scoring the parity fixture {FIXTURE_MODEL} instead: {}", first_line(&format!("{e:#}"))));
            Ok(fixture)
        }
    }
}

fn first_line(s: &str) -> String {
    s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_string()
}

/// The reward model as eval loads it, with shared-prefix scoring on or off.
fn load(dir: &Path, args: &PrefixOptions, shared_prefix: bool) -> Result<SeqClsRewardModel> {
    let opts =
        SeqClsOptions { max_batch: args.max_batch, shared_prefix, ..SeqClsOptions::default() };
    SeqClsRewardModel::load(dir, &dir.display().to_string(), None, &opts)
        .with_context(|| format!("loading `{}`", dir.display()))
}

fn token_ids(rm: &SeqClsRewardModel, req: &RmRequest) -> Result<Vec<u32>> {
    Ok(rm
        .tokenizer()
        .tokenize_rm(
            &req.prompt,
            req.input.context.as_deref(),
            rm.max_length(),
            rm.model().bos_token_id(),
        )?
        .ids)
}

/// Builds every workload's requests (eval's rendering, posts fitted to `rm`'s window) and ids.
fn workloads(
    args: &PrefixOptions,
    sets: &[InputSet],
    rm: &SeqClsRewardModel,
    log: &dyn Fn(&str),
) -> Result<Vec<Workload>> {
    let overflow = |r: &RmRequest| rm.input_overflow(r);
    let mut out = Vec::new();
    for set in sets {
        for (kind, conditions) in [("pairs", &args.conditions), ("bon", &args.bon_conditions)] {
            for condition in conditions {
                let mut groups_reqs: Vec<Vec<RmRequest>> = Vec::new();
                if kind == "pairs" {
                    let r = inputs::prepare(set, condition, args.pairs)?;
                    for ex in &r.examples {
                        groups_reqs.push(r.rm_requests(
                            ex,
                            &[&ex.chosen, &ex.rejected],
                            &overflow,
                        )?);
                    }
                } else {
                    if args.bon_prompts == 0 || args.bon_n == 0 {
                        continue;
                    }
                    let r =
                        inputs::prepare(set, condition, args.bon_prompts + args.bon_n.div_ceil(2))?;
                    for (i, ex) in r.examples.iter().take(args.bon_prompts).enumerate() {
                        let mut answers: Vec<&str> = Vec::new();
                        for other in
                            r.examples.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, e)| e)
                        {
                            for a in [other.chosen.as_str(), other.rejected.as_str()] {
                                if answers.len() < args.bon_n && !answers.contains(&a) {
                                    answers.push(a);
                                }
                            }
                        }
                        if answers.len() < args.bon_n {
                            log(&format!("bench rm-prefix: {} has {} distinct other answers for a best-of-{} prompt; skipping that workload", set.name, answers.len(), args.bon_n));
                            groups_reqs.clear();
                            break;
                        }
                        groups_reqs.push(r.rm_requests(ex, &answers, &overflow)?);
                    }
                }
                if groups_reqs.is_empty() {
                    continue;
                }
                let per_call = if kind == "pairs" { args.per_call.max(1) } else { 1 };
                let mut w = Workload {
                    kind: if kind == "pairs" {
                        "pairs".into()
                    } else {
                        format!("bon{}", args.bon_n)
                    },
                    set: set.name.clone(),
                    condition: condition.clone(),
                    calls: Vec::new(),
                    ids: Vec::new(),
                    groups: Vec::new(),
                };
                for chunk in groups_reqs.chunks(per_call) {
                    let mut call = Vec::new();
                    let mut ids = Vec::new();
                    for g in chunk {
                        let g_ids =
                            g.iter().map(|r| token_ids(rm, r)).collect::<Result<Vec<_>>>()?;
                        w.groups.push((g.len(), common_prefix(&g_ids)));
                        call.extend(g.iter().cloned());
                        ids.extend(g_ids);
                    }
                    w.calls.push(call);
                    w.ids.push(ids);
                }
                log(&format!(
                    "bench rm-prefix: {} {} {}: {} items, {} tokens, {:.0} per item",
                    w.kind,
                    w.set,
                    w.condition,
                    w.items(),
                    w.tokens(),
                    w.tokens() as f64 / w.items() as f64
                ));
                out.push(w);
            }
        }
    }
    Ok(out)
}

/// One timed side of one round: seconds of `repeats` passes, the first pass's scores in item
/// order, and the tokens the model did not recompute in that pass (its shared-prefix
/// counters).
fn time_prbench(
    rm: &SeqClsRewardModel,
    w: &Workload,
    repeats: usize,
) -> Result<(f64, Vec<f64>, u64)> {
    // Warm-up: the first two items (allocations, thread pool), not timed.
    rm.score(&w.calls[0][..w.calls[0].len().min(2)])?;
    let mut outputs = Vec::with_capacity(w.items());
    let reused_before = rm.shared_prefix_stats().tokens_reused;
    let mut reused = 0;
    let start = Instant::now();
    for r in 0..repeats {
        for (call, ids) in w.calls.iter().zip(&w.ids) {
            let scores = rm.score(call)?;
            if r == 0 {
                let tokens: Vec<usize> = scores.iter().map(|s| s.tokens.input_tokens).collect();
                if tokens != ids.iter().map(Vec::len).collect::<Vec<_>>() {
                    bail!("{} {} {}: the model scored {tokens:?} tokens per item, the bench tokenized {:?}", w.kind, w.set, w.condition, ids.iter().map(Vec::len).collect::<Vec<_>>());
                }
                outputs.extend(scores.iter().map(|s| f64::from(s.value)));
            }
        }
        if r == 0 {
            reused = rm.shared_prefix_stats().tokens_reused - reused_before;
        }
    }
    Ok((start.elapsed().as_secs_f64(), outputs, reused))
}

/// Token ids of padded-batch inputs: `[batch][row][token]`.
type Batches = Vec<Vec<Vec<u32>>>;

/// One workload's reference timing: seconds, tokens scored, scores in item order.
type RefTiming = (f64, usize, Vec<f64>);

/// The unshared path's batches of each call (`by_length` with `max_batch`), as token ids, and
/// for each scored row its item index in the workload.
fn reference_batches(w: &Workload, max_batch: usize) -> Result<(Batches, Vec<usize>)> {
    let mut batches = Vec::new();
    let mut order = Vec::new();
    let mut base = 0;
    for ids in &w.ids {
        let lens: Vec<usize> = ids.iter().map(Vec::len).collect();
        by_length(&lens, max_batch, |idx| {
            batches.push(idx.iter().map(|&i| ids[i].clone()).collect());
            order.extend(idx.iter().map(|&i| base + i));
            Ok(vec![(); idx.len()])
        })?;
        base += ids.len();
    }
    Ok((batches, order))
}

/// transformers over every workload once (one process): per workload, seconds and scores in
/// item order.
fn time_reference(
    args: &PrefixOptions,
    dir: &Path,
    pad_id: u32,
    ws: &[Workload],
    round: usize,
) -> Result<(String, Vec<RefTiming>)> {
    let mut spec = Vec::new();
    let mut orders = Vec::new();
    for w in ws {
        let (batches, order) = reference_batches(w, args.max_batch)?;
        spec.push(serde_json::json!({ "name": format!("{} {} {}", w.kind, w.set, w.condition), "batches": batches }));
        orders.push(order);
    }
    let path = args.reference.work.join(format!("rm-prefix-ids-r{round}.json"));
    std::fs::write(
        &path,
        serde_json::to_string(&serde_json::json!({ "pad_id": pad_id, "workloads": spec }))?,
    )?;
    let v = python(
        &args.reference,
        &[
            "run-batches".into(),
            "--model-dir".into(),
            dir.display().to_string(),
            "--inputs".into(),
            path.display().to_string(),
            "--threads".into(),
            args.reference.threads.to_string(),
            "--repeats".into(),
            args.repeats.to_string(),
        ],
    )?;
    let engine = v["engine"].as_str().unwrap_or("transformers").to_string();
    let got = v["workloads"].as_array().context("run-batches printed no workloads")?;
    if got.len() != ws.len() {
        bail!("run-batches returned {} workloads for {}", got.len(), ws.len());
    }
    let mut out = Vec::new();
    for ((g, order), w) in got.iter().zip(&orders).zip(ws) {
        let scores: Vec<f64> = g["outputs"]
            .as_array()
            .context("outputs")?
            .iter()
            .filter_map(serde_json::Value::as_f64)
            .collect();
        if scores.len() != order.len() {
            bail!("run-batches gave {} scores for {} items", scores.len(), order.len());
        }
        let mut by_item = vec![f64::NAN; w.items()];
        for (&i, s) in order.iter().zip(scores) {
            by_item[i] = s;
        }
        out.push((
            g["seconds"].as_f64().context("seconds")?,
            g["tokens"].as_u64().context("tokens")? as usize,
            by_item,
        ));
    }
    Ok((engine, out))
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// Measures every workload (see the module docs). transformers failing (no torch) leaves its
/// columns empty and says why in [`PrefixReport::reference`]; everything else is an error.
///
/// # Errors
/// Input rendering, model loading or scoring failures; a reference that returns malformed
/// output.
pub fn measure(args: &PrefixOptions, log: &dyn Fn(&str)) -> Result<PrefixReport> {
    std::fs::create_dir_all(&args.reference.work)
        .with_context(|| format!("creating `{}`", args.reference.work.display()))?;
    let dir = model_dir(args, log)?;
    let shared = load(&dir, args, true)?;
    let unshared = load(&dir, args, false)?;
    let sets = inputs::input_sets(&args.sets, &args.reference.work, log)?;
    let ws = workloads(args, &sets, &unshared, log)?;
    if ws.is_empty() {
        bail!("no workloads: every input set was skipped");
    }
    let pad_id = shared.model().pad_token_id().unwrap_or(0);
    // Per workload, per round: (seconds shared, unshared, reference); scores of round 0.
    let mut secs: Vec<Vec<[Option<f64>; 3]>> = vec![Vec::new(); ws.len()];
    let mut scores: Vec<[Vec<f64>; 3]> = vec![Default::default(); ws.len()];
    let mut reused = vec![0u64; ws.len()];
    let mut reference = None;
    let mut reference_error = None;
    for round in 0..args.rounds {
        for t in &mut secs {
            t.push([None, None, None]);
        }
        // The reference goes first in odd rounds, last in even ones; prbench's two paths swap
        // order every round.
        let reference_first = round % 2 == 1;
        let mut ref_result = None;
        if reference_first && reference_error.is_none() {
            ref_result = Some(time_reference(args, &dir, pad_id, &ws, round));
        }
        for (i, w) in ws.iter().enumerate() {
            let order: [(usize, &SeqClsRewardModel); 2] = if round % 2 == 0 {
                [(0, &shared), (1, &unshared)]
            } else {
                [(1, &unshared), (0, &shared)]
            };
            for (k, rm) in order {
                let (s, out, r) = time_prbench(rm, w, args.repeats)?;
                secs[i][round][k] = Some(s);
                if round == 0 {
                    scores[i][k] = out;
                    if k == 0 {
                        reused[i] = r;
                    }
                }
            }
        }
        if !reference_first && reference_error.is_none() {
            ref_result = Some(time_reference(args, &dir, pad_id, &ws, round));
        }
        match ref_result {
            Some(Ok((engine, per))) => {
                reference = Some(engine);
                for (i, (s, tokens, out)) in per.into_iter().enumerate() {
                    if tokens != args.repeats * ws[i].tokens() {
                        bail!(
                            "transformers scored {tokens} tokens, prbench {}",
                            args.repeats * ws[i].tokens()
                        );
                    }
                    secs[i][round][2] = Some(s);
                    if round == 0 {
                        scores[i][2] = out;
                    }
                }
            }
            Some(Err(e)) => {
                log(&format!(
                    "bench rm-prefix: transformers skipped: {}",
                    first_line(&format!("{e:#}"))
                ));
                reference_error = Some(e);
            }
            None => {}
        }
        log(&format!("bench rm-prefix: round {} of {} done", round + 1, args.rounds));
    }
    let mut rows = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let tokens = (args.repeats * w.tokens()) as f64;
        let tps = |k: usize| -> Option<f64> {
            let v: Vec<f64> = secs[i].iter().filter_map(|t| t[k]).map(|s| tokens / s).collect();
            (v.len() == secs[i].len()).then(|| median(v))
        };
        let ratio = |a: usize, b: usize| -> Option<f64> {
            let v: Vec<f64> = secs[i].iter().filter_map(|t| Some(t[b]? / t[a]?)).collect();
            (v.len() == secs[i].len()).then(|| median(v))
        };
        let d_su = max_abs_diff(&scores[i][0], &scores[i][1]);
        let has_ref = scores[i][2].len() == w.items();
        let saved: usize = w.groups.iter().map(|&(n, p)| (n - 1) * p).sum();
        rows.push(PrefixRow {
            kind: w.kind.clone(),
            set: w.set.clone(),
            condition: w.condition.clone(),
            items: w.items(),
            groups: w.groups.len(),
            mean_tokens: w.tokens() as f64 / w.items() as f64,
            prefix_share: saved as f64 / w.tokens() as f64,
            reused_share: reused[i] as f64 / w.tokens() as f64,
            tok_s: [tps(0), tps(1), tps(2)],
            ratio_vs_transformers: ratio(0, 2),
            ratio_vs_unshared: ratio(0, 1).unwrap_or(f64::NAN),
            max_diff_shared_unshared: d_su,
            max_diff_transformers: has_ref.then(|| max_abs_diff(&scores[i][1], &scores[i][2])),
            agreement_met: d_su <= SHARED_TOLERANCE,
        });
    }
    let reference = match (reference, reference_error) {
        (Some(e), None) => e,
        (_, Some(e)) => crate::child::skipped_because(&e),
        (None, None) => "skipped: no rounds".into(),
    };
    Ok(PrefixReport {
        model: dir.display().to_string(),
        reference_ran: !reference.starts_with("skipped"),
        reference,
        rows,
        command: command_line(args),
    })
}

/// The target a row is graded against: pairs under `profile:k` ≥ 1.7× transformers,
/// best-of-N ≥ 4× transformers; `None` for pairs under `none`.
pub fn target(row: &PrefixRow) -> Option<f64> {
    if row.kind.starts_with("bon") {
        Some(4.0)
    } else if row.condition.starts_with("profile:") {
        Some(1.7)
    } else {
        None
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "—".into(), f)
}

/// The `bench rm-prefix` table.
pub fn table(report: &PrefixReport) -> String {
    let mut s = format!(
        "Model {}; reference: {}; `{}`\n\n",
        report.model, report.reference, report.command
    );
    s += "| workload | set | condition | items (groups) | tokens/item | common prefix / reused | shared tok/s | unshared tok/s | transformers tok/s | shared / transformers | shared / unshared | max Δ shared−unshared | max Δ vs transformers |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for r in &report.rows {
        s += &format!(
            "| {} | {} | {} | {} ({}) | {:.0} | {:.0}% / {:.0}% | {} | {} | {} | {} | {:.2}× | {:.1e} ({}) | {} |\n",
            r.kind,
            r.set,
            r.condition,
            r.items,
            r.groups,
            r.mean_tokens,
            100.0 * r.prefix_share,
            100.0 * r.reused_share,
            opt(r.tok_s[0], |v| format!("{v:.0}")),
            opt(r.tok_s[1], |v| format!("{v:.0}")),
            opt(r.tok_s[2], |v| format!("{v:.0}")),
            opt(r.ratio_vs_transformers, |v| format!("{v:.2}×")),
            r.ratio_vs_unshared,
            r.max_diff_shared_unshared,
            if r.agreement_met { "≤ 1e-5: met" } else { "≤ 1e-5: NOT met" },
            opt(r.max_diff_transformers, |v| format!("{v:.1e}")),
        );
    }
    s
}
