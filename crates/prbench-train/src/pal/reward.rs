//! A trained PAL model on disk (`pal.safetensors` + `pal.json`) and the [`RewardModel`] that
//! scores with it.
//!
//! Users: the model scores an answer for the user of the request's example. The example's user
//! key is the one given by [`PalRewardModel::set_example_users`] (the dataset row's `user_id`),
//! else the example id itself (P-Soups: one user per row). A user the model was trained on uses
//! their trained row of `W`; an unknown user must have been adapted first, few-shot from their
//! history pairs ([`PalRewardModel::adapt_users`]: a fresh row `init_user_row(seed, user)`
//! trained with AdamW, everything else frozen); otherwise scoring refuses, naming the example.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use prbench_files::readable_by_all;
use prbench_models::file_hash::sha256_file;
use prbench_models::{ModelError, ModelIdentity, RewardModel, RmRequest, Score};
use sha2::{Digest, Sha256};

use super::compose::{composition, composition_sha256, item_input, prompt_input};
use super::config::{PalConfig, CONFIG_FILE, PAL_FORMAT, WEIGHTS_FILE};
use super::model::{init_user_row, load_tensors, save_tensors, PalNet, Variant};
use super::train::{adapt_schedule, adapt_user, Hyper, PalData, PalPair};
use crate::bt::model::load_trained_embedder;
use crate::bt::{embed_distinct, BtPair, DistinctInputs, EmbedProgress};
use prbench_rm::embed::MiniLmEmbedder;

fn engine(e: impl Into<prbench_models::BoxError>) -> ModelError {
    ModelError::engine("PAL scoring", e)
}

/// Engine name in manifests (`{variant}` is `a` or `b`).
pub fn engine_name(variant: Variant) -> String {
    format!("candle pal-{} on all-MiniLM-L6-v2", variant.name())
}

/// Writes `dir/pal.safetensors` (the network and `W` `[n_users, K]`) and `dir/pal.json`
/// (creating `dir`), with the weights' sha256 in the config.
///
/// # Errors
/// [`ModelError::File`] when a file cannot be written; [`ModelError::Spec`] when the config
/// does not match the network or the users table does not match `W`.
pub fn save(dir: &Path, net: &PalNet, w: &Tensor, config: &PalConfig) -> Result<(), ModelError> {
    let spec = || dir.display().to_string();
    if config.variant != net.variant().name()
        || config.k != net.k()
        || config.dim != net.dim()
        || config.embedder.dim != net.dim()
    {
        return Err(ModelError::Spec {
            spec: spec(),
            reason: format!(
                "config says PAL-{} K {} d {} (embedder {}), the network is PAL-{} K {} d {}",
                config.variant,
                config.k,
                config.dim,
                config.embedder.dim,
                net.variant().name(),
                net.k(),
                net.dim()
            ),
        });
    }
    check_users(&config.users, w.dims().first().copied().unwrap_or(0))
        .map_err(|reason| ModelError::Spec { spec: spec(), reason })?;
    std::fs::create_dir_all(dir).map_err(|e| ModelError::file(dir, "", e))?;
    let weights = dir.join(WEIGHTS_FILE);
    save_tensors(&weights, net, w)?;
    // safetensors writes through a 0600 temporary file: readable by the other users, as pal.json.
    readable_by_all(&weights)
        .map_err(|e| ModelError::file(&weights, "cannot make it readable by all", e))?;
    let mut config = config.clone();
    config.weights_sha256 = sha256_file(&weights)?;
    let path = dir.join(CONFIG_FILE);
    let text = serde_json::to_string_pretty(&config).map_err(engine)?;
    std::fs::write(&path, text + "\n").map_err(|e| ModelError::file(path, "", e))
}

/// The users table must map onto the rows `0..n_users` one to one.
fn check_users(users: &BTreeMap<String, usize>, n_users: usize) -> Result<(), String> {
    let mut rows: Vec<usize> = users.values().copied().collect();
    rows.sort_unstable();
    if rows != (0..n_users).collect::<Vec<_>>() {
        return Err(format!(
            "the users table has {} entries that are not the rows 0..{n_users} of W, once each",
            users.len()
        ));
    }
    Ok(())
}

/// Reads and checks `dir/pal.json` (format, variant, composition, users table).
///
/// # Errors
/// [`ModelError::File`] / [`ModelError::Metadata`] naming the file and key at fault.
pub fn read_config(dir: &Path) -> Result<PalConfig, ModelError> {
    let path = dir.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ModelError::file(&path, "a PAL model directory holds pal.json and pal.safetensors, as written by `prbench train pal`", e)
    })?;
    let config: PalConfig = serde_json::from_str(&text).map_err(|e| ModelError::Metadata {
        path: path.clone(),
        key: "(pal.json)".into(),
        reason: e.to_string(),
    })?;
    let meta = |key: &str, reason: String| ModelError::Metadata {
        path: path.clone(),
        key: key.into(),
        reason,
    };
    if config.format != PAL_FORMAT {
        return Err(meta(
            "format",
            format!("`{}`, this version reads `{PAL_FORMAT}`", config.format),
        ));
    }
    if Variant::parse(&config.variant).is_none() {
        return Err(meta("variant", format!("`{}`; expected `a` or `b`", config.variant)));
    }
    if config.composition != composition() || config.composition_sha256 != composition_sha256() {
        return Err(meta(
            "composition",
            "the model was trained on a different text composition than this version's; retrain it"
                .into(),
        ));
    }
    Ok(config)
}

/// One user's history pairs, for few-shot adaptation at load time.
#[derive(Debug, Clone)]
pub struct UserHistory {
    /// The user key.
    pub user: String,
    /// Their pairs (context as the model's condition renders it; e.g. a P-Soups row's
    /// "Pair-wise Comparative Feedback", minus pairs equal to an evaluated pair).
    pub pairs: Vec<BtPair>,
}

/// What [`PalRewardModel::adapt_users`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdaptReport {
    /// Users adapted now.
    pub adapted: usize,
    /// Pairs used, over those users.
    pub pairs: usize,
    /// Histories of users the model was trained on (their trained row is used; not adapted).
    pub known: usize,
    /// Users with an empty history (left unknown: scoring their examples is refused).
    pub empty: usize,
    /// Mean loss of the last adaptation step, over the adapted users.
    pub mean_final_loss: f64,
    /// Wall time in seconds (embedding included).
    pub seconds: f64,
}

/// A trained PAL model: frozen MiniLM embeddings of [`item_input`] (and, for PAL-B,
/// [`prompt_input`]), scored for the example's user (module docs).
#[derive(Debug)]
pub struct PalRewardModel {
    embedder: MiniLmEmbedder,
    net: PalNet,
    /// Trained rows, `[n_users][K]`.
    rows: Vec<Vec<f32>>,
    config: PalConfig,
    /// Rows adapted at load time, by user key.
    adapted: BTreeMap<String, Vec<f32>>,
    /// Example id → user key, where it is not the example id.
    example_users: HashMap<String, String>,
    dir: PathBuf,
    weights_sha256: String,
    spec: String,
}

impl PalRewardModel {
    /// Loads the model in `path` (a directory written by [`save`]) on the embedder in
    /// `embedder_dir`, with the maximum length it was trained with.
    ///
    /// # Errors
    /// [`ModelError::Metadata`] when `embedder_dir/model.safetensors` is not the file the model
    /// was trained on, or `pal.safetensors` is not the file `pal.json` was written for; file,
    /// format and shape errors as [`read_config`] and [`load_tensors`].
    pub fn load(path: &Path, embedder_dir: &Path) -> Result<Self, ModelError> {
        let config = read_config(path)?;
        let variant = Variant::parse(&config.variant).expect("checked by read_config");
        let meta = |key: &str, reason: String| ModelError::Metadata {
            path: path.join(CONFIG_FILE),
            key: key.into(),
            reason,
        };
        let embedder = load_trained_embedder(
            &path.join(CONFIG_FILE),
            embedder_dir,
            &config.embedder,
            config.max_length,
            ("dim", config.dim),
            "model",
        )?;
        let weights_path = path.join(WEIGHTS_FILE);
        let weights_sha256 = sha256_file(&weights_path)?;
        if !config.weights_sha256.is_empty() && config.weights_sha256 != weights_sha256 {
            return Err(meta(
                "weights_sha256",
                format!(
                    "{} has sha256 {weights_sha256}, but pal.json was written for {}: the weights and their config do not belong together",
                    weights_path.display(),
                    config.weights_sha256
                ),
            ));
        }
        let (net, w) =
            load_tensors(&weights_path, variant, config.k, config.dim, config.users.len())?;
        check_users(&config.users, config.users.len()).map_err(|r| meta("users", r))?;
        let rows = w.to_vec2::<f32>().map_err(engine)?;
        Ok(Self {
            embedder,
            net,
            rows,
            config,
            adapted: BTreeMap::new(),
            example_users: HashMap::new(),
            dir: path.to_path_buf(),
            weights_sha256,
            spec: format!("pal:{}", path.display()),
        })
    }

    /// Replaces the spec recorded in the identity (default `pal:PATH`).
    pub fn with_spec(mut self, spec: impl Into<String>) -> Self {
        self.spec = spec.into();
        self
    }

    /// Sets the user key of examples whose user is not their id (example id → user key, from
    /// the evaluated rows' `user_id`), replacing any set before.
    pub fn set_example_users(&mut self, users: HashMap<String, String>) {
        self.example_users = users;
    }

    /// Adds item id → user key entries to those [`Self::set_example_users`] set, for items that
    /// are not dataset rows (a Best-of-N sample `{example}#{i}` is scored for its example's
    /// user); an id already present gets the new user.
    pub fn add_example_users(&mut self, users: impl IntoIterator<Item = (String, String)>) {
        self.example_users.extend(users);
    }

    /// The loaded `pal.json`.
    pub fn config(&self) -> &PalConfig {
        &self.config
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The network.
    pub fn net(&self) -> &PalNet {
        &self.net
    }

    /// The user key of an example.
    pub fn user_of<'a>(&'a self, example_id: &'a str) -> &'a str {
        self.example_users.get(example_id).map_or(example_id, String::as_str)
    }

    /// Whether the model was trained on `user`.
    pub fn knows(&self, user: &str) -> bool {
        self.config.users.contains_key(user)
    }

    /// The weight row `[K]` scoring uses for `example_id`'s user: the trained one, else the
    /// adapted one.
    ///
    /// # Errors
    /// [`ModelError::Engine`] naming the example and its user when the user is neither trained
    /// nor adapted.
    pub fn user_row(&self, example_id: &str) -> Result<&[f32], ModelError> {
        let user = self.user_of(example_id);
        if let Some(&r) = self.config.users.get(user) {
            return Ok(&self.rows[r]);
        }
        self.adapted.get(user).map(Vec::as_slice).ok_or_else(|| {
            ModelError::Engine(format!(
                "example `{example_id}`: user `{user}` is not among the {} users {} was trained on and has no history pairs to adapt to; \
                 PAL scores only known users and users adapted from their history pairs (P-Soups' pair-wise feedback, SynthesizeMe's `train`-split pairs); rerunning will not change this: train with this user, or give them history",
                self.config.users.len(),
                self.spec
            ))
        })
    }

    /// Adapts every user of `histories` the model was not trained on, few-shot from their pairs
    /// (module docs; the trained configuration's adaptation settings, batch size and seed), so
    /// their examples can be scored. A user adapted before is adapted again from the new history.
    ///
    /// # Errors
    /// Embedding failures (a history answer that cannot fit names its pair); candle errors.
    pub fn adapt_users(
        &mut self,
        histories: &[UserHistory],
        on_progress: &mut dyn FnMut(EmbedProgress),
    ) -> Result<AdaptReport, ModelError> {
        let start = std::time::Instant::now();
        let mut report = AdaptReport::default();
        let todo: Vec<&UserHistory> = histories
            .iter()
            .filter(|h| {
                if self.knows(&h.user) {
                    report.known += 1;
                    false
                } else if h.pairs.is_empty() {
                    report.empty += 1;
                    false
                } else {
                    true
                }
            })
            .collect();
        let all: Vec<(usize, &BtPair)> = todo
            .iter()
            .enumerate()
            .flat_map(|(u, h)| h.pairs.iter().map(move |p| (u, p)))
            .collect();
        if all.is_empty() {
            return Ok(report);
        }
        let data = self.embed_pairs(&all, on_progress)?;
        let t = &self.config.training;
        let hyper = Hyper {
            adapt_lr: t.adapt_lr,
            adapt_weight_decay: t.adapt_weight_decay,
            ..Hyper::default()
        };
        let k = self.net.k();
        let mut loss_sum = 0.0;
        let mut first = 0;
        for h in todo {
            let idx: Vec<usize> = (first..first + h.pairs.len()).collect();
            first += h.pairs.len();
            let ids: Vec<&str> = h.pairs.iter().map(|p| p.id.as_str()).collect();
            let schedule =
                adapt_schedule(self.config.seed, &h.user, &idx, &ids, t.adapt_epochs, t.batch_size);
            let row0 =
                Tensor::from_vec(init_user_row(self.config.seed, &h.user, k), k, &Device::Cpu)
                    .map_err(engine)?;
            let a = adapt_user(&self.net, &data, &row0, &schedule, &hyper)?;
            loss_sum += a.losses.last().copied().unwrap_or(f64::NAN);
            self.adapted.insert(h.user.clone(), a.w.to_vec1::<f32>().map_err(engine)?);
            report.adapted += 1;
            report.pairs += h.pairs.len();
        }
        report.mean_final_loss = loss_sum / report.adapted.max(1) as f64;
        report.seconds = start.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Embeds the pairs `(user, pair)` into [`PalData`] (pair `i` of the result is `all[i]`).
    fn embed_pairs(
        &self,
        all: &[(usize, &BtPair)],
        on_progress: &mut dyn FnMut(EmbedProgress),
    ) -> Result<PalData, ModelError> {
        let mut distinct = DistinctInputs::default();
        let mut pairs = Vec::with_capacity(all.len());
        for &(user, p) in all {
            let c = distinct.slot(item_input(p.context.as_deref(), &p.question, &p.chosen));
            let r = distinct.slot(item_input(p.context.as_deref(), &p.question, &p.rejected));
            let prompt = if self.net.variant() == Variant::B {
                distinct.slot(prompt_input(p.context.as_deref(), &p.question))
            } else {
                0
            };
            pairs.push(PalPair { user, prompt, chosen: c, rejected: r });
        }
        let variant_b = self.net.variant() == Variant::B;
        let describe = |n: usize| {
            pairs
                .iter()
                .position(|p: &PalPair| {
                    p.chosen == n || p.rejected == n || (variant_b && p.prompt == n)
                })
                .map(|i| format!("history pair `{}`", all[i].1.id))
        };
        let (vecs, _) = embed_distinct(&self.embedder, distinct.inputs(), &describe, on_progress)?;
        // One table holds items and prompts alike (slots of one distinct list).
        let prompts = (self.net.variant() == Variant::B).then_some(vecs.as_slice());
        PalData::from_rows(&vecs, prompts, pairs, self.net.dtype())
    }

    /// sha256 over the adapted users' keys and rows (sorted by key): part of
    /// [`RewardModel::settings`], so cached scores of adapted users never outlive their rows.
    pub fn adapted_sha256(&self) -> String {
        let mut h = Sha256::new();
        for (user, row) in &self.adapted {
            h.update(user.as_bytes());
            h.update([0u8]);
            for x in row {
                h.update(x.to_le_bytes());
            }
        }
        hex::encode(h.finalize())
    }

    /// Users adapted so far.
    pub fn adapted_users(&self) -> usize {
        self.adapted.len()
    }
}

impl RewardModel for PalRewardModel {
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<f32> = items
            .iter()
            .map(|r| self.user_row(&r.input.example_id).map(<[f32]>::to_vec))
            .collect::<Result<Vec<_>, _>>()?
            .concat();
        let mut inputs: Vec<_> = items
            .iter()
            .map(|r| item_input(r.input.context.as_deref(), &r.input.question, &r.input.answer))
            .collect();
        if self.net.variant() == Variant::B {
            inputs.extend(
                items.iter().map(|r| prompt_input(r.input.context.as_deref(), &r.input.question)),
            );
        }
        let n = items.len();
        let (vecs, stats) = self.embedder.embed(&inputs).map_err(|e| match e {
            ModelError::ContextOverflow { tokens, n_ctx, reason } => {
                let named = reason
                    .strip_prefix("input ")
                    .and_then(|r| r.split_once(':'))
                    .and_then(|(i, rest)| i.parse::<usize>().ok().map(|i| (i, rest)))
                    .map(|(i, rest)| {
                        format!(
                            "example `{}`{}:{rest}",
                            items[i % n].input.example_id,
                            if i >= n { " (prompt)" } else { "" }
                        )
                    })
                    .unwrap_or(reason);
                ModelError::ContextOverflow { tokens, n_ctx, reason: named }
            }
            other => other,
        })?;
        let dim = self.net.dim();
        let table = |rows: &[Vec<f32>]| {
            Tensor::from_vec(rows.concat(), (rows.len(), dim), &Device::Cpu).map_err(engine)
        };
        let x = table(&vecs[..n])?;
        let p = if self.net.variant() == Variant::B { Some(table(&vecs[n..])?) } else { None };
        let w = Tensor::from_vec(rows, (n, self.net.k()), &Device::Cpu).map_err(engine)?;
        let values = self
            .net
            .rewards(&w, p.as_ref(), &x)
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(engine)?;
        // Token counts: the answer's input (PAL-B also embeds the prompt, counted with it).
        let mut tokens: Vec<_> = stats[..n].to_vec();
        if self.net.variant() == Variant::B {
            for (t, s) in tokens.iter_mut().zip(&stats[n..]) {
                t.input_tokens += s.input_tokens;
                t.truncated_tokens += s.truncated_tokens;
            }
        }
        Ok(values.into_iter().zip(tokens).map(|(value, tokens)| Score { value, tokens }).collect())
    }

    /// The context tokens the embedder would cut from the left of the answer's input.
    fn input_overflow(&self, item: &RmRequest) -> Result<Option<usize>, ModelError> {
        let input =
            item_input(item.input.context.as_deref(), &item.input.question, &item.input.answer);
        let stats = self.embedder.token_stats(std::slice::from_ref(&input))?;
        Ok(stats.first().map(|t| t.truncated_tokens))
    }

    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: self.spec.clone(),
            engine: engine_name(self.net.variant()),
            file_hash: self.weights_sha256.clone(),
            chat_template_hash: composition_sha256(),
            dtype: "f32".to_string(),
        }
    }

    fn settings(&self) -> serde_json::Value {
        let t = &self.config.training;
        serde_json::json!({
            "variant": self.config.variant,
            "k": self.config.k,
            "adapt_epochs": t.adapt_epochs,
            "adapt_lr": t.adapt_lr,
            "adapted_users": self.adapted.len(),
            "adapted_sha256": self.adapted_sha256(),
        })
    }

    /// `pal.json`'s `condition`.
    fn training_condition(&self) -> Option<String> {
        Some(self.config.condition.clone())
    }
}
