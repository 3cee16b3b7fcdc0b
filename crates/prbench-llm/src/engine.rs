//! [`GgufEngine`]: loading, identity and accessors.

use std::num::NonZeroU32;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::backend::backend;
use super::meta::dtype_from_meta;
use super::{GgufOptions, ENGINE_NAME};
use prbench_models::chat_template::ChatTemplate;
use prbench_models::error::ModelError;
use prbench_models::file_hash::sha256_file;
use prbench_models::traits::ModelIdentity;

/// Metadata key of the chat template in a GGUF file.
pub(crate) const CHAT_TEMPLATE_KEY: &str = "tokenizer.chat_template";

/// Upper bound of the default context window, in tokens.
const DEFAULT_MAX_CTX: u32 = 8192;

/// Upper bound of the logical batch size (tokens per `llama_decode` call).
const MAX_BATCH: u32 = 2048;

/// Smallest KV cache allocated, in tokens.
const MIN_ALLOC_CTX: u32 = 512;

/// A llama.cpp context of `n_ctx` tokens; logical and physical batch (`n_batch`, `n_ubatch`)
/// both min(`n_ctx`, [`MAX_BATCH`]), so a prompt that fits one batch is computed in one
/// micro-batch (by the same kernels whether it is decoded whole or as a shared prefix plus a
/// suffix; see `gguf/fork.rs`).
fn new_context<'m>(
    model: &'m LlamaModel,
    n_ctx: u32,
    n_threads: i32,
) -> Result<LlamaContext<'m>, ModelError> {
    context_with(model, n_ctx, n_threads, |p| p)
}

fn context_with<'m>(
    model: &'m LlamaModel,
    n_ctx: u32,
    n_threads: i32,
    more: impl FnOnce(LlamaContextParams) -> LlamaContextParams,
) -> Result<LlamaContext<'m>, ModelError> {
    let n = NonZeroU32::new(n_ctx).ok_or_else(|| ModelError::Engine("n_ctx must be > 0".into()))?;
    let params = LlamaContextParams::default()
        .with_n_ctx(Some(n))
        .with_n_batch(n_ctx.min(MAX_BATCH))
        .with_n_ubatch(n_ctx.min(MAX_BATCH))
        .with_n_threads(n_threads)
        .with_n_threads_batch(n_threads);
    model.new_context(backend()?, more(params)).map_err(|e| {
        ModelError::engine(format!("cannot create a llama.cpp context of {n_ctx} tokens"), e)
    })
}

/// The batched generator's context: `n_seq` sequences of `per_seq` tokens each, every one in
/// its own KV stream (`kv_unified` off, as llama.cpp's server runs `--parallel N`), so a
/// sequence's cells and attention are laid out as when it is decoded alone.
pub(super) struct GenCtx {
    pub(super) ctx: LlamaContext<'static>,
    pub(super) per_seq: u32,
    pub(super) n_seq: u32,
}

/// The scoring context and what its KV cache holds for the next call to continue from.
pub(super) struct ScoreCtx {
    ctx: LlamaContext<'static>,
    /// Tokens whose keys and values sit in cells `0..held.len()` of sequence 0, computed as a
    /// prompt decoded alone computes them (see `fork.rs`); empty when the cache holds nothing
    /// a later call may reuse.
    held: Vec<LlamaToken>,
}

/// The engine's context, locked, with a KV cache of at least the tokens asked for.
pub(super) struct CtxGuard<'a>(MutexGuard<'a, ScoreCtx>);

impl CtxGuard<'_> {
    /// The tokens the KV cache holds for reuse ([`ScoreCtx::held`]); whoever changes the cache
    /// must set them (or leave them empty).
    pub(super) fn held_mut(&mut self) -> &mut Vec<LlamaToken> {
        &mut self.0.held
    }
}

impl Deref for CtxGuard<'_> {
    type Target = LlamaContext<'static>;
    fn deref(&self) -> &Self::Target {
        &self.0.ctx
    }
}

impl DerefMut for CtxGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0.ctx
    }
}

/// A GGUF causal LM run by llama.cpp: a judge primitive ([`prbench_models::NextTokenScorer`]) and a
/// [`prbench_models::Generator`].
///
/// One llama.cpp context is reused by every call behind a mutex, so calls on one engine run one
/// at a time; the KV cache is cleared at the start of each call. The context window
/// ([`Self::n_ctx`]) is the limit prompts are checked against, but the KV cache is allocated
/// only as large as the calls so far needed (a power of two from 512 tokens, recreated larger
/// when a longer call comes): a judge on 400-token prompts does not hold an 8,192-token cache
/// (188 MB for SmolLM2-135M). Results do not depend on the allocated size: the same cells
/// are used and prefill is chunked the same way (`n_batch` = min(allocated, 2048) is at least
/// min(tokens, 2048)). Cheap to share as `Arc<GgufEngine>`.
pub struct GgufEngine {
    // Field order matters: `ctx` refers to the model in `model` and must be dropped first
    // (Rust drops fields in declaration order).
    /// The llama.cpp context. Its `'static` lifetime is a lie told once in `load`: it really
    /// borrows `*model`, which lives in a `Box` (stable address) and is dropped after it.
    pub(super) ctx: Mutex<ScoreCtx>,
    /// The batched generator's context (same `'static` lie as `ctx`), made on first use.
    gen_ctx: Mutex<Option<GenCtx>>,
    /// Most sequences decoded together by [`prbench_models::Generator`] calls
    /// ([`Self::gen_batch`]).
    gen_batch: AtomicUsize,
    /// Threads of every context.
    n_threads: i32,
    pub(super) model: Box<LlamaModel>,
    pub(super) template: ChatTemplate,
    pub(super) path: PathBuf,
    pub(super) file_hash: String,
    pub(super) dtype: String,
    pub(super) n_ctx: usize,
    pub(super) n_batch: usize,
    /// Prepend BOS (tokenizer metadata says so and the template does not emit it itself).
    pub(super) add_bos: bool,
    /// BOS token, if the vocabulary has one.
    pub(super) bos: Option<LlamaToken>,
    /// BOS text as the template sees it (`bos_token`); empty when there is none.
    pub(super) bos_text: String,
    /// Whether `next_token_logprobs_many` decodes a common prefix once ([`Self::share_prefix`]).
    share_prefix: AtomicBool,
    /// Whether a group continues from the prefix the previous one left in the cache
    /// ([`Self::keep_prefix`]).
    keep_prefix: AtomicBool,
    /// Prompt tokens not decoded because a shared prefix was reused
    /// ([`Self::shared_prefix_tokens`]).
    pub(super) shared_prefix_tokens: AtomicU64,
    /// Generation prompt tokens not decoded because a slot held the prompt
    /// ([`Self::reused_prompt_tokens`]).
    pub(super) reused_prompt_tokens: AtomicU64,
    /// When each finished generation drew its first token, kept only while
    /// [`Self::record_first_tokens`] is on (`None`: off).
    pub(super) first_tokens: Mutex<Option<Vec<Instant>>>,
}

impl std::fmt::Debug for GgufEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufEngine")
            .field("path", &self.path)
            .field("dtype", &self.dtype)
            .field("n_ctx", &self.n_ctx)
            .field("add_bos", &self.add_bos)
            .finish_non_exhaustive()
    }
}

/// Text of a special token with special rendering on; empty for a missing token.
pub(super) fn special_piece(model: &LlamaModel, tok: Option<LlamaToken>) -> String {
    match tok {
        Some(t) => {
            String::from_utf8_lossy(&model.vocab().token_to_piece(t, true, None)).into_owned()
        }
        None => String::new(),
    }
}

/// A token id that exists in the vocabulary (llama.cpp returns -1 for "none").
fn valid_token(model: &LlamaModel, t: LlamaToken) -> Option<LlamaToken> {
    (t.0 >= 0 && t.0 < model.n_vocab()).then_some(t)
}

impl GgufEngine {
    /// Loads a GGUF file and creates its context.
    ///
    /// Reads the whole file once to hash it (sha256, for the manifest); the weights are
    /// memory-mapped by llama.cpp. The chat template comes from `opts.chat_template` or the
    /// metadata key `tokenizer.chat_template`.
    ///
    /// # Errors
    /// [`ModelError::File`] when the file is missing or llama.cpp cannot load it;
    /// [`ModelError::Metadata`] when there is no chat template (base models) and no override;
    /// [`ModelError::Template`] when the template does not compile;
    /// [`ModelError::Engine`] when the backend or context cannot be created.
    pub fn load(path: &Path, opts: GgufOptions) -> Result<Self, ModelError> {
        if !path.is_file() {
            let source = std::fs::metadata(path).err().unwrap_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file")
            });
            return Err(ModelError::file(
                path,
                "run scripts/setup.sh for the default models",
                source,
            ));
        }
        let backend = backend()?;
        let file_hash = sha256_file(path)?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| ModelError::file(path, "llama.cpp cannot load it as GGUF", e))?;
        let model = Box::new(model);

        let template_src = match opts.chat_template {
            Some(t) => t,
            None => model.meta_val_str(CHAT_TEMPLATE_KEY).map_err(|_| ModelError::Metadata {
                path: path.to_owned(),
                key: CHAT_TEMPLATE_KEY.into(),
                reason: "absent (a base model without a chat template?); pass a template with \
                         GgufOptions::chat_template"
                    .into(),
            })?,
        };
        let vocab = model.vocab();
        let bos = valid_token(&model, vocab.bos());
        let eos = valid_token(&model, vocab.eos());
        let bos_text = special_piece(&model, bos);
        let eos_text = special_piece(&model, eos);
        let add_bos = vocab.should_add_bos() && bos.is_some();
        let template = ChatTemplate::new(template_src, bos_text.clone(), eos_text)?;
        let dtype = dtype_from_meta(model.meta_val_str("general.file_type").ok().as_deref());

        let n_ctx = opts.n_ctx.unwrap_or_else(|| match model.n_ctx_train() {
            0 => DEFAULT_MAX_CTX,
            n => n.min(DEFAULT_MAX_CTX),
        });
        let n_ctx =
            NonZeroU32::new(n_ctx).ok_or_else(|| ModelError::Engine("n_ctx must be > 0".into()))?;
        let n_threads = opts.n_threads.filter(|&t| t > 0).unwrap_or_else(|| {
            std::thread::available_parallelism().map(|n| n.get() as i32).unwrap_or(1)
        });
        let ctx = new_context(&model, n_ctx.get().min(MIN_ALLOC_CTX), n_threads)?;
        // SAFETY: `LlamaContext<'a>` ties itself to the model only through a `PhantomData`
        // borrow; the C context points at the C model owned by `*model`. `model` is boxed (its
        // address never changes when `GgufEngine` moves), is never mutated or replaced, and is
        // declared after `ctx` so it is dropped after it. The `'static` context never leaves
        // the engine: it is only reached through `&self` methods under the mutex.
        let ctx: LlamaContext<'static> = unsafe { std::mem::transmute(ctx) };
        let n_ctx_actual = n_ctx.get() as usize;
        let n_batch = n_ctx.get().min(MAX_BATCH) as usize;

        Ok(Self {
            ctx: Mutex::new(ScoreCtx { ctx, held: Vec::new() }),
            gen_ctx: Mutex::new(None),
            gen_batch: AtomicUsize::new(opts.gen_batch.max(1)),
            n_threads,
            model,
            template,
            path: path.to_owned(),
            file_hash,
            dtype,
            n_ctx: n_ctx_actual,
            n_batch,
            add_bos,
            bos,
            bos_text,
            share_prefix: AtomicBool::new(opts.share_prefix),
            keep_prefix: AtomicBool::new(true),
            shared_prefix_tokens: AtomicU64::new(0),
            reused_prompt_tokens: AtomicU64::new(0),
            first_tokens: Mutex::new(None),
        })
    }

    /// Context window in tokens (prompt + generated); prompts longer than this fail with
    /// [`ModelError::ContextOverflow`].
    pub fn n_ctx(&self) -> usize {
        self.n_ctx
    }

    /// Vocabulary size (length of a logits vector).
    pub fn n_vocab(&self) -> usize {
        self.model.n_vocab().max(0) as usize
    }

    /// The chat template applied to prompts.
    pub fn chat_template(&self) -> &ChatTemplate {
        &self.template
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The loaded llama.cpp model (e.g. for reading metadata with `meta_val_str`).
    pub fn model(&self) -> &LlamaModel {
        &self.model
    }

    /// Whether prompts get a BOS token prepended: the file's tokenizer metadata asks for it
    /// (`tokenizer.ggml.add_bos_token`) and the rendered template does not start with it.
    /// This is the metadata half; the per-prompt check happens in [`Self::tokenize`].
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// The BOS token id, if the vocabulary has one.
    pub fn bos_token(&self) -> Option<i32> {
        self.bos.map(|t| t.0)
    }

    /// The metadata value for `key` as a string (numbers are formatted), `None` when absent.
    pub fn meta(&self, key: &str) -> Option<String> {
        self.model.meta_val_str(key).ok()
    }

    /// The engine's identity for manifests: spec `gguf:<path>`, engine
    /// [`ENGINE_NAME`], the file's sha256, the chat template's sha256, and
    /// the weight type from `general.file_type` (e.g. `Q4_1`).
    pub fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: format!("gguf:{}", self.path.display()),
            engine: ENGINE_NAME.into(),
            file_hash: self.file_hash.clone(),
            chat_template_hash: self.template.hash(),
            dtype: self.dtype.clone(),
        }
    }

    /// Locks the context, first replacing it with a larger one when its KV cache holds fewer
    /// than `need` tokens (the next power of two, at least 512, at most [`Self::n_ctx`]). A
    /// panic in an earlier call does not poison it for good (every call clears the KV cache
    /// first).
    ///
    /// # Errors
    /// [`ModelError::Engine`] when llama.cpp cannot create the larger context.
    pub(super) fn lock_ctx(&self, need: usize) -> Result<CtxGuard<'_>, ModelError> {
        let mut guard = self.lock_ctx_held(need)?;
        guard.held_mut().clear();
        Ok(guard)
    }

    /// [`Self::lock_ctx`], keeping what the KV cache holds for reuse ([`CtxGuard::held_mut`])
    /// unless the context had to be replaced.
    pub(super) fn lock_ctx_held(&self, need: usize) -> Result<CtxGuard<'_>, ModelError> {
        let mut guard = self.ctx.lock().unwrap_or_else(|e| e.into_inner());
        if (guard.ctx.n_ctx() as usize) < need {
            guard.held.clear();
            let size =
                (need.next_power_of_two().max(MIN_ALLOC_CTX as usize)).min(self.n_ctx) as u32;
            let ctx = new_context(&self.model, size, self.n_threads)?;
            // SAFETY: as in `load`: the context borrows `*self.model`, boxed and dropped after
            // `ctx`; the old context is dropped by this assignment, before any new use.
            guard.ctx =
                unsafe { std::mem::transmute::<LlamaContext<'_>, LlamaContext<'static>>(ctx) };
        }
        Ok(CtxGuard(guard))
    }

    /// Locks the batched generator's context, first replacing it when it holds fewer than
    /// `n_seq` sequences or fewer than `need` tokens per sequence (then: the next power of two,
    /// at least 512, at most [`Self::n_ctx`], per sequence). Its KV cache is cleared.
    ///
    /// # Errors
    /// [`ModelError::Engine`] when llama.cpp cannot create the context.
    pub(super) fn lock_gen_ctx(
        &self,
        need: usize,
        n_seq: usize,
    ) -> Result<MutexGuard<'_, Option<GenCtx>>, ModelError> {
        let mut guard = self.gen_ctx.lock().unwrap_or_else(|e| e.into_inner());
        let fits =
            guard.as_ref().is_some_and(|g| g.per_seq as usize >= need && g.n_seq as usize >= n_seq);
        if !fits {
            *guard = None; // the old context goes before the new one is made
            let per_seq =
                (need.next_power_of_two().max(MIN_ALLOC_CTX as usize)).min(self.n_ctx) as u32;
            let n_seq = n_seq as u32;
            let ctx = context_with(&self.model, per_seq * n_seq, self.n_threads, |p| {
                p.with_n_seq_max(n_seq)
                    .with_kv_unified(false)
                    .with_n_batch(per_seq.min(MAX_BATCH))
                    .with_n_ubatch(per_seq.min(MAX_BATCH))
            })?;
            // SAFETY: as in `load`: the context borrows `*self.model`, boxed and dropped after
            // the `gen_ctx` field.
            let ctx =
                unsafe { std::mem::transmute::<LlamaContext<'_>, LlamaContext<'static>>(ctx) };
            *guard = Some(GenCtx { ctx, per_seq, n_seq });
        }
        if let Some(g) = guard.as_mut() {
            g.ctx.clear_kv_cache();
        }
        Ok(guard)
    }

    /// Most sequences a [`prbench_models::Generator`] call decodes together (1: one at a
    /// time); from [`GgufOptions::gen_batch`].
    pub fn gen_batch(&self) -> usize {
        self.gen_batch.load(Ordering::Relaxed)
    }

    /// Starts (`true`) or stops keeping, for every generation that finishes, the instant its
    /// first token was drawn ([`Self::take_first_tokens`]); off by default. For `prbench bench
    /// generate`'s time to the first token: the instants are compared with the start of the
    /// call.
    pub fn record_first_tokens(&self, on: bool) {
        let mut g = self.first_tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *g = on.then(Vec::new);
    }

    /// The first-token instants kept since recording started or since the last take, in the
    /// order the generations finished (a generation that drew no token has none); empty when
    /// recording is off.
    pub fn take_first_tokens(&self) -> Vec<Instant> {
        let mut g = self.first_tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        g.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Sets [`Self::gen_batch`] for later calls (at least 1), e.g. to time both paths on one
    /// loaded engine.
    pub fn set_gen_batch(&self, n: usize) {
        self.gen_batch.store(n.max(1), Ordering::Relaxed);
    }

    /// Whether [`prbench_models::NextTokenScorer::next_token_logprobs_many`] (the logprob judge's call)
    /// decodes the common token prefix of consecutive prompts once and each prompt's suffix
    /// after it (true, the default from [`GgufOptions::share_prefix`]), or scores each
    /// prompt alone from a cleared cache (false).
    pub fn share_prefix(&self) -> bool {
        self.share_prefix.load(Ordering::Relaxed)
    }

    /// Turns shared-prefix scoring on or off for later calls (e.g. to time both paths on one
    /// loaded engine). Results are bit-identical either way (`gguf/fork.rs` says how).
    pub fn set_share_prefix(&self, on: bool) {
        self.share_prefix.store(on, Ordering::Relaxed);
    }

    /// Whether a prompt keeps the cells of the leading tokens it shares with a prompt already
    /// in the KV cache and decodes only the rest (true, the default). Results are
    /// bit-identical either way (`fork.rs` says how).
    /// - Scoring (with [`Self::share_prefix`] on): each prompt continues from the one scored
    ///   before it, kept whole across `next_token_logprobs_many` calls; a run's prompts all
    ///   begin with the judge's system prompt and fixed instructions, which are then decoded
    ///   once per run. Off, each call is split into groups of prompts that share a prefix,
    ///   each group from a cleared cache.
    /// - Generation: a request keeps what it shares with the prompt any slot holds (the
    ///   chosen and rejected prompts of one build item share the posts, the question and the
    ///   aspects). Off, only a slot holding the very same prompt is reused.
    pub fn keep_prefix(&self) -> bool {
        self.keep_prefix.load(Ordering::Relaxed)
    }

    /// Turns [`Self::keep_prefix`] on or off for later calls (e.g. to time both on one loaded
    /// engine); off, every group of prompts starts from a cleared cache.
    pub fn set_keep_prefix(&self, on: bool) {
        self.keep_prefix.store(on, Ordering::Relaxed);
    }

    /// Prompt tokens not decoded since load because a shared prefix was reused: the tokens each
    /// prompt kept from the one before it ([`Self::keep_prefix`]), or, off, (n − 1) × the
    /// prefix length for each group of n prompts decoded together.
    pub fn shared_prefix_tokens(&self) -> u64 {
        self.shared_prefix_tokens.load(Ordering::Relaxed)
    }

    /// Prompt tokens of [`prbench_models::Generator`] calls not decoded since load because a
    /// generation slot already held them: the prompt's length for a request whose prompt a
    /// slot held whole (best-of-N's samples of one question), the kept tokens for a request
    /// that kept a shared prefix ([`Self::keep_prefix`]).
    pub fn reused_prompt_tokens(&self) -> u64 {
        self.reused_prompt_tokens.load(Ordering::Relaxed)
    }

    /// Tokens the KV cache currently holds room for (allocated, not the limit
    /// [`Self::n_ctx`]).
    pub fn allocated_ctx(&self) -> usize {
        self.ctx.lock().unwrap_or_else(|e| e.into_inner()).ctx.n_ctx() as usize
    }
}
