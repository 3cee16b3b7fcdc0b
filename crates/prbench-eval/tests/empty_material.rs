//! An example with nothing to show under its condition (an empty profile under `profile:k`, an
//! empty rubric under `oracle`) is rendered exactly as under `none`, and counted in outcomes,
//! summary.json and summary.md.

mod common;

use std::sync::Arc;

use common::{sample, Spy};
use prbench_data::{Dataset, Example};
use prbench_eval::condition::{Condition, ConditionInputs, EmptyMaterial};
use prbench_eval::prompt::Prompts;
use prbench_eval::run::{run, RunConfig};
use prbench_eval::runner::{evaluate, Backend, EvalOptions, Silent};
use prbench_models::baselines::Baseline;
use prbench_stats::bootstrap::BootstrapConfig;

/// The bundled sample with the first example's profile and the second one's rubric emptied;
/// ranked posts are the profiles in dataset order.
fn with_empties() -> (Vec<Example>, Arc<ConditionInputs>) {
    let mut examples = sample();
    examples[0].profile.clear();
    examples[1].rubric_aspects.clear();
    let mut inputs =
        ConditionInputs { retriever: Some("dataset order".into()), ..Default::default() };
    for ex in &examples {
        inputs.ranked.insert(ex.id.clone(), ex.profile.clone());
    }
    (examples, Arc::new(inputs))
}

/// Every text a judge (both orders) and a reward model received for `ex` under `condition`.
fn rendered(ex: &Example, condition: Condition, inputs: &Arc<ConditionInputs>) -> Vec<String> {
    let mut out = Vec::new();
    for judge in [true, false] {
        let spy = Spy::default();
        let opts = EvalOptions {
            both_orders: judge,
            inputs: inputs.clone(),
            ..EvalOptions::new(condition)
        };
        let backend = if judge { Backend::Judge(&spy) } else { Backend::RewardModel(&spy) };
        evaluate(std::slice::from_ref(ex), backend, &opts, &Prompts::new(), &Silent).unwrap();
        out.extend(spy.seen.into_inner().unwrap());
    }
    out
}

#[test]
fn an_empty_profile_under_profile_k_renders_exactly_as_none() {
    let (examples, inputs) = with_empties();
    let ex = &examples[0];
    let none = rendered(ex, Condition::None, &inputs);
    let profile = rendered(ex, Condition::Profile { k: 5 }, &inputs);
    assert_eq!(profile, none);
    assert!(profile
        .iter()
        .all(|t| !t.contains("Posts this user wrote") && !t.contains("none fit")));
    assert_eq!(
        Condition::Profile { k: 5 }.empty_material(ex, &inputs),
        Some(EmptyMaterial::Profile)
    );
    assert_eq!(Condition::Profile { k: 5 }.empty_material(&examples[2], &inputs), None);
    // A non-empty example still shows its posts.
    assert!(rendered(&examples[2], Condition::Profile { k: 5 }, &inputs)
        .iter()
        .all(|t| t.contains("[Post 1 · category:")));
}

#[test]
fn an_empty_rubric_under_oracle_renders_exactly_as_none() {
    let (examples, inputs) = with_empties();
    let ex = &examples[1];
    let oracle = rendered(ex, Condition::Oracle, &inputs);
    assert_eq!(oracle, rendered(ex, Condition::None, &inputs));
    assert!(oracle.iter().all(|t| !t.contains("these qualities")));
    assert_eq!(Condition::Oracle.empty_material(ex, &inputs), Some(EmptyMaterial::Rubric));
    assert!(rendered(&examples[2], Condition::Oracle, &inputs)
        .iter()
        .all(|t| t.contains("these qualities:\n- ")));
}

/// Runs `baseline:longer` on the sample with the two emptied examples under `condition`.
fn run_with_empties(condition: Condition) -> (prbench_eval::run::RunResult, String) {
    let (examples, inputs) = with_empties();
    let data = Dataset {
        examples,
        source: "sample".into(),
        kind: "prb".into(),
        hash: "00".repeat(32),
        profile_ranking: None,
    };
    let tmp = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        run_id: "r".into(),
        dir: tmp.path().to_path_buf(),
        limit: None,
        sample: false,
        options: EvalOptions { inputs, ..EvalOptions::new(condition) },
        bootstrap: BootstrapConfig { resamples: 100, ..BootstrapConfig::default() },
        code_version: "test".into(),
        cache: None,
        resume: false,
        recipe: None,
    };
    let result = run(&data, Backend::RewardModel(&Baseline::Longer), &cfg, &Silent).unwrap();
    let md = std::fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(json["empty_rubric"], serde_json::to_value(result.summary.empty_rubric).unwrap());
    (result, md)
}

#[test]
fn empty_profiles_are_counted_in_outcomes_and_the_summary() {
    let (result, md) = run_with_empties(Condition::Profile { k: 3 });
    let flagged: Vec<&str> =
        result.outcomes.iter().filter(|o| o.empty_profile).map(|o| o.example_id.as_str()).collect();
    assert_eq!(flagged, [sample()[0].id.as_str()]);
    assert!(result.outcomes.iter().all(|o| !o.empty_rubric));
    assert_eq!(result.summary.profile.as_ref().unwrap().empty_profile, 1);
    assert!(
        md.contains("; 1 example has an empty profile, rendered as under `none` (no context)"),
        "{md}"
    );
}

#[test]
fn empty_rubrics_are_counted_in_outcomes_and_the_summary() {
    let (result, md) = run_with_empties(Condition::Oracle);
    let flagged: Vec<&str> =
        result.outcomes.iter().filter(|o| o.empty_rubric).map(|o| o.example_id.as_str()).collect();
    assert_eq!(flagged, [sample()[1].id.as_str()]);
    assert_eq!(result.summary.empty_rubric, Some(1));
    assert!(md.contains("- oracle: ground-truth rubric shown; 1 example has an empty rubric, rendered as under `none` (no context)"), "{md}");
    // Other conditions carry no rubric count.
    assert_eq!(run_with_empties(Condition::None).0.summary.empty_rubric, None);
}
