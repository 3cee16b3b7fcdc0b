//! Training the head with the Bradley-Terry loss `−log σ(r_chosen − r_rejected)` on precomputed
//! embeddings: each distinct composed text is embedded once, the head is trained with AdamW on
//! candle autograd, a held-out share picked by `sha256(seed ‖ pair id)` drives early stopping, and
//! the best epoch's weights are kept.

use std::collections::HashMap;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use prbench_models::ModelError;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

use super::compose::compose;
use super::config::{EmbedRecord, EpochStats};
use super::head::{rows_tensor, BtHead};
use prbench_rm::embed::{EmbedInput, MiniLmEmbedder};

fn engine(e: impl Into<prbench_models::BoxError>) -> ModelError {
    ModelError::engine("BT training", e)
}

/// One training pair: the condition's context (if any), the question and the two answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtPair {
    /// Unique id (seeds the held-out split).
    pub id: String,
    /// The condition's context.
    pub context: Option<String>,
    /// The question.
    pub question: String,
    /// The preferred answer.
    pub chosen: String,
    /// The other answer.
    pub rejected: String,
}

/// Embeddings of every pair's two composed inputs.
#[derive(Debug, Clone)]
pub struct PairEmbeddings {
    /// Embedding of `compose(context, question, chosen)`, per pair.
    pub chosen: Vec<Vec<f32>>,
    /// Embedding of `compose(context, question, rejected)`, per pair.
    pub rejected: Vec<Vec<f32>>,
    /// Token accounting and time.
    pub record: EmbedRecord,
}

/// Progress of the embedding pass: texts done, total distinct texts, tokens so far, seconds.
#[derive(Debug, Clone, Copy)]
pub struct EmbedProgress {
    /// Distinct texts embedded so far.
    pub done: usize,
    /// Distinct texts in all.
    pub total: usize,
    /// Tokens embedded so far.
    pub tokens: usize,
    /// Seconds since the pass started.
    pub seconds: f64,
}

/// Distinct embedder inputs in first-seen order: each text is embedded once however many pairs
/// (or users) share it. Used by the BT and PAL embedding passes.
#[derive(Debug, Clone, Default)]
pub struct DistinctInputs {
    index: HashMap<EmbedInput, usize>,
    inputs: Vec<EmbedInput>,
}

impl DistinctInputs {
    /// The slot of `input`: its index among the distinct inputs, added if new.
    pub fn slot(&mut self, input: EmbedInput) -> usize {
        if let Some(&i) = self.index.get(&input) {
            return i;
        }
        self.inputs.push(input.clone());
        self.index.insert(input, self.inputs.len() - 1);
        self.inputs.len() - 1
    }

    /// The distinct inputs, slot order.
    pub fn inputs(&self) -> &[EmbedInput] {
        &self.inputs
    }
}

/// Embeds `inputs` (distinct texts, e.g. [`DistinctInputs::inputs`]) in chunks, calling
/// `on_progress` after each, and returns one vector per input with the pass's token record.
/// Every input's token count is checked before any model time is spent; an input that cannot
/// fit fails with its index rewritten by `describe` (e.g. "pair `p1` (chosen answer)") when
/// `describe` names it.
///
/// # Errors
/// The embedder's errors ([`ModelError::ContextOverflow`] for an input whose second sequence
/// does not fit).
pub fn embed_distinct(
    embedder: &MiniLmEmbedder,
    inputs: &[EmbedInput],
    describe: &dyn Fn(usize) -> Option<String>,
    on_progress: &mut dyn FnMut(EmbedProgress),
) -> Result<(Vec<Vec<f32>>, EmbedRecord), ModelError> {
    let start = Instant::now();
    let stats = embedder.token_stats(inputs).map_err(|e| name_input(e, inputs.len(), describe))?;
    let mut vecs: Vec<Vec<f32>> = Vec::with_capacity(inputs.len());
    let chunk = (embedder.batch_size() * 4).max(1);
    let mut tokens = 0;
    for (k, part) in inputs.chunks(chunk).enumerate() {
        let (v, s) = embedder.embed(part)?;
        vecs.extend(v);
        tokens += s.iter().map(|t| t.input_tokens).sum::<usize>();
        on_progress(EmbedProgress {
            done: (k * chunk + part.len()).min(inputs.len()),
            total: inputs.len(),
            tokens,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    let record = EmbedRecord {
        distinct_texts: inputs.len(),
        input_tokens: stats.iter().map(|s| s.input_tokens).sum(),
        max_input_tokens: stats.iter().map(|s| s.input_tokens).max().unwrap_or(0),
        truncated_inputs: stats.iter().filter(|s| s.truncated_tokens > 0).count(),
        truncated_tokens: stats.iter().map(|s| s.truncated_tokens).sum(),
        seconds: start.elapsed().as_secs_f64(),
    };
    Ok((vecs, record))
}

/// Embeds every pair's chosen and rejected input, each distinct composed text once, in chunks
/// (calling `on_progress` after each).
///
/// # Errors
/// The embedder's errors (an answer that does not fit names its input).
pub fn embed_pairs(
    embedder: &MiniLmEmbedder,
    pairs: &[BtPair],
    on_progress: &mut dyn FnMut(EmbedProgress),
) -> Result<PairEmbeddings, ModelError> {
    let mut distinct = DistinctInputs::default();
    let mut which = Vec::with_capacity(pairs.len());
    for p in pairs {
        let c = distinct.slot(compose(p.context.as_deref(), &p.question, &p.chosen));
        let r = distinct.slot(compose(p.context.as_deref(), &p.question, &p.rejected));
        which.push((c, r));
    }
    // Fail on a text that cannot fit before any model time is spent.
    let describe = |n: usize| {
        which.iter().position(|&(c, r)| c == n || r == n).map(|p| {
            format!(
                "pair `{}` ({} answer)",
                pairs[p].id,
                if which[p].0 == n { "chosen" } else { "rejected" }
            )
        })
    };
    let (vecs, record) = embed_distinct(embedder, distinct.inputs(), &describe, on_progress)?;
    Ok(PairEmbeddings {
        chosen: which.iter().map(|&(c, _)| vecs[c].clone()).collect(),
        rejected: which.iter().map(|&(_, r)| vecs[r].clone()).collect(),
        record,
    })
}

/// Rewrites "input N" in a context-overflow error as `describe(N)` (e.g. the pair id it came
/// from).
fn name_input(
    e: ModelError,
    n_inputs: usize,
    describe: &dyn Fn(usize) -> Option<String>,
) -> ModelError {
    match e {
        ModelError::ContextOverflow { tokens, n_ctx, reason } => {
            let named = reason
                .strip_prefix("input ")
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n < n_inputs)
                .and_then(describe);
            let reason = match named {
                Some(name) => format!("{name}: {reason}"),
                None => reason,
            };
            ModelError::ContextOverflow { tokens, n_ctx, reason }
        }
        other => other,
    }
}

/// Which pairs are held out: the `round(fraction · n)` pairs (at least one when `fraction > 0`
/// and `n ≥ 2`) with the smallest `sha256(seed as 8 little-endian bytes ‖ id)`. Depends on the
/// set of ids, never on their order.
pub fn held_out_mask(ids: &[String], seed: u64, fraction: f64) -> Vec<bool> {
    let n = ids.len();
    let mut k = (fraction * n as f64).round() as usize;
    if fraction > 0.0 && n >= 2 {
        k = k.max(1);
    }
    k = k.min(n.saturating_sub(1));
    let mut keyed: Vec<([u8; 32], usize)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut h = Sha256::new();
            h.update(seed.to_le_bytes());
            h.update(id.as_bytes());
            (h.finalize().into(), i)
        })
        .collect();
    keyed.sort();
    let mut mask = vec![false; n];
    for &(_, i) in keyed.iter().take(k) {
        mask[i] = true;
    }
    mask
}

/// Training options.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Seed: initialisation, mini-batch shuffling, held-out split.
    pub seed: u64,
    /// Hidden width (0 = linear head).
    pub hidden: usize,
    /// Epoch limit.
    pub epochs: usize,
    /// Stop after this many epochs without a lower held-out loss (0 = never stop early).
    pub patience: usize,
    /// AdamW learning rate.
    pub lr: f64,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Pairs per step (0 = full batch).
    pub batch_size: usize,
    /// Held-out share in [0, 1).
    pub held_out: f64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            seed: 42,
            hidden: 256,
            epochs: 300,
            patience: 30,
            lr: 1e-3,
            weight_decay: 0.01,
            batch_size: 64,
            held_out: 0.2,
        }
    }
}

/// The result of [`train_head`].
#[derive(Debug, Clone)]
pub struct TrainedHead {
    /// The saved (best) weights.
    pub head: BtHead,
    /// Training pairs.
    pub n_train: usize,
    /// Held-out pairs.
    pub n_held_out: usize,
    /// Ids of the held-out pairs.
    pub held_out_ids: Vec<String>,
    /// Epochs run.
    pub epochs_run: usize,
    /// Epoch of the saved weights.
    pub best_epoch: usize,
    /// Per epoch, 0 (before training) included.
    pub history: Vec<EpochStats>,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl TrainedHead {
    /// The saved epoch's figures.
    pub fn best(&self) -> &EpochStats {
        &self.history[self.best_epoch]
    }
}

/// Mean BT loss of `head` on `(xc, xr)` and the margins `d = r_chosen − r_rejected`; the loss is
/// computed as `softplus(−d) = (|d| − d)/2 + log(1 + e^{−|d|})`, stable for any margin `d`.
///
/// The first term is `relu(−d)` written through `|d|`, so that candle's gradient is the true
/// `−σ(−d)` at `d = 0` too, whatever sign it gives `|d|` there. (`relu(−d)` took the gradient
/// of `relu` at 0 as 1 and that of `|d|` as +1, giving −1.5 instead of −0.5 at `d = 0`: at the
/// first step, where the zero output layer makes every margin 0. Found against the PyTorch
/// reference, `tools/bt_reference.py`.)
fn bt_loss(head: &BtHead, xc: &Tensor, xr: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
    let d = (head.forward(xc)? - head.forward(xr)?)?;
    let a = d.abs()?;
    let loss = (((&a - &d)? * 0.5)? + (a.neg()?.exp()? + 1.0)?.log()?)?.mean_all()?;
    Ok((loss, d))
}

fn evaluate(head: &BtHead, xc: &Tensor, xr: &Tensor) -> candle_core::Result<(f64, f64)> {
    let (loss, d) = bt_loss(head, xc, xr)?;
    let d = d.to_dtype(DType::F64)?.to_vec1::<f64>()?;
    let correct = d.iter().filter(|&&x| x > 0.0).count();
    Ok((loss.to_dtype(DType::F64)?.to_scalar::<f64>()?, correct as f64 / d.len().max(1) as f64))
}

/// A given start for [`train_head_from`], in place of the one [`train_head`] draws from the
/// seed: the initial weights and every epoch's mini-batches. Used to replay another
/// implementation's run (`tools/bt_reference.py` and the `matches_the_pytorch_reference` test).
#[derive(Debug, Clone)]
pub struct TrainStart {
    /// Initial weights by tensor name, as [`BtHead::from_tensors`] takes them: `hidden.weight`
    /// `(hidden, dim)`, `hidden.bias` `(hidden)` and `out.weight` `(1, hidden)`, or `out.weight`
    /// `(1, dim)` alone for the linear head (`hidden` 0). All F32 or all F64: training runs in
    /// that dtype (the f32 embeddings are converted to it), and so does the returned head.
    pub weights: HashMap<String, Tensor>,
    /// Per epoch (index 0 = epoch 1), its mini-batches in order, each a list of indices into the
    /// training pairs: the pairs not held out by [`held_out_mask`], in input order, numbered
    /// from 0. One optimizer step per mini-batch; the loss of a step is the mean over its
    /// pairs. Needs at least `epochs` entries.
    pub batches: Vec<Vec<Vec<usize>>>,
}

/// Trains a head on pairs of embeddings (`chosen[i]` preferred to `rejected[i]`, pair id
/// `ids[i]`), calling `on_epoch` after every epoch (and once for epoch 0, before training).
///
/// Each epoch visits every training pair once, in mini-batches of `batch_size` drawn by a
/// ChaCha8 shuffle seeded with `seed` (full batch when `batch_size` is 0 or at least the training
/// size). After each epoch the loss and accuracy on the training and held-out pairs are
/// computed; the weights with the lowest held-out loss are kept, and training stops after
/// `patience` epochs without improvement (never, when `patience` is 0). With nothing held out, the last epoch is kept.
///
/// # Errors
/// [`ModelError::Spec`] for bad options or inputs (no pairs, unequal lengths, a held-out share
/// outside [0, 1)); [`ModelError::Engine`] for candle failures.
pub fn train_head(
    chosen: &[Vec<f32>],
    rejected: &[Vec<f32>],
    ids: &[String],
    opts: &TrainOptions,
    on_epoch: &mut dyn FnMut(&EpochStats, bool),
) -> Result<TrainedHead, ModelError> {
    train(chosen, rejected, ids, opts, None, on_epoch)
}

/// [`train_head`] from a given start: the initial weights and the mini-batches of every epoch
/// come from `start` instead of being drawn from `opts.seed` (which still picks the held-out
/// pairs; `opts.hidden` must match the weights' shapes, `opts.batch_size` is unused). Everything
/// else (loss, AdamW with `opts.lr` and `opts.weight_decay`, per-epoch figures, early stopping,
/// the kept epoch) is [`train_head`]'s own code.
///
/// # Errors
/// As [`train_head`]; [`ModelError::Spec`] also when `start` has fewer epochs of batches than
/// `opts.epochs` or an index outside the training pairs; [`ModelError::Engine`] for weights
/// with missing tensors, wrong shapes or mixed dtypes.
pub fn train_head_from(
    chosen: &[Vec<f32>],
    rejected: &[Vec<f32>],
    ids: &[String],
    opts: &TrainOptions,
    start: &TrainStart,
    on_epoch: &mut dyn FnMut(&EpochStats, bool),
) -> Result<TrainedHead, ModelError> {
    train(chosen, rejected, ids, opts, Some(start), on_epoch)
}

fn train(
    chosen: &[Vec<f32>],
    rejected: &[Vec<f32>],
    ids: &[String],
    opts: &TrainOptions,
    start_from: Option<&TrainStart>,
    on_epoch: &mut dyn FnMut(&EpochStats, bool),
) -> Result<TrainedHead, ModelError> {
    let bad = |reason: String| ModelError::Spec { spec: "bt training".into(), reason };
    let n = chosen.len();
    if n == 0 || rejected.len() != n || ids.len() != n {
        return Err(bad(format!(
            "need equal, non-zero numbers of chosen ({n}), rejected ({}) and ids ({})",
            rejected.len(),
            ids.len()
        )));
    }
    if !(0.0..1.0).contains(&opts.held_out) {
        return Err(bad(format!("held-out share {} must be in [0, 1)", opts.held_out)));
    }
    if opts.epochs == 0 {
        return Err(bad("epochs must be at least 1".into()));
    }
    let dim = chosen[0].len();
    if let Some(i) = chosen.iter().chain(rejected).position(|v| v.len() != dim) {
        return Err(bad(format!("embedding {i} has a different length than the first ({dim})")));
    }
    let start = Instant::now();
    let mask = held_out_mask(ids, opts.seed, opts.held_out);
    let pick = |rows: &[Vec<f32>], held: bool| -> Vec<Vec<f32>> {
        rows.iter().zip(&mask).filter(|(_, &m)| m == held).map(|(r, _)| r.clone()).collect()
    };
    let (tc, tr) = (pick(chosen, false), pick(rejected, false));
    let (hc, hr) = (pick(chosen, true), pick(rejected, true));
    let held_out_ids: Vec<String> =
        ids.iter().zip(&mask).filter(|(_, &m)| m).map(|(i, _)| i.clone()).collect();
    let n_train = tc.len();
    let n_held = hc.len();
    if let Some(s) = start_from {
        if s.batches.len() < opts.epochs {
            return Err(bad(format!(
                "the start has batches for {} epochs, {} asked for",
                s.batches.len(),
                opts.epochs
            )));
        }
        if let Some(&i) = s.batches.iter().flatten().flatten().find(|&&i| i >= n_train) {
            return Err(bad(format!(
                "batch index {i} is not a training pair (there are {n_train})"
            )));
        }
    }
    let (head, vars) = match start_from {
        Some(s) => BtHead::trainable(&s.weights, dim, opts.hidden)?,
        None => BtHead::init(dim, opts.hidden, opts.seed)?,
    };
    let rows = |r: &[Vec<f32>]| rows_tensor(r, dim)?.to_dtype(head.dtype()).map_err(engine);
    let xc = rows(&tc)?;
    let xr = rows(&tr)?;
    let held = if n_held > 0 { Some((rows(&hc)?, rows(&hr)?)) } else { None };

    let params =
        ParamsAdamW { lr: opts.lr, weight_decay: opts.weight_decay, ..ParamsAdamW::default() };
    let mut opt =
        AdamW::new(vars.iter().map(|(_, v)| v.clone()).collect(), params).map_err(engine)?;
    // One RNG stream for shuffling, distinct from the initialisation stream.
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0x5348_5546_464c_4531);
    let batch =
        if opts.batch_size == 0 || opts.batch_size >= n_train { n_train } else { opts.batch_size };

    let stats_at = |epoch: usize, head: &BtHead| -> Result<EpochStats, ModelError> {
        let (train_loss, train_accuracy) = evaluate(head, &xc, &xr).map_err(engine)?;
        let (held_out_loss, held_out_accuracy) = match &held {
            Some((c, r)) => {
                let (l, a) = evaluate(head, c, r).map_err(engine)?;
                (Some(l), Some(a))
            }
            None => (None, None),
        };
        Ok(EpochStats { epoch, train_loss, train_accuracy, held_out_loss, held_out_accuracy })
    };
    let mut history = vec![stats_at(0, &head)?];
    on_epoch(&history[0], false);
    let mut best: Option<(usize, f64, BtHead)> = None;
    let mut order: Vec<u32> = (0..n_train as u32).collect();
    let step = |opt: &mut AdamW, part: Option<&[u32]>| -> Result<(), ModelError> {
        let (bc, br) = match part {
            None => (xc.clone(), xr.clone()),
            Some(part) => {
                let idx =
                    Tensor::from_vec(part.to_vec(), part.len(), &Device::Cpu).map_err(engine)?;
                (
                    xc.index_select(&idx, 0).map_err(engine)?,
                    xr.index_select(&idx, 0).map_err(engine)?,
                )
            }
        };
        let (loss, _) = bt_loss(&head, &bc, &br).map_err(engine)?;
        opt.backward_step(&loss).map_err(engine)
    };
    for epoch in 1..=opts.epochs {
        if let Some(s) = start_from {
            for part in &s.batches[epoch - 1] {
                let part: Vec<u32> = part.iter().map(|&i| i as u32).collect();
                step(&mut opt, Some(&part))?;
            }
        } else {
            if batch < n_train {
                order.shuffle(&mut rng);
            }
            for part in order.chunks(batch) {
                step(&mut opt, if batch == n_train { None } else { Some(part) })?;
            }
        }
        let s = stats_at(epoch, &head)?;
        let key = s.held_out_loss.unwrap_or(f64::NEG_INFINITY);
        // Without a held-out set every epoch "improves", so the last one is kept.
        let improved = match &best {
            None => true,
            Some((_, b, _)) => key < *b || s.held_out_loss.is_none(),
        };
        if improved {
            best = Some((epoch, key, head.snapshot()?));
        }
        history.push(s);
        on_epoch(&s, improved);
        let best_epoch = best.as_ref().map_or(epoch, |b| b.0);
        if held.is_some() && opts.patience > 0 && epoch - best_epoch >= opts.patience {
            break;
        }
    }
    let (best_epoch, _, best_head) = best.expect("at least one epoch ran");
    Ok(TrainedHead {
        head: best_head,
        n_train,
        n_held_out: n_held,
        held_out_ids,
        epochs_run: history.len() - 1,
        best_epoch,
        history,
        seconds: start.elapsed().as_secs_f64(),
    })
}
