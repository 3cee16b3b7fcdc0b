//! The rubric judge (PROTOCOL.md §6): for each ground-truth aspect of an example, a coverage
//! score 0 (absent), 1 (partly) or 2 (well) for one answer; the answer's score is the mean
//! over aspects, on 0–2 (and /2 on 0–1).
//!
//! Two ways to get the scores, both at temperature 0:
//! - **generate**: one greedy reply listing every aspect's score, read by
//!   [`parse_rubric_reply`] (exactly one score per aspect, or the judgement is unparsed and
//!   counted; never 0).
//! - **logprob**: one prompt per aspect ending in `Score: `; the score is the most probable of
//!   the next tokens `0`, `1`, `2` (greedy decoding restricted to the three valid answers;
//!   never unparsed). The three probabilities, renormalised over the candidates, are kept.

use prbench_data::Example;
use prbench_models::{ChatRequest, Generator, ModelError, NextTokenScorer, TokenStats};
use serde::{Deserialize, Serialize};

use super::error::BonError;
use super::prompts::BonPrompts;
use super::rubric_parse::parse_rubric_reply;
use super::sample::BonSample;

/// The candidate next tokens of a logprob rubric judgement, in score order.
pub const SCORE_TOKENS: [&str; 3] = ["0", "1", "2"];

/// Where the rubric judge's scores come from.
#[derive(Clone, Copy)]
pub enum RubricEngine<'a> {
    /// One greedy reply per answer, read strictly.
    Generate {
        /// The judge model.
        generator: &'a dyn Generator,
        /// New-token budget of the reply.
        max_new_tokens: usize,
    },
    /// The most probable of `0`/`1`/`2` after `Score: `, one prompt per aspect.
    Logprob(&'a dyn NextTokenScorer),
}

impl RubricEngine<'_> {
    /// `generate` or `logprob`, for manifests.
    pub fn mode(&self) -> &'static str {
        match self {
            RubricEngine::Generate { .. } => "generate",
            RubricEngine::Logprob(_) => "logprob",
        }
    }
}

/// One answer's rubric judgement; one per line of a judgements file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RubricJudgement {
    /// The example.
    pub example_id: String,
    /// The sample judged (0-based).
    pub sample_index: usize,
    /// Rubric aspects of the example (the length `scores` must have).
    pub aspects: usize,
    /// Coverage score per aspect, in rubric order (0, 1 or 2); `None` when unparsed or failed.
    pub scores: Option<Vec<u8>>,
    /// Logprob mode: per aspect, the probabilities of 0, 1 and 2 renormalised over the three.
    pub probabilities: Option<Vec<[f64; 3]>>,
    /// Generate mode: the judge's reply.
    pub raw: String,
    /// Why the reply was not one score per aspect (counted; the sample has no rubric score).
    pub unparsed: Option<String>,
    /// The judge failed (engine error), or the sample itself has none (its generation failed).
    pub error: Option<String>,
    /// Tokens over all the judge's calls for this answer.
    pub tokens: TokenStats,
}

impl RubricJudgement {
    /// Whether the record is consistent: scores (when present) are one per aspect, each 0, 1 or
    /// 2; probabilities (when present) one triple per score; exactly one of scores, unparsed and
    /// error.
    ///
    /// # Errors
    /// What is wrong, for an error naming the record.
    pub fn check(&self) -> Result<(), String> {
        let states = usize::from(self.scores.is_some())
            + usize::from(self.unparsed.is_some())
            + usize::from(self.error.is_some());
        if states != 1 {
            return Err("a judgement holds exactly one of `scores`, `unparsed` and `error`".into());
        }
        if let Some(s) = &self.scores {
            if s.len() != self.aspects || s.is_empty() {
                return Err(format!("{} scores for {} rubric aspects", s.len(), self.aspects));
            }
            if let Some(bad) = s.iter().find(|&&x| x > 2) {
                return Err(format!("score {bad} is not 0, 1 or 2"));
            }
            if self.probabilities.as_ref().is_some_and(|p| p.len() != s.len()) {
                return Err("one probability triple per score expected".into());
            }
        }
        Ok(())
    }

    /// The mean coverage score over aspects on 0–2, when there are scores.
    pub fn mean(&self) -> Option<f64> {
        let s = self.scores.as_ref().filter(|s| !s.is_empty())?;
        Some(s.iter().map(|&x| f64::from(x)).sum::<f64>() / s.len() as f64)
    }

    fn empty(example_id: &str, sample_index: usize, aspects: usize) -> Self {
        Self {
            example_id: example_id.into(),
            sample_index,
            aspects,
            scores: None,
            probabilities: None,
            raw: String::new(),
            unparsed: None,
            error: None,
            tokens: TokenStats::default(),
        }
    }
}

/// The index of the largest value (the first one on an exact tie, i.e. the lower score) and
/// the values' softmax.
fn argmax_softmax(logprobs: &[f32]) -> (usize, [f64; 3]) {
    let m = logprobs.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(f64::from(x)));
    let e: Vec<f64> = logprobs.iter().map(|&x| (f64::from(x) - m).exp()).collect();
    let z: f64 = e.iter().sum();
    let mut best = 0;
    for (i, &x) in logprobs.iter().enumerate() {
        if x > logprobs[best] {
            best = i;
        }
    }
    (best, [e[0] / z, e[1] / z, e[2] / z])
}

/// Checks, before any model is loaded or called, that every sample's example is in
/// `examples` and has at least one rubric aspect (the judge has nothing to score otherwise).
///
/// # Errors
/// [`BonError::Mismatch`] naming the first missing example, or every example without a
/// rubric aspect (with its subset and how many samples it has), and what to do.
pub fn check_examples(
    examples: &std::collections::HashMap<&str, &Example>,
    samples: &[BonSample],
) -> Result<(), BonError> {
    let mut empty: Vec<(&str, &str, usize)> = Vec::new();
    for s in samples {
        let ex = examples.get(s.example_id.as_str()).ok_or_else(|| BonError::Mismatch {
            what: format!("sample {} of example `{}`", s.sample_index, s.example_id),
            reason: "the dataset has no such example; pass the dataset the samples were drawn from"
                .into(),
        })?;
        if ex.rubric_aspects.is_empty() {
            match empty.iter_mut().find(|(id, _, _)| *id == ex.id) {
                Some(e) => e.2 += 1,
                None => empty.push((&ex.id, &ex.subset, 1)),
            }
        }
    }
    if empty.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = empty
        .iter()
        .map(|(id, subset, n)| {
            format!("`{id}` ({subset}, {n} sample{})", if *n == 1 { "" } else { "s" })
        })
        .collect();
    Err(BonError::Mismatch {
        what: format!("{} example{} without rubric aspects: {}", empty.len(), if empty.len() == 1 { "" } else { "s" }, named.join(", ")),
        reason: "the rubric judge scores an answer per hidden rubric aspect and has nothing to score for these; nothing was judged. Add their rubric aspects to the dataset (then pass it with --data), or sample again from examples that have a rubric".into(),
    })
}

/// Judges every sample against its example's rubric, in order. `examples` must hold the
/// example of every sample (matched by id), each with a rubric aspect: [`check_examples`] runs
/// first, so nothing is judged when one is missing. Samples whose generation failed get a
/// judgement with `error` set and no call. `progress(done)` is called after each sample.
///
/// # Errors
/// As [`check_examples`]; template errors. Engine failures on one sample are recorded in its
/// judgement.
pub fn judge_all(
    examples: &std::collections::HashMap<&str, &Example>,
    samples: &[BonSample],
    engine: RubricEngine<'_>,
    progress: &dyn Fn(usize),
) -> Result<Vec<RubricJudgement>, BonError> {
    check_examples(examples, samples)?;
    let prompts = BonPrompts::new();
    let mut out = Vec::with_capacity(samples.len());
    if let RubricEngine::Generate { generator, max_new_tokens } = engine {
        return judge_all_generated(examples, samples, generator, max_new_tokens, progress);
    }
    for s in samples {
        let ex = examples[s.example_id.as_str()];
        let mut j = RubricJudgement::empty(&s.example_id, s.sample_index, ex.rubric_aspects.len());
        if let Some(e) = &s.error {
            j.error = Some(no_sample(e));
        } else if let RubricEngine::Logprob(scorer) = engine {
            judge_aspects(ex, &s.text, scorer, &prompts, &mut j)?;
        }
        out.push(j);
        progress(out.len());
    }
    Ok(out)
}

/// Samples a generating rubric judge gets in one call, so that an engine decoding several
/// sequences together (`--gen-batch`) has that many to fill its slots with, and progress
/// moves after each call.
const GENERATE_CALL: usize = 16;

fn no_sample(error: &str) -> String {
    format!("no sample to judge (its generation failed: {error})")
}

/// [`judge_all`] with a generating judge: the rubric prompts of up to [`GENERATE_CALL`]
/// samples per [`Generator::generate_each`] call, each reply read by [`parse_rubric_reply`].
fn judge_all_generated(
    examples: &std::collections::HashMap<&str, &Example>,
    samples: &[BonSample],
    generator: &dyn Generator,
    max_new_tokens: usize,
    progress: &dyn Fn(usize),
) -> Result<Vec<RubricJudgement>, BonError> {
    let prompts = BonPrompts::new();
    let mut out: Vec<RubricJudgement> = samples
        .iter()
        .map(|s| {
            let n = examples[s.example_id.as_str()].rubric_aspects.len();
            let mut j = RubricJudgement::empty(&s.example_id, s.sample_index, n);
            j.error = s.error.as_deref().map(no_sample);
            j
        })
        .collect();
    let todo: Vec<usize> = (0..samples.len()).filter(|&i| samples[i].error.is_none()).collect();
    let mut done = samples.len() - todo.len();
    progress(done);
    for call in todo.chunks(GENERATE_CALL) {
        let mut requests = Vec::with_capacity(call.len());
        for &i in call {
            let s = &samples[i];
            let ex = examples[s.example_id.as_str()];
            let prompt = prompts.rubric(&ex.question, &ex.rubric_aspects, &s.text)?;
            requests.push(ChatRequest {
                prompt,
                max_new_tokens,
                temperature: 0.0,
                top_p: 1.0,
                seed: 0,
            });
        }
        let replies = generator.generate_each(&requests, &|_, _| {});
        if replies.len() != call.len() {
            return Err(BonError::Eval(prbench_eval::EvalError::BackendShape {
                model: generator.identity().spec,
                got: replies.len(),
                expected: call.len(),
            }));
        }
        for (&i, reply) in call.iter().zip(replies) {
            let aspects = examples[samples[i].example_id.as_str()].rubric_aspects.len();
            let j = &mut out[i];
            match reply {
                Ok(reply) => {
                    j.tokens = reply.tokens;
                    match parse_rubric_reply(&reply.text, aspects) {
                        Ok(scores) => j.scores = Some(scores),
                        Err(why) => j.unparsed = Some(why),
                    }
                    j.raw = reply.text;
                }
                Err(e) => j.error = Some(prbench_models::error::chain(&e)),
            }
        }
        done += call.len();
        progress(done);
    }
    Ok(out)
}

/// The logprob rubric judge on one answer: each aspect's 0/1/2 read from the next-token
/// log-probabilities of its own prompt.
fn judge_aspects(
    ex: &Example,
    answer: &str,
    scorer: &dyn NextTokenScorer,
    prompts: &BonPrompts,
    j: &mut RubricJudgement,
) -> Result<(), BonError> {
    let mut scores = Vec::with_capacity(ex.rubric_aspects.len());
    let mut probs = Vec::with_capacity(ex.rubric_aspects.len());
    for aspect in &ex.rubric_aspects {
        let prompt = prompts.rubric_aspect(&ex.question, aspect, answer)?;
        match scorer.next_token_logprobs(&prompt, &SCORE_TOKENS) {
            Ok((lp, tokens)) if lp.len() == 3 => {
                let (best, p) = argmax_softmax(&lp);
                scores.push(best as u8);
                probs.push(p);
                j.tokens.input_tokens += tokens.input_tokens;
                j.tokens.truncated_tokens += tokens.truncated_tokens;
            }
            Ok((lp, _)) => {
                j.error = Some(
                    ModelError::Engine(format!("{} log-probabilities for 3 candidates", lp.len()))
                        .to_string(),
                );
                return Ok(());
            }
            Err(e) => {
                j.error = Some(prbench_models::error::chain(&e));
                return Ok(());
            }
        }
    }
    j.scores = Some(scores);
    j.probabilities = Some(probs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_takes_the_most_probable_score_and_softmax_sums_to_one() {
        let (best, p) = argmax_softmax(&[(0.2f32).ln(), (0.5f32).ln(), (0.1f32).ln()]);
        assert_eq!(best, 1);
        assert!(
            (p[0] - 0.25).abs() < 1e-6
                && (p[1] - 0.625).abs() < 1e-6
                && (p[2] - 0.125).abs() < 1e-6
        );
        // An exact tie goes to the lower score.
        assert_eq!(argmax_softmax(&[-1.0, -3.0, -1.0]).0, 0);
    }

    use prbench_data::RubricAspect;
    use prbench_eval::cache::{Cache, CacheCounters};
    use prbench_eval::cached_scorer::CachedNextTokenScorer;
    use prbench_models::{ChatPrompt, ModelIdentity};
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn example(id: &str, aspects: &[&str]) -> Example {
        prbench_data::ExampleBuilder::new(id)
            .subset("Art_and_Entertainment")
            .question(format!("question {id}"))
            .aspects(aspects.iter().map(|a| RubricAspect::new(*a, "e", "r")))
            .narrative("n")
            .category("c")
            .chosen("x")
            .rejected("y")
            .build()
    }

    fn sample(id: &str, i: usize, text: &str) -> BonSample {
        BonSample {
            example_id: id.into(),
            subset: "Art_and_Entertainment".into(),
            sample_index: i,
            seed: i as u64,
            text: text.into(),
            posts_shown: 0,
            posts_dropped: 0,
            tokens: TokenStats::default(),
            hit_max_new_tokens: false,
            error: None,
        }
    }

    /// Log-probabilities that depend on the prompt text, counting calls; fails every call after
    /// `fail_after` of them (a run that stops halfway).
    struct Scorer {
        calls: AtomicUsize,
        fail_after: usize,
    }

    impl NextTokenScorer for Scorer {
        fn next_token_logprobs(
            &self,
            prompt: &ChatPrompt,
            candidates: &[&str],
        ) -> Result<(Vec<f32>, TokenStats), ModelError> {
            if self.calls.fetch_add(1, Ordering::Relaxed) >= self.fail_after {
                return Err(ModelError::Engine("stopped".into()));
            }
            let h = prompt
                .all_text()
                .bytes()
                .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
            Ok((
                (0..candidates.len()).map(|i| -(((h >> (4 * i)) % 16) as f32) / 4.0).collect(),
                TokenStats { input_tokens: 10, ..TokenStats::default() },
            ))
        }
        fn identity(&self) -> ModelIdentity {
            ModelIdentity {
                spec: "stub".into(),
                engine: "stub".into(),
                file_hash: "h".into(),
                ..ModelIdentity::default()
            }
        }
    }

    #[test]
    fn empty_rubrics_are_refused_up_front_naming_every_example_before_any_call() {
        let exs = [example("a", &["x"]), example("b", &[]), example("c", &[])];
        let by_id: HashMap<&str, &Example> = exs.iter().map(|e| (e.id.as_str(), e)).collect();
        let samples =
            [sample("a", 0, "s"), sample("b", 0, "s"), sample("b", 1, "s"), sample("c", 0, "s")];
        let scorer = Scorer { calls: AtomicUsize::new(0), fail_after: usize::MAX };
        let err = judge_all(&by_id, &samples, RubricEngine::Logprob(&scorer), &|_| {})
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("2 examples without rubric aspects: `b` (Art_and_Entertainment, 2 samples), `c` (Art_and_Entertainment, 1 sample): "), "{err}");
        assert!(err.contains("nothing was judged"), "{err}");
        assert_eq!(
            scorer.calls.load(Ordering::Relaxed),
            0,
            "example `a` comes first and was not judged either"
        );
        assert!(check_examples(&by_id, &samples[..1]).is_ok());
    }

    #[test]
    fn logprob_judgements_resume_from_the_cache_without_repeating_a_call() {
        let exs = [example("a", &["x", "y"]), example("b", &["z"])];
        let by_id: HashMap<&str, &Example> = exs.iter().map(|e| (e.id.as_str(), e)).collect();
        let samples = [
            sample("a", 0, "one"),
            sample("a", 1, "two"),
            sample("b", 0, "three"),
            sample("b", 1, "four"),
        ];
        let calls = 2 + 2 + 1 + 1; // one per (sample, aspect)
        let fresh = Scorer { calls: AtomicUsize::new(0), fail_after: usize::MAX };
        let whole = judge_all(&by_id, &samples, RubricEngine::Logprob(&fresh), &|_| {}).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        // A run that stops after 3 calls: what it computed is in the cache.
        let stopping = Scorer { calls: AtomicUsize::new(0), fail_after: 3 };
        let counters = CacheCounters::default();
        let partial = judge_all(
            &by_id,
            &samples,
            RubricEngine::Logprob(&CachedNextTokenScorer::new(&stopping, &cache, &counters)),
            &|_| {},
        )
        .unwrap();
        assert!(partial[1].error.is_some() && partial[0] == whole[0]);
        // Resumed: the 3 stored results are hits, only the other calls reach the model, and the
        // judgements equal an uninterrupted run's.
        let resumed_model = Scorer { calls: AtomicUsize::new(0), fail_after: usize::MAX };
        let counters = CacheCounters::default();
        let resumed = judge_all(
            &by_id,
            &samples,
            RubricEngine::Logprob(&CachedNextTokenScorer::new(&resumed_model, &cache, &counters)),
            &|_| {},
        )
        .unwrap();
        assert_eq!(resumed, whole);
        let r = counters.report(&cache);
        assert_eq!((r.hits, r.calls), (3, calls - 3));
        assert_eq!(resumed_model.calls.load(Ordering::Relaxed) as u64, calls - 3);
        // Once more: every call is a hit.
        let idle = Scorer { calls: AtomicUsize::new(0), fail_after: 0 };
        let counters = CacheCounters::default();
        let again = judge_all(
            &by_id,
            &samples,
            RubricEngine::Logprob(&CachedNextTokenScorer::new(&idle, &cache, &counters)),
            &|_| {},
        )
        .unwrap();
        assert_eq!(again, whole);
        assert_eq!((counters.report(&cache).hits, idle.calls.load(Ordering::Relaxed)), (calls, 0));
    }

    #[test]
    fn mean_is_over_aspects_on_zero_to_two() {
        let mut j = RubricJudgement::empty("e", 0, 4);
        assert_eq!(j.mean(), None);
        j.scores = Some(vec![2, 1, 0, 2]);
        assert_eq!(j.mean(), Some(1.25));
    }
}
