//! Few-shot adaptation of a user PAL was not trained on (the authors'
//! `main_pal_*_unseen.py`): [`adapt_user`] fits one new row of `W` with torch AdamW on the
//! user's pairs, everything else frozen, over the batches [`adapt_schedule`] draws. Used by the
//! held-out users' evaluation of [`super::train::train_pal`] and by
//! [`super::PalRewardModel::adapt_users`] at evaluation time.

use std::collections::BTreeMap;

use candle_core::{Tensor, Var};
use prbench_models::ModelError;

use super::model::{pair_loss, PalNet};
use super::optim::{AdamSettings, ParamGroup, TorchAdam};
use super::train::{engine, index, scalar, seeded_order, Hyper, PalData};

/// A new user's adapted row and the loss of each adaptation step (before the step).
#[derive(Debug, Clone)]
pub struct Adapted {
    /// The adapted row `[K]`, in the network's dtype.
    pub w: Tensor,
    /// Loss per step.
    pub losses: Vec<f64>,
}

/// Few-shot adaptation of one new user (the authors' `main_pal_*_unseen.py`): a weight row
/// starting at `w_init` `[K]`, trained alone with torch AdamW (`adapt_lr`,
/// `adapt_weight_decay`) on the batches of pairs `batches` (indices into `data.pairs`; their
/// `user` field is not read), everything else frozen. The network's `W`-independent features
/// are computed once.
///
/// # Errors
/// Candle errors; an empty batch.
pub fn adapt_user(
    net: &PalNet,
    data: &PalData,
    w_init: &Tensor,
    batches: &[Vec<usize>],
    hyper: &Hyper,
) -> Result<Adapted, ModelError> {
    let mut slot: BTreeMap<usize, usize> = BTreeMap::new();
    for &i in batches.iter().flatten() {
        let n = slot.len();
        slot.entry(i).or_insert(n);
    }
    let mut order = vec![0; slot.len()];
    for (&i, &s) in &slot {
        order[s] = i;
    }
    let features = data.features(net, &order)?;
    let var =
        Var::from_tensor(&w_init.to_dtype(net.dtype()).and_then(|t| t.copy()).map_err(engine)?)
            .map_err(engine)?;
    let group = ParamGroup {
        name: "W".into(),
        lr: hyper.adapt_lr,
        weight_decay: hyper.adapt_weight_decay,
        params: vec![var.clone()],
    };
    let mut opt = TorchAdam::new(vec![group], AdamSettings { decoupled: true, ..hyper.adam });
    let mut losses = Vec::with_capacity(batches.len());
    for batch in batches {
        if batch.is_empty() {
            return Err(ModelError::Engine("an adaptation batch is empty".into()));
        }
        let f = features.select(&index(batch.iter().map(|i| slot[i]))?).map_err(engine)?;
        // One row for the whole batch: PAL-A's ideal point is computed once.
        let w = var.as_tensor().unsqueeze(0).map_err(engine)?;
        let (rc, rr) = net.pair_rewards_from(&f, &w).map_err(engine)?;
        let loss = pair_loss(net.variant(), &rc, &rr).and_then(|l| l.mean_all()).map_err(engine)?;
        opt.step(&loss.backward().map_err(engine)?).map_err(engine)?;
        losses.push(scalar(&loss)?);
    }
    Ok(Adapted { w: var.as_tensor().detach().copy().map_err(engine)?, losses })
}

/// A new user's adaptation schedule: `epochs` passes over their pairs (`pair_ids[i]` for
/// `pairs[i]`, indices into the data), each in the order [`seeded_order`]`(seed,
/// "adapt/{user}/{epoch}")` cut into batches of `batch_size`.
pub fn adapt_schedule(
    seed: u64,
    user: &str,
    pairs: &[usize],
    pair_ids: &[&str],
    epochs: usize,
    batch_size: usize,
) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for epoch in 1..=epochs {
        let order = seeded_order(seed, &format!("adapt/{user}/{epoch}"), pair_ids);
        for part in order.chunks(batch_size.max(1)) {
            out.push(part.iter().map(|&i| pairs[i]).collect());
        }
    }
    out
}
