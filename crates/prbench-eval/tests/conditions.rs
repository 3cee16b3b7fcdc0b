//! The four conditions end to end through the runner: what every backend kind receives under
//! `none`, `profile:k`, `planner` and `oracle`, and how `profile:k` drops the lowest-ranked posts
//! when an input would overflow the engine.

mod common;

use std::sync::{Arc, Mutex};

use common::{psoups, received, sample, Spy};
use prbench_data::{Example, ProfilePost};
use prbench_eval::condition::{Condition, ConditionInputs, PlannedAspects};
use prbench_eval::planner::Planner;
use prbench_eval::prompt::Prompts;
use prbench_eval::retrieve::bm25::Bm25Retriever;
use prbench_eval::retrieve::Retriever;
use prbench_eval::runner::{evaluate, Backend, EvalOptions, Silent};
use prbench_models::{
    ChatRequest, ChatResponse, Choice, Generator, Judge, JudgeRequest, ModelError, ModelIdentity,
    RewardModel, RmRequest, Score, TokenStats, Verdict,
};

/// A planner model that can only repeat what its prompt shows: one aspect per shown post,
/// made of that post's first five words. Whatever it writes comes from question + profile.
struct Echo;

impl Generator for Echo {
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        Ok(items
            .iter()
            .map(|r| {
                let user = &r.prompt.messages[1].content;
                let lines: Vec<&str> = user.lines().collect();
                let aspects: Vec<String> = lines
                    .windows(2)
                    .filter(|w| w[0].starts_with("[Post "))
                    .map(|w| {
                        format!(
                            "- {}",
                            w[1].split_whitespace().take(5).collect::<Vec<_>>().join(" ")
                        )
                    })
                    .collect();
                ChatResponse {
                    text: if aspects.is_empty() {
                        "- Answer plainly".into()
                    } else {
                        aspects.join("\n")
                    },
                    tokens: TokenStats::default(),
                    finish_reason: None,
                }
            })
            .collect())
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity { spec: "echo".into(), ..Default::default() }
    }
}

/// Ranked posts (BM25, as `prbench eval` does by default) and echo-planner aspects for `examples`.
fn prepared(examples: &[Example], planner_k: usize) -> ConditionInputs {
    let mut inputs = ConditionInputs::default();
    let bm25 = Bm25Retriever::default();
    for (ex, ranking) in examples.iter().zip(bm25.rank_all(examples).unwrap()) {
        inputs
            .ranked
            .insert(ex.id.clone(), ranking.posts(ex).unwrap().into_iter().cloned().collect());
    }
    inputs.retriever = Some(bm25.describe());
    let refs: Vec<&Example> = examples.iter().collect();
    let posts: Vec<Vec<&ProfilePost>> =
        examples.iter().map(|ex| inputs.ranked[&ex.id].iter().collect()).collect();
    let plans =
        Planner::new(&Echo, 42, planner_k).plan_all(&refs, &posts, &Prompts::new()).unwrap();
    for p in plans {
        assert!(p.is_usable(), "{p:?}");
        inputs.plans.insert(
            p.example_id.clone(),
            PlannedAspects { aspects: p.aspects, failure: None, error: None },
        );
    }
    inputs
}

fn hidden_leaks(ex: &Example, text: &str) -> Vec<String> {
    let mut leaks = Vec::new();
    if text.contains(ex.narrative.trim()) {
        leaks.push("narrative".to_string());
    }
    for a in &ex.rubric_aspects {
        for (field, t) in [("aspect", &a.aspect), ("evidence", &a.evidence), ("reason", &a.reason)]
        {
            let t = t.trim();
            // Evidence may quote a post verbatim (it says where in the profile the expectation
            // comes from); a quote of a visible post is not a leak.
            let visible = ex.profile.iter().any(|p| p.text.contains(t))
                || ex.question.contains(t)
                || ex.chosen.contains(t)
                || ex.rejected.contains(t);
            if t.chars().count() >= 4 && text.contains(t) && !visible {
                leaks.push(format!("{field} `{t}`"));
            }
        }
    }
    leaks
}

fn check_all_conditions(examples: &[Example]) {
    let inputs = Arc::new(prepared(examples, 10));
    // One example at a time, so each received text is known to belong to `ex` (P-Soups users
    // share questions).
    for ex in examples {
        for condition in
            [Condition::None, Condition::Profile { k: 3 }, Condition::Planner, Condition::Oracle]
        {
            for (kind, texts) in received(std::slice::from_ref(ex), condition, &inputs) {
                assert!(!texts.is_empty(), "{kind} under {condition} received nothing");
                for text in &texts {
                    let leaks = hidden_leaks(ex, text);
                    if condition.is_oracle() && kind != "profile baseline" {
                        for a in &ex.rubric_aspects {
                            assert!(
                                text.contains(a.aspect.trim()),
                                "oracle {kind}: aspect `{}` missing for {}",
                                a.aspect,
                                ex.id
                            );
                        }
                    } else if kind == "profile baseline" || !condition.is_oracle() {
                        assert!(
                            leaks.is_empty(),
                            "{kind} under {condition}: {leaks:?} of {} leaked",
                            ex.id
                        );
                    }
                    if kind == "profile baseline" {
                        continue;
                    }
                    match condition {
                        Condition::Profile { k } => {
                            let ranked = &inputs.ranked[&ex.id];
                            for (i, p) in ranked.iter().enumerate() {
                                let label = format!(
                                    "[Post {} · category: {}]\n{}",
                                    i + 1,
                                    p.category.trim(),
                                    p.text.trim()
                                );
                                assert_eq!(
                                    text.contains(&label),
                                    i < k,
                                    "{kind}: post rank {} of {} (k = {k})",
                                    i + 1,
                                    ex.id
                                );
                            }
                        }
                        Condition::Planner => {
                            for a in &inputs.plans[&ex.id].aspects {
                                assert!(
                                    text.contains(&format!("- {a}")),
                                    "{kind}: planned aspect `{a}` missing for {}",
                                    ex.id
                                );
                            }
                        }
                        Condition::None => assert!(
                            !text.contains("[Post ") && !text.contains("likely expects"),
                            "{kind}: none shows no context"
                        ),
                        Condition::Oracle => {}
                    }
                }
            }
        }
    }
}

#[test]
fn only_oracle_shows_hidden_text_for_every_condition_and_backend_kind() {
    check_all_conditions(&sample());
}

#[test]
fn only_oracle_shows_hidden_text_psoups() {
    let Some(examples) = psoups() else { return };
    check_all_conditions(&examples[..60]);
}

#[test]
fn under_planner_only_this_examples_plan_is_allowed_text() {
    // The guard treats an example's own planned aspects as visible (the planner's prompt passed
    // the guard); hidden text that no plan of this example carries is still a leak.
    let examples = sample();
    let (ex, other) = (&examples[0], &examples[1]);
    let mut inputs = ConditionInputs::default();
    inputs.plans.insert(
        ex.id.clone(),
        PlannedAspects { aspects: vec!["Short answers".into()], failure: None, error: None },
    );
    inputs.plans.insert(
        other.id.clone(),
        PlannedAspects { aspects: vec![ex.narrative.clone()], failure: None, error: None },
    );
    let allowed = Condition::Planner.allowed_texts(ex, &inputs);
    assert_eq!(allowed, vec!["Short answers"]);
    let leaky = format!("{}\n{}", ex.question, ex.narrative);
    let err =
        prbench_eval::leakage::check_with(ex, Condition::Planner, &leaky, &allowed).unwrap_err();
    assert!(err.to_string().contains("narrative"), "{err}");
    prbench_eval::leakage::check_with(
        ex,
        Condition::Planner,
        &format!("{}\n- Short answers", ex.question),
        &allowed,
    )
    .unwrap();
}

/// A backend with a budget in characters: `input_overflow` = characters of the rendered
/// prompt beyond `max_chars`. Records what it received.
struct Budget {
    max_chars: usize,
    seen: Mutex<Vec<String>>,
}

impl Budget {
    fn over(&self, text: &str) -> usize {
        text.chars().count().saturating_sub(self.max_chars)
    }
}

impl Judge for Budget {
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        let mut seen = self.seen.lock().unwrap();
        Ok(items
            .iter()
            .map(|r| {
                seen.push(r.prompt.all_text());
                Verdict {
                    choice: Choice::A,
                    p_a: None,
                    margin: None,
                    raw: String::new(),
                    tokens: TokenStats::default(),
                }
            })
            .collect())
    }
    fn input_overflow(&self, item: &JudgeRequest) -> Result<Option<usize>, ModelError> {
        Ok(Some(self.over(&item.prompt.all_text())))
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity { spec: "budget".into(), ..Default::default() }
    }
}

impl RewardModel for Budget {
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        let mut seen = self.seen.lock().unwrap();
        Ok(items
            .iter()
            .map(|r| {
                seen.push(r.prompt.all_text());
                Score { value: 0.0, tokens: TokenStats::default() }
            })
            .collect())
    }
    fn input_overflow(&self, item: &RmRequest) -> Result<Option<usize>, ModelError> {
        Ok(Some(self.over(&item.prompt.all_text())))
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity { spec: "budget".into(), ..Default::default() }
    }
}

/// One example whose four posts are ranked p3, p1, p4, p2 (best first); every post is 100
/// characters of its own letter.
fn four_posts() -> (Example, Arc<ConditionInputs>) {
    let mut ex = sample()[0].clone();
    let post = |id: &str, c: char| ProfilePost {
        id: id.into(),
        category: format!("cat{id}"),
        text: c.to_string().repeat(100),
    };
    ex.profile = vec![post("p1", 'a'), post("p2", 'b'), post("p3", 'c'), post("p4", 'd')];
    let mut inputs = ConditionInputs { retriever: Some("hand".into()), ..Default::default() };
    let by_id = |id: &str| ex.profile.iter().find(|p| p.id == id).unwrap().clone();
    inputs.ranked.insert(ex.id.clone(), vec![by_id("p3"), by_id("p1"), by_id("p4"), by_id("p2")]);
    (ex, Arc::new(inputs))
}

/// Characters of the longest rendered request of `ex` with `n` posts, under `opts`.
fn longest(ex: &Example, opts: &EvalOptions, n: usize, judge: bool) -> usize {
    let spy = Budget { max_chars: usize::MAX, seen: Mutex::new(Vec::new()) };
    let mut inputs = (*opts.inputs).clone();
    let ranked = inputs.ranked[&ex.id][..n].to_vec();
    inputs.ranked.insert(ex.id.clone(), ranked);
    let o = EvalOptions { inputs: Arc::new(inputs), ..opts.clone() };
    let backend = if judge { Backend::Judge(&spy) } else { Backend::RewardModel(&spy) };
    evaluate(std::slice::from_ref(ex), backend, &o, &Prompts::new(), &Silent).unwrap();
    spy.seen.into_inner().unwrap().iter().map(|t| t.chars().count()).max().unwrap()
}

#[test]
fn profile_drops_the_lowest_ranked_posts_until_the_input_fits() {
    let (ex, inputs) = four_posts();
    for judge in [true, false] {
        let opts = EvalOptions {
            both_orders: judge,
            inputs: inputs.clone(),
            ..EvalOptions::new(Condition::Profile { k: 4 })
        };
        // A budget between the 2-post and the 3-post input keeps exactly the top two.
        let (two, three) = (longest(&ex, &opts, 2, judge), longest(&ex, &opts, 3, judge));
        assert!(three > two + 100);
        let budget = Budget { max_chars: two + 10, seen: Mutex::new(Vec::new()) };
        let backend = if judge { Backend::Judge(&budget) } else { Backend::RewardModel(&budget) };
        let out =
            evaluate(std::slice::from_ref(&ex), backend, &opts, &Prompts::new(), &Silent).unwrap();
        assert_eq!((out[0].posts_shown, out[0].posts_dropped), (Some(2), 2), "judge = {judge}");
        let seen = budget.seen.into_inner().unwrap();
        assert_eq!(seen.len(), 2, "both orders / both answers");
        for text in &seen {
            // Ranks 1 and 2 are p3 (c…) and p1 (a…); p4 (d…) and p2 (b…) were dropped.
            assert!(text.contains(&"c".repeat(100)) && text.contains(&"a".repeat(100)));
            assert!(!text.contains(&"d".repeat(100)) && !text.contains(&"b".repeat(100)));
            assert!(
                text.contains("[Post 1 · category: catp3]")
                    && text.contains("[Post 2 · category: catp1]")
            );
        }
        // A budget nothing fits: every post is dropped and the item still goes to the backend
        // (which reports its own overflow), never silently skipped.
        let tiny = Budget { max_chars: 1, seen: Mutex::new(Vec::new()) };
        let backend = if judge { Backend::Judge(&tiny) } else { Backend::RewardModel(&tiny) };
        let out =
            evaluate(std::slice::from_ref(&ex), backend, &opts, &Prompts::new(), &Silent).unwrap();
        assert_eq!((out[0].posts_shown, out[0].posts_dropped), (Some(0), 4));
        assert_eq!(tiny.seen.into_inner().unwrap().len(), 2);
        // k below the profile size: only k are candidates, none dropped when all fit.
        let roomy = Budget { max_chars: usize::MAX, seen: Mutex::new(Vec::new()) };
        let o3 = EvalOptions { condition: Condition::Profile { k: 3 }, ..opts.clone() };
        let backend = if judge { Backend::Judge(&roomy) } else { Backend::RewardModel(&roomy) };
        let out =
            evaluate(std::slice::from_ref(&ex), backend, &o3, &Prompts::new(), &Silent).unwrap();
        assert_eq!((out[0].posts_shown, out[0].posts_dropped), (Some(3), 0));
    }
}

#[test]
fn an_engine_that_cannot_count_gets_all_k_posts() {
    let (ex, inputs) = four_posts();
    let opts = EvalOptions { inputs, ..EvalOptions::new(Condition::Profile { k: 10 }) };
    let spy = Spy::default();
    let out = evaluate(
        std::slice::from_ref(&ex),
        Backend::RewardModel(&spy),
        &opts,
        &Prompts::new(),
        &Silent,
    )
    .unwrap();
    assert_eq!((out[0].posts_shown, out[0].posts_dropped), (Some(4), 0));
}

#[test]
fn missing_prepared_inputs_are_an_error_not_an_empty_context() {
    let examples = sample();
    for condition in [Condition::Profile { k: 3 }, Condition::Planner] {
        let err = evaluate(
            &examples,
            Backend::RewardModel(&Spy::default()),
            &EvalOptions::new(condition),
            &Prompts::new(),
            &Silent,
        )
        .unwrap_err();
        assert!(err.to_string().contains(&examples[0].id), "{err}");
    }
}

#[test]
fn a_failed_plan_is_scored_without_context_and_flagged() {
    let examples = sample();
    let mut inputs = prepared(&examples, 10);
    inputs.plans.insert(
        examples[0].id.clone(),
        PlannedAspects { aspects: vec![], failure: Some("no list".into()), error: None },
    );
    let opts = EvalOptions { inputs: Arc::new(inputs), ..EvalOptions::new(Condition::Planner) };
    let spy = Spy::default();
    let out = evaluate(&examples[..2], Backend::RewardModel(&spy), &opts, &Prompts::new(), &Silent)
        .unwrap();
    assert!(out[0].planner_failed && !out[1].planner_failed);
    let seen = spy.seen.into_inner().unwrap();
    assert!(!seen[0].contains("likely expects") && seen[2].contains("likely expects"));
}

#[test]
fn fitting_posts_by_binary_search_matches_a_brute_force_scan_for_every_budget() {
    // Twelve posts of uneven lengths, ranked in dataset order.
    let mut ex = sample()[0].clone();
    ex.profile = (0..12)
        .map(|i| ProfilePost {
            id: format!("p{i}"),
            category: "c".into(),
            text: "w ".repeat(3 + (i * 37) % 41).trim().to_string(),
        })
        .collect();
    let inputs = Arc::new(ConditionInputs {
        ranked: [(ex.id.clone(), ex.profile.clone())].into(),
        ..Default::default()
    });
    for judge in [true, false] {
        let opts = EvalOptions {
            both_orders: judge,
            inputs: inputs.clone(),
            ..EvalOptions::new(Condition::Profile { k: 12 })
        };
        // Brute force: the longest input with the top n posts, for every n.
        let lengths: Vec<usize> = (0..=12).map(|n| longest(&ex, &opts, n, judge)).collect();
        let (lo, hi) = (lengths[0], lengths[12]);
        for max_chars in (lo.saturating_sub(5)..=hi + 5).step_by(7) {
            let expected = (1..=12).rev().find(|&n| lengths[n] <= max_chars).unwrap_or(0);
            let budget = Budget { max_chars, seen: Mutex::new(Vec::new()) };
            let backend =
                if judge { Backend::Judge(&budget) } else { Backend::RewardModel(&budget) };
            let out = evaluate(std::slice::from_ref(&ex), backend, &opts, &Prompts::new(), &Silent)
                .unwrap();
            assert_eq!(
                (out[0].posts_shown, out[0].posts_dropped),
                (Some(expected), 12 - expected),
                "budget {max_chars}, judge {judge}"
            );
            // What the backend received has exactly those posts.
            for text in budget.seen.into_inner().unwrap() {
                assert_eq!(text.contains(&format!("[Post {expected} ·")), expected > 0);
                assert!(!text.contains(&format!("[Post {} ·", expected + 1)));
            }
        }
    }
}
