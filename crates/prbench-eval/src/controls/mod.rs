//! The five control baselines of a run (PROTOCOL.md §5): `longer`, `shorter`, `random`,
//! `slot-a` and `profile-overlap`, scored on the run's items, slots and condition, one
//! [`BaselineRow`] each.
//!
//! The baselines are fixed rules over the structured input: the answer (and the example id, the
//! seed of `random`), the slot order (`slot-a`), the user's whole raw profile
//! (`profile-overlap`). None of them reads a rendered conversation, so none is rendered and
//! none passes the leakage guard: the guard protects what a model under test receives, and a
//! rule reading only answers and the raw profile receives no hidden text by construction
//! (every text it reads is a visible one, PROTOCOL.md §1). Each baseline still gets the
//! structured input the runner would build for it ([`RmInput`], [`PairInput`]: question,
//! the condition's context, answers), and scores through its own [`RewardModel`] / [`Judge`]
//! code, so its results are those of [`crate::runner::evaluate_into`] on the same items.
//!
//! The rows do not depend on the model under test; [`cache`] stores them in the run cache.

pub mod cache;

use std::collections::HashMap;

use prbench_data::Example;
use prbench_models::baselines::{Baseline, SlotA};
use prbench_models::{ChatPrompt, Judge, JudgeRequest, PairInput, RewardModel, RmInput, RmRequest};
use prbench_records::BaselineRow;
use prbench_stats::bootstrap::BootstrapConfig;
use prbench_stats::outcome::ItemResult;
use rayon::prelude::*;

use crate::error::EvalError;
use crate::outcome::judge_result;
use crate::runner::{ContextSource, EvalOptions};
use crate::slots::Slot;
use crate::summary::{accuracy_rows, RowItem};

/// Examples per parallel task when scoring a baseline.
const CHUNK: usize = 64;

/// One control baseline and what it sees (the `sees` column of the baselines table).
enum Control {
    /// A pointwise rule; `full_profile`: it is given the whole profile as context, whatever
    /// the condition (`profile-overlap`).
    Rule { rule: Baseline, full_profile: bool, sees: &'static str },
    /// The slot-A judge.
    SlotA,
}

impl Control {
    fn name(&self) -> String {
        match self {
            Control::Rule { rule, .. } => rule.identity().spec,
            Control::SlotA => SlotA.identity().spec,
        }
    }

    fn sees(&self) -> &'static str {
        match self {
            Control::Rule { sees, .. } => sees,
            Control::SlotA => "slot order only",
        }
    }
}

/// The five controls in table order, `random` seeded with the run seed.
fn controls(seed: u64) -> [Control; 5] {
    [
        Control::Rule { rule: Baseline::Longer, full_profile: false, sees: "answer only" },
        Control::Rule { rule: Baseline::Shorter, full_profile: false, sees: "answer only" },
        Control::Rule { rule: Baseline::Random { seed }, full_profile: false, sees: "answer only" },
        Control::SlotA,
        Control::Rule {
            rule: Baseline::ProfileOverlap,
            full_profile: true,
            sees: "answer + full profile",
        },
    ]
}

/// An example as a row item: the baselines never cut an input.
struct Item<'a>(&'a Example);

impl RowItem for Item<'_> {
    fn subset(&self) -> &str {
        &self.0.subset
    }
    fn user_id(&self) -> Option<&str> {
        self.0.user_id.as_deref()
    }
    fn truncated(&self) -> bool {
        false
    }
}

/// The five control baselines' rows on `examples` (slots from `slots`, the condition and seed
/// of `options`), in table order: `longer`, `shorter`, `random`, `slot-a`, `profile-overlap`.
/// Under `planner` an example the planner failed on is an error for the four baselines that
/// take the condition's input, as for the model; `profile-overlap` reads the whole profile and
/// is never blocked.
///
/// # Errors
/// [`EvalError::Condition`] when `options` lacks the ranked posts or plans the condition
/// shows (the caller prepares them).
pub fn control_rows(
    examples: &[Example],
    slots: &HashMap<String, Slot>,
    options: &EvalOptions,
    boot: &BootstrapConfig,
) -> Result<Vec<BaselineRow>, EvalError> {
    let controls = controls(options.seed);
    let results: Vec<Vec<ItemResult>> = controls
        .par_iter()
        .map(|c| control_results(c, examples, slots, options))
        .collect::<Result<_, _>>()?;
    let items: Vec<Item<'_>> = examples.iter().map(Item).collect();
    Ok(controls
        .par_iter()
        .zip(&results)
        .map(|(c, res)| BaselineRow {
            name: c.name(),
            sees: c.sees().into(),
            rows: accuracy_rows(&items, res, boot),
        })
        .collect())
}

/// One result per example for `control`, in input order.
fn control_results(
    control: &Control,
    examples: &[Example],
    slots: &HashMap<String, Slot>,
    options: &EvalOptions,
) -> Result<Vec<ItemResult>, EvalError> {
    let full_profile = matches!(control, Control::Rule { full_profile: true, .. });
    let opts = if full_profile {
        EvalOptions { context: ContextSource::FullProfile, ..options.clone() }
    } else {
        options.clone()
    };
    let chunks: Vec<Vec<ItemResult>> = examples
        .par_chunks(CHUNK)
        .map(|chunk| {
            let runnable: Vec<&Example> =
                chunk.iter().filter(|ex| blocked(&opts, ex).is_none()).collect();
            let mut scored = match control {
                Control::Rule { rule, .. } => rule_results(rule, &runnable, &opts)?,
                Control::SlotA => slot_a_results(&runnable, slots, &opts)?,
            }
            .into_iter();
            Ok(chunk
                .iter()
                .map(|ex| match blocked(&opts, ex) {
                    Some(_) => ItemResult::Error,
                    None => scored.next().expect("one result per runnable example"),
                })
                .collect())
        })
        .collect::<Result<_, EvalError>>()?;
    Ok(chunks.concat())
}

/// Why `ex` has no input under the condition (the planner failed on it), as the runner decides.
fn blocked<'o>(opts: &'o EvalOptions, ex: &Example) -> Option<&'o str> {
    match opts.context {
        ContextSource::Condition => opts.inputs.blocked(opts.condition, ex),
        ContextSource::FullProfile => None,
    }
}

/// `rule`'s result on each example: score(chosen) vs score(rejected), an error when either
/// call failed.
fn rule_results(
    rule: &Baseline,
    examples: &[&Example],
    opts: &EvalOptions,
) -> Result<Vec<ItemResult>, EvalError> {
    let mut requests = Vec::with_capacity(examples.len() * 2);
    for ex in examples {
        let context = opts.context_for(ex, None)?;
        let input = |context, answer: &String| RmRequest {
            input: RmInput {
                example_id: ex.id.clone(),
                question: ex.question.clone(),
                context,
                answer: answer.clone(),
            },
            prompt: ChatPrompt::default(),
        };
        requests.push(input(context.clone(), &ex.chosen));
        requests.push(input(context, &ex.rejected));
    }
    let scores = rule.score_each(&requests, &|_, _| {});
    if scores.len() != requests.len() {
        return Err(EvalError::BackendShape {
            model: rule.identity().spec,
            got: scores.len(),
            expected: requests.len(),
        });
    }
    let mut scores = scores.into_iter();
    Ok(examples
        .iter()
        .map(|_| {
            match (scores.next().expect("length checked"), scores.next().expect("length checked")) {
                (Ok(c), Ok(r)) => ItemResult::from_scores(f64::from(c.value), f64::from(r.value)),
                _ => ItemResult::Error,
            }
        })
        .collect())
}

/// The slot-A judge's result on each example, with chosen in the example's slot.
fn slot_a_results(
    examples: &[&Example],
    slots: &HashMap<String, Slot>,
    opts: &EvalOptions,
) -> Result<Vec<ItemResult>, EvalError> {
    let mut requests = Vec::with_capacity(examples.len());
    for ex in examples {
        let (a, b) = match slots[&ex.id] {
            Slot::A => (&ex.chosen, &ex.rejected),
            Slot::B => (&ex.rejected, &ex.chosen),
        };
        let pair = PairInput {
            example_id: ex.id.clone(),
            question: ex.question.clone(),
            context: opts.context_for(ex, None)?,
            a: a.clone(),
            b: b.clone(),
        };
        requests.push(JudgeRequest { pair, prompt: ChatPrompt::default(), prompt_b: None });
    }
    let verdicts = SlotA.judge_each(&requests, &|_, _| {});
    if verdicts.len() != requests.len() {
        return Err(EvalError::BackendShape {
            model: SlotA.identity().spec,
            got: verdicts.len(),
            expected: requests.len(),
        });
    }
    Ok(examples
        .iter()
        .zip(verdicts)
        .map(|(ex, v)| match v {
            Ok(v) => judge_result(v.choice, slots[&ex.id]),
            Err(_) => ItemResult::Error,
        })
        .collect())
}
