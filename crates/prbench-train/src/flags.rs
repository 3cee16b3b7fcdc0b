//! The flags of `prbench train bt` and `prbench train pal`, as clap groups: the binary parses
//! them and [`crate::front`] turns them into [`crate::options::RunOptions`], checks the output
//! folder and words the closing line. The shared flags are two groups flattened into both
//! verbs, [`TrainDataArgs`] (leading) and [`TrainRunArgs`] (trailing), because the help lists
//! each verb's own flags between them; the four whose help speaks of the method take their
//! wording from a [`MethodHelp`] impl. Every numeric flag has a bounded parser from
//! [`prbench_flags::bounds`].

use std::marker::PhantomData;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// `train` sub-verbs.
#[derive(Subcommand, Debug)]
pub enum TrainCommand {
    /// Train the personalized Bradley-Terry head on frozen MiniLM embeddings.
    Bt(TrainBtArgs),
    /// Train a PAL personalized reward model (PAL-A or PAL-B, Chen et al. ICLR 2025) on frozen
    /// MiniLM embeddings: K prototypes shared by all users, one weight row per user.
    Pal(TrainPalArgs),
}

/// PAL's variant.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PalVariantArg {
    /// PAL-A: K prototype ideal points, distance score, hinge loss.
    A,
    /// PAL-B: prompt-conditioned mixture of K projectors, scaled cosine, cross-entropy.
    B,
}

/// Which pairs to train on.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairSource {
    /// The file's own chosen/rejected pairs (a separate training file).
    Target,
    /// Each user's past preference pairs (P-Soups' "Pair-wise Comparative Feedback", SynthesizeMe's
    /// `train`-split pairs); target pairs are never trained on.
    History,
}

impl From<PairSource> for crate::bt::pipeline::PairSource {
    fn from(p: PairSource) -> Self {
        match p {
            PairSource::History => crate::bt::pipeline::PairSource::History,
            PairSource::Target => crate::bt::pipeline::PairSource::Target,
        }
    }
}

impl From<PalVariantArg> for crate::pal::Variant {
    fn from(v: PalVariantArg) -> Self {
        match v {
            PalVariantArg::A => crate::pal::Variant::A,
            PalVariantArg::B => crate::pal::Variant::B,
        }
    }
}

/// The wording of the shared flags whose help speaks of the method (`--data`, `--condition`,
/// `--out`, `--seed`); the other shared flags are worded once, in [`TrainDataArgs`] and
/// [`TrainRunArgs`]. Each text is one line of `--help`, without a closing period.
pub trait MethodHelp {
    /// `--data`.
    const DATA: &'static str;
    /// `--condition`.
    const CONDITION: &'static str;
    /// `--out`.
    const OUT: &'static str;
    /// `--seed`.
    const SEED: &'static str;
}

/// `train bt`'s wording of the shared flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct BtHelp;

impl MethodHelp for BtHelp {
    const DATA: &'static str = "Training data: any dataset spec (`psoups:DIR` or `synthesizeme:DIR[#SPLIT]` for `--pairs history`)";
    const CONDITION: &'static str = "Condition whose context the inputs carry: `none`, `profile:k` (a user-conditioned BT: the user's top-k profile posts, BM25-ranked, before the question) or `oracle`. Evaluate with the same one";
    const OUT: &'static str = "Output directory (gets head.safetensors and bt.json)";
    const SEED: &'static str = "Seed: initialisation, shuffling, held-out split";
}

/// `train pal`'s wording of the shared flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct PalHelp;

impl MethodHelp for PalHelp {
    const DATA: &'static str = "Training data: any dataset spec (`psoups:DIR` or `synthesizeme:DIR[#SPLIT]` for `--pairs history`). Users are the rows' `user_id`, else each row is its own user";
    const CONDITION: &'static str = "Condition whose context the inputs carry: `none` or `oracle` (data with a rubric). The user enters through their row of `W`. Evaluate with the same one";
    const OUT: &'static str = "Output directory (gets pal.safetensors and pal.json)";
    const SEED: &'static str =
        "Seed: initialisation, batch order, held-out users, new users' initial weights";
}

/// What to train on, where to save it, and the seed: the leading flags `train bt` and
/// `train pal` share (their help shows them first, in this order). `H` words the four whose
/// help differs by method.
#[derive(Args, Debug)]
pub struct TrainDataArgs<H: MethodHelp> {
    /// `--data` (help: [`MethodHelp::DATA`]).
    #[arg(long, help = H::DATA)]
    pub data: String,
    /// Subsets to train on (long or short names, comma-separated); all when omitted.
    #[arg(long, value_delimiter = ',')]
    pub subset: Vec<String>,
    /// `--condition` (help: [`MethodHelp::CONDITION`]).
    #[arg(long, default_value = "none", help = H::CONDITION)]
    pub condition: String,
    /// Pairs to train on.
    #[arg(long, value_enum)]
    pub pairs: PairSource,
    /// `--out` (help: [`MethodHelp::OUT`]).
    #[arg(long, help = H::OUT)]
    pub out: PathBuf,
    /// Drop training pairs equal to a target pair of this dataset too (repeatable).
    #[arg(long)]
    pub exclude_data: Vec<String>,
    /// `--seed` (help: [`MethodHelp::SEED`]).
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = prbench_flags::bounds::seed, help = H::SEED)]
    pub seed: u64,
    #[arg(skip)]
    method: PhantomData<H>,
}

/// The embedder and the run's output: the trailing flags `train bt` and `train pal` share
/// (their help shows them last, in this order).
#[derive(Args, Debug)]
pub struct TrainRunArgs {
    /// Token limit per embedded input (default: the embedder's max_position_embeddings); the
    /// context is cut from the left, never the answer, and cuts are counted.
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 8192))]
    pub max_length: Option<usize>,
    /// MiniLM directory (default: the one scripts/fetch-models.sh caches).
    #[arg(long)]
    pub embedder: Option<PathBuf>,
    /// Texts per embedding forward pass.
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 4096))]
    pub embed_batch: usize,
    /// Replace an existing model in --out.
    #[arg(long)]
    pub force: bool,
    /// No progress output (the summary line is still printed).
    #[arg(long)]
    pub quiet: bool,
}

/// `train bt` arguments: the shared flags and BT's own.
#[derive(Args, Debug)]
pub struct TrainBtArgs {
    /// Data, condition, pairs, output, seed.
    #[command(flatten)]
    pub input: TrainDataArgs<BtHelp>,
    /// Hidden width of the head; 0 = a linear head.
    #[arg(long, default_value_t = 256, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(0, 65_536))]
    pub hidden: usize,
    /// Epoch limit.
    #[arg(long, default_value_t = 300, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 100_000))]
    pub epochs: usize,
    /// Stop after this many epochs without a lower held-out loss (0 = never stop early).
    #[arg(long, default_value_t = 30, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(0, 100_000))]
    pub patience: usize,
    /// AdamW learning rate.
    #[arg(long, default_value_t = 1e-3, allow_negative_numbers = true, value_parser = prbench_flags::bounds::real(prbench_flags::bounds::End::Open(0.0), prbench_flags::bounds::End::Closed(10.0), "a learning rate"))]
    pub lr: f64,
    /// AdamW weight decay.
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true, value_parser = prbench_flags::bounds::real(prbench_flags::bounds::End::Closed(0.0), prbench_flags::bounds::End::Closed(1.0), "a weight-decay factor"))]
    pub weight_decay: f64,
    /// Training pairs per optimizer step (0 = full batch).
    #[arg(long, default_value_t = 64, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(0, 1_000_000))]
    pub batch_size: usize,
    /// Share of pairs held out for early stopping, chosen by sha256(seed, pair id).
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true, value_parser = prbench_flags::bounds::real(prbench_flags::bounds::End::Closed(0.0), prbench_flags::bounds::End::Open(1.0), "a share of pairs"))]
    pub held_out: f64,
    /// Embedder, overwrite, progress.
    #[command(flatten)]
    pub run: TrainRunArgs,
}

/// `train pal` arguments: PAL's variant and K, the shared flags and PAL's own. Optimizer
/// settings are the authors' (config/optim_config/vanilla.yaml) and recorded in pal.json.
#[derive(Args, Debug)]
pub struct TrainPalArgs {
    /// PAL-A or PAL-B.
    #[arg(long, value_enum)]
    pub variant: PalVariantArg,
    /// Number of prototypes (the authors' configs use 2).
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 64))]
    pub k: usize,
    /// Data, condition, pairs, output, seed.
    #[command(flatten)]
    pub input: TrainDataArgs<PalHelp>,
    /// Training epochs (the authors train 1).
    #[arg(long, default_value_t = crate::pal::train::DEFAULT_EPOCHS, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 100_000))]
    pub epochs: usize,
    /// Few-shot adaptation epochs over a new user's pairs (the authors: 1).
    #[arg(long, default_value_t = crate::pal::train::DEFAULT_ADAPT_EPOCHS, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 100_000))]
    pub adapt_epochs: usize,
    /// Pairs per optimizer step (the authors' 4).
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 1_000_000))]
    pub batch_size: usize,
    /// Share of users held out of training, chosen by sha256(seed, user); each is adapted on 3/4
    /// of their pairs and tested on the rest (figures in pal.json).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = prbench_flags::bounds::real(prbench_flags::bounds::End::Closed(0.0), prbench_flags::bounds::End::Open(1.0), "a share of users"))]
    pub holdout_users: f64,
    /// Embedder, overwrite, progress.
    #[command(flatten)]
    pub run: TrainRunArgs,
}
