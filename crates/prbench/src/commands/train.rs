//! `prbench train bt`: the paper's personalized Bradley-Terry baseline, sized for CPU. A scoring
//! head on frozen MiniLM embeddings of (condition context, question, answer), trained with
//! `−log σ(r_chosen − r_rejected)`; saved as `head.safetensors` + `bt.json`, loaded with
//! `--model bt:DIR`. The flags become [`TrainBtOptions`]; the work is
//! [`prbench_train::bt::pipeline`]'s.
//!
//! `prbench train pal`: PAL-A or PAL-B (Chen et al., ICLR 2025) on the same embeddings, one
//! weight row per user; saved as `pal.safetensors` + `pal.json`, loaded with `--model pal:DIR`.
//! The flags become [`TrainPalOptions`]; the work is [`prbench_train::pal::pipeline`]'s.
//!
//! The flags both share ([`TrainDataArgs`], [`TrainRunArgs`]) are checked by [`check_out`]
//! and become the library's [`RunOptions`] in [`run_options`], for both.

use std::path::Path;

use anyhow::{bail, Context, Result};
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_train::bt::pipeline::{fmt, train_bt as train, PairSource as Pairs, TrainReporter};
use prbench_train::bt::{self, TrainOptions};
use prbench_train::options::{RunOptions, TrainBtOptions, TrainPalOptions};
use prbench_train::pal::pipeline::{held_out_summary, holds_model, train_pal as train_pal_model};
use prbench_train::pal::{PalTrainOptions, Variant};

use crate::cli::{
    MethodHelp, PairSource, PalVariantArg, TrainBtArgs, TrainCommand, TrainDataArgs, TrainPalArgs,
    TrainRunArgs,
};

/// Runs a `train` sub-verb.
pub fn run(cmd: TrainCommand) -> Result<()> {
    match cmd {
        TrainCommand::Bt(args) => train_bt(args),
        TrainCommand::Pal(args) => train_pal(args),
    }
}

/// Progress on stderr unless `--quiet`; warnings always.
struct Say {
    quiet: bool,
}

impl TrainReporter for Say {
    fn progress(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    fn warning(&self, line: &str) {
        eprintln!("prbench: {line}");
    }
}

fn pairs(p: PairSource) -> Pairs {
    match p {
        PairSource::History => Pairs::History,
        PairSource::Target => Pairs::Target,
    }
}

/// The shared flags as the library's options, with the method's own settings `train`: the one
/// place flags become a [`RunOptions`], for both sub-verbs.
fn run_options<H: MethodHelp, M>(
    input: &TrainDataArgs<H>,
    run: &TrainRunArgs,
    condition: Condition,
    train: M,
) -> RunOptions<M> {
    RunOptions {
        data: input.data.clone(),
        subset: input.subset.clone(),
        condition: condition.to_string(),
        pairs: pairs(input.pairs),
        out: input.out.clone(),
        exclude_data: input.exclude_data.clone(),
        train,
        max_length: run.max_length,
        embedder: run.embedder.clone(),
        embed_batch: run.embed_batch,
        code_version: crate::code_version().to_string(),
    }
}

/// The checks both sub-verbs make before any work, in this order: `--out` is not a file
/// (`files` names what it would get), `oracle` has rubric material in the data, and `--out`
/// holds no `model` yet (`holds`) unless `--force`.
fn check_out<H: MethodHelp>(
    input: &TrainDataArgs<H>,
    run: &TrainRunArgs,
    condition: Condition,
    model: &str,
    files: &str,
    holds: impl Fn(&Path) -> bool,
) -> Result<()> {
    crate::commands::refuse_file_as_folder("--out", &input.out, files)?;
    check_training_condition(condition, &input.data, &input.subset)?;
    if holds(&input.out) && !run.force {
        bail!(
            "{} already holds a {model} model; pass --force to replace it or choose another --out",
            input.out.display()
        );
    }
    Ok(())
}

fn train_bt(args: TrainBtArgs) -> Result<()> {
    let input = &args.input;
    let condition = Condition::parse(&input.condition)?;
    if condition == Condition::Planner {
        bail!("`prbench train bt` trains under `none`, `profile:k` (a user-conditioned BT) or `oracle`; `planner` is not supported for training (a model trained under `none` can be evaluated under any condition)");
    }
    if !(0.0..1.0).contains(&args.held_out) {
        bail!("--held-out {} must be in [0, 1)", args.held_out);
    }
    check_out(
        input,
        &args.run,
        condition,
        "BT",
        "the BT model (head.safetensors and bt.json)",
        |out| out.join(bt::config::CONFIG_FILE).exists(),
    )?;
    // Each training copy's profile (its other history pairs) is ranked on its own, as `eval` ranks by default.
    let context = |ex: &prbench_data::Example| {
        condition
            .standalone_context(ex)
            .expect("validated data has unique post ids, so BM25 ranks every profile")
    };
    let opts: TrainBtOptions = run_options(
        input,
        &args.run,
        condition,
        TrainOptions {
            seed: input.seed,
            hidden: args.hidden,
            epochs: args.epochs,
            patience: args.patience,
            lr: args.lr,
            weight_decay: args.weight_decay,
            batch_size: args.batch_size,
            held_out: args.held_out,
        },
    );
    let t = train(&opts, &context, &Say { quiet: args.run.quiet })?;
    let (tr, er) = (&t.config.training, &t.config.embedding);
    println!(
        "bt: saved {} (condition {condition}, hidden {}): {} train / {} held-out pairs, best epoch {} of {}, held-out loss {} accuracy {}; {} dropped as equal to a target pair; {} truncated; embedding {:.1} s, training {:.1} s",
        input.out.display(),
        args.hidden,
        tr.n_train,
        tr.n_held_out,
        tr.best_epoch,
        tr.epochs_run,
        fmt(tr.best_held_out_loss, 4),
        tr.best_held_out_accuracy.map_or("-".to_string(), |a| format!("{:.1}%", 100.0 * a)),
        prbench_report::plural::count(t.built.dropped.len(), "pair", "pairs"),
        prbench_report::plural::count(er.truncated_inputs, "input", "inputs"),
        er.seconds,
        tr.seconds
    );
    Ok(())
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

fn train_pal(args: TrainPalArgs) -> Result<()> {
    let input = &args.input;
    let condition = training_condition(&input.condition, "pal")?;
    check_out(
        input,
        &args.run,
        condition,
        "PAL",
        "the PAL model (pal.safetensors and pal.json)",
        holds_model,
    )?;
    let variant = match args.variant {
        PalVariantArg::A => Variant::A,
        PalVariantArg::B => Variant::B,
    };
    let opts: TrainPalOptions = run_options(
        input,
        &args.run,
        condition,
        PalTrainOptions {
            variant,
            k: args.k,
            seed: input.seed,
            epochs: args.epochs,
            batch_size: args.batch_size,
            adapt_epochs: args.adapt_epochs,
            holdout_users: args.holdout_users,
            ..PalTrainOptions::default()
        },
    );
    let context = |ex: &prbench_data::Example| {
        condition
            .context(ex, &ConditionInputs::default(), None)
            .expect("none and oracle render without prepared inputs")
    };
    let t = train_pal_model(&opts, &context, &Say { quiet: args.run.quiet })?;
    let (tr, er) = (&t.config.training, &t.config.embedding);
    let last = tr.history.last().expect("at least one epoch");
    println!(
        "pal: saved {} (PAL-{}, K {}, condition {condition}): {} users, {} train pairs, {} epochs, train loss {:.4} accuracy {:.1}%; {}; {} dropped as equal to a target pair; {} truncated; embedding {:.1} s, training {:.1} s",
        input.out.display(),
        variant.name().to_uppercase(),
        args.k,
        tr.n_users,
        tr.n_train_pairs,
        tr.epochs,
        last.train_loss,
        100.0 * last.train_accuracy,
        held_out_summary(&t.config),
        prbench_report::plural::count(t.built.dropped.len(), "pair", "pairs"),
        prbench_report::plural::count(er.truncated_inputs, "input", "inputs"),
        er.seconds,
        tr.seconds
    );
    Ok(())
}
