//! A Hugging Face sequence-classification model as a prbench [`RewardModel`] (PROTOCOL.md §3):
//! conversation → chat template → tokens (context cut from the left when too long) → batches
//! formed by length → the score head's logit at the last non-pad token.
//!
//! Items of one call whose tokens share a long prefix (chosen and rejected after one context
//! and question; N samples of one prompt; a server batch's items with one prompt) are grouped
//! ([`prefix_groups`]): each group's prefix runs once and its suffixes in batches
//! ([`SeqClsModel::score_suffixes`]). Scores equal the unshared path's to float rounding.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use prbench_models::file_hash::hash_file_into;
use prbench_models::{ModelError, ModelIdentity, RewardModel, RmRequest, Score, TokenStats};

use crate::batch::{by_length, prefix_groups};
use crate::seqcls::{pooled_index, PaddingSide, SeqClsModel};
use crate::tokenize::{HfTokenizer, Tokenized};

/// Options of a scalar reward model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeqClsOptions {
    /// Token limit per input; `None` = the model's own (`max_position_embeddings`, or a smaller
    /// `model_max_length` from `tokenizer_config.json`). May only lower the model's limit.
    pub max_length: Option<usize>,
    /// Which logit to read from a multi-label head (0-based). Required when the head has more
    /// than one label; must be 0 or `None` for a single-label head.
    pub label_index: Option<usize>,
    /// Sequences per forward pass (≥ 1). Inputs are sorted by length first, so padding stays
    /// small; the scores do not depend on this value.
    pub max_batch: usize,
    /// Run a prefix shared by several items of one call once ([`prefix_groups`], at least
    /// [`MIN_SHARED_PREFIX`] tokens). Scores agree with `false` (every item in full) to float
    /// rounding (≤ 1e-5 in the tests).
    pub shared_prefix: bool,
}

impl Default for SeqClsOptions {
    fn default() -> Self {
        Self { max_length: None, label_index: None, max_batch: 8, shared_prefix: true }
    }
}

/// Fewest shared tokens for which items are grouped: below it the saving does not pay for the
/// extra pass.
pub const MIN_SHARED_PREFIX: usize = 32;

/// What prefix sharing did since the model was loaded ([`SeqClsRewardModel::shared_prefix_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedPrefixStats {
    /// Groups whose prefix ran once.
    pub groups: u64,
    /// Items scored in those groups.
    pub items: u64,
    /// Prefix tokens computed once per group.
    pub prefix_tokens: u64,
    /// Tokens not recomputed: Σ over groups of (members − 1) × prefix length.
    pub tokens_reused: u64,
}

#[derive(Debug, Default)]
struct SharedCounters {
    groups: AtomicU64,
    items: AtomicU64,
    prefix_tokens: AtomicU64,
    tokens_reused: AtomicU64,
}

/// A sequence-classification reward model, computed in f32 on CPU with candle.
pub struct SeqClsRewardModel {
    model: SeqClsModel,
    tokenizer: HfTokenizer,
    spec: String,
    revision: Option<String>,
    label: usize,
    max_length: usize,
    max_batch: usize,
    shared_prefix: bool,
    counters: SharedCounters,
    /// sha256 over config.json, tokenizer.json, tokenizer_config.json, chat_template.jinja.
    files_sha256: String,
}

/// The small files besides the weights that change scores, hashed into the manifest.
pub const HASHED_FILES: [&str; 4] =
    ["config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"];

/// sha256 over [`HASHED_FILES`] in `dir`, each fed as name, NUL, 8-byte little-endian length
/// (u64::MAX for an absent file), then the bytes.
///
/// # Errors
/// [`ModelError::File`] when a present file cannot be read.
pub fn files_sha256(dir: &Path) -> Result<String, ModelError> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for name in HASHED_FILES {
        let path = dir.join(name);
        if path.is_file() {
            hash_file_into(&mut h, &path, Some(name))?;
        } else {
            h.update(name.as_bytes());
            h.update([0u8]);
            h.update(u64::MAX.to_le_bytes());
        }
    }
    Ok(hex::encode(h.finalize()))
}

impl std::fmt::Debug for SeqClsRewardModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeqClsRewardModel")
            .field("spec", &self.spec)
            .field("label", &self.label)
            .field("max_length", &self.max_length)
            .finish_non_exhaustive()
    }
}

/// What `prbench eval --preflight` shows for one input: the model's exact view of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    /// The rendered conversation as the model sees it (decoded from the token ids fed, so a
    /// cut is visible).
    pub text: String,
    /// Tokens fed to the model.
    pub tokens: usize,
    /// BOS tokens in the sequence (should be 0 or 1).
    pub bos_count: usize,
    /// Leading repeated BOS tokens removed (a template and tokenizer that both add BOS).
    pub extra_bos_removed: usize,
    /// Context tokens cut from the left.
    pub truncated_tokens: usize,
    /// The token limit applied.
    pub max_length: usize,
    /// When cut: the first kept context tokens, decoded (where the cut falls).
    pub cut_preview: Option<String>,
}

impl SeqClsRewardModel {
    /// Loads model and tokenizer from a directory in the Hugging Face layout. `spec` is what the
    /// user typed (for the manifest); `revision` the hub commit when the model came from the hub.
    ///
    /// # Errors
    /// Loader errors ([`ModelError::File`], [`ModelError::Metadata`], [`ModelError::Template`]);
    /// [`ModelError::Spec`] for a multi-label head without `label_index`, a label index out of
    /// range, a zero `max_batch`, or a `max_length` above the model's.
    pub fn load(
        dir: &Path,
        spec: &str,
        revision: Option<String>,
        opts: &SeqClsOptions,
    ) -> Result<Self, ModelError> {
        let model = SeqClsModel::load(dir)?;
        let tokenizer = HfTokenizer::load(dir)?;
        let bad = |reason: String| ModelError::Spec { spec: spec.into(), reason };
        let n = model.num_labels();
        let label = match (n, opts.label_index) {
            (1, None | Some(0)) => 0,
            (1, Some(i)) => return Err(bad(format!("--label-index {i} given, but the score head has a single label"))),
            (n, None) => {
                return Err(bad(format!(
                    "the score head has {n} labels; PROTOCOL.md §3 needs one scalar: pass --label-index I (0..{}) to name the logit to read",
                    n - 1
                )))
            }
            (n, Some(i)) if i >= n => return Err(bad(format!("--label-index {i} is out of range for a head with {n} labels"))),
            (_, Some(i)) => i,
        };
        if opts.max_batch == 0 {
            return Err(bad("max batch must be at least 1".into()));
        }
        let model_max = match tokenizer.model_max_length() {
            Some(m) => m.min(model.max_position_embeddings()),
            None => model.max_position_embeddings(),
        };
        let max_length = match opts.max_length {
            Some(m) if m == 0 || m > model_max => {
                return Err(bad(format!(
                "--max-length {m}: must be between 1 and the model's limit of {model_max} tokens"
            )))
            }
            Some(m) => m,
            None => model_max,
        };
        let files_sha256 = files_sha256(dir)?;
        Ok(Self {
            model,
            tokenizer,
            spec: spec.into(),
            revision,
            label,
            max_length,
            max_batch: opts.max_batch,
            shared_prefix: opts.shared_prefix,
            counters: SharedCounters::default(),
            files_sha256,
        })
    }

    /// The token limit applied to every input.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// The loaded network.
    pub fn model(&self) -> &SeqClsModel {
        &self.model
    }

    /// The tokenizer and chat template.
    pub fn tokenizer(&self) -> &HfTokenizer {
        &self.tokenizer
    }

    fn tokenize(&self, req: &RmRequest) -> Result<Tokenized, ModelError> {
        self.tokenizer.tokenize_rm(
            &req.prompt,
            req.input.context.as_deref(),
            self.max_length,
            self.model.bos_token_id(),
        )
    }

    /// The model's exact view of one input, without running the network.
    ///
    /// # Errors
    /// As [`RewardModel::score`] for tokenization.
    pub fn preflight(&self, req: &RmRequest) -> Result<Preflight, ModelError> {
        let t = self.tokenize(req)?;
        let bos_count =
            self.model.bos_token_id().map_or(0, |b| t.ids.iter().filter(|&&x| x == b).count());
        let cut_preview = match t.cut_at {
            Some(at) if t.truncated_tokens > 0 => {
                let end = (at + 12).min(t.ids.len());
                Some(self.tokenizer.decode(&t.ids[at..end])?)
            }
            _ => None,
        };
        Ok(Preflight {
            text: self.tokenizer.decode(&t.ids)?,
            tokens: t.ids.len(),
            bos_count,
            extra_bos_removed: t.extra_bos_removed,
            truncated_tokens: t.truncated_tokens,
            max_length: self.max_length,
            cut_preview,
        })
    }

    /// Raw head logits of token sequences, `[n][num_labels]`, in input order; sequences are
    /// sorted by length and scored `max_batch` at a time.
    ///
    /// # Errors
    /// Forward-pass failures as [`ModelError::Engine`].
    pub fn logits(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, ModelError> {
        let lens: Vec<usize> = seqs.iter().map(Vec::len).collect();
        by_length(&lens, self.max_batch, |idx| {
            let batch: Vec<Vec<u32>> = idx.iter().map(|&i| seqs[i].clone()).collect();
            self.model.score_batch(&batch)
        })
    }

    /// [`SeqClsRewardModel::logits`] with shared prefixes run once: sequences are grouped by
    /// [`prefix_groups`] (at least [`MIN_SHARED_PREFIX`] tokens, and never past a sequence's
    /// pooled token, so every suffix keeps it); each group's prefix runs once and its suffixes
    /// `max_batch` at a time, sorted by length; the rest go through
    /// [`SeqClsRewardModel::logits`]. `[n][num_labels]` in input order.
    ///
    /// # Errors
    /// Forward-pass failures as [`ModelError::Engine`].
    pub fn logits_shared(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, ModelError> {
        let pad = self.model.pad_token_id();
        let limit: Vec<usize> =
            seqs.iter().map(|s| pooled_index(s, &vec![1; s.len()], pad)).collect();
        let refs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
        let (groups, alone) = prefix_groups(&refs, &limit, MIN_SHARED_PREFIX);
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); seqs.len()];
        let alone_seqs: Vec<Vec<u32>> = alone.iter().map(|&i| seqs[i].clone()).collect();
        for (&i, l) in alone.iter().zip(self.logits(&alone_seqs)?) {
            out[i] = l;
        }
        for g in &groups {
            let p = g.prefix_len;
            let cache = self.model.prefix_cache(&seqs[g.members[0]][..p])?;
            let suffixes: Vec<&[u32]> = g.members.iter().map(|&i| &seqs[i][p..]).collect();
            let lens: Vec<usize> = suffixes.iter().map(|s| s.len()).collect();
            let got = by_length(&lens, self.max_batch, |idx| {
                let batch: Vec<Vec<u32>> = idx.iter().map(|&k| suffixes[k].to_vec()).collect();
                self.model.score_suffixes(&cache, &batch, PaddingSide::Right)
            })?;
            for (&i, l) in g.members.iter().zip(got) {
                out[i] = l;
            }
            let c = &self.counters;
            c.groups.fetch_add(1, Ordering::Relaxed);
            c.items.fetch_add(g.members.len() as u64, Ordering::Relaxed);
            c.prefix_tokens.fetch_add(p as u64, Ordering::Relaxed);
            c.tokens_reused.fetch_add(((g.members.len() - 1) * p) as u64, Ordering::Relaxed);
        }
        Ok(out)
    }

    /// Totals of prefix sharing since load (all zero when it is off or nothing was shared).
    pub fn shared_prefix_stats(&self) -> SharedPrefixStats {
        let c = &self.counters;
        SharedPrefixStats {
            groups: c.groups.load(Ordering::Relaxed),
            items: c.items.load(Ordering::Relaxed),
            prefix_tokens: c.prefix_tokens.load(Ordering::Relaxed),
            tokens_reused: c.tokens_reused.load(Ordering::Relaxed),
        }
    }
}

impl RewardModel for SeqClsRewardModel {
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        let tokenized = items.iter().map(|r| self.tokenize(r)).collect::<Result<Vec<_>, _>>()?;
        let seqs: Vec<Vec<u32>> = tokenized.iter().map(|t| t.ids.clone()).collect();
        let logits =
            if self.shared_prefix { self.logits_shared(&seqs)? } else { self.logits(&seqs)? };
        Ok(tokenized
            .iter()
            .zip(logits)
            .map(|(t, l)| Score {
                value: l[self.label],
                tokens: TokenStats {
                    input_tokens: t.ids.len(),
                    truncated_tokens: t.truncated_tokens,
                    output_tokens: 0,
                },
            })
            .collect())
    }

    /// The context tokens left truncation would cut.
    fn input_overflow(&self, item: &RmRequest) -> Result<Option<usize>, ModelError> {
        self.tokenize(item).map(|t| Some(t.truncated_tokens))
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "max_length": self.max_length,
            "label_index": self.label,
            "max_batch": self.max_batch,
            "shared_prefix": self.shared_prefix,
            "truncation": "context tokens from the left; question and answer never",
        })
    }

    fn identity(&self) -> ModelIdentity {
        let mut file_hash = format!(
            "weights {}; config+tokenizer {}",
            self.model.weights_sha256(),
            self.files_sha256
        );
        if let Some(rev) = &self.revision {
            file_hash = format!("{file_hash}; hub commit {rev}");
        }
        ModelIdentity {
            spec: self.spec.clone(),
            engine: format!("candle {} f32 CPU ({})", CANDLE_VERSION, self.model.architecture()),
            file_hash,
            chat_template_hash: self.tokenizer.template().hash(),
            dtype: format!("{} weights, f32 compute", self.model.weights_dtype()),
        }
    }
}

/// The candle version this engine is built against (Cargo.toml).
pub const CANDLE_VERSION: &str = "0.11";
