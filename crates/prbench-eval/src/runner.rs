//! The evaluation runner: examples → condition → prompts (leakage-checked) → backend →
//! outcomes (PROTOCOL.md §2–4).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use prbench_data::Example;
use prbench_models::{Judge, JudgeRequest, ModelError, PairInput, RewardModel, RmInput, RmRequest};
use prbench_stats::outcome::ItemResult;

use crate::condition::{full_profile_text, Condition, ConditionInputs, EmptyMaterial};
use crate::error::EvalError;
use crate::leakage;
use crate::outcome::{both_orders_result, debiased_result, judge_result, Outcome};
use crate::prompt::Prompts;
use crate::slots::{assign_slots, Slot};

/// Progress sink; only the binary draws bars (STYLE.md, habit 4).
pub trait Reporter: Sync {
    /// A stage of `total` items starts.
    fn start(&self, stage: &str, total: u64);
    /// `n` more items are done.
    fn advance(&self, n: u64);
    /// The stage ended.
    fn finish(&self);
}

/// A reporter that reports nothing.
pub struct Silent;

impl Reporter for Silent {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// The model under test, by role.
#[derive(Clone, Copy)]
pub enum Backend<'a> {
    /// A pairwise judge.
    Judge(&'a dyn Judge),
    /// A pointwise reward model.
    RewardModel(&'a dyn RewardModel),
}

impl Backend<'_> {
    /// Remote-call counters since load ([`Judge::call_stats`]); `None` for in-process engines.
    pub fn call_stats(&self) -> Option<prbench_models::CallStats> {
        match self {
            Backend::Judge(j) => j.call_stats(),
            Backend::RewardModel(r) => r.call_stats(),
        }
    }

    /// The backend's spec string.
    pub fn spec(&self) -> String {
        match self {
            Backend::Judge(j) => j.identity().spec,
            Backend::RewardModel(r) => r.identity().spec,
        }
    }

    /// The condition a model prbench trained was trained under
    /// ([`RewardModel::training_condition`]); `None` for judges and other models.
    pub fn training_condition(&self) -> Option<String> {
        match self {
            Backend::Judge(_) => None,
            Backend::RewardModel(r) => r.training_condition(),
        }
    }
}

/// Where the context shown to the backend comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextSource {
    /// The condition decides (the normal case).
    Condition,
    /// The user's whole profile: only for the `profile-overlap` control baseline.
    FullProfile,
}

/// Options of one evaluation.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Condition under test.
    pub condition: Condition,
    /// Run seed (slot assignment, random baseline).
    pub seed: u64,
    /// Judge each pair in both orders (PROTOCOL.md §4).
    pub both_orders: bool,
    /// Examples per backend call.
    pub batch_size: usize,
    /// Context source (see [`ContextSource`]).
    pub context: ContextSource,
    /// Ranked posts (`profile:k`) and planned aspects (`planner`), prepared before the run.
    pub inputs: Arc<ConditionInputs>,
}

impl EvalOptions {
    /// Defaults for `condition`: seed 42, single order, batch 8, context from the condition,
    /// no prepared inputs (enough for `none` and `oracle`).
    pub fn new(condition: Condition) -> Self {
        Self {
            condition,
            seed: 42,
            both_orders: false,
            batch_size: 8,
            context: ContextSource::Condition,
            inputs: Arc::new(ConditionInputs::default()),
        }
    }

    /// The context shown for `ex`, with at most `n_posts` profile posts under `profile:k`.
    pub(crate) fn context_for(
        &self,
        ex: &Example,
        n_posts: Option<usize>,
    ) -> Result<Option<String>, EvalError> {
        match self.context {
            ContextSource::Condition => self.condition.context(ex, &self.inputs, n_posts),
            ContextSource::FullProfile => Ok(Some(full_profile_text(ex))),
        }
    }

    fn check_leak(&self, ex: &Example, rendered: &str) -> Result<(), EvalError> {
        leakage::check_with(
            ex,
            self.condition,
            rendered,
            &self.condition.allowed_texts(ex, &self.inputs),
        )
    }
}

/// How many profile posts an example's inputs show under `profile:k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PostsShown {
    shown: usize,
    dropped: usize,
}

/// Builds the requests of one example with as many of its top-k posts as fit the backend:
/// under `profile:k` the largest n ≤ k such that every request's [`Judge::input_overflow`] /
/// [`RewardModel::input_overflow`] is 0 with the top n posts, i.e. the lowest-ranked posts are
/// dropped until the inputs fit (all requests of an example keep the same posts, so chosen and
/// rejected are compared under one context); 0 posts when not even one fits. An engine that
/// cannot tell (`None`) or fails to count (`Err`: the call itself will report it) gets all k.
/// Other conditions: built once, `None`.
///
/// The fit is monotone in n (a post added never shortens an input), so n is found by a binary
/// search ([`largest_fitting`]): O(log k) renderings and token counts instead of up to k, with
/// the same result as dropping posts one at a time.
fn fitted<R>(
    ex: &Example,
    opts: &EvalOptions,
    build: impl Fn(Option<usize>) -> Result<Vec<R>, EvalError>,
    overflow: impl Fn(&R) -> Result<Option<usize>, ModelError>,
) -> Result<(Vec<R>, Option<PostsShown>), EvalError> {
    let k = match (opts.context, opts.condition) {
        (ContextSource::Condition, Condition::Profile { k }) => k,
        _ => return Ok((build(None)?, None)),
    };
    let available = opts.inputs.ranked_posts(ex)?.len().min(k);
    // Every request fits, or the engine cannot tell (`None`) or count (`Err`) for one of them.
    let fits = |requests: &[R]| {
        let mut over = false;
        for r in requests {
            match overflow(r) {
                Ok(Some(0)) => {}
                Ok(Some(_)) => over = true,
                Ok(None) | Err(_) => return true,
            }
        }
        !over
    };
    let (n, requests) = largest_fitting(available, |n| {
        let requests = build(Some(n))?;
        Ok((fits(&requests), requests))
    })?;
    Ok((requests, Some(PostsShown { shown: n, dropped: available - n })))
}

/// The largest `n` in `0..=max` for which `probe(n)` reports a fit, with what `probe` built
/// for it; 0 when none of `1..=max` fits (0 is never tested: with no posts left the item goes
/// to the backend as it is). `probe` must be monotone (if n fits, every smaller n fits); it is
/// called O(log max) times, `max` first.
///
/// # Errors
/// Whatever `probe` returns.
pub fn largest_fitting<R>(
    max: usize,
    mut probe: impl FnMut(usize) -> Result<(bool, R), EvalError>,
) -> Result<(usize, R), EvalError> {
    let (fits_all, at_max) = probe(max)?;
    if fits_all || max == 0 {
        return Ok((max, at_max));
    }
    // Invariant: `lo` fits (or is 0), `hi` does not.
    let (mut lo, mut hi) = (0, max);
    let mut at_lo = None;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let (ok, built) = probe(mid)?;
        if ok {
            lo = mid;
            at_lo = Some(built);
        } else {
            hi = mid;
        }
    }
    let built = match at_lo {
        Some(b) => b,
        None => probe(lo)?.1,
    };
    Ok((lo, built))
}

/// Evaluates `backend` on `examples`, returning one outcome per example in input order.
/// Slots are assigned from `examples` themselves; [`evaluate_into`] takes them from a larger
/// set (so `--limit` cannot change which slot an example gets).
///
/// # Errors
/// As [`evaluate_into`].
pub fn evaluate(
    examples: &[Example],
    backend: Backend<'_>,
    opts: &EvalOptions,
    prompts: &Prompts,
    reporter: &dyn Reporter,
) -> Result<Vec<Outcome>, EvalError> {
    let slots = assign_slots(examples, opts.seed);
    let mut outcomes = Vec::with_capacity(examples.len());
    evaluate_into(examples, &slots, backend, opts, prompts, reporter, &mut |batch| {
        outcomes.extend_from_slice(batch);
        Ok(())
    })?;
    Ok(outcomes)
}

/// Evaluates `backend` on `examples` batch by batch, handing each batch's outcomes (in input
/// order) to `sink` as soon as they exist, so a killed run keeps what it finished.
///
/// Backends answer item by item ([`Judge::judge_each`], [`RewardModel::score_each`]): an item
/// the backend fails on (after the engine's own retries, or alone after its batch failed)
/// becomes an [`ItemResult::Error`] outcome carrying the message (counted, never scored), and
/// the run goes on.
///
/// # Errors
/// [`EvalError::Leakage`] if any rendered input would leak hidden text; template failures;
/// whatever `sink` returns.
pub fn evaluate_into(
    examples: &[Example],
    slots: &HashMap<String, Slot>,
    backend: Backend<'_>,
    opts: &EvalOptions,
    prompts: &Prompts,
    reporter: &dyn Reporter,
    sink: &mut dyn FnMut(&[Outcome]) -> Result<(), EvalError>,
) -> Result<(), EvalError> {
    let model = backend.spec();
    reporter.start(&format!("{model} · {}", opts.condition), examples.len() as u64);
    for chunk in examples.chunks(opts.batch_size.max(1)) {
        let blocked: Vec<Option<&str>> = chunk
            .iter()
            .map(|ex| {
                if opts.context == ContextSource::Condition {
                    opts.inputs.blocked(opts.condition, ex)
                } else {
                    None
                }
            })
            .collect();
        let runnable: Vec<&Example> =
            chunk.iter().zip(&blocked).filter(|(_, b)| b.is_none()).map(|(ex, _)| ex).collect();
        let mut scored = if runnable.is_empty() {
            Vec::new()
        } else {
            score_chunk(&runnable, slots, backend, opts, prompts, &model)?
        }
        .into_iter();
        let batch: Vec<Outcome> = chunk
            .iter()
            .zip(&blocked)
            .map(|(ex, b)| match b {
                Some(reason) => {
                    let mut o = base_outcome(ex, opts, &model, None);
                    // A judge's item keeps its slot, as one the backend failed on does: the
                    // slot balance of the evaluated items counts it.
                    if let Backend::Judge(_) = backend {
                        o.chosen_slot = slots.get(&ex.id).copied();
                    }
                    o.result = ItemResult::Error;
                    o.error = Some(format!("no input under `planner`: {reason}"));
                    o
                }
                None => scored.next().expect("one outcome per runnable example"),
            })
            .collect();
        sink(&batch)?;
        reporter.advance(chunk.len() as u64);
    }
    reporter.finish();
    Ok(())
}

fn score_chunk(
    chunk: &[&Example],
    slots: &HashMap<String, Slot>,
    backend: Backend<'_>,
    opts: &EvalOptions,
    prompts: &Prompts,
    model: &str,
) -> Result<Vec<Outcome>, EvalError> {
    let started = Instant::now();
    let mut batch = match backend {
        Backend::Judge(judge) => judge_chunk(chunk, judge, slots, opts, prompts, model)?,
        Backend::RewardModel(rm) => rm_chunk(chunk, rm, opts, prompts, model)?,
    };
    let per_item = started.elapsed().as_secs_f64() * 1000.0 / chunk.len() as f64;
    for o in &mut batch {
        o.latency_ms = per_item;
    }
    Ok(batch)
}

/// Marks `o` as failed with the backend's error for this item (counted, never scored).
fn fail(o: &mut Outcome, model: &str, example_id: &str, source: ModelError) {
    o.result = ItemResult::Error;
    // The record is text, read by no chain printer: the message with all its causes.
    let e = EvalError::Backend { model: model.into(), example_id: example_id.into(), source };
    o.error = Some(prbench_models::error::chain(&e));
}

fn base_outcome(
    ex: &Example,
    opts: &EvalOptions,
    model: &str,
    posts: Option<PostsShown>,
) -> Outcome {
    let empty = match opts.context {
        ContextSource::Condition => opts.condition.empty_material(ex, &opts.inputs),
        ContextSource::FullProfile => None,
    };
    Outcome {
        empty_profile: empty == Some(EmptyMaterial::Profile),
        empty_rubric: empty == Some(EmptyMaterial::Rubric),
        posts_shown: posts.map(|p| p.shown),
        posts_dropped: posts.map_or(0, |p| p.dropped),
        post_ids: match posts {
            Some(p) => opts.inputs.ranked_posts(ex).map_or_else(
                |_| Vec::new(),
                |ranked| {
                    ranked.iter().take(p.shown + p.dropped).map(|post| post.id.clone()).collect()
                },
            ),
            None => Vec::new(),
        },
        planner_failed: opts.condition == Condition::Planner
            && opts.context == ContextSource::Condition
            && opts.inputs.planner_failed(ex),
        example_id: ex.id.clone(),
        subset: ex.subset.clone(),
        user_id: ex.user_id.clone(),
        condition: opts.condition.to_string(),
        model: model.to_string(),
        chosen_slot: None,
        verdict: None,
        swapped_verdict: None,
        score_chosen: None,
        score_rejected: None,
        result: ItemResult::Error,
        both_orders_result: None,
        debiased_result: None,
        input_tokens: 0,
        output_tokens: 0,
        truncated_tokens: 0,
        latency_ms: 0.0,
        error: None,
    }
}

fn judge_request(
    ex: &Example,
    chosen_slot: Slot,
    opts: &EvalOptions,
    prompts: &Prompts,
    n_posts: Option<usize>,
) -> Result<JudgeRequest, EvalError> {
    let (a, b) = match chosen_slot {
        Slot::A => (&ex.chosen, &ex.rejected),
        Slot::B => (&ex.rejected, &ex.chosen),
    };
    let pair = PairInput {
        example_id: ex.id.clone(),
        question: ex.question.clone(),
        context: opts.context_for(ex, n_posts)?,
        a: a.clone(),
        b: b.clone(),
    };
    let (prompt, prompt_b) = prompts.judge_prompts(&pair)?;
    opts.check_leak(ex, &prompt.all_text())?;
    if let Some(b) = &prompt_b {
        opts.check_leak(ex, &b.all_text())?;
    }
    Ok(JudgeRequest { pair, prompt, prompt_b })
}

fn judge_chunk(
    chunk: &[&Example],
    judge: &dyn Judge,
    slots: &HashMap<String, Slot>,
    opts: &EvalOptions,
    prompts: &Prompts,
    model: &str,
) -> Result<Vec<Outcome>, EvalError> {
    let orders = if opts.both_orders { 2 } else { 1 };
    let mut requests = Vec::with_capacity(chunk.len() * orders);
    let mut shown = Vec::with_capacity(chunk.len());
    for ex in chunk {
        let slot = slots[&ex.id];
        let build = |n| {
            let mut v = vec![judge_request(ex, slot, opts, prompts, n)?];
            if opts.both_orders {
                v.push(judge_request(ex, slot.other(), opts, prompts, n)?);
            }
            Ok(v)
        };
        let (reqs, posts) = fitted(ex, opts, build, |r| judge.input_overflow(r))?;
        requests.extend(reqs);
        shown.push(posts);
    }
    let verdicts = judge.judge_each(&requests, &|_, _| {});
    if verdicts.len() != requests.len() {
        return Err(EvalError::BackendShape {
            model: model.into(),
            got: verdicts.len(),
            expected: requests.len(),
        });
    }
    let mut verdicts = verdicts.into_iter();
    Ok(chunk
        .iter()
        .zip(shown)
        .map(|(ex, posts)| {
            let slot = slots[&ex.id];
            let mut o = base_outcome(ex, opts, model, posts);
            o.chosen_slot = Some(slot);
            let first = verdicts.next().expect("length checked");
            let second = opts.both_orders.then(|| verdicts.next().expect("length checked"));
            let (first, second) = match (first, second.transpose()) {
                (Ok(first), Ok(second)) => (first, second),
                (Err(e), _) | (_, Err(e)) => {
                    fail(&mut o, model, &ex.id, e);
                    return o;
                }
            };
            o.result = judge_result(first.choice, slot);
            o.input_tokens = first.tokens.input_tokens;
            o.output_tokens = first.tokens.output_tokens;
            o.truncated_tokens = first.tokens.truncated_tokens;
            if let Some(second) = second {
                o.both_orders_result =
                    Some(both_orders_result(o.result, judge_result(second.choice, slot.other())));
                if let (Some(m1), Some(m2)) = (first.margin, second.margin) {
                    let (in_a, in_b) = if slot == Slot::A { (m1, m2) } else { (m2, m1) };
                    o.debiased_result = Some(debiased_result(in_a, in_b));
                }
                o.input_tokens += second.tokens.input_tokens;
                o.output_tokens += second.tokens.output_tokens;
                o.truncated_tokens += second.tokens.truncated_tokens;
                o.swapped_verdict = Some(second);
            }
            o.verdict = Some(first);
            o
        })
        .collect())
}

/// The pointwise request a reward model receives for `answer` of `ex` under `opts`' condition:
/// the structured input and the rendered conversation, checked by the leakage guard. Used by the
/// runner and by `prbench eval --preflight`.
/// `n_posts` caps the profile posts shown under `profile:k` (`None`: k).
///
/// # Errors
/// [`EvalError`] from prompt rendering, missing prepared inputs or the leakage guard.
pub fn rm_request(
    ex: &Example,
    answer: &str,
    opts: &EvalOptions,
    prompts: &Prompts,
    n_posts: Option<usize>,
) -> Result<RmRequest, EvalError> {
    let input = RmInput {
        example_id: ex.id.clone(),
        question: ex.question.clone(),
        context: opts.context_for(ex, n_posts)?,
        answer: answer.to_string(),
    };
    let prompt = prompts.reward_model(&input)?;
    opts.check_leak(ex, &prompt.all_text())?;
    Ok(RmRequest { input, prompt })
}

fn rm_chunk(
    chunk: &[&Example],
    rm: &dyn RewardModel,
    opts: &EvalOptions,
    prompts: &Prompts,
    model: &str,
) -> Result<Vec<Outcome>, EvalError> {
    let mut requests = Vec::with_capacity(chunk.len() * 2);
    let mut shown = Vec::with_capacity(chunk.len());
    for ex in chunk {
        let build = |n| {
            Ok(vec![
                rm_request(ex, &ex.chosen, opts, prompts, n)?,
                rm_request(ex, &ex.rejected, opts, prompts, n)?,
            ])
        };
        let (reqs, posts) = fitted(ex, opts, build, |r| rm.input_overflow(r))?;
        requests.extend(reqs);
        shown.push(posts);
    }
    let scores = rm.score_each(&requests, &|_, _| {});
    if scores.len() != requests.len() {
        return Err(EvalError::BackendShape {
            model: model.into(),
            got: scores.len(),
            expected: requests.len(),
        });
    }
    let mut scores = scores.into_iter();
    Ok(chunk
        .iter()
        .zip(shown)
        .map(|(ex, posts)| {
            let mut o = base_outcome(ex, opts, model, posts);
            let (chosen, rejected) =
                (scores.next().expect("length checked"), scores.next().expect("length checked"));
            let (chosen, rejected) = match (chosen, rejected) {
                (Ok(c), Ok(r)) => (c, r),
                (Err(e), _) | (_, Err(e)) => {
                    fail(&mut o, model, &ex.id, e);
                    return o;
                }
            };
            o.score_chosen = Some(chosen.value);
            o.score_rejected = Some(rejected.value);
            o.result = ItemResult::from_scores(f64::from(chosen.value), f64::from(rejected.value));
            o.input_tokens = chosen.tokens.input_tokens + rejected.tokens.input_tokens;
            o.output_tokens = chosen.tokens.output_tokens + rejected.tokens.output_tokens;
            o.truncated_tokens = chosen.tokens.truncated_tokens + rejected.tokens.truncated_tokens;
            o
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::largest_fitting;

    /// The search the runner did before: from `max` down one at a time until `fits` (0 accepted).
    fn linear(max: usize, fits: impl Fn(usize) -> bool) -> usize {
        let mut n = max;
        while n > 0 && !fits(n) {
            n -= 1;
        }
        n
    }

    #[test]
    fn binary_search_on_post_count_matches_dropping_posts_one_at_a_time() {
        // Post lengths in tokens (uneven, like real posts); an input with the top n posts has
        // a 40-token frame plus their lengths. Every budget from "nothing fits" to "all fit".
        let lengths: Vec<usize> = (0..37).map(|i| 5 + (i * 7919) % 53).collect();
        let total = |n: usize| 40 + lengths[..n].iter().sum::<usize>();
        for max in [0, 1, 2, 3, 10, 37] {
            for budget in 0..=total(37) + 1 {
                let fits = |n: usize| total(n) <= budget;
                let mut probes = 0;
                let (n, built) = largest_fitting(max, |n| {
                    probes += 1;
                    Ok((fits(n), n * 10))
                })
                .unwrap();
                assert_eq!(n, linear(max, fits), "max {max}, budget {budget}");
                assert_eq!(built, n * 10, "returns what was built for the chosen n");
                assert!(
                    probes <= 2 + (usize::BITS - max.leading_zeros()) as usize,
                    "{probes} probes for max {max}"
                );
            }
        }
    }
}
