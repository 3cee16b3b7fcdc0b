//! PAL-A and PAL-B personalized reward models (Chen et al., "PAL: Sample-Efficient Personalized
//! Reward Modeling for Pluralistic Alignment", ICLR 2025), sized for CPU like the BT head: on
//! frozen MiniLM embeddings, with one weight row per user over `K` shared prototypes.
//!
//! - [`model`] — the network: PAL-A's prototype ideal points with a distance score and hinge
//!   loss, PAL-B's prompt-conditioned mixture with a scaled cosine and cross-entropy, and the
//!   safetensors file;
//! - [`optim`] — torch's Adam (L2 decay, parameter groups, per-user sparse steps) and AdamW;
//! - [`train`](mod@train) — training on precomputed embeddings, few-shot adaptation of a new
//!   user, held-out users;
//! - [`compose`](mod@compose) — what the embedder sees (items as BT's, PAL-B's prompt);
//! - [`pipeline`] — from a dataset spec to a saved model (what `prbench train pal` runs), and the
//!   history pairs `prbench eval` adapts unknown users from;
//! - [`reward`] — saving, loading and the [`prbench_models::RewardModel`] implementation;
//! - [`config`] — `pal.json`.
//!
//! The executable specification is `tools/pal_reference.py` (PyTorch, f64); `tests/pal.rs`
//! checks this implementation against its fixture.

pub mod adapt;
pub mod compose;
pub mod config;
pub mod model;
pub mod optim;
pub mod pipeline;
pub mod reward;
pub mod train;

pub use config::{HeldOutStats, PalConfig, PalEpochStats, PalTrainingRecord};
pub use model::{PalNet, Variant};
pub use reward::{read_config, save, AdaptReport, PalRewardModel, UserHistory};
pub use train::{
    adapt_user, train_pal, Hyper, PalData, PalPair, PalTrainOptions, TrainedPal, Trainer,
};
