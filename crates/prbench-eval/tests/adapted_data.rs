//! Data from the `prism:` and `synthesizeme:` adapters (prbench-data's fixtures) goes through the
//! evaluation like PRB data: the multi-turn transcript in the question and the survey or history
//! profile reach the model under `none` / `profile:k` past the leakage guard, `oracle`, which would
//! have nothing to show, is refused before any run folder is made, and the run's CIs resample
//! users.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::received;
use prbench_data::Dataset;
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_eval::evaluation::{Evaluation, EvaluationOptions};
use prbench_eval::run::{run, RunConfig};
use prbench_eval::runner::{Backend, EvalOptions, Silent};
use prbench_models::baselines::Baseline;
use prbench_stats::bootstrap::BootstrapConfig;

fn fixture(spec: &str, dir: &str) -> Dataset {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../prbench-data/tests/fixtures").join(dir);
    prbench_data::load(&format!("{spec}:{}", path.display()), &[]).expect("the fixture loads")
}

/// Ranked posts = each profile in dataset order (what a retriever run would hand over).
fn ranked_in_order(data: &Dataset) -> Arc<ConditionInputs> {
    let mut inputs =
        ConditionInputs { retriever: Some("dataset order".into()), ..Default::default() };
    for ex in &data.examples {
        inputs.ranked.insert(ex.id.clone(), ex.profile.clone());
    }
    Arc::new(inputs)
}

#[test]
fn transcripts_and_survey_profiles_reach_the_model_past_the_leakage_guard() {
    let data = fixture("prism", "prism");
    let inputs = ranked_in_order(&data);
    // c0's third turn: two earlier turns in the question.
    let ex: Vec<_> = data.examples.iter().filter(|e| e.id == "c0-t2-1").cloned().collect();
    assert_eq!(ex.len(), 1);
    for (kind, texts) in received(&ex, Condition::None, &inputs) {
        assert!(!texts.is_empty(), "{kind}");
        if kind != "profile baseline" {
            assert!(
                texts
                    .iter()
                    .all(|t| t.contains("Conversation so far:\nUser: Is it ever OK to lie?")
                        && t.contains("Latest user message:\nThanks!")),
                "{kind}"
            );
            assert!(
                texts.iter().all(|t| !t.contains("nurse from Lagos")),
                "{kind}: no profile under none"
            );
        }
    }
    for (kind, texts) in received(&ex, Condition::Profile { k: 3 }, &inputs) {
        if kind != "profile baseline" {
            assert!(texts.iter().all(|t| t.contains("[Post 2 · category: survey: self-description]\nI am a nurse from Lagos who plays chess.")), "{kind}");
        }
    }
    let data = fixture("synthesizeme", "synthesizeme");
    let inputs = ranked_in_order(&data);
    let ex: Vec<_> = data.examples.iter().filter(|e| e.id == "arena-u1-c-104-1").cloned().collect();
    for (kind, texts) in received(&ex, Condition::Profile { k: 10 }, &inputs) {
        if kind != "profile baseline" {
            assert!(
                texts.iter().all(|t| t
                    .contains("[Post 1 · category: chat]\nQ: Name a fruit.\nPreferred: Mango 🥭")),
                "{kind}"
            );
        }
    }
}

#[test]
fn oracle_is_refused_for_data_without_a_rubric() {
    let out = tempfile::tempdir().unwrap();
    for (spec, dir) in [("prism", "prism"), ("synthesizeme", "synthesizeme")] {
        let data = fixture(spec, dir);
        let opts = EvaluationOptions::new(
            "baseline:longer",
            vec![Condition::None, Condition::Oracle],
            out.path(),
            "test",
        );
        let err = Evaluation::plan(&data, opts).err().expect("oracle is refused").to_string();
        assert_eq!(
            err,
            format!(
                "invalid condition `oracle`: none of the {} examples has rubric aspects (dataset kind `{spec}`), so `oracle` would show nothing and score exactly as `none`; drop `oracle` from --condition (data without a rubric has no oracle upper bound)",
                data.examples.len()
            )
        );
        let opts = EvaluationOptions::new(
            "baseline:longer",
            vec![Condition::None, Condition::Profile { k: 3 }],
            out.path(),
            "test",
        );
        assert!(Evaluation::plan(&data, opts).is_ok(), "{spec}: other conditions plan");
    }
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "nothing written by a refused plan"
    );
}

#[test]
fn a_run_on_data_with_user_ids_records_them_and_resamples_users() {
    let data = fixture("prism", "prism");
    let tmp = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        run_id: "r".into(),
        dir: tmp.path().to_path_buf(),
        limit: None,
        sample: false,
        options: EvalOptions::new(Condition::None),
        bootstrap: BootstrapConfig { resamples: 200, ..BootstrapConfig::default() },
        code_version: "test".into(),
        cache: None,
        resume: false,
        recipe: None,
    };
    let result = run(&data, Backend::RewardModel(&Baseline::Longer), &cfg, &Silent).unwrap();
    let users: Vec<Option<&str>> = result.outcomes.iter().map(|o| o.user_id.as_deref()).collect();
    assert_eq!(users, data.examples.iter().map(|e| e.user_id.as_deref()).collect::<Vec<_>>());
    assert_eq!(result.summary.bootstrap_users, Some(2), "user0 and user1");
    let outcomes = std::fs::read_to_string(tmp.path().join("outcomes.jsonl")).unwrap();
    assert!(outcomes.lines().next().unwrap().contains("\"user_id\":\"user0\""), "{outcomes}");
    let md = std::fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    assert!(md.contains("CIs: seeded percentile bootstrap, resampling users (2 users, each with all their examples) within each subset."), "{md}");
}
