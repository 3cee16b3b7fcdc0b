//! `prbench train bt` and `prbench train pal` from their flags ([`prbench_train::flags`]) to a
//! trained model, for every front-end (the binary, a study plan): the condition is parsed and
//! checked here, because parsing it, refusing the ones a method cannot train under, `oracle`'s
//! material check and each example's context are `prbench-eval`'s, a later stage than the
//! trainer. The work is [`prbench_train::bt::pipeline`]'s and [`prbench_train::pal::pipeline`]'s.

use anyhow::{bail, Context, Result};
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_train::bt;
use prbench_train::bt::pipeline::{train_bt as train_bt_model, TrainReporter};
use prbench_train::flags::{MethodHelp, TrainBtArgs, TrainDataArgs, TrainPalArgs};
use prbench_train::front;
use prbench_train::pal::pipeline::{holds_model, train_pal as train_pal_model};

use crate::run_eval::refuse_file_as_folder;

/// The checks before `--out` is checked for a model ([`front::check_no_model`]), in this
/// order: `--out` is not a file (`files` names what it would get), and `oracle` has rubric
/// material in the data.
fn check_out<H: MethodHelp>(
    input: &TrainDataArgs<H>,
    condition: Condition,
    files: &str,
) -> Result<()> {
    refuse_file_as_folder("--out", &input.out, files)?;
    check_training_condition(condition, &input.data, &input.subset)
}

/// Trains a Bradley-Terry head as `prbench train bt` does and returns its closing line
/// ([`front::bt_summary`]).
///
/// # Errors
/// `planner` as the training condition, `oracle` on data without rubric aspects, `--out` a
/// file or already holding a model, and the pipeline's own errors (data, embedding, training).
pub fn train_bt(args: &TrainBtArgs, version: &str, reporter: &dyn TrainReporter) -> Result<String> {
    let input = &args.input;
    let condition = Condition::parse(&input.condition)?;
    if condition == Condition::Planner {
        bail!("`prbench train bt` trains under `none`, `profile:k` (a user-conditioned BT) or `oracle`; `planner` is not supported for training (a model trained under `none` can be evaluated under any condition)");
    }
    let opts = front::bt_options(args, condition.to_string(), version.to_string())?;
    check_out(input, condition, "the BT model (head.safetensors and bt.json)")?;
    front::check_no_model(input, &args.run, "BT", |out| {
        out.join(bt::config::CONFIG_FILE).exists()
    })?;
    // Each training copy's profile (its other history pairs) is ranked on its own, as `eval` ranks by default.
    let context = |ex: &prbench_data::Example| {
        condition
            .standalone_context(ex)
            .expect("validated data has unique post ids, so BM25 ranks every profile")
    };
    let t = train_bt_model(&opts, &context, reporter)?;
    Ok(front::bt_summary(&opts, &t))
}

/// Refuses `oracle` on data without any rubric aspect (SynthesizeMe, PRISM), as `eval` does:
/// the inputs would be exactly those of `none`, and the model would be labelled an upper bound.
fn check_training_condition(condition: Condition, data: &str, subset: &[String]) -> Result<()> {
    if condition != Condition::Oracle {
        return Ok(());
    }
    let ds = prbench_data::load(data, subset).with_context(|| format!("loading `{data}`"))?;
    prbench_eval::condition::check_oracle_material(&[condition], &ds.examples, &ds.kind)?;
    Ok(())
}

/// `none` or `oracle`, the conditions a trained model's inputs can carry without prepared inputs.
fn training_condition(text: &str, command: &str) -> Result<Condition> {
    let condition = Condition::parse(text)?;
    if !matches!(condition, Condition::None | Condition::Oracle) {
        bail!("`prbench train {command}` trains under `none` or `oracle`; `{condition}` is not supported for training (a model trained under `none` can be evaluated under any condition)");
    }
    Ok(condition)
}

/// Trains a PAL model as `prbench train pal` does and returns its closing line
/// ([`front::pal_summary`]).
///
/// # Errors
/// A condition other than `none` or `oracle`, `oracle` on data without rubric aspects, `--out`
/// a file or already holding a model, and the pipeline's own errors.
pub fn train_pal(
    args: &TrainPalArgs,
    version: &str,
    reporter: &dyn TrainReporter,
) -> Result<String> {
    let input = &args.input;
    let condition = training_condition(&input.condition, "pal")?;
    check_out(input, condition, "the PAL model (pal.safetensors and pal.json)")?;
    front::check_no_model(input, &args.run, "PAL", holds_model)?;
    let opts = front::pal_options(args, condition.to_string(), version.to_string());
    let context = |ex: &prbench_data::Example| {
        condition
            .context(ex, &ConditionInputs::default(), None)
            .expect("none and oracle render without prepared inputs")
    };
    let t = train_pal_model(&opts, &context, reporter)?;
    Ok(front::pal_summary(&opts, &t))
}
