//! A backend failure on one item is recorded on that item and counted; the rest of the batch
//! is still scored (nothing silently dropped, nothing defaulted).

mod common;

use common::sample;
use prbench_eval::condition::Condition;
use prbench_eval::prompt::Prompts;
use prbench_eval::runner::{evaluate, Backend, EvalOptions, Silent};
use prbench_models::{Choice, Judge, JudgeRequest, ModelError, ModelIdentity, TokenStats, Verdict};
use prbench_stats::ItemResult;

/// Fails any call that contains the example `bad`; otherwise always answers B.
struct FailsOn(&'static str);

impl Judge for FailsOn {
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        if items.iter().any(|r| r.pair.example_id == self.0) {
            return Err(ModelError::ContextOverflow {
                tokens: 9000,
                n_ctx: 8192,
                reason: "too long".into(),
            });
        }
        Ok(items
            .iter()
            .map(|_| Verdict {
                choice: Choice::B,
                p_a: None,
                margin: None,
                raw: String::new(),
                tokens: TokenStats::default(),
            })
            .collect())
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity { spec: "fails-on".into(), ..Default::default() }
    }
}

#[test]
fn one_failing_item_is_an_error_outcome_and_the_batch_is_kept() {
    let examples = sample();
    let opts = EvalOptions { batch_size: 4, ..EvalOptions::new(Condition::None) };
    let out = evaluate(
        &examples,
        Backend::Judge(&FailsOn("sample-art-02")),
        &opts,
        &Prompts::new(),
        &Silent,
    )
    .unwrap();
    assert_eq!(out.len(), 12);
    for o in &out {
        if o.example_id == "sample-art-02" {
            assert_eq!(o.result, ItemResult::Error);
            let msg = o.error.as_deref().unwrap();
            assert!(msg.contains("sample-art-02") && msg.contains("9000 tokens"), "{msg}");
            assert!(o.verdict.is_none());
        } else {
            assert!(o.error.is_none());
            // Always-B: correct exactly when chosen sits in B.
            let expected = if o.chosen_slot == Some(prbench_stats::Slot::B) {
                ItemResult::Correct
            } else {
                ItemResult::Wrong
            };
            assert_eq!(o.result, expected, "{}", o.example_id);
        }
    }
}
