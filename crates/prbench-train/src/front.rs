//! What `prbench train bt` and `prbench train pal` do between their flags ([`crate::flags`])
//! and the training pipelines: the flags become one [`RunOptions`] ([`bt_options`],
//! [`pal_options`], both through [`run_options`]), the output folder is checked
//! ([`check_no_model`]) and the closing line is worded ([`bt_summary`], [`pal_summary`]).
//!
//! The condition is the caller's: parsing it, refusing the ones a method cannot train under,
//! checking `oracle`'s material and rendering each example's context belong to the evaluation
//! stage, which this crate comes before; the caller passes the condition by name and its
//! material check as a closure.

use std::path::{Path, PathBuf};

use prbench_records::plural::count;

use crate::bt::pipeline::{fmt, Trained as BtTrained};
use crate::bt::TrainOptions;
use crate::flags::{MethodHelp, TrainBtArgs, TrainDataArgs, TrainPalArgs, TrainRunArgs};
use crate::options::{RunOptions, TrainBtOptions, TrainPalOptions};
use crate::pal::pipeline::{held_out_summary, Trained as PalTrained};
use crate::pal::PalTrainOptions;

/// Flags that cannot be used as given, refused before any work.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// `--out` holds a model already and `--force` was not given.
    #[error("{} already holds a {model} model; pass --force to replace it or choose another --out", out.display())]
    OutHoldsModel {
        /// `--out`.
        out: PathBuf,
        /// `BT` or `PAL`.
        model: &'static str,
    },
    /// `--held-out` outside [0, 1).
    #[error("--held-out {0} must be in [0, 1)")]
    HeldOut(f64),
}

/// The shared flags as the library's options, with the condition by name and the method's
/// own settings `train`: the one place flags become a [`RunOptions`], for both sub-verbs.
pub fn run_options<H: MethodHelp, M>(
    input: &TrainDataArgs<H>,
    run: &TrainRunArgs,
    condition: String,
    train: M,
    code_version: String,
) -> RunOptions<M> {
    RunOptions {
        data: input.data.clone(),
        subset: input.subset.clone(),
        condition,
        pairs: input.pairs.into(),
        out: input.out.clone(),
        exclude_data: input.exclude_data.clone(),
        train,
        max_length: run.max_length,
        embedder: run.embedder.clone(),
        embed_batch: run.embed_batch,
        code_version,
    }
}

/// `train bt`'s options, under the condition named `condition`.
///
/// # Errors
/// [`FrontError::HeldOut`] when `--held-out` is outside [0, 1).
pub fn bt_options(
    args: &TrainBtArgs,
    condition: String,
    code_version: String,
) -> Result<TrainBtOptions, FrontError> {
    if !(0.0..1.0).contains(&args.held_out) {
        return Err(FrontError::HeldOut(args.held_out));
    }
    let train = TrainOptions {
        seed: args.input.seed,
        hidden: args.hidden,
        epochs: args.epochs,
        patience: args.patience,
        lr: args.lr,
        weight_decay: args.weight_decay,
        batch_size: args.batch_size,
        held_out: args.held_out,
    };
    Ok(run_options(&args.input, &args.run, condition, train, code_version))
}

/// `train pal`'s options, under the condition named `condition` (the optimizer settings are
/// the authors', [`PalTrainOptions::default`]).
pub fn pal_options(
    args: &TrainPalArgs,
    condition: String,
    code_version: String,
) -> TrainPalOptions {
    let train = PalTrainOptions {
        variant: args.variant.into(),
        k: args.k,
        seed: args.input.seed,
        epochs: args.epochs,
        batch_size: args.batch_size,
        adapt_epochs: args.adapt_epochs,
        holdout_users: args.holdout_users,
        ..PalTrainOptions::default()
    };
    run_options(&args.input, &args.run, condition, train, code_version)
}

/// The last check both sub-verbs make before any work (after the caller's: `--out` is not a
/// file, the condition's material): `--out` holds no `model` yet (`holds`) unless `--force`.
///
/// # Errors
/// [`FrontError::OutHoldsModel`].
pub fn check_no_model<H: MethodHelp>(
    input: &TrainDataArgs<H>,
    run: &TrainRunArgs,
    model: &'static str,
    holds: impl Fn(&Path) -> bool,
) -> Result<(), FrontError> {
    if holds(&input.out) && !run.force {
        return Err(FrontError::OutHoldsModel { out: input.out.clone(), model });
    }
    Ok(())
}

/// The line `train bt` prints when done: where the model went, the split, the best epoch and
/// its held-out figures, the pairs dropped, the inputs truncated, the times.
pub fn bt_summary(opts: &TrainBtOptions, t: &BtTrained) -> String {
    let (tr, er) = (&t.config.training, &t.config.embedding);
    format!(
        "bt: saved {} (condition {}, hidden {}): {} train / {} held-out pairs, best epoch {} of {}, held-out loss {} accuracy {}; {} dropped as equal to a target pair; {} truncated; embedding {:.1} s, training {:.1} s",
        opts.out.display(),
        opts.condition,
        opts.train.hidden,
        tr.n_train,
        tr.n_held_out,
        tr.best_epoch,
        tr.epochs_run,
        fmt(tr.best_held_out_loss, 4),
        tr.best_held_out_accuracy.map_or("-".to_string(), |a| format!("{:.1}%", 100.0 * a)),
        count(t.built.dropped.len(), "pair", "pairs"),
        count(er.truncated_inputs, "input", "inputs"),
        er.seconds,
        tr.seconds
    )
}

/// The line `train pal` prints when done: where the model went, the variant, K and condition,
/// users and pairs, the last epoch's figures, the held-out users', the pairs dropped, the
/// inputs truncated, the times.
pub fn pal_summary(opts: &TrainPalOptions, t: &PalTrained) -> String {
    let (tr, er) = (&t.config.training, &t.config.embedding);
    let last = tr.history.last().expect("at least one epoch");
    format!(
        "pal: saved {} (PAL-{}, K {}, condition {}): {} users, {} train pairs, {} epochs, train loss {:.4} accuracy {:.1}%; {}; {} dropped as equal to a target pair; {} truncated; embedding {:.1} s, training {:.1} s",
        opts.out.display(),
        opts.train.variant.name().to_uppercase(),
        opts.train.k,
        opts.condition,
        tr.n_users,
        tr.n_train_pairs,
        tr.epochs,
        last.train_loss,
        100.0 * last.train_accuracy,
        held_out_summary(&t.config),
        count(t.built.dropped.len(), "pair", "pairs"),
        count(er.truncated_inputs, "input", "inputs"),
        er.seconds,
        tr.seconds
    )
}
