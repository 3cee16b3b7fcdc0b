//! Training a BT head from a dataset spec to a saved model folder, as `prbench train bt` does:
//! build the pairs (P-Soups users' past pairs or a file's own pairs, minus every pair equal to
//! a target pair and minus repeats; [`super::pairs`]), embed each distinct text once, train with
//! early stopping ([`super::train`]), and save `head.safetensors` + `bt.json` with everything
//! needed to say how the head was made ([`super::config`]).

use std::path::{Path, PathBuf};

use prbench_data::psoups::load_psoups_with_history;
use prbench_data::{DataError, Dataset, Example};
use prbench_models::ModelError;

use super::pairs::{self, Built, Context};
use super::{composition_sha256, BtConfig, DataRecord, EmbedderRecord, TrainOptions, TrainingRecord, COMPOSITION};
use crate::embed::{default_embedder_dir, EmbedderOptions, MiniLmEmbedder};

/// Below this many distinct pairs, training warns that held-out figures mean little.
const SMALL_DATA: usize = 200;

/// Which pairs to train on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairSource {
    /// The file's own chosen/rejected pairs (a separate training file).
    Target,
    /// P-Soups only: each user's past preference pairs; target pairs are never trained on.
    History,
}

impl PairSource {
    /// The name `bt.json` records (`target`, `history`).
    pub fn name(self) -> &'static str {
        match self {
            PairSource::History => "history",
            PairSource::Target => "target",
        }
    }
}

/// Everything a training run needs (the `train bt` flags, validated).
#[derive(Debug, Clone)]
pub struct TrainBtOptions {
    /// Training data: any dataset spec (`psoups:DIR` for [`PairSource::History`]).
    pub data: String,
    /// Subsets to train on; all when empty.
    pub subset: Vec<String>,
    /// The condition whose context the inputs carry, by name (recorded in `bt.json`).
    pub condition: String,
    /// Pairs to train on.
    pub pairs: PairSource,
    /// Output folder (gets head.safetensors and bt.json).
    pub out: PathBuf,
    /// Datasets whose target pairs are kept out of training too.
    pub exclude_data: Vec<String>,
    /// The head's training settings (seed, width, epochs, optimizer, split).
    pub train: TrainOptions,
    /// Token limit per embedded input (default: the embedder's own).
    pub max_length: Option<usize>,
    /// MiniLM directory (default: the one scripts/fetch-models.sh caches).
    pub embedder: Option<PathBuf>,
    /// Texts per embedding forward pass.
    pub embed_batch: usize,
    /// prbench version, for `bt.json`.
    pub code_version: String,
}

/// Where a training run's progress lines and warnings go.
pub trait TrainReporter {
    /// A progress line (pairs built, embedding rate, each epoch); a quiet caller drops it.
    fn progress(&self, line: &str);
    /// A warning the user should see even when quiet.
    fn warning(&self, line: &str);
}

/// Why training failed; messages name the data, folder or count at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// A dataset could not be loaded.
    #[error("{what}")]
    Data {
        /// What was being loaded (e.g. "loading `psoups:DIR`").
        what: String,
        /// The cause.
        #[source]
        source: DataError,
    },
    /// The embedder could not be loaded, or the head not saved.
    #[error("{what}")]
    Model {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: ModelError,
    },
    /// Embedding or training failed.
    #[error(transparent)]
    Engine(#[from] ModelError),
    /// The data does not allow this training (wrong source, too few pairs).
    #[error("{0}")]
    Invalid(String),
}

/// A trained and saved head, with what the summary line reports.
pub struct Trained {
    /// The pairs built and what was dropped.
    pub built: Built,
    /// The saved `bt.json`.
    pub config: BtConfig,
}

/// Loaded training data: the dataset, the pairs built from it and every target pair to keep out.
struct Source {
    dataset: Dataset,
    built: Built,
    excluded: Vec<Dataset>,
}

fn load_data(spec: &str, subset: &[String], what: String) -> Result<Dataset, TrainError> {
    prbench_data::load(spec, subset).map_err(|source| TrainError::Data { what, source })
}

fn build(opts: &TrainBtOptions, context: Context<'_>) -> Result<Source, TrainError> {
    let excluded: Vec<Dataset> =
        opts.exclude_data.iter().map(|s| load_data(s, &[], format!("loading --exclude-data `{s}`"))).collect::<Result<_, _>>()?;
    let (dataset, built) = match opts.pairs {
        PairSource::History => {
            let Some(dir) = opts.data.strip_prefix("psoups:") else {
                return Err(TrainError::Invalid(
                    "--pairs history needs P-Soups data (`psoups:DIR`): only P-Soups rows carry users' past \
                     preference pairs; for a file of training pairs use --pairs target"
                        .into(),
                ));
            };
            let dir = Path::new(dir);
            let psoups = |subset: &[String]| {
                load_psoups_with_history(dir, subset, &opts.data).map_err(|source| TrainError::Data { what: format!("loading `{}`", opts.data), source })
            };
            let (dataset, histories) = psoups(&opts.subset)?;
            // Every target pair of the P-Soups data is kept out, whatever the subset selection.
            let all = if opts.subset.is_empty() { None } else { Some(psoups(&[])?.0) };
            let mut targets: Vec<&Example> = all.as_ref().unwrap_or(&dataset).examples.iter().collect();
            targets.extend(excluded.iter().flat_map(|d| &d.examples));
            let built = pairs::filter(pairs::history_examples(&dataset.examples, &histories, context), &targets);
            (dataset, built)
        }
        PairSource::Target => {
            let dataset = load_data(&opts.data, &opts.subset, format!("loading `{}`", opts.data))?;
            let targets: Vec<&Example> = excluded.iter().flat_map(|d| &d.examples).collect();
            let built = pairs::filter(pairs::target_examples(&dataset.examples, context), &targets);
            (dataset, built)
        }
    };
    Ok(Source { dataset, built, excluded })
}

/// Reports the pairs built and what was dropped; refuses fewer than two.
fn report_pairs(opts: &TrainBtOptions, src: &Source, reporter: &dyn TrainReporter) -> Result<(), TrainError> {
    let b = &src.built;
    reporter.progress(&format!(
        "pairs: {} {} pairs built from {} rows of `{}` (condition {}); {} dropped as equal to a target pair; {} exact repeats merged; {} used",
        b.built,
        opts.pairs.name(),
        src.dataset.examples.len(),
        opts.data,
        opts.condition,
        b.dropped.len(),
        b.duplicates,
        b.pairs.len()
    ));
    if !b.dropped.is_empty() {
        let mut targets: Vec<&str> = b.dropped.iter().map(|(_, t)| t.as_str()).collect();
        targets.sort_unstable();
        targets.dedup();
        let shown: Vec<String> = b.dropped.iter().take(5).map(|(p, t)| format!("{p} = {t}")).collect();
        reporter.progress(&format!(
            "  dropped pairs equal {} distinct target pairs ({}); e.g. {}{} (all in bt.json)",
            targets.len(),
            targets.join(", "),
            shown.join("; "),
            if b.dropped.len() > 5 { "; …" } else { "" }
        ));
    }
    if b.shared_questions > 0 {
        reporter.progress(&format!("  note: {} kept pairs ask a question that a target pair also asks (with other answers)", b.shared_questions));
    }
    if b.pairs.len() < SMALL_DATA {
        reporter.warning(&format!(
            "warning: only {} distinct training pairs ({} built, {} dropped as equal to a target pair, {} exact repeats merged): held-out figures rest on very few pairs",
            b.pairs.len(),
            b.built,
            b.dropped.len(),
            b.duplicates
        ));
    }
    if b.pairs.len() < 2 {
        return Err(TrainError::Invalid(format!("only {} training pairs left after dropping target overlap and repeats; need at least 2", b.pairs.len())));
    }
    Ok(())
}

/// `bt.json`'s record of the data.
fn data_record(opts: &TrainBtOptions, src: &Source) -> DataRecord {
    let b = &src.built;
    DataRecord {
        spec: opts.data.clone(),
        hash: src.dataset.hash.clone(),
        subsets: opts.subset.clone(),
        pairs: opts.pairs.name().to_string(),
        built: b.built,
        dropped_target_overlap: b.dropped.len(),
        dropped_ids: b.dropped.iter().map(|(p, t)| format!("{p} = {t}")).collect(),
        duplicates_merged: b.duplicates,
        used: b.pairs.len(),
        shared_questions: b.shared_questions,
        excluded_specs: src.excluded.iter().map(|d| d.source.clone()).collect(),
        trained_pairs_sha256: {
            let mut v: Vec<String> = b.pairs.iter().map(|p| super::pair_sha256(&p.question, &p.chosen, &p.rejected)).collect();
            v.sort_unstable();
            v.dedup();
            v
        },
    }
}

/// Builds the pairs (each input's context from `context`), embeds, trains and saves the head
/// into `opts.out` (see the module docs).
///
/// # Errors
/// Data that cannot be loaded or gives fewer than two pairs; an embedder that cannot be loaded;
/// embedding, training or saving failures.
pub fn train_bt(opts: &TrainBtOptions, context: Context<'_>, reporter: &dyn TrainReporter) -> Result<Trained, TrainError> {
    // 1. Pairs.
    let src = build(opts, context)?;
    report_pairs(opts, &src, reporter)?;
    let b = &src.built;

    // 2. Embeddings.
    let embedder_dir = opts.embedder.clone().unwrap_or_else(default_embedder_dir);
    let embedder = MiniLmEmbedder::load_with(&embedder_dir, &EmbedderOptions { max_length: opts.max_length, batch_size: Some(opts.embed_batch) })
        .map_err(|source| TrainError::Model { what: format!("loading the embedder from {}", embedder_dir.display()), source })?;
    reporter.progress(&format!(
        "embedder: {} (sha256 {}…), dim {}, max length {} tokens",
        embedder_dir.display(),
        &embedder.weights_sha256()[..12],
        embedder.dim(),
        embedder.max_length()
    ));
    let emb = super::embed_pairs(&embedder, &b.pairs, &mut |p| {
        reporter.progress(&format!(
            "  embedded {}/{} distinct texts, {:.1} texts/s, {:.0} tokens/s",
            p.done,
            p.total,
            p.done as f64 / p.seconds.max(1e-9),
            p.tokens as f64 / p.seconds.max(1e-9)
        ))
    })?;
    let er = &emb.record;
    reporter.progress(&format!(
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
    let ids: Vec<String> = b.pairs.iter().map(|p| p.id.clone()).collect();
    let t = super::train_head(&emb.chosen, &emb.rejected, &ids, &opts.train, &mut |s, improved| {
        reporter.progress(&format!(
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
    let o = &opts.train;
    let config = BtConfig {
        format: super::config::BT_FORMAT.to_string(),
        embedder: EmbedderRecord {
            name: embedder_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            model_safetensors_sha256: embedder.weights_sha256().to_string(),
            dim: embedder.dim(),
            pooling: "mean".into(),
            normalize: true,
        },
        max_length: embedder.max_length(),
        hidden: o.hidden,
        composition: COMPOSITION.to_string(),
        composition_sha256: composition_sha256(),
        condition: opts.condition.clone(),
        seed: o.seed,
        training: TrainingRecord {
            lr: o.lr,
            weight_decay: o.weight_decay,
            batch_size: o.batch_size,
            max_epochs: o.epochs,
            patience: o.patience,
            held_out_fraction: o.held_out,
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
        data: data_record(opts, &src),
        head_sha256: String::new(),
        code_version: opts.code_version.clone(),
    };
    super::save(&opts.out, &t.head, &config).map_err(|source| TrainError::Model { what: format!("saving to {}", opts.out.display()), source })?;
    Ok(Trained { built: src.built, config })
}

/// A figure with `digits` decimals, or `-` when there is none.
pub fn fmt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}
