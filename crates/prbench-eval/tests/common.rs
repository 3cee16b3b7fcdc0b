//! Shared test helpers: the bundled sample, and a spy backend that records what it receives.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Mutex;

use std::sync::Arc;

use prbench_data::Example;
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_eval::prompt::Prompts;
use prbench_eval::runner::{evaluate, Backend, ContextSource, EvalOptions, Silent};
use prbench_models::{
    Choice, Judge, JudgeRequest, ModelError, ModelIdentity, RewardModel, RmRequest, Score,
    TokenStats, Verdict,
};

pub fn sample() -> Vec<Example> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/sample");
    prbench_data::load::load(dir.to_str().unwrap(), &[]).expect("bundled sample loads").examples
}

pub fn psoups() -> Option<Vec<Example>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/alignx-psoups");
    if !dir.is_dir() {
        prbench_testkit::unavailable(format!("the P-Soups part: {} absent", dir.display()));
        return None;
    }
    Some(
        prbench_data::load::load(&format!("psoups:{}", dir.display()), &[])
            .expect("P-Soups loads")
            .examples,
    )
}

/// Records every request text; judges pick A, reward models score by length.
#[derive(Default)]
pub struct Spy {
    pub seen: Mutex<Vec<String>>,
    pub batches: Mutex<Vec<usize>>,
}

impl Judge for Spy {
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        self.batches.lock().unwrap().push(items.len());
        let mut seen = self.seen.lock().unwrap();
        Ok(items
            .iter()
            .map(|r| {
                seen.push(format!(
                    "{}\n{:?}\n{}\n{}\n{}",
                    r.prompt.all_text(),
                    r.pair.context,
                    r.pair.question,
                    r.pair.a,
                    r.pair.b
                ));
                // A deterministic content-based pick so results are testable: the longer answer's slot.
                let choice = if r.pair.a.len() >= r.pair.b.len() { Choice::A } else { Choice::B };
                Verdict {
                    choice,
                    p_a: None,
                    margin: None,
                    raw: String::new(),
                    tokens: TokenStats::default(),
                }
            })
            .collect())
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity { spec: "spy".into(), ..Default::default() }
    }
}

impl RewardModel for Spy {
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        let mut seen = self.seen.lock().unwrap();
        Ok(items
            .iter()
            .map(|r| {
                seen.push(format!(
                    "{}\n{:?}\n{}\n{}",
                    r.prompt.all_text(),
                    r.input.context,
                    r.input.question,
                    r.input.answer
                ));
                Score { value: r.input.answer.len() as f32, tokens: TokenStats::default() }
            })
            .collect())
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity { spec: "spy".into(), ..Default::default() }
    }
}

/// Everything each backend kind received for `examples` under `condition`: a pairwise judge
/// (both orders) and a pointwise reward model (every RM engine — seqcls, BT, remote, baselines —
/// receives exactly an `RmRequest`, which the spy records in full), plus the profile-overlap
/// control baseline's input.
pub fn received(
    examples: &[Example],
    condition: Condition,
    inputs: &Arc<ConditionInputs>,
) -> Vec<(&'static str, Vec<String>)> {
    let prompts = Prompts::new();
    let mut out = Vec::new();
    for (kind, context, both) in [
        ("judge", ContextSource::Condition, true),
        ("reward model", ContextSource::Condition, false),
        ("profile baseline", ContextSource::FullProfile, false),
    ] {
        let spy = Spy::default();
        let opts = EvalOptions {
            both_orders: both,
            context,
            inputs: inputs.clone(),
            ..EvalOptions::new(condition)
        };
        let backend =
            if kind == "judge" { Backend::Judge(&spy) } else { Backend::RewardModel(&spy) };
        evaluate(examples, backend, &opts, &prompts, &Silent).expect("no leak");
        out.push((kind, spy.seen.into_inner().unwrap()));
    }
    out
}
