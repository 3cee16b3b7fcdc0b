//! `prbench train bt`: the paper's personalized Bradley-Terry baseline, sized for CPU. A scoring
//! head on frozen MiniLM embeddings of (condition context, question, answer), trained with
//! `−log σ(r_chosen − r_rejected)`; saved as `head.safetensors` + `bt.json`, loaded with
//! `--model bt:DIR`.

pub mod pairs;

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use prbench_candle::bt::{
    self, composition_sha256, BtConfig, DataRecord, EmbedderRecord, TrainOptions, TrainingRecord, COMPOSITION,
};
use prbench_candle::embed::{default_embedder_dir, EmbedderOptions, MiniLmEmbedder};
use prbench_data::psoups::load_psoups_with_history;
use prbench_data::{Dataset, Example};
use prbench_eval::condition::Condition;

/// `train` sub-verbs.
#[derive(Subcommand, Debug)]
pub enum TrainCommand {
    /// Train the personalized Bradley-Terry head on frozen MiniLM embeddings.
    Bt(TrainBtArgs),
}

/// Which pairs to train on.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairSource {
    /// The file's own chosen/rejected pairs (a separate training file).
    Target,
    /// P-Soups only: each user's past preference pairs ("Pair-wise Comparative Feedback"); target
    /// pairs are never trained on.
    History,
}

/// `train bt` arguments.
#[derive(Args, Debug)]
pub struct TrainBtArgs {
    /// Training data: any dataset spec (`psoups:DIR` for `--pairs history`).
    #[arg(long)]
    pub data: String,
    /// Subsets to train on (long or short names, comma-separated); all when omitted.
    #[arg(long, value_delimiter = ',')]
    pub subset: Vec<String>,
    /// Condition whose context the inputs carry: `none` or `oracle`. Evaluate with the same one.
    #[arg(long, default_value = "none")]
    pub condition: String,
    /// Pairs to train on.
    #[arg(long, value_enum)]
    pub pairs: PairSource,
    /// Output directory (gets head.safetensors and bt.json).
    #[arg(long)]
    pub out: PathBuf,
    /// Drop training pairs equal to a target pair of this dataset too (repeatable).
    #[arg(long)]
    pub exclude_data: Vec<String>,
    /// Seed: initialisation, shuffling, held-out split.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = crate::bounds::seed)]
    pub seed: u64,
    /// Hidden width of the head; 0 = a linear head.
    #[arg(long, default_value_t = 256, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(0, 65_536))]
    pub hidden: usize,
    /// Epoch limit.
    #[arg(long, default_value_t = 300, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 100_000))]
    pub epochs: usize,
    /// Stop after this many epochs without a lower held-out loss (0 = never stop early).
    #[arg(long, default_value_t = 30, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(0, 100_000))]
    pub patience: usize,
    /// AdamW learning rate.
    #[arg(long, default_value_t = 1e-3, allow_negative_numbers = true, value_parser = crate::bounds::real(crate::bounds::End::Open(0.0), crate::bounds::End::Closed(10.0), "a learning rate"))]
    pub lr: f64,
    /// AdamW weight decay.
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true, value_parser = crate::bounds::real(crate::bounds::End::Closed(0.0), crate::bounds::End::Closed(1.0), "a weight-decay factor"))]
    pub weight_decay: f64,
    /// Training pairs per optimizer step (0 = full batch).
    #[arg(long, default_value_t = 64, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(0, 1_000_000))]
    pub batch_size: usize,
    /// Share of pairs held out for early stopping, chosen by sha256(seed, pair id).
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true, value_parser = crate::bounds::real(crate::bounds::End::Closed(0.0), crate::bounds::End::Open(1.0), "a share of pairs"))]
    pub held_out: f64,
    /// Token limit per embedded input (default: the embedder's max_position_embeddings); the
    /// context is cut from the left, never the answer, and cuts are counted.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 8192))]
    pub max_length: Option<usize>,
    /// MiniLM directory (default: the one scripts/fetch-models.sh caches).
    #[arg(long)]
    pub embedder: Option<PathBuf>,
    /// Texts per embedding forward pass.
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 4096))]
    pub embed_batch: usize,
    /// Replace an existing model in --out.
    #[arg(long)]
    pub force: bool,
    /// No progress output (the summary line is still printed).
    #[arg(long)]
    pub quiet: bool,
}

/// Below this many distinct pairs, training prints a small-data warning.
const SMALL_DATA: usize = 200;

/// Runs a `train` sub-verb.
pub fn run(cmd: TrainCommand) -> Result<()> {
    match cmd {
        TrainCommand::Bt(args) => train_bt(args),
    }
}

/// Loaded training data: the dataset, the pairs built from it and every target pair to keep out.
struct Source {
    dataset: Dataset,
    built: pairs::Built,
    excluded: Vec<Dataset>,
}

fn build(args: &TrainBtArgs, condition: Condition) -> Result<Source> {
    let excluded: Vec<Dataset> = args
        .exclude_data
        .iter()
        .map(|s| prbench_data::load(s, &[]).with_context(|| format!("loading --exclude-data `{s}`")))
        .collect::<Result<_>>()?;
    let (dataset, built) = match args.pairs {
        PairSource::History => {
            let Some(dir) = args.data.strip_prefix("psoups:") else {
                bail!(
                    "--pairs history needs P-Soups data (`psoups:DIR`): only P-Soups rows carry users' past \
                     preference pairs; for a file of training pairs use --pairs target"
                );
            };
            let dir = std::path::Path::new(dir);
            let (dataset, histories) = load_psoups_with_history(dir, &args.subset, &args.data)
                .with_context(|| format!("loading `{}`", args.data))?;
            // Every target pair of the P-Soups data is kept out, whatever --subset selects.
            let all = if args.subset.is_empty() {
                None
            } else {
                Some(
                    load_psoups_with_history(dir, &[], &args.data)
                        .with_context(|| format!("loading `{}`", args.data))?
                        .0,
                )
            };
            let mut targets: Vec<&Example> = all.as_ref().unwrap_or(&dataset).examples.iter().collect();
            targets.extend(excluded.iter().flat_map(|d| &d.examples));
            let built = pairs::filter(pairs::history_examples(&dataset.examples, &histories, condition), &targets);
            (dataset, built)
        }
        PairSource::Target => {
            let dataset =
                prbench_data::load(&args.data, &args.subset).with_context(|| format!("loading `{}`", args.data))?;
            let targets: Vec<&Example> = excluded.iter().flat_map(|d| &d.examples).collect();
            let built = pairs::filter(pairs::target_examples(&dataset.examples, condition), &targets);
            (dataset, built)
        }
    };
    Ok(Source { dataset, built, excluded })
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
    let say = |s: String| {
        if !args.quiet {
            eprintln!("{s}");
        }
    };

    // 1. Pairs.
    let src = build(&args, condition)?;
    let b = &src.built;
    let pairs_word = match args.pairs {
        PairSource::History => "history",
        PairSource::Target => "target",
    };
    say(format!(
        "pairs: {} {pairs_word} pairs built from {} rows of `{}` (condition {condition}); {} dropped as equal to a target pair; {} exact repeats merged; {} used",
        b.built,
        src.dataset.examples.len(),
        args.data,
        b.dropped.len(),
        b.duplicates,
        b.pairs.len()
    ));
    if !b.dropped.is_empty() {
        let mut targets: Vec<&str> = b.dropped.iter().map(|(_, t)| t.as_str()).collect();
        targets.sort_unstable();
        targets.dedup();
        let shown: Vec<String> = b.dropped.iter().take(5).map(|(p, t)| format!("{p} = {t}")).collect();
        say(format!(
            "  dropped pairs equal {} distinct target pairs ({}); e.g. {}{} (all in bt.json)",
            targets.len(),
            targets.join(", "),
            shown.join("; "),
            if b.dropped.len() > 5 { "; …" } else { "" }
        ));
    }
    if b.shared_questions > 0 {
        say(format!(
            "  note: {} kept pairs ask a question that a target pair also asks (with other answers)",
            b.shared_questions
        ));
    }
    if b.pairs.len() < SMALL_DATA {
        eprintln!(
            "prbench: warning: only {} distinct training pairs ({} built, {} dropped as equal to a target pair, {} exact repeats merged): held-out figures rest on very few pairs",
            b.pairs.len(),
            b.built,
            b.dropped.len(),
            b.duplicates
        );
    }
    if b.pairs.len() < 2 {
        bail!("only {} training pairs left after dropping target overlap and repeats; need at least 2", b.pairs.len());
    }

    // 2. Embeddings.
    let embedder_dir = args.embedder.clone().unwrap_or_else(default_embedder_dir);
    let embedder = MiniLmEmbedder::load_with(
        &embedder_dir,
        &EmbedderOptions { max_length: args.max_length, batch_size: Some(args.embed_batch) },
    )
    .with_context(|| format!("loading the embedder from {}", embedder_dir.display()))?;
    say(format!(
        "embedder: {} (sha256 {}…), dim {}, max length {} tokens",
        embedder_dir.display(),
        &embedder.weights_sha256()[..12],
        embedder.dim(),
        embedder.max_length()
    ));
    let emb = bt::embed_pairs(&embedder, &b.pairs, &mut |p| {
        say(format!(
            "  embedded {}/{} distinct texts, {:.1} texts/s, {:.0} tokens/s",
            p.done,
            p.total,
            p.done as f64 / p.seconds.max(1e-9),
            p.tokens as f64 / p.seconds.max(1e-9)
        ))
    })?;
    let er = &emb.record;
    say(format!(
        "embedding: {} distinct texts ({} inputs), {} tokens (longest {}), {:.1} s = {:.1} texts/s, {:.0} tokens/s; {} inputs truncated ({} tokens cut from contexts)",
        er.distinct_texts,
        2 * b.pairs.len(),
        er.input_tokens,
        er.max_input_tokens,
        er.seconds,
        er.distinct_texts as f64 / er.seconds.max(1e-9),
        er.input_tokens as f64 / er.seconds.max(1e-9),
        er.truncated_inputs,
        er.truncated_tokens
    ));

    // 3. Training.
    let opts = TrainOptions {
        seed: args.seed,
        hidden: args.hidden,
        epochs: args.epochs,
        patience: args.patience,
        lr: args.lr,
        weight_decay: args.weight_decay,
        batch_size: args.batch_size,
        held_out: args.held_out,
    };
    let ids: Vec<String> = b.pairs.iter().map(|p| p.id.clone()).collect();
    let fmt = |x: Option<f64>, digits: usize| x.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let t = bt::train_head(&emb.chosen, &emb.rejected, &ids, &opts, &mut |s, improved| {
        say(format!(
            "epoch {:>4}  train loss {:.4} acc {:.3} | held-out loss {} acc {}{}",
            s.epoch,
            s.train_loss,
            s.train_accuracy,
            fmt(s.held_out_loss, 4),
            fmt(s.held_out_accuracy, 3),
            if improved { "  *" } else { "" }
        ))
    })?;
    let best = *t.best();

    // 4. Save.
    let config = BtConfig {
        format: bt::config::BT_FORMAT.to_string(),
        embedder: EmbedderRecord {
            name: embedder_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            model_safetensors_sha256: embedder.weights_sha256().to_string(),
            dim: embedder.dim(),
            pooling: "mean".into(),
            normalize: true,
        },
        max_length: embedder.max_length(),
        hidden: args.hidden,
        composition: COMPOSITION.to_string(),
        composition_sha256: composition_sha256(),
        condition: condition.to_string(),
        seed: args.seed,
        training: TrainingRecord {
            lr: args.lr,
            weight_decay: args.weight_decay,
            batch_size: args.batch_size,
            max_epochs: args.epochs,
            patience: args.patience,
            held_out_fraction: args.held_out,
            n_train: t.n_train,
            n_held_out: t.n_held_out,
            epochs_run: t.epochs_run,
            best_epoch: t.best_epoch,
            best_held_out_loss: best.held_out_loss,
            best_held_out_accuracy: best.held_out_accuracy,
            train_loss_at_best: best.train_loss,
            seconds: t.seconds,
            history: t.history.clone(),
        },
        embedding: emb.record.clone(),
        data: DataRecord {
            spec: args.data.clone(),
            hash: src.dataset.hash.clone(),
            subsets: args.subset.clone(),
            pairs: pairs_word.to_string(),
            built: b.built,
            dropped_target_overlap: b.dropped.len(),
            dropped_ids: b.dropped.iter().map(|(p, t)| format!("{p} = {t}")).collect(),
            duplicates_merged: b.duplicates,
            used: b.pairs.len(),
            shared_questions: b.shared_questions,
            excluded_specs: src.excluded.iter().map(|d| d.source.clone()).collect(),
            trained_pairs_sha256: {
                let mut v: Vec<String> = b.pairs.iter().map(|p| bt::pair_sha256(&p.question, &p.chosen, &p.rejected)).collect();
                v.sort_unstable();
                v.dedup();
                v
            },
        },
        head_sha256: String::new(),
        code_version: crate::code_version().to_string(),
    };
    bt::save(&args.out, &t.head, &config).with_context(|| format!("saving to {}", args.out.display()))?;
    println!(
        "bt: saved {} (condition {condition}, hidden {}): {} train / {} held-out pairs, best epoch {} of {}, held-out loss {} accuracy {}; {} dropped as equal to a target pair; {} truncated; embedding {:.1} s, training {:.1} s",
        args.out.display(),
        args.hidden,
        t.n_train,
        t.n_held_out,
        t.best_epoch,
        t.epochs_run,
        fmt(best.held_out_loss, 4),
        best.held_out_accuracy.map_or("-".to_string(), |a| format!("{:.1}%", 100.0 * a)),
        prbench_report::plural::count(b.dropped.len(), "pair", "pairs"),
        prbench_report::plural::count(er.truncated_inputs, "input", "inputs"),
        er.seconds,
        t.seconds
    );
    Ok(())
}
