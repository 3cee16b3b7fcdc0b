//! Training a BT head from a dataset spec to a saved model folder, as `prbench train bt` does:
//! build the pairs (P-Soups users' past pairs or a file's own pairs, minus every pair equal to
//! a target pair and minus repeats; [`super::pairs`]), embed each distinct text once, train with
//! early stopping ([`super::train`]), and save `head.safetensors` + `bt.json` with everything
//! needed to say how the head was made ([`super::config`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prbench_data::{DataError, Dataset, Example};
use prbench_models::ModelError;

use super::pairs::{self, Built, Context};
use super::{
    composition_sha256, BtConfig, DataRecord, EmbedderRecord, TrainingRecord, COMPOSITION,
};
use crate::options::TrainBtOptions;
use prbench_rm::embed::{default_embedder_dir, EmbedderOptions, MiniLmEmbedder};

/// Below this many distinct pairs, training warns that held-out figures mean little.
const SMALL_DATA: usize = 200;

/// Which pairs to train on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairSource {
    /// The file's own chosen/rejected pairs (a separate training file).
    Target,
    /// Each user's past preference pairs (P-Soups' history, SynthesizeMe's `train`-split pairs;
    /// [`prbench_data::load_with_history`]); target pairs are never trained on.
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

/// Where a training run's progress lines and warnings go.
pub trait TrainReporter {
    /// A progress line (pairs built, embedding rate, each epoch); a quiet caller drops it.
    fn progress(&self, line: &str);
    /// A warning the user should see even when quiet; `line` carries no `warning:` prefix
    /// (the reporter marks it as it shows warnings).
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
        /// The cause (boxed: a `DataError` is large and this is the error path).
        #[source]
        source: Box<DataError>,
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
pub struct Source {
    /// The training dataset (`--data`).
    pub dataset: Dataset,
    /// The pairs built and what was dropped.
    pub built: Built,
    /// The `--exclude-data` datasets.
    pub excluded: Vec<Dataset>,
    /// The owner of each kept pair (`owner(row)` of the row it came from), aligned with
    /// `built.pairs`.
    pub owners: Vec<String>,
}

/// What to build training pairs from (the data flags of `train bt` and `train pal`).
#[derive(Debug, Clone, Copy)]
pub struct PairRequest<'a> {
    /// Training data: any dataset spec (`psoups:DIR` or `synthesizeme:DIR` for [`PairSource::History`]).
    pub data: &'a str,
    /// Subsets to train on; all when empty.
    pub subset: &'a [String],
    /// Pairs to train on.
    pub pairs: PairSource,
    /// Datasets whose target pairs are kept out of training too.
    pub exclude_data: &'a [String],
    /// The condition's name, for messages.
    pub condition: &'a str,
}

fn load_data(spec: &str, subset: &[String], what: String) -> Result<Dataset, TrainError> {
    prbench_data::load(spec, subset)
        .map_err(|source| TrainError::Data { what, source: Box::new(source) })
}

/// Loads the data and builds its pairs ([`super::pairs`]): every pair equal to a target pair of
/// the data (all its subsets, for history pairs) or of an `--exclude-data` set is dropped, and
/// so is every repeat of a kept pair with the same owner (`owner` of the row a pair comes from;
/// BT passes one owner for all, so any repeat is merged).
///
/// # Errors
/// Data that cannot be loaded; [`PairSource::History`] on data without history pairs
/// ([`prbench_data::load_with_history`]).
pub fn build_pairs(
    req: &PairRequest<'_>,
    context: Context<'_>,
    owner: &dyn Fn(&Example) -> String,
) -> Result<Source, TrainError> {
    let excluded: Vec<Dataset> = req
        .exclude_data
        .iter()
        .map(|s| load_data(s, &[], format!("loading --exclude-data `{s}`")))
        .collect::<Result<_, _>>()?;
    let mut owner_of: HashMap<String, String> = HashMap::new();
    let (dataset, built) = match req.pairs {
        PairSource::History => {
            let history = |subset: &[String]| {
                prbench_data::load_with_history(req.data, subset)
                    .map_err(|source| TrainError::Data { what: format!("loading `{}`", req.data), source: Box::new(source) })?
                    .ok_or_else(|| {
                        TrainError::Invalid(format!(
                            "--pairs history needs data whose rows carry users' past preference pairs ({}), and `{}` is \
                             neither; for a file of training pairs use --pairs target",
                            prbench_data::HISTORY_SPECS,
                            req.data
                        ))
                    })
            };
            let (dataset, histories) = history(req.subset)?;
            // Every target pair of the data is kept out, whatever the subset selection.
            let all = if req.subset.is_empty() { None } else { Some(history(&[])?.0) };
            let mut targets: Vec<&Example> =
                all.as_ref().unwrap_or(&dataset).examples.iter().collect();
            targets.extend(excluded.iter().flat_map(|d| &d.examples));
            let pairs = pairs::history_examples(&dataset.examples, &histories, context);
            for (row, hist) in dataset.examples.iter().zip(&histories) {
                for k in 0..hist.pairs.len() {
                    owner_of.insert(format!("{}-h{}", row.id, k + 1), owner(row));
                }
            }
            let built = pairs::filter_scoped(pairs, &targets, &|p| {
                owner_of.get(&p.id).cloned().unwrap_or_default()
            });
            (dataset, built)
        }
        PairSource::Target => {
            let dataset = load_data(req.data, req.subset, format!("loading `{}`", req.data))?;
            let targets: Vec<&Example> = excluded.iter().flat_map(|d| &d.examples).collect();
            owner_of.extend(dataset.examples.iter().map(|row| (row.id.clone(), owner(row))));
            let built = pairs::filter_scoped(
                pairs::target_examples(&dataset.examples, context),
                &targets,
                &|p| owner_of.get(&p.id).cloned().unwrap_or_default(),
            );
            (dataset, built)
        }
    };
    let owners =
        built.pairs.iter().map(|p| owner_of.get(&p.id).cloned().unwrap_or_default()).collect();
    Ok(Source { dataset, built, excluded, owners })
}

/// Reports the pairs built and what was dropped; refuses fewer than two.
///
/// # Errors
/// [`TrainError::Invalid`] when fewer than two pairs are left.
pub fn report_pairs(
    req: &PairRequest<'_>,
    src: &Source,
    reporter: &dyn TrainReporter,
) -> Result<(), TrainError> {
    let b = &src.built;
    reporter.progress(&format!(
        "pairs: {} {} pairs built from {} rows of `{}` (condition {}); {} dropped as equal to a target pair; {} exact repeats merged; {} used",
        b.built,
        req.pairs.name(),
        src.dataset.examples.len(),
        req.data,
        req.condition,
        b.dropped.len(),
        b.duplicates,
        b.pairs.len()
    ));
    if !b.dropped.is_empty() {
        let mut targets: Vec<&str> = b.dropped.iter().map(|(_, t)| t.as_str()).collect();
        targets.sort_unstable();
        targets.dedup();
        let shown: Vec<String> =
            b.dropped.iter().take(5).map(|(p, t)| format!("{p} = {t}")).collect();
        reporter.progress(&format!(
            "  dropped pairs equal {} distinct target pairs ({}); e.g. {}{} (all in the model's config)",
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
            "only {} distinct training pairs ({} built, {} dropped as equal to a target pair, {} exact repeats merged): held-out figures rest on very few pairs",
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

/// The model config's record of the data (`bt.json`, `pal.json`).
pub fn data_record(req: &PairRequest<'_>, src: &Source) -> DataRecord {
    let b = &src.built;
    DataRecord {
        spec: req.data.to_string(),
        hash: src.dataset.hash.clone(),
        subsets: req.subset.to_vec(),
        pairs: req.pairs.name().to_string(),
        built: b.built,
        dropped_target_overlap: b.dropped.len(),
        dropped_ids: b.dropped.iter().map(|(p, t)| format!("{p} = {t}")).collect(),
        duplicates_merged: b.duplicates,
        used: b.pairs.len(),
        shared_questions: b.shared_questions,
        excluded_specs: src.excluded.iter().map(|d| d.source.clone()).collect(),
        trained_pairs_sha256: {
            let mut v: Vec<String> = b
                .pairs
                .iter()
                .map(|p| super::pair_sha256(&p.question, &p.chosen, &p.rejected))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        },
    }
}

/// Loads the embedder `dir` (default: [`default_embedder_dir`]) with the training options and
/// reports it.
///
/// # Errors
/// [`TrainError::Invalid`] naming `--max-length` when the embedder refuses that token limit (it
/// must be from 4 to the embedder's `max_position_embeddings`); [`TrainError::Model`] naming the
/// directory for any other load failure.
pub fn load_embedder(
    dir: Option<&Path>,
    max_length: Option<usize>,
    embed_batch: usize,
    reporter: &dyn TrainReporter,
) -> Result<(PathBuf, MiniLmEmbedder), TrainError> {
    let embedder_dir = dir.map(Path::to_path_buf).unwrap_or_else(default_embedder_dir);
    let embedder = MiniLmEmbedder::load_with(&embedder_dir, &EmbedderOptions { max_length, batch_size: Some(embed_batch) })
        .map_err(|source| match (&source, max_length) {
            // The embedder names the limit it refuses as a spec (`max_length=3`); the user gave
            // it as a flag.
            (ModelError::Spec { spec, reason }, Some(n)) if *spec == format!("max_length={n}") => {
                TrainError::Invalid(format!(
                    "--max-length {n} does not fit the embedder in {}: {reason}; pass a value in that range, or leave --max-length out to use the embedder's own limit",
                    embedder_dir.display()
                ))
            }
            _ => TrainError::Model { what: format!("loading the embedder from {}", embedder_dir.display()), source },
        })?;
    reporter.progress(&format!(
        "embedder: {} (sha256 {}…), dim {}, max length {} tokens",
        embedder_dir.display(),
        &embedder.weights_sha256()[..12],
        embedder.dim(),
        embedder.max_length()
    ));
    Ok((embedder_dir, embedder))
}

/// The progress line of the embedding pass.
pub fn embed_progress_line(p: &super::EmbedProgress) -> String {
    format!(
        "  embedded {}/{} distinct texts, {:.1} texts/s, {:.0} tokens/s",
        p.done,
        p.total,
        p.done as f64 / p.seconds.max(1e-9),
        p.tokens as f64 / p.seconds.max(1e-9)
    )
}

/// `bt.json`'s and `pal.json`'s record of the embedder.
pub fn embedder_record(embedder_dir: &Path, embedder: &MiniLmEmbedder) -> EmbedderRecord {
    EmbedderRecord {
        name: embedder_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        model_safetensors_sha256: embedder.weights_sha256().to_string(),
        dim: embedder.dim(),
        pooling: "mean".into(),
        normalize: true,
    }
}

/// Builds the pairs (each input's context from `context`), embeds, trains and saves the head
/// into `opts.out` (see the module docs).
///
/// # Errors
/// Data that cannot be loaded or gives fewer than two pairs; an embedder that cannot be loaded;
/// embedding, training or saving failures.
pub fn train_bt(
    opts: &TrainBtOptions,
    context: Context<'_>,
    reporter: &dyn TrainReporter,
) -> Result<Trained, TrainError> {
    // 1. Pairs.
    let req = opts.request();
    let src = build_pairs(&req, context, &|_| String::new())?;
    report_pairs(&req, &src, reporter)?;
    let b = &src.built;

    // 2. Embeddings.
    let (embedder_dir, embedder) =
        load_embedder(opts.embedder.as_deref(), opts.max_length, opts.embed_batch, reporter)?;
    let emb = super::embed_pairs(&embedder, &b.pairs, &mut |p| {
        reporter.progress(&embed_progress_line(&p))
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
    let t =
        super::train_head(&emb.chosen, &emb.rejected, &ids, &opts.train, &mut |s, improved| {
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
        embedder: embedder_record(&embedder_dir, &embedder),
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
        data: data_record(&req, &src),
        head_sha256: String::new(),
        code_version: opts.code_version.clone(),
    };
    super::save(&opts.out, &t.head, &config).map_err(|source| TrainError::Model {
        what: format!("saving to {}", opts.out.display()),
        source,
    })?;
    Ok(Trained { built: src.built, config })
}

/// A figure with `digits` decimals, or `-` when there is none.
pub fn fmt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../prbench-data/tests/fixtures")
    }

    fn request(data: &str) -> PairRequest<'_> {
        PairRequest {
            data,
            subset: &[],
            pairs: PairSource::History,
            exclude_data: &[],
            condition: "none",
        }
    }

    fn none(ex: &Example) -> Option<String> {
        Some(format!("Question:\n{}", ex.question))
    }

    /// SynthesizeMe's history is each test user's own `train`-split pairs (the fixture written by
    /// tools/make_personal_fixtures.py): arena-u1 has 2 (c-101, multi-turn c-102) and 2 test rows,
    /// arena-u2 none, user584 1 (c3156) and 1 test row. So 2·2 + 1 = 5 pairs are built; arena-u1's
    /// second copies repeat the first (same owner for BT, same user for PAL) and are merged.
    #[test]
    fn synthesizeme_history_pairs_are_each_users_train_pairs() {
        let spec = format!("synthesizeme:{}", fixtures().join("synthesizeme").display());
        for (owner_kind, owner) in [
            ("one owner (BT)", &(|_: &Example| String::new()) as &dyn Fn(&Example) -> String),
            (
                "the user (PAL)",
                &(|e: &Example| e.user_id.clone().unwrap()) as &dyn Fn(&Example) -> String,
            ),
        ] {
            let src = build_pairs(&request(&spec), &none, owner).unwrap();
            let b = &src.built;
            assert_eq!(src.dataset.examples.len(), 4, "{owner_kind}: test rows of the test split");
            assert_eq!(
                (b.built, b.dropped.len(), b.duplicates, b.pairs.len()),
                (5, 0, 2, 3),
                "{owner_kind}"
            );
            let mut got: Vec<(&str, &str)> =
                b.pairs.iter().map(|p| (p.chosen.as_str(), p.rejected.as_str())).collect();
            got.sort();
            assert_eq!(
                got,
                vec![
                    (
                        "Listen to her reasons first, then talk through the risks together.",
                        "Forbid it."
                    ),
                    ("Mango 🥭", "Potato."),
                    ("To get to the other side!", "I don't know."),
                ],
                "{owner_kind}"
            );
            let joke = b.pairs.iter().find(|p| p.chosen.starts_with("To get")).unwrap();
            assert!(
                joke.question.contains("Why?"),
                "the multi-turn history pair keeps its last user turn: {:?}",
                joke.question
            );
            if owner_kind.starts_with("the user") {
                let mut owners = src.owners.clone();
                owners.sort();
                assert_eq!(owners, ["arena-u1", "arena-u1", "user584"]);
            }
        }
    }

    #[test]
    fn history_pairs_on_data_without_history_are_refused_naming_the_spec() {
        let spec = format!(
            "{}",
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/sample").display()
        );
        let err = build_pairs(&request(&spec), &none, &|_| String::new())
            .err()
            .expect("refused")
            .to_string();
        assert!(
            err.contains("--pairs history")
                && err.contains(&spec)
                && err.contains("synthesizeme:DIR"),
            "{err}"
        );
    }
}
