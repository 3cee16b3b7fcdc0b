//! The leakage guard: narrative and rubric text reach a backend only under `oracle`. Checked on
//! what a recording backend actually received, for every backend kind.

mod common;

use common::{psoups, received, sample};
use prbench_data::Example;
use prbench_eval::condition::Condition;
use prbench_eval::leakage;
use prbench_eval::EvalError;

fn assert_no_hidden_text(examples: &[Example]) {
    for (kind, texts) in received(examples, Condition::None, &Default::default()) {
        assert!(!texts.is_empty());
        for text in &texts {
            for ex in examples {
                // The narrative and the aspect titles are never in the visible texts of these
                // datasets (tools/check_sample.py checks the sample), so any occurrence is a leak.
                assert!(
                    !text.contains(ex.narrative.trim()),
                    "{kind}: narrative of {} leaked",
                    ex.id
                );
                for a in &ex.rubric_aspects {
                    assert!(
                        !text.contains(a.aspect.trim()),
                        "{kind}: aspect `{}` of {} leaked",
                        a.aspect,
                        ex.id
                    );
                    assert!(!text.contains(a.reason.trim()), "{kind}: reason of {} leaked", ex.id);
                }
            }
        }
    }
}

#[test]
fn no_hidden_text_reaches_any_backend_under_none() {
    assert_no_hidden_text(&sample());
}

#[test]
fn no_hidden_text_reaches_any_backend_under_none_psoups() {
    let Some(examples) = psoups() else { return };
    assert_no_hidden_text(&examples[..200]);
}

#[test]
fn oracle_shows_every_aspect_title_to_judges_and_reward_models() {
    let examples = sample();
    for (kind, texts) in received(&examples, Condition::Oracle, &Default::default()) {
        if kind == "profile baseline" {
            continue;
        }
        for ex in &examples {
            let mine: Vec<&String> =
                texts.iter().filter(|t| t.contains(ex.question.trim())).collect();
            assert!(!mine.is_empty(), "{kind}: no request for {}", ex.id);
            for t in mine {
                for a in &ex.rubric_aspects {
                    assert!(
                        t.contains(a.aspect.trim()),
                        "{kind}: aspect `{}` missing for {}",
                        a.aspect,
                        ex.id
                    );
                }
                assert!(
                    !t.contains(ex.narrative.trim()),
                    "{kind}: the oracle shows aspect titles only"
                );
            }
        }
    }
}

#[test]
fn guard_rejects_hidden_text_outside_oracle_and_names_it() {
    let ex = &sample()[0];
    let leaky = format!("question {}\ncontext: {}", ex.question, ex.narrative);
    let err = leakage::check(ex, Condition::None, &leaky).unwrap_err();
    match &err {
        EvalError::Leakage { example_id, field, condition, .. } => {
            assert_eq!(example_id, &ex.id);
            assert_eq!(field, "narrative");
            assert_eq!(condition, "none");
        }
        other => panic!("expected a leakage error, got {other}"),
    }
    let aspect = format!("{}\n- {}", ex.question, ex.rubric_aspects[0].aspect);
    assert!(matches!(leakage::check(ex, Condition::None, &aspect), Err(EvalError::Leakage { .. })));
    // The same text is allowed under oracle.
    leakage::check(ex, Condition::Oracle, &leaky).unwrap();
}

#[test]
fn hidden_text_that_an_answer_also_contains_is_not_a_leak() {
    let mut ex = sample()[0].clone();
    ex.rubric_aspects[0].aspect = "short exposure".into();
    ex.chosen = format!("{} Use a short exposure.", ex.chosen);
    leakage::check(&ex, Condition::None, &format!("A: {}", ex.chosen)).unwrap();
}

/// The guard memoizes its automaton per example id; two examples under one id with different
/// hidden texts must each be checked against their own (a stale automaton would miss this).
#[test]
fn guard_memo_does_not_mix_examples_that_share_an_id() {
    let ex = sample()[0].clone();
    let mut other = ex.clone();
    other.narrative = "A completely different narrative that only the second example hides.".into();
    let rendered = format!("{}\n{}", ex.question, other.narrative);
    leakage::check(&ex, Condition::None, &rendered).unwrap();
    let err = leakage::check(&other, Condition::None, &rendered).unwrap_err();
    assert!(matches!(&err, EvalError::Leakage { field, .. } if field == "narrative"), "{err}");
    // And back: the first example's own narrative is still caught.
    let leaky = format!("{}\n{}", ex.question, ex.narrative);
    assert!(leakage::check(&ex, Condition::None, &leaky).is_err());
}
