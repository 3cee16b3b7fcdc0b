//! `pal.json`: everything needed to load a trained PAL model and to say how it was made.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bt::{DataRecord, EmbedRecord, EmbedderRecord};

/// Value of [`PalConfig::format`] this version writes and reads.
pub const PAL_FORMAT: &str = "prbench-pal/1";

/// The tensors' file inside a PAL model directory.
pub const WEIGHTS_FILE: &str = "pal.safetensors";
/// The config file name.
pub const CONFIG_FILE: &str = "pal.json";

/// One epoch's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PalEpochStats {
    /// 1-based epoch.
    pub epoch: usize,
    /// Mean of the epoch's batch losses, each taken before its step (what the authors log as
    /// `TrainLoss` per epoch).
    pub mean_step_loss: f64,
    /// Mean loss over all training pairs after the epoch.
    pub train_loss: f64,
    /// Share of training pairs with `r_chosen > r_rejected` after the epoch (ties count as
    /// wrong).
    pub train_accuracy: f64,
}

/// Held-out users: their pairs are never trained on; each is adapted few-shot from part of their
/// pairs (everything else frozen) and tested on the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOutStats {
    /// Held-out users evaluated (those with at least 2 pairs).
    pub users: usize,
    /// Held-out users with fewer than 2 pairs (nothing to both adapt on and test).
    pub users_skipped: usize,
    /// Pairs the adaptation used, over all users.
    pub adapt_pairs: usize,
    /// Test pairs, over all users.
    pub test_pairs: usize,
    /// Test accuracy with each user's adapted row (ties count as wrong).
    pub accuracy_adapted: f64,
    /// Test accuracy with each user's initial random row, before adaptation.
    pub accuracy_unadapted: f64,
    /// Test accuracy with the uniform mixture (a zero row: every prototype weighted 1/K).
    pub accuracy_uniform: f64,
    /// Mean test loss with the adapted rows.
    pub loss_adapted: f64,
    /// Mean test loss with the uniform mixture.
    pub loss_uniform: f64,
}

/// How the model was trained and how it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PalTrainingRecord {
    /// The training optimizer, in words.
    pub optimizer: String,
    /// Learning rate of the projectors (`f`, `g_k`).
    pub lr_projector: f64,
    /// L2 weight decay of the projectors.
    pub weight_decay_projector: f64,
    /// Learning rate of PAL-A's prototypes `P`.
    pub lr_prototypes: f64,
    /// Learning rate of the user weights `W`.
    pub lr_users: f64,
    /// Learning rate of PAL-B's `logit_scale`.
    pub lr_logit_scale: f64,
    /// Adam's β₁, β₂.
    pub betas: [f64; 2],
    /// Adam's ε.
    pub eps: f64,
    /// Pairs per step.
    pub batch_size: usize,
    /// Epochs run.
    pub epochs: usize,
    /// The authors' epochs (`epochs_new_pair` in their `vanilla.yaml`).
    pub authors_epochs: usize,
    /// The few-shot adaptation's optimizer, in words.
    pub adapt_optimizer: String,
    /// Adaptation learning rate.
    pub adapt_lr: f64,
    /// Adaptation weight decay (decoupled).
    pub adapt_weight_decay: f64,
    /// Adaptation epochs over a new user's pairs (batches of `batch_size`).
    pub adapt_epochs: usize,
    /// The authors' adaptation epochs (`epochs_new_pair`, which their `main_pal_*_unseen.py`
    /// pass as `max_epochs`).
    pub authors_adapt_epochs: usize,
    /// Requested held-out share of users.
    pub holdout_users: f64,
    /// Users trained (rows of `W`).
    pub n_users: usize,
    /// Users held out.
    pub n_held_out_users: usize,
    /// Training pairs.
    pub n_train_pairs: usize,
    /// Pairs of held-out users.
    pub n_held_out_pairs: usize,
    /// Every epoch.
    pub history: Vec<PalEpochStats>,
    /// The held-out users' figures (absent when none are held out).
    pub held_out: Option<HeldOutStats>,
    /// Wall time of training and held-out evaluation in seconds (embedding excluded).
    pub seconds: f64,
}

/// The content of `pal.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PalConfig {
    /// [`PAL_FORMAT`].
    pub format: String,
    /// `a` or `b`.
    pub variant: String,
    /// Number of prototypes `K`.
    pub k: usize,
    /// Embedding dimension `d` (the embedder's; the projectors are `[d, d]`).
    pub dim: usize,
    /// The authors' name of the projector architecture (e.g. `mlp2-relu-dropout0-residual`).
    pub projector: String,
    /// The reward, in words.
    pub score: String,
    /// The loss, in words.
    pub loss: String,
    /// The frozen embedder.
    pub embedder: EmbedderRecord,
    /// Maximum tokens per embedded input.
    pub max_length: usize,
    /// The text composition ([`super::compose::composition`]).
    pub composition: String,
    /// sha256 of `composition`.
    pub composition_sha256: String,
    /// Condition whose context the training inputs carried (`none`, `oracle`).
    pub condition: String,
    /// Seed (initialisation, batch order, held-out users, new users' initial rows).
    pub seed: u64,
    /// Training record.
    pub training: PalTrainingRecord,
    /// Embedding pass record.
    pub embedding: EmbedRecord,
    /// Data provenance, with the sha256 of every pair used (training users' and held-out
    /// users'): `prbench eval` refuses to score them.
    pub data: DataRecord,
    /// Trained users: user key (the row's `user_id`, else its example id) → row of `W`.
    pub users: BTreeMap<String, usize>,
    /// Where prbench departs from the authors' setup, and why.
    pub deviations: Vec<String>,
    /// sha256 of `pal.safetensors`, written by [`super::save`] and checked on load.
    #[serde(default)]
    pub weights_sha256: String,
    /// prbench version that trained it.
    pub code_version: String,
}
