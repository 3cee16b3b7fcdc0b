//! The llama.cpp judge in both orders: the logprob judge on the GGUF engine decodes
//! the prefix the two orders of a pair share once, then each order's suffix after it. On real judge prompts (the bundled sample, rendered by `prbench eval`'s own prompts
//! under `none` and `profile:k`, chosen in slot A then in slot B as `--both-orders` sends
//! them), its margins equal the unforked judge's within 1e-5 and every verdict is the same.
//! Models: SmolLM2-135M-Instruct and, when present, Gemma-3-270M (skipped when absent).

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use prbench_bench::judge::GEMMA_TURN_TEMPLATE;
use prbench_eval::condition::{profile_context, Condition};
use prbench_eval::prompt::Prompts;
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::assets::{models_dir, DEFAULT_MODEL_FILE};
use prbench_models::judge::LogprobJudge;
use prbench_models::{Judge, JudgeRequest, ModelError, PairInput, Verdict};

/// Margins may differ by floating-point summation order only.
const TOL: f32 = 1e-5;

/// Examples judged per condition (each in both orders).
const EXAMPLES: usize = 6;

/// The GGUF files present: SmolLM2 (the test model) and Gemma-3-270M.
fn models() -> Vec<PathBuf> {
    let dir = models_dir();
    let found: Vec<PathBuf> =
        [DEFAULT_MODEL_FILE, "gemma-3-270m-q4_k_m.gguf", "gemma-3-270m-it-Q4_K_M.gguf"]
            .iter()
            .map(|f| dir.join(f))
            .filter(|p| p.is_file())
            .collect();
    if found.is_empty() {
        prbench_testkit::unavailable(format!(
            "no GGUF model in {}; run scripts/setup.sh --tests",
            dir.display()
        ));
    }
    found
}

fn load(path: &Path) -> GgufEngine {
    match GgufEngine::load(path, GgufOptions::default()) {
        // Gemma-3-270M base ships no chat template; bench judge uses Gemma's turn format.
        Err(ModelError::Metadata { .. }) => GgufEngine::load(
            path,
            GgufOptions {
                chat_template: Some(GEMMA_TURN_TEMPLATE.into()),
                ..GgufOptions::default()
            },
        ),
        other => other,
    }
    .unwrap_or_else(|e| panic!("load {}: {e}", path.display()))
}

/// `prbench eval --both-orders` requests for the first [`EXAMPLES`] sample examples under
/// `condition` (`none` or `profile:k`, posts in dataset order): chosen in slot A, then in B.
fn requests(condition: &str) -> Vec<JudgeRequest> {
    let data = prbench_data::load(&common::sample(), &[]).expect("the bundled sample loads");
    let cond = Condition::parse(condition).unwrap();
    let prompts = Prompts::new();
    let mut out = Vec::new();
    for ex in data.examples.iter().take(EXAMPLES) {
        let context = cond
            .profile_k()
            .map(|k| profile_context(&ex.profile.iter().take(k).cloned().collect::<Vec<_>>()));
        for (a, b) in [(&ex.chosen, &ex.rejected), (&ex.rejected, &ex.chosen)] {
            let pair = PairInput {
                example_id: ex.id.clone(),
                question: ex.question.clone(),
                context: context.clone(),
                a: a.clone(),
                b: b.clone(),
            };
            out.push(JudgeRequest { prompt: prompts.judge(&pair).unwrap(), pair, prompt_b: None });
        }
    }
    out
}

/// Judges `reqs` with sharing on or off; returns the verdicts and the wall seconds.
fn run(engine: &GgufEngine, share: bool, reqs: &[JudgeRequest]) -> (Vec<Verdict>, f64) {
    engine.set_share_prefix(share);
    let judge = LogprobJudge::new(engine);
    let t = Instant::now();
    let out = judge.judge_each(reqs, &|_, _| {});
    let secs = t.elapsed().as_secs_f64();
    (out.into_iter().map(|v| v.expect("every item is judged")).collect(), secs)
}

#[test]
fn both_orders_fork_gives_the_unforked_margins_and_verdicts() {
    for path in models() {
        let engine = load(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for condition in ["none", "profile:10"] {
            let reqs = requests(condition);
            assert_eq!(reqs.len(), 2 * EXAMPLES);
            // Warm up both paths (first-call allocations), then time each once.
            run(&engine, true, &reqs[..2]);
            run(&engine, false, &reqs[..2]);
            let before = engine.shared_prefix_tokens();
            let (forked, t_fork) = run(&engine, true, &reqs);
            let reused = engine.shared_prefix_tokens() - before;
            let (plain, t_plain) = run(&engine, false, &reqs);
            assert_eq!(engine.shared_prefix_tokens() - before, reused, "unforked reuses nothing");
            let tokens: usize = plain.iter().map(|v| v.tokens.input_tokens).sum();

            let mut worst = 0f32;
            for (i, (f, p)) in forked.iter().zip(&plain).enumerate() {
                let (mf, mp) = (f.margin.unwrap(), p.margin.unwrap());
                worst = worst.max((mf - mp).abs());
                assert!(
                    (mf - mp).abs() <= TOL,
                    "{name} {condition} request {i}: forked margin {mf} vs unforked {mp}"
                );
                assert_eq!(f.choice, p.choice, "{name} {condition} request {i}: verdict changed");
                assert_eq!(f.tokens, p.tokens, "input_tokens is each full prompt either way");
            }
            // The two orders of each pair share the system prompt, context and question.
            let pair_prefix: usize = reqs
                .chunks(2)
                .map(|c| {
                    let (a, b) = (
                        engine.tokenize(&c[0].prompt).unwrap(),
                        engine.tokenize(&c[1].prompt).unwrap(),
                    );
                    // Shareable: the common prefix, leaving each order 64 tokens (and at least
                    // 64 shared), the engine's minimum pieces (gguf/fork.rs).
                    let s = a
                        .iter()
                        .zip(&b)
                        .take_while(|(x, y)| x == y)
                        .count()
                        .min(a.len().min(b.len()).saturating_sub(64));
                    if s >= 64 {
                        s
                    } else {
                        0
                    }
                })
                .sum();
            assert!(
                reused as usize >= pair_prefix,
                "{name} {condition}: reused {reused} < the pairs' shared prefixes {pair_prefix}"
            );
            eprintln!(
                "{name} {condition}: {} prompts, {tokens} tokens, {reused} reused (pairs share {pair_prefix}); \
                 max |Δmargin| = {worst:e}; forked {t_fork:.3}s, unforked {t_plain:.3}s, speed-up {:.2}×",
                reqs.len(),
                t_plain / t_fork
            );
        }
    }
}
