//! Scoring Best-of-N samples with the reward model under test (`bon score`).

use std::collections::HashMap;

use prbench_data::Example;
use prbench_eval::condition::{full_profile_text, Condition, ConditionInputs};
use prbench_eval::prompt::Prompts;
use prbench_eval::{leakage, EvalError};
use prbench_models::{RewardModel, RmInput, RmRequest, TokenStats};
use serde::{Deserialize, Serialize};

use super::error::BonError;
use super::sample::BonSample;

/// One sample's reward; one per line of a scores file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BonScore {
    /// The example.
    pub example_id: String,
    /// The sample scored (0-based).
    pub sample_index: usize,
    /// The reward model's score (higher is better; the model's own units); `None` on error.
    pub score: Option<f64>,
    /// Why there is no score (engine failure, unparsed rating, or no sample).
    pub error: Option<String>,
    /// Input tokens, and tokens the model cut to fit its context (counted, never silent).
    pub tokens: TokenStats,
}

/// The per-sample example id a reward model sees: `<example id>#<sample index>`, so seeded
/// baselines (`baseline:random`) draw independently for each sample.
pub fn sample_item_id(example_id: &str, sample_index: usize) -> String {
    format!("{example_id}#{sample_index}")
}

/// What a reward model sees besides the question and the sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BonContext {
    /// The condition's context (`none`, `profile:k` or `oracle`; not `planner`).
    Condition(Condition),
    /// The user's whole profile, whatever the condition: the lexical profile-overlap baseline
    /// (as in `prbench eval`).
    FullProfile,
}

/// The reward-model request for one sample, checked by the leakage guard with the sample's
/// own text as visible.
///
/// # Errors
/// Rendering, missing ranked posts, leakage, or [`BonError::Mismatch`] for `planner`.
pub fn request_for(
    ex: &Example,
    sample: &BonSample,
    context: BonContext,
    inputs: &ConditionInputs,
    prompts: &Prompts,
) -> Result<RmRequest, BonError> {
    let (condition, context) = match context {
        BonContext::Condition(c) => (c, c.context(ex, inputs, None)?),
        BonContext::FullProfile => (Condition::None, Some(full_profile_text(ex))),
    };
    if condition == Condition::Planner {
        return Err(BonError::Mismatch {
            what: "condition `planner`".into(),
            reason: "`bon score` scores under none, profile:k or oracle; the planner condition is not supported for Best-of-N yet".into(),
        });
    }
    let input = RmInput {
        example_id: sample_item_id(&ex.id, sample.sample_index),
        question: ex.question.clone(),
        context,
        answer: sample.text.clone(),
    };
    let prompt = prompts.reward_model(&input)?;
    leakage::check_with(ex, condition, &prompt.all_text(), &[sample.text.as_str()])?;
    Ok(RmRequest { input, prompt })
}

/// Scores every sample, `batch` per call through [`RewardModel::score_each`] (one result per
/// item; a failing item does not sink the others), one example's samples in one call where they
/// fit ([`calls_by_example`]: they share the prompt, which a reward model can run once). Samples whose generation failed get a
/// score record with `error` and no call. `progress(done)` runs after each batch.
///
/// # Errors
/// As [`request_for`] (all requests are built before the first call);
/// [`EvalError::BackendShape`] when the model returns the wrong number of results.
pub fn score_all(
    examples: &HashMap<&str, &Example>,
    samples: &[BonSample],
    rm: &dyn RewardModel,
    context: BonContext,
    inputs: &ConditionInputs,
    batch: usize,
    progress: &dyn Fn(usize),
) -> Result<Vec<BonScore>, BonError> {
    let prompts = Prompts::new();
    let mut out: Vec<Option<BonScore>> = vec![None; samples.len()];
    let mut todo = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        if let Some(e) = &s.error {
            out[i] = Some(BonScore {
                example_id: s.example_id.clone(),
                sample_index: s.sample_index,
                score: None,
                error: Some(format!("no sample to score (its generation failed: {e})")),
                tokens: TokenStats::default(),
            });
            continue;
        }
        let ex = examples.get(s.example_id.as_str()).ok_or_else(|| BonError::Mismatch {
            what: format!("sample {} of example `{}`", s.sample_index, s.example_id),
            reason: "the dataset has no such example; pass the dataset the samples were drawn from"
                .into(),
        })?;
        todo.push((i, request_for(ex, s, context, inputs, &prompts)?));
    }
    let model = rm.identity().spec;
    let mut done = samples.len() - todo.len();
    let ids: Vec<&str> = todo.iter().map(|(i, _)| samples[*i].example_id.as_str()).collect();
    for call in calls_by_example(&ids, batch) {
        let chunk: Vec<&(usize, RmRequest)> = call.iter().map(|&k| &todo[k]).collect();
        let reqs: Vec<RmRequest> = chunk.iter().map(|(_, r)| r.clone()).collect();
        let results = rm.score_each(&reqs, &|_, _| {});
        if results.len() != chunk.len() {
            return Err(EvalError::BackendShape {
                model,
                got: results.len(),
                expected: chunk.len(),
            }
            .into());
        }
        for (&&(i, _), r) in chunk.iter().zip(results) {
            let s = &samples[i];
            out[i] = Some(match r {
                Ok(score) if score.value.is_finite() => BonScore {
                    example_id: s.example_id.clone(),
                    sample_index: s.sample_index,
                    score: Some(f64::from(score.value)),
                    error: None,
                    tokens: score.tokens,
                },
                Ok(score) => BonScore {
                    example_id: s.example_id.clone(),
                    sample_index: s.sample_index,
                    score: None,
                    error: Some(format!("the model returned a non-finite score ({})", score.value)),
                    tokens: score.tokens,
                },
                Err(e) => BonScore {
                    example_id: s.example_id.clone(),
                    sample_index: s.sample_index,
                    score: None,
                    error: Some(prbench_models::error::chain(&e)),
                    tokens: TokenStats::default(),
                },
            });
        }
        done += chunk.len();
        progress(done);
    }
    Ok(out.into_iter().map(|s| s.expect("every sample gets a record")).collect())
}

/// Splits items (given by example id) into calls of at most `batch` (≥ 1) indices, keeping one
/// example's items together: examples in order of first appearance, whole examples packed into
/// a call while they fit, an example with more than `batch` items cut into `batch`-sized pieces.
pub fn calls_by_example(example_ids: &[&str], batch: usize) -> Vec<Vec<usize>> {
    let batch = batch.max(1);
    let mut order: Vec<&str> = Vec::new();
    let mut by_id: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, id) in example_ids.iter().enumerate() {
        by_id
            .entry(id)
            .or_insert_with(|| {
                order.push(id);
                Vec::new()
            })
            .push(k);
    }
    let (mut calls, mut current) = (Vec::new(), Vec::new());
    for id in order {
        for piece in by_id[id].chunks(batch) {
            if current.len() + piece.len() > batch {
                calls.push(std::mem::take(&mut current));
            }
            current.extend_from_slice(piece);
        }
    }
    if !current.is_empty() {
        calls.push(current);
    }
    calls
}

#[cfg(test)]
mod call_tests {
    use super::calls_by_example;

    #[test]
    fn one_examples_samples_share_a_call() {
        // a, b interleaved (a failed sample removed), c with more samples than a call holds.
        let ids = ["a", "b", "a", "b", "a", "c", "c", "c", "c", "c"];
        assert_eq!(
            calls_by_example(&ids, 4),
            vec![vec![0, 2, 4], vec![1, 3], vec![5, 6, 7, 8], vec![9]]
        );
        assert_eq!(calls_by_example(&ids, 5), vec![vec![0, 2, 4, 1, 3], vec![5, 6, 7, 8, 9]]);
        assert_eq!(calls_by_example(&ids, 1).len(), 10);
        assert!(calls_by_example(&[], 3).is_empty());
    }
}
