//! The personalized Bradley-Terry (BT) reward model of the paper, sized for CPU: a small scoring
//! head on frozen MiniLM embeddings of the condition's context + question + answer, trained with
//! `−log σ(r_chosen − r_rejected)`.
//!
//! - [`compose`](mod@compose) — the one text composition, shared by training and scoring;
//! - [`head`] — the MLP head and its safetensors file;
//! - [`train`](mod@train) — embedding each distinct text once, the held-out split, AdamW training
//!   with early stopping;
//! - [`pairs`] — the training pairs, with target pairs and repeats dropped;
//! - [`pipeline`] — from a dataset spec to a saved head (what `prbench train bt` runs);
//! - [`config`] — `bt.json`;
//! - [`model`] — saving, loading and the [`prbench_models::RewardModel`] implementation.

pub mod compose;
pub mod config;
pub mod head;
pub mod model;
pub mod pairs;
pub mod pipeline;
pub mod train;

pub use compose::{compose, composition_sha256, pair_sha256, COMPOSITION};
pub use config::{BtConfig, DataRecord, EmbedRecord, EmbedderRecord, EpochStats, TrainingRecord};
pub use head::BtHead;
pub use model::{read_config, save, BtRewardModel, BT_ENGINE};
pub use train::{
    embed_distinct, embed_pairs, held_out_mask, train_head, train_head_from, BtPair,
    DistinctInputs, EmbedProgress, PairEmbeddings, TrainOptions, TrainStart, TrainedHead,
};
