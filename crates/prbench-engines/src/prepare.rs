//! Readying a loaded model for a run on given data: the trained-pair leak check of `bt:` and
//! `pal:` models, PAL's few-shot adaptation of the evaluated users it was not trained on, and the
//! preflight view of a scalar reward model's exact input. `prbench eval` and `prbench bon score`
//! call these after [`crate::load::load_model`].

use std::sync::Arc;

use anyhow::{bail, Context, Result};

use prbench_data::Dataset;
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_eval::prompt::Prompts;
use prbench_eval::runner::{rm_request, ContextSource, EvalOptions};
use prbench_records::plural::count;
use prbench_train::bt::pair_sha256;
use prbench_train::pal::pipeline::prepare_eval_users;
use prbench_train::pal::PalRewardModel;

use crate::load::Loaded;

/// How [`preflight`] runs.
#[derive(Debug, Clone, Copy)]
pub struct PreflightOptions {
    /// The run seed (slot assignment of the rendered example).
    pub seed: u64,
    /// Stop on an input that does not fit the model's context (`eval --preflight`); otherwise
    /// it is reported and such items are recorded as errors in the run.
    pub stop_on_overflow: bool,
}

/// Refuses to score pairs a trained model (BT head, PAL) was trained on (`file` lists the sha256
/// of every pair it used): a model evaluated on its own training pairs gives a number that means
/// nothing.
pub fn check_trained_pairs(
    trained_pairs_sha256: &[String],
    file: &str,
    data: &Dataset,
    spec: &str,
) -> Result<()> {
    let trained: std::collections::HashSet<&str> =
        trained_pairs_sha256.iter().map(String::as_str).collect();
    let leaked: Vec<&str> = data
        .examples
        .iter()
        .filter(|ex| trained.contains(pair_sha256(&ex.question, &ex.chosen, &ex.rejected).as_str()))
        .map(|ex| ex.id.as_str())
        .collect();
    if let Some(first) = leaked.first() {
        bail!(
            "{} of the {} examples to evaluate (first: `{first}`) are pairs `{spec}` was trained on (its {file} lists them); train on other data, or with `--exclude-data` naming this dataset",
            leaked.len(),
            data.examples.len()
        );
    }
    Ok(())
}

/// Gives a PAL model the users of the examples to score and adapts the ones it was not trained
/// on from their history pairs ([`prepare_eval_users`]), each example's context rendered under
/// the condition the model was trained under. Returns one line saying what it did (for the
/// front-end to print). Users with no history stay unknown, and their examples fail with an
/// error naming them.
///
/// # Errors
/// The model's condition does not parse, or the users' history cannot be loaded from `data`.
pub fn prepare_pal(
    rm: &mut PalRewardModel,
    data: &str,
    subset: &[String],
    examples: &[prbench_data::Example],
) -> Result<String> {
    let condition = Condition::parse(&rm.config().condition)?;
    let context = |ex: &prbench_data::Example| {
        condition
            .context(ex, &ConditionInputs::default(), None)
            .expect("a PAL model trains under none or oracle, which render without prepared inputs")
    };
    let u = prepare_eval_users(rm, data, subset, examples, &context)?;
    let a = &u.adapted;
    Ok(format!(
        "PAL: {} of the examples' users were trained on; {}{}",
        u.known,
        if a.adapted == 0 {
            "none adapted".to_string()
        } else {
            format!(
                "{} adapted few-shot from their history ({} pairs, {} epochs, mean final loss {:.4}, {:.1} s)",
                count(a.adapted, "user", "users"),
                a.pairs,
                rm.config().training.adapt_epochs,
                a.mean_final_loss,
                a.seconds
            )
        },
        match u.without_history.first() {
            Some(first) => format!(
                "; {} no history and will not be scored (first: `{first}`)",
                count(u.without_history.len(), "user has", "users have")
            ),
            None => String::new(),
        }
    ))
}

/// Whether `model` has a preflight view: a local sequence-classification RM, or a served one
/// whose conversations prbench renders.
pub fn has_preflight(model: &Loaded) -> bool {
    matches!(model, Loaded::SeqCls(_) | Loaded::Rendered(_))
}

/// Renders (and for a local model tokenizes) the first example under each condition, so a
/// template or tokenizer problem stops the run before any scoring, and prints the model's exact
/// view of it (PROTOCOL.md §3), `--quiet` or not: it is what makes a scalar-RM run
/// trustworthy. A local sequence-classification RM shows the decoded token ids and their
/// counts; a served RM whose server takes rendered text shows the exact text sent. Other models
/// have no such view and print nothing. Each line goes to `out`.
///
/// # Errors
/// The input cannot be rendered or tokenized (or, with
/// [`PreflightOptions::stop_on_overflow`], does not fit the model's context).
pub fn preflight(
    model: &Loaded,
    examples: &[prbench_data::Example],
    conditions: &[Condition],
    inputs: &Arc<ConditionInputs>,
    settings: PreflightOptions,
    out: &mut dyn FnMut(&str),
) -> Result<()> {
    let Some(ex) = examples.first() else { return Ok(()) };
    let prompts = Prompts::new();
    for &condition in conditions {
        let opts = EvalOptions {
            condition,
            seed: settings.seed,
            both_orders: false,
            batch_size: 1,
            context: ContextSource::Condition,
            inputs: inputs.clone(),
        };
        let req = rm_request(ex, &ex.chosen, &opts, &prompts, None)?;
        let rm = match model {
            Loaded::SeqCls(rm) => rm,
            Loaded::Rendered(rm) => {
                let view = rm.preflight(&req).with_context(|| {
                    format!("preflight of example `{}` under `{condition}`", ex.id)
                })?;
                out(&format!(
                    "prbench preflight: condition `{condition}`, example `{}` (chosen answer)",
                    ex.id
                ));
                out(&format!("{view}"));
                continue;
            }
            _ => return Ok(()),
        };
        let p = match rm.preflight(&req) {
            Ok(p) => p,
            // An input that cannot fit is that item's error in a run (counted, never scored);
            // only an explicit --preflight stops on it.
            Err(e @ prbench_models::ModelError::ContextOverflow { .. })
                if !settings.stop_on_overflow =>
            {
                out(&format!("prbench preflight: condition `{condition}`, example `{}`: {e}; such items are recorded as errors", ex.id));
                continue;
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("preflight of example `{}` under `{condition}`", ex.id)
                })
            }
        };
        out(&format!(
            "prbench preflight: condition `{condition}`, example `{}` (chosen answer)",
            ex.id
        ));
        out(&format!(
            "----- model input (decoded from the token ids fed) -----\n{}\n-----",
            p.text
        ));
        out(&format!(
            "tokens: {} of max {}; BOS tokens: {}{}; truncated: {}",
            p.tokens,
            p.max_length,
            p.bos_count,
            if p.extra_bos_removed > 0 {
                format!(" ({} repeated BOS removed)", p.extra_bos_removed)
            } else {
                String::new()
            },
            match &p.cut_preview {
                Some(c) => format!(
                    "{} context tokens cut from the left; the kept context starts with {c:?}",
                    p.truncated_tokens
                ),
                None => "no".into(),
            }
        ));
    }
    Ok(())
}
