//! `bt.json`: everything needed to load a trained head and to say how it was made.

use serde::{Deserialize, Serialize};

/// Value of [`BtConfig::format`] this version writes and reads.
pub const BT_FORMAT: &str = "prbench-bt/1";

/// File names inside a BT model directory.
pub const HEAD_FILE: &str = "head.safetensors";
/// The config file name.
pub const CONFIG_FILE: &str = "bt.json";

/// The frozen embedder the head was trained on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderRecord {
    /// Directory name of the embedder at training time (e.g. `all-MiniLM-L6-v2`); informative.
    pub name: String,
    /// sha256 (hex) of its `model.safetensors`: the identity checked at load time.
    pub model_safetensors_sha256: String,
    /// Embedding dimension.
    pub dim: usize,
    /// Pooling (`mean` over the attention mask).
    pub pooling: String,
    /// Whether embeddings are L2-normalised.
    pub normalize: bool,
}

/// Token accounting and speed of the embedding pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbedRecord {
    /// Distinct texts embedded (each once).
    pub distinct_texts: usize,
    /// Tokens fed to the model, summed over distinct texts.
    pub input_tokens: usize,
    /// Longest input in tokens (after truncation).
    pub max_input_tokens: usize,
    /// Distinct texts whose context was cut.
    pub truncated_inputs: usize,
    /// Tokens cut, summed over distinct texts.
    pub truncated_tokens: usize,
    /// Wall time of the embedding pass in seconds.
    pub seconds: f64,
}

/// One epoch's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// 1-based epoch (0 = before training).
    pub epoch: usize,
    /// Mean BT loss over the training pairs after this epoch.
    pub train_loss: f64,
    /// Accuracy on the training pairs (share with r_chosen > r_rejected).
    pub train_accuracy: f64,
    /// Mean BT loss over the held-out pairs (NaN-free; absent when nothing is held out).
    pub held_out_loss: Option<f64>,
    /// Held-out accuracy (ties count as wrong).
    pub held_out_accuracy: Option<f64>,
}

/// How the head was trained and how it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingRecord {
    /// AdamW learning rate.
    pub lr: f64,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Pairs per optimizer step (0 = full batch).
    pub batch_size: usize,
    /// Epoch limit.
    pub max_epochs: usize,
    /// Early-stopping patience in epochs.
    pub patience: usize,
    /// Requested held-out share.
    pub held_out_fraction: f64,
    /// Training pairs.
    pub n_train: usize,
    /// Held-out pairs.
    pub n_held_out: usize,
    /// Epochs run before stopping.
    pub epochs_run: usize,
    /// The epoch whose weights were saved (lowest held-out loss; the last epoch when nothing is
    /// held out).
    pub best_epoch: usize,
    /// Held-out loss of the saved epoch.
    pub best_held_out_loss: Option<f64>,
    /// Held-out accuracy of the saved epoch.
    pub best_held_out_accuracy: Option<f64>,
    /// Training loss of the saved epoch.
    pub train_loss_at_best: f64,
    /// Wall time of training in seconds (embedding excluded).
    pub seconds: f64,
    /// Every epoch, 0 (before training) included.
    pub history: Vec<EpochStats>,
}

/// Where the training pairs came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DataRecord {
    /// `--data` as given.
    pub spec: String,
    /// The dataset's content hash.
    pub hash: String,
    /// Subsets used (empty = all).
    pub subsets: Vec<String>,
    /// `history` (P-Soups users' past pairs) or `target` (the file's own pairs).
    pub pairs: String,
    /// Pairs built before any drop.
    pub built: usize,
    /// Pairs dropped because (question, chosen, rejected) equals a target pair of the dataset
    /// (or of an `--exclude-data` set).
    pub dropped_target_overlap: usize,
    /// Ids of the dropped pairs with the target they equal (`"{train id} = {target id}"`).
    pub dropped_ids: Vec<String>,
    /// Pairs dropped because an identical pair (same context, question, chosen, rejected) came
    /// earlier; kept once so held-out pairs are not copies of training pairs.
    pub duplicates_merged: usize,
    /// Pairs used (train + held out).
    pub used: usize,
    /// Used pairs whose question is also asked by a target pair (with other answers): not a
    /// leak of any evaluated pair, recorded so a reader can judge.
    #[serde(default)]
    pub shared_questions: usize,
    /// Other datasets whose target pairs were excluded too.
    #[serde(default)]
    pub excluded_specs: Vec<String>,
    /// [`super::pair_sha256`] of every pair used (train and held out), sorted: `prbench eval`
    /// refuses to score an example whose pair is among them.
    #[serde(default)]
    pub trained_pairs_sha256: Vec<String>,
}

/// The content of `bt.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BtConfig {
    /// [`BT_FORMAT`].
    pub format: String,
    /// The frozen embedder.
    pub embedder: EmbedderRecord,
    /// Maximum tokens per embedded input.
    pub max_length: usize,
    /// Hidden width (0 = linear head).
    pub hidden: usize,
    /// The text composition ([`super::compose::COMPOSITION`]).
    pub composition: String,
    /// sha256 of `composition`.
    pub composition_sha256: String,
    /// Condition whose context the training inputs carried (`none`, `oracle`); score with the
    /// same condition.
    pub condition: String,
    /// Seed (initialisation, shuffling, held-out split).
    pub seed: u64,
    /// Training record.
    pub training: TrainingRecord,
    /// Embedding pass record.
    pub embedding: EmbedRecord,
    /// Data provenance.
    pub data: DataRecord,
    /// sha256 of `head.safetensors`, written by [`super::save`] and checked on load.
    #[serde(default)]
    pub head_sha256: String,
    /// prbench version that trained it.
    pub code_version: String,
}
