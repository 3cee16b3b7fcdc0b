//! Training a PAL model from a dataset spec to a saved model folder, as `prbench train pal`
//! does, and the histories `prbench eval --model pal:DIR` adapts unknown users from.
//!
//! The pairs are built as for the BT head ([`crate::bt::pipeline::build_pairs`]: P-Soups users'
//! past pairs or a file's own pairs, minus every pair equal to a target pair), except that a
//! repeat is merged only within one user: two users' identical pairs are each user's evidence.
//! Users are [`user_key`]s. Each distinct text is embedded once; PAL is trained
//! ([`super::train::train_pal`]) and saved as `pal.safetensors` + `pal.json`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use prbench_data::Example;

use super::compose::{composition, composition_sha256, item_input, prompt_input};
use super::config::{PalConfig, PalTrainingRecord, CONFIG_FILE, PAL_FORMAT};
use super::model::Variant;
use super::reward::{save, AdaptReport, PalRewardModel, UserHistory};
use super::train::{self, PalData, PalPair, PalTrainOptions, AUTHORS_ADAPT_EPOCHS, AUTHORS_EPOCHS};
use crate::bt::pairs::{self, Built, Context};
use crate::bt::pipeline::{
    build_pairs, data_record, embed_progress_line, embedder_record, fmt, load_embedder,
    report_pairs, TrainError, TrainReporter,
};
use crate::bt::{embed_distinct, DistinctInputs};
use crate::options::TrainPalOptions;

/// A row's user: its `user_id` when the dataset has one, else its example id (P-Soups and
/// Personalized-RewardBench: every row is its own user).
pub fn user_key(ex: &Example) -> String {
    ex.user_id.clone().unwrap_or_else(|| ex.id.clone())
}

/// A trained and saved PAL model, with what the summary line reports.
pub struct Trained {
    /// The pairs built and what was dropped.
    pub built: Built,
    /// The saved `pal.json`.
    pub config: PalConfig,
}

/// Where prbench departs from the authors' setup, and why (recorded in `pal.json`).
pub fn deviations(opts: &PalTrainOptions, dim: usize) -> Vec<String> {
    let mut out = vec![
        format!(
            "inputs: one frozen, mean-pooled, L2-normalised all-MiniLM-L6-v2 embedding per text (d = {dim}) instead of per-token \
             hidden states of a language model trained along (the authors' distilbert/opt-350m, lr 9.65e-6): the models must train \
             on a CPU; the authors' per-token loss is then a mean over one position"
        ),
        format!(
            "projector width d = {dim} (the embedder's dimension) instead of the authors' 768: the residual projector of PAL-A needs \
             its input and output widths equal, and the embeddings are the input"
        ),
        "no learning-rate warm-up: the authors' optim configs name warmup_ratio 0.1, but their Lightning module builds no \
         scheduler (the import is commented out), so none runs there either"
            .to_string(),
        "the prototype bound loss is not computed: the authors compute it and do not add it (\"loss += bound_loss; reduce \
         performance\")"
            .to_string(),
        "a new user is adapted alone, in batches of their own pairs: the authors put every unseen user's pairs in one loader with \
         batches of 4; with Adam per parameter the difference is only the batch mean's denominator"
            .to_string(),
    ];
    if opts.epochs != AUTHORS_EPOCHS {
        out.push(format!(
            "{} training epochs instead of the authors' {AUTHORS_EPOCHS} (epochs_new_pair): with a few pairs per user (P-Soups: 4), \
             one epoch gives each user's weights at most that many Adam steps of lr 5e-3, too few to leave their random start",
            opts.epochs
        ));
    }
    if opts.adapt_epochs != AUTHORS_ADAPT_EPOCHS {
        out.push(format!(
            "{} adaptation epochs over a new user's pairs instead of the authors' {AUTHORS_ADAPT_EPOCHS}: one pass over 4 pairs is one \
             AdamW step of lr 5e-3, which moves the row by about 0.005",
            opts.adapt_epochs
        ));
    }
    out
}

/// Embeds the pairs' distinct texts (items, and PAL-B's prompts) and indexes them: pair `i` of
/// the result is `pairs[i]`, its user `users[i]` (row of the users table returned, in order of
/// first appearance).
fn embed(
    embedder: &prbench_rm::embed::MiniLmEmbedder,
    variant: Variant,
    pairs: &[crate::bt::BtPair],
    owners: &[String],
    reporter: &dyn TrainReporter,
) -> Result<(PalData, Vec<String>, crate::bt::EmbedRecord), TrainError> {
    let mut distinct = DistinctInputs::default();
    let mut users: Vec<String> = Vec::new();
    let mut user_row: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::with_capacity(pairs.len());
    for (p, owner) in pairs.iter().zip(owners) {
        let user = *user_row.entry(owner.as_str()).or_insert_with(|| {
            users.push(owner.clone());
            users.len() - 1
        });
        let chosen = distinct.slot(item_input(p.context.as_deref(), &p.question, &p.chosen));
        let rejected = distinct.slot(item_input(p.context.as_deref(), &p.question, &p.rejected));
        let prompt = if variant == Variant::B {
            distinct.slot(prompt_input(p.context.as_deref(), &p.question))
        } else {
            0
        };
        out.push(PalPair { user, prompt, chosen, rejected });
    }
    let describe = |n: usize| {
        out.iter()
            .position(|q| {
                q.chosen == n || q.rejected == n || (variant == Variant::B && q.prompt == n)
            })
            .map(|i| {
                let q = &out[i];
                let what = if q.chosen == n {
                    "chosen answer"
                } else if q.rejected == n {
                    "rejected answer"
                } else {
                    "prompt"
                };
                format!("pair `{}` ({what})", pairs[i].id)
            })
    };
    let (vecs, record) = embed_distinct(embedder, distinct.inputs(), &describe, &mut |p| {
        reporter.progress(&embed_progress_line(&p))
    })?;
    let prompts = (variant == Variant::B).then_some(vecs.as_slice());
    let data = PalData::from_rows(&vecs, prompts, out, candle_core::DType::F32)?;
    Ok((data, users, record))
}

/// Builds the pairs (each input's context from `context`), embeds, trains and saves PAL into
/// `opts.out` (module docs).
///
/// # Errors
/// Data that cannot be loaded or gives fewer than two pairs; an embedder that cannot be loaded;
/// embedding, training or saving failures.
pub fn train_pal(
    opts: &TrainPalOptions,
    context: Context<'_>,
    reporter: &dyn TrainReporter,
) -> Result<Trained, TrainError> {
    let o = &opts.train;
    // 1. Pairs, per user.
    let req = opts.request();
    let src = build_pairs(&req, context, &user_key)?;
    report_pairs(&req, &src, reporter)?;
    let b = &src.built;

    // 2. Embeddings.
    let (embedder_dir, embedder) =
        load_embedder(opts.embedder.as_deref(), opts.max_length, opts.embed_batch, reporter)?;
    let (data, user_keys, record) = embed(&embedder, o.variant, &b.pairs, &src.owners, reporter)?;
    reporter.progress(&format!(
        "embedding: {} distinct texts, {} tokens (longest {}), {:.1} s; {} inputs truncated ({} tokens cut from contexts); {} users",
        record.distinct_texts,
        record.input_tokens,
        record.max_input_tokens,
        record.seconds,
        record.truncated_inputs,
        record.truncated_tokens,
        user_keys.len()
    ));

    // 3. Training.
    let ids: Vec<String> = b.pairs.iter().map(|p| p.id.clone()).collect();
    let t = train::train_pal(&data, &user_keys, &ids, o, &mut |s| {
        reporter.progress(&format!(
            "epoch {:>4}  mean step loss {:.4} | train loss {:.4} accuracy {:.3}",
            s.epoch, s.mean_step_loss, s.train_loss, s.train_accuracy
        ))
    })?;
    if let Some(h) = &t.held_out {
        reporter.progress(&format!(
            "held-out users: {} adapted on {} pairs ({} epochs), tested on {}: accuracy adapted {:.3}, unadapted {:.3}, uniform mixture {:.3}",
            h.users, h.adapt_pairs, o.adapt_epochs, h.test_pairs, h.accuracy_adapted, h.accuracy_unadapted, h.accuracy_uniform
        ));
    }

    // 4. Save.
    let dim = embedder.dim();
    let hy = &o.hyper;
    let config = PalConfig {
        format: PAL_FORMAT.to_string(),
        variant: o.variant.name().to_string(),
        k: o.k,
        dim,
        projector: o.variant.projector_arch().to_string(),
        score: o.variant.score_name().to_string(),
        loss: o.variant.loss_name().to_string(),
        embedder: embedder_record(&embedder_dir, &embedder),
        max_length: embedder.max_length(),
        composition: composition(),
        composition_sha256: composition_sha256(),
        condition: opts.condition.clone(),
        seed: o.seed,
        training: PalTrainingRecord {
            optimizer: "torch Adam with L2 weight decay, parameter groups (projector, P or logit_scale, W); each user's row of W its \
                        own parameter, stepped only in batches holding that user's pairs"
                .into(),
            lr_projector: hy.lr_projector,
            weight_decay_projector: hy.weight_decay_projector,
            lr_prototypes: hy.lr_prototypes,
            lr_users: hy.lr_users,
            lr_logit_scale: hy.lr_logit_scale,
            betas: [hy.adam.betas.0, hy.adam.betas.1],
            eps: hy.adam.eps,
            batch_size: o.batch_size,
            epochs: o.epochs,
            authors_epochs: AUTHORS_EPOCHS,
            adapt_optimizer: "torch AdamW on the new user's row alone; everything else frozen".into(),
            adapt_lr: hy.adapt_lr,
            adapt_weight_decay: hy.adapt_weight_decay,
            adapt_epochs: o.adapt_epochs,
            authors_adapt_epochs: AUTHORS_ADAPT_EPOCHS,
            holdout_users: o.holdout_users,
            n_users: t.users.len(),
            n_held_out_users: t.held_out_users.len(),
            n_train_pairs: t.n_train_pairs,
            n_held_out_pairs: t.n_held_out_pairs,
            history: t.history.clone(),
            held_out: t.held_out.clone(),
            seconds: t.seconds,
        },
        embedding: record,
        data: data_record(&req, &src),
        users: t.users.iter().enumerate().map(|(i, u)| (u.clone(), i)).collect::<BTreeMap<_, _>>(),
        deviations: deviations(o, dim),
        weights_sha256: String::new(),
        code_version: opts.code_version.clone(),
    };
    save(&opts.out, &t.net, &t.w, &config).map_err(|source| TrainError::Model {
        what: format!("saving to {}", opts.out.display()),
        source,
    })?;
    Ok(Trained { built: src.built, config })
}

/// Whether `dir` already holds a PAL model.
pub fn holds_model(dir: &Path) -> bool {
    dir.join(CONFIG_FILE).exists()
}

/// The history pairs of the users of `examples` (the rows to be scored), for few-shot
/// adaptation of the users a PAL model does not know ([`super::PalRewardModel::adapt_users`]).
/// P-Soups data (`psoups:DIR`) gives each row's "Pair-wise Comparative Feedback" and
/// SynthesizeMe data (`synthesizeme:DIR`) each user's `train`-split pairs (with the
/// context `context` renders for it), minus every pair equal to a target pair of the data (so no
/// evaluated pair is adapted on) and minus a user's own repeats; other data has no history, so
/// the result is empty.
///
/// # Errors
/// History data that cannot be loaded.
pub fn eval_histories(
    data: &str,
    subset: &[String],
    examples: &[Example],
    context: Context<'_>,
) -> Result<Vec<UserHistory>, TrainError> {
    let loaded =
        prbench_data::load_with_history(data, subset).map_err(|source| TrainError::Data {
            what: format!("loading the history pairs of `{data}`"),
            source: Box::new(source),
        })?;
    let Some((dataset, histories)) = loaded else {
        return Ok(Vec::new());
    };
    let wanted: std::collections::HashSet<&str> = examples.iter().map(|e| e.id.as_str()).collect();
    let (rows, hist): (Vec<Example>, Vec<_>) = dataset
        .examples
        .iter()
        .zip(&histories)
        .filter(|(e, _)| wanted.contains(e.id.as_str()))
        .map(|(e, h)| (e.clone(), h.clone()))
        .unzip();
    let owner: HashMap<String, String> = rows
        .iter()
        .zip(&hist)
        .flat_map(|(row, h)| {
            (1..=h.pairs.len()).map(move |k| (format!("{}-h{k}", row.id), user_key(row)))
        })
        .collect();
    let targets: Vec<&Example> = dataset.examples.iter().chain(examples).collect();
    let built =
        pairs::filter_scoped(pairs::history_examples(&rows, &hist, context), &targets, &|p| {
            owner[&p.id].clone()
        });
    let mut by_user: BTreeMap<String, Vec<crate::bt::BtPair>> =
        rows.iter().map(|r| (user_key(r), Vec::new())).collect();
    for p in built.pairs {
        by_user.entry(owner[&p.id].clone()).or_default().push(p);
    }
    Ok(by_user.into_iter().map(|(user, pairs)| UserHistory { user, pairs }).collect())
}

/// The users of the examples an evaluation scores, as [`prepare_eval_users`] left them.
#[derive(Debug, Clone)]
pub struct EvalUsers {
    /// Distinct users the model was trained on.
    pub known: usize,
    /// The few-shot adaptation of the others.
    pub adapted: AdaptReport,
    /// Users neither known nor with a history pair (sorted): their examples will be refused.
    pub without_history: Vec<String>,
}

/// Gives `rm` the users of `examples` (the rows to be scored, from `data`): each example's user
/// ([`user_key`]) and a few-shot adaptation of every user it was not trained on, from their
/// history pairs ([`eval_histories`], each input's context from `context`, which should render
/// the model's training condition).
///
/// # Errors
/// History data that cannot be loaded; embedding or adaptation failures.
pub fn prepare_eval_users(
    rm: &mut PalRewardModel,
    data: &str,
    subset: &[String],
    examples: &[Example],
    context: Context<'_>,
) -> Result<EvalUsers, TrainError> {
    rm.set_example_users(
        examples
            .iter()
            .filter(|e| e.user_id.is_some())
            .map(|e| (e.id.clone(), user_key(e)))
            .collect(),
    );
    let histories = eval_histories(data, subset, examples, context)?;
    let users: std::collections::BTreeSet<String> =
        examples.iter().map(|e| rm.user_of(&e.id).to_string()).collect();
    let adapted = rm.adapt_users(&histories, &mut |_| {})?;
    let with_history: std::collections::HashSet<&str> =
        histories.iter().filter(|h| !h.pairs.is_empty()).map(|h| h.user.as_str()).collect();
    Ok(EvalUsers {
        known: users.iter().filter(|u| rm.knows(u)).count(),
        without_history: users
            .iter()
            .filter(|u| !rm.knows(u) && !with_history.contains(u.as_str()))
            .cloned()
            .collect(),
        adapted,
    })
}

/// The summary figures of a held-out evaluation, for the command's last line.
pub fn held_out_summary(config: &PalConfig) -> String {
    let t = &config.training;
    let n = t.n_held_out_users;
    match &t.held_out {
        _ if n == 0 => "no held-out users".to_string(),
        Some(h) => format!(
            "{n} held-out users, {} evaluated: accuracy adapted {}, uniform mixture {}{}",
            h.users,
            fmt(Some(100.0 * h.accuracy_adapted), 1) + "%",
            fmt(Some(100.0 * h.accuracy_uniform), 1) + "%",
            if h.users_skipped > 0 {
                format!("; {} skipped (fewer than 2 pairs: nothing to both adapt on and test)", h.users_skipped)
            } else {
                String::new()
            }
        ),
        None => format!(
            "{n} held-out users, none evaluated: each has fewer than 2 pairs (nothing to both adapt on and test); they are left out of training"
        ),
    }
}
