//! Training PAL on precomputed embeddings, few-shot adaptation of a new user, and the held-out
//! users' evaluation.
//!
//! - [`Trainer`] runs an explicit schedule of batches (the parity test injects the reference's,
//!   `tests/pal.rs`), with [`TorchAdam`] over the authors' parameter groups and each user's row
//!   of `W` its own parameter.
//! - [`adapt_user`] fits one new weight row with torch AdamW on the user's pairs, everything
//!   else frozen (the authors' `main_pal_*_unseen.py`).
//! - [`train_pal`] is the real trainer: seeded initialisation, a batch order drawn per epoch from
//!   `sha256(seed ‖ epoch ‖ pair id)`, held-out users chosen by `sha256(seed ‖ user key)`
//!   ([`crate::bt::held_out_mask`]), each adapted on part of their pairs and tested on the rest.
//!
//! Defaults ([`Hyper::default`], [`PalTrainOptions::default`]) are the authors'
//! (`config/optim_config/vanilla.yaml` and `vanilla-e1.yaml`, `bs: 4` in the prefLearner
//! configs) except where [`PalTrainOptions`] says otherwise.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use candle_core::{DType, Device, Tensor, Var};
use prbench_models::ModelError;
use sha2::{Digest, Sha256};

use super::config::{HeldOutStats, PalEpochStats};
use super::model::{init_user_row, pair_loss, PairFeatures, PalNet, Variant};
use super::optim::{AdamSettings, ParamGroup, TorchAdam};
use crate::bt::held_out_mask;

pub use super::adapt::{adapt_schedule, adapt_user, Adapted};

pub(super) fn engine(e: impl Into<prbench_models::BoxError>) -> ModelError {
    ModelError::engine("PAL training", e)
}

/// One preference pair as indices: the user's row of `W`, and rows of [`PalData`]'s prompt and
/// item tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PalPair {
    /// Row of `W` (the user).
    pub user: usize,
    /// Row of [`PalData::prompts`] (ignored by PAL-A).
    pub prompt: usize,
    /// Row of [`PalData::items`]: the preferred answer.
    pub chosen: usize,
    /// Row of [`PalData::items`]: the other answer.
    pub rejected: usize,
}

/// Precomputed embeddings and the pairs over them.
#[derive(Debug, Clone)]
pub struct PalData {
    /// Item (answer) embeddings `[n_items, d]`.
    pub items: Tensor,
    /// Prompt embeddings `[n_prompts, d]` (PAL-B; `None` for PAL-A).
    pub prompts: Option<Tensor>,
    /// The pairs.
    pub pairs: Vec<PalPair>,
}

pub(super) fn index(idx: impl IntoIterator<Item = usize>) -> Result<Tensor, ModelError> {
    let v: Vec<u32> = idx.into_iter().map(|i| i as u32).collect();
    let n = v.len();
    Tensor::from_vec(v, n, &Device::Cpu).map_err(engine)
}

impl PalData {
    /// Tables from rows (`items`, `prompts` of `d` floats each) in `dtype`.
    ///
    /// # Errors
    /// [`ModelError::Spec`] for rows of unequal length or a pair pointing outside a table.
    pub fn from_rows(
        items: &[Vec<f32>],
        prompts: Option<&[Vec<f32>]>,
        pairs: Vec<PalPair>,
        dtype: DType,
    ) -> Result<Self, ModelError> {
        let bad = |reason: String| ModelError::Spec { spec: "pal training data".into(), reason };
        let dim = items.first().map_or(0, Vec::len);
        let table = |rows: &[Vec<f32>], what: &str| -> Result<Tensor, ModelError> {
            if let Some(i) = rows.iter().position(|r| r.len() != dim) {
                return Err(bad(format!(
                    "{what} row {i} has {} values, the first item {dim}",
                    rows[i].len()
                )));
            }
            let flat: Vec<f32> = rows.iter().flatten().copied().collect();
            Tensor::from_vec(flat, (rows.len(), dim), &Device::Cpu)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(engine)
        };
        let n_prompts = prompts.map_or(0, <[Vec<f32>]>::len);
        if let Some((i, _)) = pairs.iter().enumerate().find(|(_, p)| {
            p.chosen >= items.len()
                || p.rejected >= items.len()
                || (prompts.is_some() && p.prompt >= n_prompts)
        }) {
            return Err(bad(format!(
                "pair {i} points outside the tables ({} items, {n_prompts} prompts)",
                items.len()
            )));
        }
        Ok(Self {
            items: table(items, "item")?,
            prompts: prompts.map(|p| table(p, "prompt")).transpose()?,
            pairs,
        })
    }

    /// Embedding dimension `d`.
    pub fn dim(&self) -> usize {
        self.items.dims().get(1).copied().unwrap_or(0)
    }

    /// `(prompts, chosen, rejected)` embeddings of the pairs `idx`, `[n, d]` each.
    fn gather(&self, idx: &[usize]) -> Result<(Option<Tensor>, Tensor, Tensor), ModelError> {
        let pick = |f: fn(&PalPair) -> usize| index(idx.iter().map(|&i| f(&self.pairs[i])));
        let prompts = match &self.prompts {
            Some(p) => Some(p.index_select(&pick(|p| p.prompt)?, 0).map_err(engine)?),
            None => None,
        };
        let xc = self.items.index_select(&pick(|p| p.chosen)?, 0).map_err(engine)?;
        let xr = self.items.index_select(&pick(|p| p.rejected)?, 0).map_err(engine)?;
        Ok((prompts, xc, xr))
    }

    /// The `W`-independent features of the pairs `idx` under `net`, cut from the graph.
    ///
    /// # Errors
    /// Candle errors; PAL-B data without prompts.
    pub fn features(&self, net: &PalNet, idx: &[usize]) -> Result<PairFeatures, ModelError> {
        let (p, xc, xr) = self.gather(idx)?;
        net.features(p.as_ref(), &xc, &xr).map(|f| f.detach()).map_err(engine)
    }
}

/// The optimizer settings: the authors' (`config/optim_config/vanilla.yaml`; PAL-B's
/// `vanilla-e1.yaml` has the same values with `projector` split into `projector_f` and
/// `projectors_gk`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hyper {
    /// Learning rate of the projectors `f`, `g_k` (1e-4).
    pub lr_projector: f64,
    /// L2 weight decay of the projectors (0.01).
    pub weight_decay_projector: f64,
    /// Learning rate of PAL-A's prototypes `P` (5e-3, no decay).
    pub lr_prototypes: f64,
    /// Learning rate of the user weights `W` (5e-3, no decay).
    pub lr_users: f64,
    /// Learning rate of PAL-B's `logit_scale` (0.1, no decay).
    pub lr_logit_scale: f64,
    /// Adam's β and ε (torch defaults: (0.9, 0.999), 1e-8).
    pub adam: AdamSettings,
    /// Few-shot adaptation's AdamW learning rate (the `W` group's: 5e-3).
    pub adapt_lr: f64,
    /// Few-shot adaptation's AdamW weight decay (the `W` group's: 0).
    pub adapt_weight_decay: f64,
}

impl Default for Hyper {
    fn default() -> Self {
        Self {
            lr_projector: 1e-4,
            weight_decay_projector: 0.01,
            lr_prototypes: 5e-3,
            lr_users: 5e-3,
            lr_logit_scale: 0.1,
            adam: AdamSettings::default(),
            adapt_lr: 5e-3,
            adapt_weight_decay: 0.0,
        }
    }
}

/// The state of a training run: the network on variables, one variable per user row, and the
/// optimizer.
#[derive(Debug)]
pub struct Trainer {
    net: PalNet,
    users: Vec<Var>,
    opt: TorchAdam,
}

/// A loss tensor's value.
pub(super) fn scalar(t: &Tensor) -> Result<f64, ModelError> {
    t.to_dtype(DType::F64).and_then(|t| t.to_scalar::<f64>()).map_err(engine)
}

impl Trainer {
    /// A run starting from `init` (the network's named tensors, [`PalNet::tensor_names`]) and the
    /// user rows `w_init` `[n_users, K]`, all in one dtype (f32, or f64 for the parity test).
    /// Parameter groups: `projector` (`f`, `g_k`: `lr_projector`, L2 decay
    /// `weight_decay_projector`), `W` (each row its own parameter: `lr_users`), and `P`
    /// (`lr_prototypes`) or `logit_scale` (`lr_logit_scale`), the last two without decay.
    ///
    /// # Errors
    /// Tensor names or shapes that do not fit (as [`PalNet::from_tensors`]); `w_init` not
    /// `[n_users, K]`.
    pub fn new(
        variant: Variant,
        k: usize,
        dim: usize,
        init: &HashMap<String, Tensor>,
        w_init: &Tensor,
        hyper: &Hyper,
    ) -> Result<Self, ModelError> {
        if w_init.rank() != 2 || w_init.dims()[1] != k {
            return Err(ModelError::Engine(format!(
                "W has shape {:?}, expected [n_users, {k}]",
                w_init.dims()
            )));
        }
        let mut vars: Vec<(String, Var)> = Vec::new();
        for name in PalNet::tensor_names(variant, k) {
            let t = init
                .get(&name)
                .ok_or_else(|| ModelError::Engine(format!("PAL tensor `{name}` is missing")))?;
            vars.push((name, Var::from_tensor(&t.copy().map_err(engine)?).map_err(engine)?));
        }
        let tensors: HashMap<String, Tensor> =
            vars.iter().map(|(n, v)| (n.clone(), v.as_tensor().clone())).collect();
        let net = PalNet::from_tensors(variant, k, dim, &tensors)?;
        if w_init.dtype() != net.dtype() {
            return Err(ModelError::Engine(format!(
                "W is {:?}, the network {:?}",
                w_init.dtype(),
                net.dtype()
            )));
        }
        let users = (0..w_init.dims()[0])
            .map(|u| w_init.get(u).and_then(|r| r.copy()).and_then(|r| Var::from_tensor(&r)))
            .collect::<candle_core::Result<Vec<_>>>()
            .map_err(engine)?;
        let of = |pred: &dyn Fn(&str) -> bool| -> Vec<Var> {
            vars.iter().filter(|(n, _)| pred(n)).map(|(_, v)| v.clone()).collect()
        };
        let mut groups = vec![
            ParamGroup {
                name: "projector".into(),
                lr: hyper.lr_projector,
                weight_decay: hyper.weight_decay_projector,
                params: of(&|n| n.starts_with("f.") || n.starts_with("g.")),
            },
            ParamGroup {
                name: "W".into(),
                lr: hyper.lr_users,
                weight_decay: 0.0,
                params: users.clone(),
            },
        ];
        groups.push(match variant {
            Variant::A => ParamGroup {
                name: "P".into(),
                lr: hyper.lr_prototypes,
                weight_decay: 0.0,
                params: of(&|n| n == "P"),
            },
            Variant::B => ParamGroup {
                name: "logit_scale".into(),
                lr: hyper.lr_logit_scale,
                weight_decay: 0.0,
                params: of(&|n| n == "logit_scale"),
            },
        });
        let opt = TorchAdam::new(groups, AdamSettings { decoupled: false, ..hyper.adam });
        Ok(Self { net, users, opt })
    }

    /// The network (on the variables: it follows the steps).
    pub fn net(&self) -> &PalNet {
        &self.net
    }

    /// Number of users (rows of `W`).
    pub fn n_users(&self) -> usize {
        self.users.len()
    }

    /// Optimizer steps user `u`'s row has taken (a row steps only in batches holding one of the
    /// user's pairs).
    pub fn user_steps(&self, u: usize) -> u64 {
        self.opt.steps_of(1, u)
    }

    /// One step on the pairs `batch` (indices into `data.pairs`): the mean pair loss, its
    /// gradient, one optimizer step. Returns the loss before the step.
    ///
    /// # Errors
    /// A pair whose user has no row; candle errors.
    pub fn step(&mut self, data: &PalData, batch: &[usize]) -> Result<f64, ModelError> {
        let rows = batch
            .iter()
            .map(|&i| {
                let u = data.pairs[i].user;
                self.users.get(u).map(|v| v.as_tensor().clone()).ok_or_else(|| {
                    ModelError::Engine(format!(
                        "pair {i} belongs to user row {u}; there are {} rows",
                        self.users.len()
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let w = Tensor::stack(&rows, 0).map_err(engine)?;
        let (p, xc, xr) = data.gather(batch)?;
        let (rc, rr) = self.net.pair_rewards(&w, p.as_ref(), &xc, &xr).map_err(engine)?;
        let loss =
            pair_loss(self.net.variant(), &rc, &rr).and_then(|l| l.mean_all()).map_err(engine)?;
        let grads = loss.backward().map_err(engine)?;
        self.opt.step(&grads).map_err(engine)?;
        scalar(&loss)
    }

    /// The user rows now, `[n_users, K]` (a copy).
    ///
    /// # Errors
    /// Candle errors.
    pub fn w(&self) -> Result<Tensor, ModelError> {
        if self.users.is_empty() {
            return Tensor::zeros((0, self.net.k()), self.net.dtype(), &Device::Cpu)
                .map_err(engine);
        }
        let rows: Vec<Tensor> = self.users.iter().map(|v| v.as_tensor().detach()).collect();
        Tensor::stack(&rows, 0).and_then(|t| t.copy()).map_err(engine)
    }
}

/// Rewards of the chosen and rejected answers of pairs `idx` for weight rows `w` `[n, K]` (row
/// `i` for pair `idx[i]`), in chunks of 512 pairs.
///
/// # Errors
/// Candle errors.
pub fn pair_rewards(
    net: &PalNet,
    data: &PalData,
    w: &Tensor,
    idx: &[usize],
) -> Result<(Vec<f64>, Vec<f64>), ModelError> {
    let (mut c, mut r) = (Vec::with_capacity(idx.len()), Vec::with_capacity(idx.len()));
    for (k, part) in idx.chunks(512).enumerate() {
        let rows = w.narrow(0, k * 512, part.len()).map_err(engine)?;
        let (p, xc, xr) = data.gather(part)?;
        let (rc, rr) = net.pair_rewards(&rows, p.as_ref(), &xc, &xr).map_err(engine)?;
        let v = |t: Tensor| t.to_dtype(DType::F64).and_then(|t| t.to_vec1::<f64>()).map_err(engine);
        c.extend(v(rc)?);
        r.extend(v(rr)?);
    }
    Ok((c, r))
}

/// Mean pair loss and accuracy (share with `r_chosen > r_rejected`; ties count as wrong) of
/// rewards from [`pair_rewards`].
pub fn loss_and_accuracy(variant: Variant, rc: &[f64], rr: &[f64]) -> (f64, f64) {
    let n = rc.len().max(1) as f64;
    let loss: f64 = rc
        .iter()
        .zip(rr)
        .map(|(c, r)| {
            let z = r - c;
            match variant {
                Variant::A => (1.0 + z).max(0.0),
                Variant::B => z.max(0.0) + (-z.abs()).exp().ln_1p(),
            }
        })
        .sum::<f64>()
        / n;
    let correct = rc.iter().zip(rr).filter(|(c, r)| c > r).count();
    (loss, correct as f64 / n)
}

/// The indices `0..ids.len()` ordered by `sha256(seed ‖ salt ‖ id)`: a shuffle that depends on
/// the seed, the salt (e.g. the epoch) and each id only.
pub fn seeded_order(seed: u64, salt: &str, ids: &[&str]) -> Vec<usize> {
    let mut keyed: Vec<([u8; 32], usize)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut h = Sha256::new();
            h.update(seed.to_le_bytes());
            h.update(salt.as_bytes());
            h.update([0u8]);
            h.update(id.as_bytes());
            (h.finalize().into(), i)
        })
        .collect();
    keyed.sort();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Options of [`train_pal`].
#[derive(Debug, Clone, PartialEq)]
pub struct PalTrainOptions {
    /// PAL-A or PAL-B.
    pub variant: Variant,
    /// Number of prototypes (the authors' configs: 2).
    pub k: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Training epochs ([`DEFAULT_EPOCHS`], the authors' 1). A user's row of `W` steps only in
    /// batches holding their pairs, so with few pairs per user it barely leaves its random start
    /// in one epoch: the synthetic tests train 10–15. On P-Soups (4 pairs per user) 10 epochs
    /// did not beat 1 (PAL-A 66.1% vs 69.4% on the 1,200 target pairs): its history pairs hold
    /// no signal a user's row could add (held-out users score 97.9% with any row).
    pub epochs: usize,
    /// Pairs per step (the authors' `bs: 4`).
    pub batch_size: usize,
    /// Adaptation epochs over a new user's pairs ([`DEFAULT_ADAPT_EPOCHS`], the authors' 1: one
    /// AdamW step of lr 5e-3 for a user with 4 pairs, which moves the row by about 0.005).
    pub adapt_epochs: usize,
    /// Share of users held out of training, in [0, 1).
    pub holdout_users: f64,
    /// Optimizer settings.
    pub hyper: Hyper,
}

/// The authors' training epochs (`epochs_new_pair: 1` in `vanilla.yaml`).
pub const AUTHORS_EPOCHS: usize = 1;
/// The authors' adaptation epochs (`main_pal_*_unseen.py` train `max_epochs=epochs_new_pair`).
pub const AUTHORS_ADAPT_EPOCHS: usize = 1;
/// prbench's default training epochs: the authors' (see [`PalTrainOptions::epochs`]).
pub const DEFAULT_EPOCHS: usize = AUTHORS_EPOCHS;
/// prbench's default adaptation epochs: the authors' (see [`PalTrainOptions::adapt_epochs`]).
pub const DEFAULT_ADAPT_EPOCHS: usize = AUTHORS_ADAPT_EPOCHS;
/// Share of a held-out user's pairs kept for testing (the rest adapt the row): at least one,
/// never all ([`held_out_mask`]).
pub const HELD_OUT_TEST_SHARE: f64 = 0.25;

impl Default for PalTrainOptions {
    fn default() -> Self {
        Self {
            variant: Variant::A,
            k: 2,
            seed: 42,
            epochs: DEFAULT_EPOCHS,
            batch_size: 4,
            adapt_epochs: DEFAULT_ADAPT_EPOCHS,
            holdout_users: 0.0,
            hyper: Hyper::default(),
        }
    }
}

/// The result of [`train_pal`].
#[derive(Debug, Clone)]
pub struct TrainedPal {
    /// The trained network (f32, detached).
    pub net: PalNet,
    /// Trained users' rows `[n_users, K]` (f32).
    pub w: Tensor,
    /// User key of each row of `w`.
    pub users: Vec<String>,
    /// Held-out user keys.
    pub held_out_users: Vec<String>,
    /// Training pairs.
    pub n_train_pairs: usize,
    /// Pairs of held-out users.
    pub n_held_out_pairs: usize,
    /// Every epoch.
    pub history: Vec<PalEpochStats>,
    /// The held-out users' figures.
    pub held_out: Option<HeldOutStats>,
    /// Wall time in seconds.
    pub seconds: f64,
}

/// Trains PAL on `data` (f32 tables; `data.pairs[i].user` indexes `user_keys`, `pair_ids[i]`
/// names pair `i`), calling `on_epoch` after every epoch (module docs: initialisation, batch
/// order, held-out users). Held-out users are adapted for `adapt_epochs` on all but
/// [`HELD_OUT_TEST_SHARE`] of their pairs and tested on the rest, against their initial row and
/// against the uniform mixture.
///
/// # Errors
/// [`ModelError::Spec`] for bad options or inputs (no training pairs, ids or users that do not
/// match the pairs); candle errors.
pub fn train_pal(
    data: &PalData,
    user_keys: &[String],
    pair_ids: &[String],
    opts: &PalTrainOptions,
    on_epoch: &mut dyn FnMut(&PalEpochStats),
) -> Result<TrainedPal, ModelError> {
    let bad = |reason: String| ModelError::Spec { spec: "pal training".into(), reason };
    let start = Instant::now();
    if pair_ids.len() != data.pairs.len() {
        return Err(bad(format!("{} pair ids for {} pairs", pair_ids.len(), data.pairs.len())));
    }
    if let Some(p) = data.pairs.iter().find(|p| p.user >= user_keys.len()) {
        return Err(bad(format!(
            "a pair belongs to user {}, there are {} users",
            p.user,
            user_keys.len()
        )));
    }
    if !(0.0..1.0).contains(&opts.holdout_users) {
        return Err(bad(format!(
            "held-out share of users {} must be in [0, 1)",
            opts.holdout_users
        )));
    }
    if opts.epochs == 0 || opts.batch_size == 0 || opts.k == 0 {
        return Err(bad(format!(
            "epochs ({}), batch size ({}) and K ({}) must be at least 1",
            opts.epochs, opts.batch_size, opts.k
        )));
    }
    if opts.variant == Variant::B && data.prompts.is_none() {
        return Err(bad("PAL-B needs prompt embeddings".into()));
    }
    let dim = data.dim();
    let held = held_out_mask(user_keys, opts.seed, opts.holdout_users);
    // Rows of W for the training users that have pairs, in order of first appearance.
    let mut row_of: HashMap<usize, usize> = HashMap::new();
    let mut users: Vec<String> = Vec::new();
    let mut train_pairs: Vec<PalPair> = Vec::new();
    let mut train_ids: Vec<&str> = Vec::new();
    let mut held_pairs: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, p) in data.pairs.iter().enumerate() {
        if held[p.user] {
            held_pairs.entry(p.user).or_default().push(i);
            continue;
        }
        let row = *row_of.entry(p.user).or_insert_with(|| {
            users.push(user_keys[p.user].clone());
            users.len() - 1
        });
        train_pairs.push(PalPair { user: row, ..*p });
        train_ids.push(&pair_ids[i]);
    }
    if train_pairs.is_empty() {
        return Err(bad("no training pairs (every user is held out)".into()));
    }
    let train =
        PalData { items: data.items.clone(), prompts: data.prompts.clone(), pairs: train_pairs };

    let init = PalNet::init_tensors(opts.variant, opts.k, dim, opts.seed)?;
    let w_init: Vec<f32> = users.iter().flat_map(|u| init_user_row(opts.seed, u, opts.k)).collect();
    let w_init = Tensor::from_vec(w_init, (users.len(), opts.k), &Device::Cpu).map_err(engine)?;
    let mut trainer = Trainer::new(opts.variant, opts.k, dim, &init, &w_init, &opts.hyper)?;
    let all: Vec<usize> = (0..train.pairs.len()).collect();
    let mut history = Vec::with_capacity(opts.epochs);
    for epoch in 1..=opts.epochs {
        let order = seeded_order(opts.seed, &format!("epoch/{epoch}"), &train_ids);
        let mut sum = 0.0;
        let mut steps = 0;
        for batch in order.chunks(opts.batch_size) {
            sum += trainer.step(&train, batch)?;
            steps += 1;
        }
        let rows = trainer
            .w()?
            .index_select(&index(train.pairs.iter().map(|p| p.user))?, 0)
            .map_err(engine)?;
        let (rc, rr) = pair_rewards(trainer.net(), &train, &rows, &all)?;
        let (train_loss, train_accuracy) = loss_and_accuracy(opts.variant, &rc, &rr);
        let s =
            PalEpochStats { epoch, mean_step_loss: sum / steps as f64, train_loss, train_accuracy };
        on_epoch(&s);
        history.push(s);
    }
    let net = trainer.net().snapshot(DType::F32)?;
    let w = trainer.w()?.to_dtype(DType::F32).map_err(engine)?;

    // Held-out users: adapt on part of their pairs, test on the rest.
    let held_out_users: Vec<String> = held_pairs.keys().map(|&u| user_keys[u].clone()).collect();
    let n_held_out_pairs = held_pairs.values().map(Vec::len).sum();
    let held_out = evaluate_held_out(&net, data, user_keys, pair_ids, &held_pairs, opts)?;
    Ok(TrainedPal {
        net,
        w,
        users,
        held_out_users,
        n_train_pairs: train.pairs.len(),
        n_held_out_pairs,
        history,
        held_out,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Adapts each held-out user on all but [`HELD_OUT_TEST_SHARE`] of their pairs and scores the
/// rest; `None` when no held-out user has two pairs.
fn evaluate_held_out(
    net: &PalNet,
    data: &PalData,
    user_keys: &[String],
    pair_ids: &[String],
    held_pairs: &BTreeMap<usize, Vec<usize>>,
    opts: &PalTrainOptions,
) -> Result<Option<HeldOutStats>, ModelError> {
    let k = opts.k;
    let (mut users, mut skipped, mut adapt_pairs) = (0, 0, 0);
    let mut test_idx: Vec<usize> = Vec::new();
    let (mut w_adapted, mut w_init): (Vec<f32>, Vec<f32>) = Default::default();
    for (&u, pairs) in held_pairs {
        if pairs.len() < 2 {
            skipped += 1;
            continue;
        }
        users += 1;
        let ids: Vec<String> = pairs.iter().map(|&i| pair_ids[i].clone()).collect();
        let test = held_out_mask(&ids, opts.seed, HELD_OUT_TEST_SHARE);
        let (fit, fit_ids): (Vec<usize>, Vec<&str>) = pairs
            .iter()
            .zip(&test)
            .filter(|(_, &t)| !t)
            .map(|(&i, _)| (i, pair_ids[i].as_str()))
            .unzip();
        adapt_pairs += fit.len();
        let key = &user_keys[u];
        let row0 = init_user_row(opts.seed, key, k);
        let schedule =
            adapt_schedule(opts.seed, key, &fit, &fit_ids, opts.adapt_epochs, opts.batch_size);
        let a = adapt_user(
            net,
            data,
            &Tensor::from_vec(row0.clone(), k, &Device::Cpu).map_err(engine)?,
            &schedule,
            &opts.hyper,
        )?;
        let row = a.w.to_dtype(DType::F32).and_then(|t| t.to_vec1::<f32>()).map_err(engine)?;
        for (&i, _) in pairs.iter().zip(&test).filter(|(_, &t)| t) {
            test_idx.push(i);
            w_adapted.extend(&row);
            w_init.extend(&row0);
        }
    }
    let n = test_idx.len();
    if n == 0 {
        return Ok(None);
    }
    let score = |w: Vec<f32>| -> Result<(f64, f64), ModelError> {
        let w = Tensor::from_vec(w, (n, k), &Device::Cpu).map_err(engine)?;
        let (rc, rr) = pair_rewards(net, data, &w, &test_idx)?;
        Ok(loss_and_accuracy(opts.variant, &rc, &rr))
    };
    let (loss_adapted, accuracy_adapted) = score(w_adapted)?;
    let (_, accuracy_unadapted) = score(w_init)?;
    let (loss_uniform, accuracy_uniform) = score(vec![0.0; n * k])?;
    Ok(Some(HeldOutStats {
        users,
        users_skipped: skipped,
        adapt_pairs,
        test_pairs: n,
        accuracy_adapted,
        accuracy_unadapted,
        accuracy_uniform,
        loss_adapted,
        loss_uniform,
    }))
}
