//! The options of a training run, as `prbench train bt` and `prbench train pal` pass them: what
//! both methods share (the data, the output folder, the embedder) in one struct, and each
//! method's own training settings in its `train` field.

use std::path::PathBuf;

use crate::bt::pipeline::{PairRequest, PairSource};

/// Everything a training run needs (the `train bt` / `train pal` flags, validated): the fields
/// both methods share, and `train`, the method's own settings (`M` is
/// [`crate::bt::TrainOptions`] for BT, [`crate::pal::PalTrainOptions`] for PAL).
#[derive(Debug, Clone)]
pub struct RunOptions<M> {
    /// Training data: any dataset spec (`psoups:DIR` or `synthesizeme:DIR` for [`PairSource::History`]).
    pub data: String,
    /// Subsets to train on; all when empty.
    pub subset: Vec<String>,
    /// The condition whose context the inputs carry, by name (recorded in `bt.json` /
    /// `pal.json`).
    pub condition: String,
    /// Pairs to train on.
    pub pairs: PairSource,
    /// Output folder (gets the weights and the config: `head.safetensors` + `bt.json`, or
    /// `pal.safetensors` + `pal.json`).
    pub out: PathBuf,
    /// Datasets whose target pairs are kept out of training too.
    pub exclude_data: Vec<String>,
    /// The method's training settings (BT: seed, width, epochs, optimizer, split; PAL: variant,
    /// K, seed, epochs, batch size, adaptation, held-out users, optimizer).
    pub train: M,
    /// Token limit per embedded input (default: the embedder's own).
    pub max_length: Option<usize>,
    /// MiniLM directory (default: the one scripts/fetch-models.sh caches).
    pub embedder: Option<PathBuf>,
    /// Texts per embedding forward pass.
    pub embed_batch: usize,
    /// prbench version, for the saved config.
    pub code_version: String,
}

/// The options of `prbench train bt`.
pub type TrainBtOptions = RunOptions<crate::bt::TrainOptions>;

/// The options of `prbench train pal`.
pub type TrainPalOptions = RunOptions<crate::pal::PalTrainOptions>;

impl<M> RunOptions<M> {
    /// The data flags as a request for [`crate::bt::pipeline::build_pairs`].
    pub fn request(&self) -> PairRequest<'_> {
        PairRequest {
            data: &self.data,
            subset: &self.subset,
            pairs: self.pairs,
            exclude_data: &self.exclude_data,
            condition: &self.condition,
        }
    }
}
