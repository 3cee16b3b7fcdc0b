//! `prbench train bt`: the paper's personalized Bradley-Terry baseline, sized for CPU. A scoring
//! head on frozen MiniLM embeddings of (condition context, question, answer), trained with
//! `−log σ(r_chosen − r_rejected)`; saved as `head.safetensors` + `bt.json`, loaded with
//! `--model bt:DIR`. The flags become [`TrainBtOptions`]; the work is
//! [`prbench_candle::bt::pipeline`]'s.

use anyhow::{bail, Result};
use prbench_candle::bt::pipeline::{fmt, train_bt as train, PairSource as Pairs, TrainBtOptions, TrainReporter};
use prbench_candle::bt::{self, TrainOptions};
use prbench_eval::condition::{Condition, ConditionInputs};

use crate::cli::{PairSource, TrainBtArgs, TrainCommand};

/// Runs a `train` sub-verb.
pub fn run(cmd: TrainCommand) -> Result<()> {
    match cmd {
        TrainCommand::Bt(args) => train_bt(args),
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

fn options(args: &TrainBtArgs, condition: Condition) -> TrainBtOptions {
    TrainBtOptions {
        data: args.data.clone(),
        subset: args.subset.clone(),
        condition: condition.to_string(),
        pairs: match args.pairs {
            PairSource::History => Pairs::History,
            PairSource::Target => Pairs::Target,
        },
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
    if !matches!(condition, Condition::None | Condition::Oracle) {
        bail!("`prbench train bt` trains under `none` or `oracle`; `{condition}` is not supported for training (a head trained under `none` can be evaluated under any condition)");
    }
    if !(0.0..1.0).contains(&args.held_out) {
        bail!("--held-out {} must be in [0, 1)", args.held_out);
    }
    crate::commands::refuse_file_as_folder("--out", &args.out, "the BT model (head.safetensors and bt.json)")?;
    if args.out.join(bt::config::CONFIG_FILE).exists() && !args.force {
        bail!("{} already holds a BT model; pass --force to replace it or choose another --out", args.out.display());
    }
    // `none` and `oracle` render without prepared inputs.
    let context = |ex: &prbench_data::Example| condition.context(ex, &ConditionInputs::default(), None).expect("none and oracle render without prepared inputs");
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
