//! `prbench train bt`: the paper's personalized Bradley-Terry baseline, sized for CPU. A scoring
//! head on frozen MiniLM embeddings of (condition context, question, answer), trained with
//! `−log σ(r_chosen − r_rejected)`; saved as `head.safetensors` + `bt.json`, loaded with
//! `--model bt:DIR`. The flags become [`TrainBtOptions`]; the work is
//! [`prbench_train::bt::pipeline`]'s.
//!
//! `prbench train pal`: PAL-A or PAL-B (Chen et al., ICLR 2025) on the same embeddings, one
//! weight row per user; saved as `pal.safetensors` + `pal.json`, loaded with `--model pal:DIR`.
//! The flags become [`TrainPalOptions`]; the work is [`prbench_train::pal::pipeline`]'s.

use anyhow::{bail, Context, Result};
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_train::bt::pipeline::{
    fmt, train_bt as train, PairSource as Pairs, TrainBtOptions, TrainReporter,
};
use prbench_train::bt::{self, TrainOptions};
use prbench_train::pal::pipeline::{
    held_out_summary, holds_model, train_pal as train_pal_model, TrainPalOptions,
};
use prbench_train::pal::{PalTrainOptions, Variant};

use crate::cli::{PairSource, PalVariantArg, TrainBtArgs, TrainCommand, TrainPalArgs};

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

fn options(args: &TrainBtArgs, condition: Condition) -> TrainBtOptions {
    TrainBtOptions {
        data: args.data.clone(),
        subset: args.subset.clone(),
        condition: condition.to_string(),
        pairs: pairs(args.pairs),
        out: args.out.clone(),
        exclude_data: args.exclude_data.clone(),
        train: TrainOptions {
            seed: args.seed,
            hidden: args.hidden,
            epochs: args.epochs,
            patience: args.patience,
            lr: args.lr,
            weight_decay: args.weight_decay,
            batch_size: args.batch_size,
            held_out: args.held_out,
        },
        max_length: args.max_length,
        embedder: args.embedder.clone(),
        embed_batch: args.embed_batch,
        code_version: crate::code_version().to_string(),
    }
}

fn train_bt(args: TrainBtArgs) -> Result<()> {
    let condition = Condition::parse(&args.condition)?;
    if condition == Condition::Planner {
        bail!("`prbench train bt` trains under `none`, `profile:k` (a user-conditioned BT) or `oracle`; `planner` is not supported for training (a model trained under `none` can be evaluated under any condition)");
    }
    if !(0.0..1.0).contains(&args.held_out) {
        bail!("--held-out {} must be in [0, 1)", args.held_out);
    }
    crate::commands::refuse_file_as_folder(
        "--out",
        &args.out,
        "the BT model (head.safetensors and bt.json)",
    )?;
    check_training_condition(condition, &args.data, &args.subset)?;
    if args.out.join(bt::config::CONFIG_FILE).exists() && !args.force {
        bail!(
            "{} already holds a BT model; pass --force to replace it or choose another --out",
            args.out.display()
        );
    }
    // Each training copy's profile (its other history pairs) is ranked on its own, as `eval` ranks by default.
    let context = |ex: &prbench_data::Example| {
        condition
            .standalone_context(ex)
            .expect("validated data has unique post ids, so BM25 ranks every profile")
    };
    let t = train(&options(&args, condition), &context, &Say { quiet: args.quiet })?;
    let (tr, er) = (&t.config.training, &t.config.embedding);
    println!(
        "bt: saved {} (condition {condition}, hidden {}): {} train / {} held-out pairs, best epoch {} of {}, held-out loss {} accuracy {}; {} dropped as equal to a target pair; {} truncated; embedding {:.1} s, training {:.1} s",
        args.out.display(),
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
    let condition = training_condition(&args.condition, "pal")?;
    crate::commands::refuse_file_as_folder(
        "--out",
        &args.out,
        "the PAL model (pal.safetensors and pal.json)",
    )?;
    check_training_condition(condition, &args.data, &args.subset)?;
    if holds_model(&args.out) && !args.force {
        bail!(
            "{} already holds a PAL model; pass --force to replace it or choose another --out",
            args.out.display()
        );
    }
    let variant = match args.variant {
        PalVariantArg::A => Variant::A,
        PalVariantArg::B => Variant::B,
    };
    let opts = TrainPalOptions {
        data: args.data.clone(),
        subset: args.subset.clone(),
        condition: condition.to_string(),
        pairs: pairs(args.pairs),
        out: args.out.clone(),
        exclude_data: args.exclude_data.clone(),
        train: PalTrainOptions {
            variant,
            k: args.k,
            seed: args.seed,
            epochs: args.epochs,
            batch_size: args.batch_size,
            adapt_epochs: args.adapt_epochs,
            holdout_users: args.holdout_users,
            ..PalTrainOptions::default()
        },
        max_length: args.max_length,
        embedder: args.embedder.clone(),
        embed_batch: args.embed_batch,
        code_version: crate::code_version().to_string(),
    };
    let context = |ex: &prbench_data::Example| {
        condition
            .context(ex, &ConditionInputs::default(), None)
            .expect("none and oracle render without prepared inputs")
    };
    let t = train_pal_model(&opts, &context, &Say { quiet: args.quiet })?;
    let (tr, er) = (&t.config.training, &t.config.embedding);
    let last = tr.history.last().expect("at least one epoch");
    println!(
        "pal: saved {} (PAL-{}, K {}, condition {condition}): {} users, {} train pairs, {} epochs, train loss {:.4} accuracy {:.1}%; {}; {} dropped as equal to a target pair; {} truncated; embedding {:.1} s, training {:.1} s",
        args.out.display(),
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
