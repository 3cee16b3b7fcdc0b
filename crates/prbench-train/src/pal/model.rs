//! The PAL network (Chen et al., "PAL: Sample-Efficient Personalized Reward Modeling for
//! Pluralistic Alignment", ICLR 2025) on frozen embeddings: its two variants' forward passes,
//! the reward of an item for a user, the losses, and its tensors as saved.
//!
//! Written from the paper and a reading of the authors' code (RamyaLab/pluralistic-alignment:
//! `src/pal_rm_a`, `src/pal_rm_b`, `src/projector.py`, `src/loss_function.py`, `config/`); the
//! executable specification is `tools/pal_reference.py`, whose output this module is tested
//! against (`tests/pal.rs`). Embeddings are one pooled vector per text (`d` = the embedder's
//! dimension), where the authors feed per-token LLM hidden states; their per-token loss averaging
//! is then a mean over one position.
//!
//! Shapes: `n` items or pairs, `d` the embedding dimension, `K` the number of prototypes.
//!
//! - **Projector** ([`Projector`], the authors' `mlp2-<act>-dropout0[-residual]`):
//!   `Linear(d→d) → act → Linear(d→d) → act → Linear(d→d)`, plus the input when residual;
//!   tensors `<p>.{0,1,2}.weight` `[d, d]` (out × in) and `<p>.{0,1,2}.bias` `[d]`.
//! - **User weights**: `W` `[n_users, K]`; user `u`'s mixture over prototypes is
//!   `softmax(W[u])`.
//! - **PAL-A** (config `a-dim512-k2-distilbert-mlp2.yaml`: user learner `f(Pw)`, `dist` score,
//!   hinge loss): prototypes `P` `[K, d]`; ideal point `a_u = f(softmax(W[u]) · P)`; reward
//!   `r(x) = −‖f(x) − a_u‖₂`; loss per pair `max(0, 1 − (r(chosen) − r(rejected)))`. `f` is
//!   relu and residual, shared by items and users.
//! - **PAL-B** (config `b-dim768-k2-distillbert65m-mlp2.yaml`: prompt-conditioned mixture,
//!   `angle` score, cross-entropy loss): `K` projectors `g_k` of the prompt embedding `p`;
//!   `a_u(p) = Σ_k softmax(W[u])_k g_k(p)`; reward `r(x) = min(exp(s), 100) · cos(f(x), a_u(p))`
//!   with the learned `logit_scale` `s` `[1]` (initially `ln(1/0.07)`); loss per pair
//!   `−log softmax([r(chosen), r(rejected)])₀ = softplus(r(rejected) − r(chosen))`. `f` and
//!   `g_k` are exact (erf) GELU, not residual.
//!
//! Every op is differentiated by candle's autograd. GELU is composed as `½x(1 + erf(x/√2))`
//! rather than candle's `gelu_erf`, whose backward pass uses the 6-digit constant 0.398942 for
//! 1/√(2π); `erf`'s backward is exact. The softmax subtracts a detached row maximum (the
//! softmax does not depend on it, so its gradient is exact too). The norms are `sqrt(Σ x²)`,
//! whose gradient at a zero vector is infinite where torch's `linalg.norm` gives 0: it would take
//! an item exactly at a user's ideal point (PAL-A) or a projection of exactly zero (PAL-B).

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor, D};
use prbench_models::ModelError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

fn engine(e: impl Into<prbench_models::BoxError>) -> ModelError {
    ModelError::engine("PAL network", e)
}

/// The two PAL models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// PAL-A: `K` prototype ideal points, distance score, hinge loss.
    A,
    /// PAL-B: prompt-conditioned mixture of `K` projectors, cosine score with a learned scale,
    /// cross-entropy loss.
    B,
}

impl Variant {
    /// `a` or `b` (as in `--variant` and `pal.json`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::A => "a",
            Variant::B => "b",
        }
    }

    /// Parses `a` / `b` (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "a" => Some(Variant::A),
            "b" => Some(Variant::B),
            _ => None,
        }
    }

    /// The projectors' activation.
    pub fn activation(self) -> Activation {
        match self {
            Variant::A => Activation::Relu,
            Variant::B => Activation::Gelu,
        }
    }

    /// Whether the projectors add their input (the authors' `-residual`).
    pub fn residual(self) -> bool {
        self == Variant::A
    }

    /// The authors' name of the projector architecture.
    pub fn projector_arch(self) -> &'static str {
        match self {
            Variant::A => "mlp2-relu-dropout0-residual",
            Variant::B => "mlp2-gelu-dropout0",
        }
    }

    /// The score, in words.
    pub fn score_name(self) -> &'static str {
        match self {
            Variant::A => "-||f(x) - f(softmax(w) P)||_2",
            Variant::B => "min(exp(logit_scale), 100) * cos(f(x), sum_k softmax(w)_k g_k(prompt))",
        }
    }

    /// The loss, in words.
    pub fn loss_name(self) -> &'static str {
        match self {
            Variant::A => "hinge: max(0, 1 - (r_chosen - r_rejected)), mean over the batch",
            Variant::B => "cross-entropy: softplus(r_rejected - r_chosen), mean over the batch",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A projector's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `max(0, x)`.
    Relu,
    /// Exact GELU, `½x(1 + erf(x/√2))` (torch's `nn.GELU()` default).
    Gelu,
}

/// Exact GELU composed from `erf` (module docs: exact gradient).
///
/// # Errors
/// Candle errors.
pub fn gelu(x: &Tensor) -> candle_core::Result<Tensor> {
    let erf = (x * std::f64::consts::FRAC_1_SQRT_2)?.erf()?;
    (x * (erf + 1.0)?)? * 0.5
}

/// `softmax` over the last dimension: `[n, K]` → `[n, K]`, rows summing to 1.
///
/// # Errors
/// Candle errors.
pub fn mixture(w: &Tensor) -> candle_core::Result<Tensor> {
    let max = w.max_keepdim(D::Minus1)?.detach();
    let e = w.broadcast_sub(&max)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
}

/// The authors' `mlp2` projector (module docs): three `[d, d]` linear layers with the activation
/// between them, plus the input when residual.
#[derive(Debug, Clone)]
pub struct Projector {
    layers: Vec<(Tensor, Tensor)>,
    activation: Activation,
    residual: bool,
}

impl Projector {
    /// `[n, d]` → `[n, d]`.
    ///
    /// # Errors
    /// Candle errors (a width other than `d`).
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let mut h = x.clone();
        for (i, (w, b)) in self.layers.iter().enumerate() {
            h = h.matmul(&w.t()?)?.broadcast_add(b)?;
            if i + 1 < self.layers.len() {
                h = match self.activation {
                    Activation::Relu => h.relu()?,
                    Activation::Gelu => gelu(&h)?,
                };
            }
        }
        if self.residual {
            x + h
        } else {
            Ok(h)
        }
    }
}

/// The features of a batch of pairs that do not depend on the users' weights: `f(chosen)`,
/// `f(rejected)` `[n, d]` and, for PAL-B, `g_k(prompt)` stacked as `[n, K, d]`. Few-shot
/// adaptation computes them once, since only `W` changes.
#[derive(Debug, Clone)]
pub struct PairFeatures {
    /// `f(chosen)` `[n, d]`.
    pub chosen: Tensor,
    /// `f(rejected)` `[n, d]`.
    pub rejected: Tensor,
    /// PAL-B: `g_k(prompt)` `[n, K, d]`; PAL-A: `None`.
    pub prompts: Option<Tensor>,
}

impl PairFeatures {
    /// The rows `idx` of every feature (for a batch out of cached features).
    ///
    /// # Errors
    /// Candle errors (an index out of range).
    pub fn select(&self, idx: &Tensor) -> candle_core::Result<Self> {
        Ok(Self {
            chosen: self.chosen.index_select(idx, 0)?,
            rejected: self.rejected.index_select(idx, 0)?,
            prompts: self.prompts.as_ref().map(|p| p.index_select(idx, 0)).transpose()?,
        })
    }

    /// The same features cut from the autograd graph.
    pub fn detach(&self) -> Self {
        Self {
            chosen: self.chosen.detach(),
            rejected: self.rejected.detach(),
            prompts: self.prompts.as_ref().map(Tensor::detach),
        }
    }
}

/// The PAL network without the user weights: the item projector `f`, and PAL-A's prototypes
/// `P` or PAL-B's prompt projectors `g_k` and `logit_scale` (module docs). Its tensors are f32
/// in prbench's models; f64 works too (all tensors of one dtype).
#[derive(Debug, Clone)]
pub struct PalNet {
    variant: Variant,
    k: usize,
    dim: usize,
    f: Projector,
    g: Vec<Projector>,
    prototypes: Option<Tensor>,
    logit_scale: Option<Tensor>,
}

/// The user-weight tensor's name (`[n_users, K]`).
pub const W_TENSOR: &str = "W";

/// Largest scale of PAL-B's cosine (the authors clamp `exp(logit_scale)` at 100, as CLIP does).
pub const MAX_LOGIT_SCALE: f64 = 100.0;

/// `ln(1/0.07)`, PAL-B's initial `logit_scale` (the authors', after CLIP).
pub fn initial_logit_scale() -> f64 {
    (1.0f64 / 0.07).ln()
}

fn projector_names(prefix: &str) -> Vec<(String, String)> {
    (0..3).map(|i| (format!("{prefix}.{i}.weight"), format!("{prefix}.{i}.bias"))).collect()
}

impl PalNet {
    /// The variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Number of prototypes `K`.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Embedding dimension `d`.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The tensors' dtype.
    pub fn dtype(&self) -> DType {
        self.f.layers[0].0.dtype()
    }

    /// The names of the network's tensors (without `W`), sorted: `f.{0,1,2}.{weight,bias}`, then
    /// `P` (PAL-A) or `g.{k}.{0,1,2}.{weight,bias}` and `logit_scale` (PAL-B).
    pub fn tensor_names(variant: Variant, k: usize) -> Vec<String> {
        let mut names: Vec<String> =
            projector_names("f").into_iter().flat_map(|(w, b)| [w, b]).collect();
        match variant {
            Variant::A => names.push("P".into()),
            Variant::B => {
                for j in 0..k {
                    names.extend(
                        projector_names(&format!("g.{j}")).into_iter().flat_map(|(w, b)| [w, b]),
                    );
                }
                names.push("logit_scale".into());
            }
        }
        names.sort();
        names
    }

    /// The expected shape of tensor `name` (see [`PalNet::tensor_names`]).
    fn shape_of(name: &str, k: usize, dim: usize) -> Vec<usize> {
        if name == "P" {
            vec![k, dim]
        } else if name == "logit_scale" {
            vec![1]
        } else if name.ends_with(".weight") {
            vec![dim, dim]
        } else {
            vec![dim]
        }
    }

    /// Builds the network from named tensors (as saved; a `W` entry is ignored), checking every
    /// name and shape and that all tensors share one float dtype.
    ///
    /// # Errors
    /// [`ModelError::Engine`] naming a missing, unexpected or misshapen tensor, or mixed dtypes.
    pub fn from_tensors(
        variant: Variant,
        k: usize,
        dim: usize,
        tensors: &HashMap<String, Tensor>,
    ) -> Result<Self, ModelError> {
        if k == 0 || dim == 0 {
            return Err(ModelError::Engine(format!(
                "PAL needs K ≥ 1 and d ≥ 1 (got K = {k}, d = {dim})"
            )));
        }
        let names = Self::tensor_names(variant, k);
        let mut unexpected: Vec<&String> =
            tensors.keys().filter(|n| *n != W_TENSOR && !names.contains(n)).collect();
        if !unexpected.is_empty() {
            unexpected.sort();
            return Err(ModelError::Engine(format!(
                "PAL-{} (K = {k}) has no tensors {unexpected:?}; it has {names:?} and W",
                variant.name().to_uppercase()
            )));
        }
        let dtype = tensors.get("f.0.weight").map(Tensor::dtype).unwrap_or(DType::F32);
        if !matches!(dtype, DType::F32 | DType::F64) {
            return Err(ModelError::Engine(format!(
                "PAL tensors must be f32 or f64, not {dtype:?}"
            )));
        }
        let get = |name: &str| -> Result<Tensor, ModelError> {
            let t = tensors
                .get(name)
                .ok_or_else(|| ModelError::Engine(format!("PAL tensor `{name}` is missing")))?;
            let want = Self::shape_of(name, k, dim);
            if t.dims() != want.as_slice() {
                return Err(ModelError::Engine(format!(
                    "PAL tensor `{name}` has shape {:?}, expected {want:?}",
                    t.dims()
                )));
            }
            if t.dtype() != dtype {
                return Err(ModelError::Engine(format!(
                    "PAL tensor `{name}` is {:?}, the others {dtype:?}",
                    t.dtype()
                )));
            }
            Ok(t.clone())
        };
        let projector = |prefix: &str| -> Result<Projector, ModelError> {
            let layers = projector_names(prefix)
                .iter()
                .map(|(w, b)| Ok((get(w)?, get(b)?)))
                .collect::<Result<_, ModelError>>()?;
            Ok(Projector { layers, activation: variant.activation(), residual: variant.residual() })
        };
        let f = projector("f")?;
        let (g, prototypes, logit_scale) = match variant {
            Variant::A => (Vec::new(), Some(get("P")?), None),
            Variant::B => (
                (0..k).map(|j| projector(&format!("g.{j}"))).collect::<Result<_, _>>()?,
                None,
                Some(get("logit_scale")?),
            ),
        };
        Ok(Self { variant, k, dim, f, g, prototypes, logit_scale })
    }

    /// The network's tensors by name (the tensors themselves, not copies: a network built on
    /// variables' tensors follows the optimizer's steps).
    pub fn tensors(&self) -> HashMap<String, Tensor> {
        let mut m = HashMap::new();
        let mut put = |prefix: &str, p: &Projector| {
            for ((w, b), (wn, bn)) in p.layers.iter().zip(projector_names(prefix)) {
                m.insert(wn, w.clone());
                m.insert(bn, b.clone());
            }
        };
        put("f", &self.f);
        for (j, g) in self.g.iter().enumerate() {
            put(&format!("g.{j}"), g);
        }
        if let Some(p) = &self.prototypes {
            m.insert("P".into(), p.clone());
        }
        if let Some(s) = &self.logit_scale {
            m.insert("logit_scale".into(), s.clone());
        }
        m
    }

    /// A copy with every tensor converted to `dtype` and cut from any autograd graph (a
    /// snapshot later optimizer steps do not change).
    ///
    /// # Errors
    /// Candle errors.
    pub fn snapshot(&self, dtype: DType) -> Result<Self, ModelError> {
        let copied: HashMap<String, Tensor> = self
            .tensors()
            .into_iter()
            .map(|(n, t)| Ok((n, t.to_dtype(dtype)?.copy()?.detach())))
            .collect::<candle_core::Result<_>>()
            .map_err(engine)?;
        Self::from_tensors(self.variant, self.k, self.dim, &copied)
    }

    /// Fresh seeded parameters (f32), as the authors initialise them: every linear layer's
    /// weight and bias uniform in ±1/√d (torch's `nn.Linear` default), PAL-A's prototypes
    /// Gaussian rows scaled to unit norm (`is_expectation_norm_init: False`), PAL-B's
    /// `logit_scale` `ln(1/0.07)`. Each tensor's values come from a ChaCha8 stream seeded with
    /// `sha256(seed ‖ name)`, so they do not depend on the order tensors are made in.
    ///
    /// # Errors
    /// Candle errors.
    pub fn init_tensors(
        variant: Variant,
        k: usize,
        dim: usize,
        seed: u64,
    ) -> Result<HashMap<String, Tensor>, ModelError> {
        let mut out = HashMap::new();
        let bound = 1.0 / (dim as f32).sqrt();
        for name in Self::tensor_names(variant, k) {
            let shape = Self::shape_of(&name, k, dim);
            let n: usize = shape.iter().product();
            let mut rng = stream(seed, &format!("init/{name}"));
            let values: Vec<f32> = match name.as_str() {
                "P" => {
                    let mut v: Vec<f32> = (0..n).map(|_| normal(&mut rng) as f32).collect();
                    for row in v.chunks_mut(dim) {
                        let norm =
                            row.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
                        row.iter_mut().for_each(|x| *x /= norm);
                    }
                    v
                }
                "logit_scale" => vec![initial_logit_scale() as f32],
                _ => (0..n).map(|_| rng.random_range(-bound..bound)).collect(),
            };
            out.insert(name, Tensor::from_vec(values, shape, &Device::Cpu).map_err(engine)?);
        }
        Ok(out)
    }

    /// `f(items)`: `[n, d]` → `[n, d]`.
    ///
    /// # Errors
    /// Candle errors.
    pub fn item_features(&self, items: &Tensor) -> candle_core::Result<Tensor> {
        self.f.forward(items)
    }

    /// The features of pairs that do not depend on `W` ([`PairFeatures`]); `prompts` `[n, d]`
    /// is needed by PAL-B and ignored by PAL-A.
    ///
    /// # Errors
    /// Candle errors; PAL-B without prompts.
    pub fn features(
        &self,
        prompts: Option<&Tensor>,
        chosen: &Tensor,
        rejected: &Tensor,
    ) -> candle_core::Result<PairFeatures> {
        Ok(PairFeatures {
            chosen: self.f.forward(chosen)?,
            rejected: self.f.forward(rejected)?,
            prompts: self.prompt_features(prompts)?,
        })
    }

    /// PAL-B: `g_k(prompts)` stacked as `[n, K, d]`; PAL-A: `None`.
    ///
    /// # Errors
    /// Candle errors; PAL-B without prompts.
    pub fn prompt_features(&self, prompts: Option<&Tensor>) -> candle_core::Result<Option<Tensor>> {
        match self.variant {
            Variant::A => Ok(None),
            Variant::B => {
                let p = prompts.ok_or_else(|| {
                    candle_core::Error::Msg("PAL-B needs prompt embeddings".into())
                })?;
                let gs =
                    self.g.iter().map(|g| g.forward(p)).collect::<candle_core::Result<Vec<_>>>()?;
                Ok(Some(Tensor::stack(&gs, 1)?))
            }
        }
    }

    /// The users' ideal points `[n, d]` from their weight rows `w` `[n, K]`: PAL-A
    /// `f(softmax(w) · P)`; PAL-B `Σ_k softmax(w)_k g_k(p)` with `g` = `g_k(p)` `[n, K, d]`.
    /// One row `w` `[1, K]` gives PAL-A's one ideal point `[1, d]` and PAL-B's `[n, d]`.
    ///
    /// # Errors
    /// Candle errors; PAL-B without prompt features.
    pub fn ideal_points(&self, w: &Tensor, g: Option<&Tensor>) -> candle_core::Result<Tensor> {
        let mix = mixture(w)?;
        match (self.variant, &self.prototypes) {
            (Variant::A, Some(p)) => self.f.forward(&mix.matmul(p)?),
            _ => {
                let g =
                    g.ok_or_else(|| candle_core::Error::Msg("PAL-B needs prompt features".into()))?;
                mix.unsqueeze(2)?.broadcast_mul(g)?.sum(1)
            }
        }
    }

    /// The reward of projected items `fx` `[n, d]` for ideal points `ideal` `[n, d]` (or one
    /// ideal point `[1, d]` for all): `[n]`. PAL-A `−‖fx − ideal‖₂` (a distance, in embedding
    /// units); PAL-B `min(exp(logit_scale), 100) · cos(fx, ideal)` (in [−100, 100]).
    ///
    /// # Errors
    /// Candle errors.
    pub fn score(&self, fx: &Tensor, ideal: &Tensor) -> candle_core::Result<Tensor> {
        match &self.logit_scale {
            None => fx.broadcast_sub(ideal)?.sqr()?.sum(1)?.sqrt()?.neg(),
            Some(s) => {
                let dot = fx.broadcast_mul(ideal)?.sum(1)?;
                let norms =
                    fx.sqr()?.sum(1)?.sqrt()?.broadcast_mul(&ideal.sqr()?.sum(1)?.sqrt()?)?;
                let scale = s.exp()?.minimum(MAX_LOGIT_SCALE)?;
                (dot / norms)?.broadcast_mul(&scale)
            }
        }
    }

    /// Rewards of each pair's chosen and rejected answers (`[n]` each) for weight rows `w`
    /// `[n, K]` (row `i` is pair `i`'s user) or one row `[1, K]` for all the pairs, from
    /// precomputed features.
    ///
    /// # Errors
    /// Candle errors.
    pub fn pair_rewards_from(
        &self,
        features: &PairFeatures,
        w: &Tensor,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let ideal = self.ideal_points(w, features.prompts.as_ref())?;
        Ok((self.score(&features.chosen, &ideal)?, self.score(&features.rejected, &ideal)?))
    }

    /// Rewards of each pair's chosen and rejected answers (`[n]` each): weight rows `w`
    /// `[n, K]`, prompt embeddings `[n, d]` (PAL-B; PAL-A ignores them), answer embeddings
    /// `[n, d]` each.
    ///
    /// # Errors
    /// Candle errors.
    pub fn pair_rewards(
        &self,
        w: &Tensor,
        prompts: Option<&Tensor>,
        chosen: &Tensor,
        rejected: &Tensor,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        self.pair_rewards_from(&self.features(prompts, chosen, rejected)?, w)
    }

    /// The reward of each item `[n, d]` for its user's weight row `w` `[n, K]` and prompt
    /// `[n, d]` (PAL-B): `[n]`.
    ///
    /// # Errors
    /// Candle errors.
    pub fn rewards(
        &self,
        w: &Tensor,
        prompts: Option<&Tensor>,
        items: &Tensor,
    ) -> candle_core::Result<Tensor> {
        let g = self.prompt_features(prompts)?;
        let ideal = self.ideal_points(w, g.as_ref())?;
        self.score(&self.f.forward(items)?, &ideal)
    }
}

/// Each pair's loss `[n]` from the rewards of its chosen and rejected answers: PAL-A's hinge
/// `max(0, 1 − (r_c − r_r))`, PAL-B's cross-entropy with the chosen answer as the target class,
/// `softplus(r_r − r_c)`, computed as `relu(z) + ln(1 + e^{−|z|})` (stable for any margin).
///
/// # Errors
/// Candle errors.
pub fn pair_loss(variant: Variant, rc: &Tensor, rr: &Tensor) -> candle_core::Result<Tensor> {
    let z = (rr - rc)?;
    match variant {
        Variant::A => (z + 1.0)?.relu(),
        Variant::B => z.relu()? + (z.abs()?.neg()?.exp()? + 1.0)?.log()?,
    }
}

/// A ChaCha8 stream seeded with `sha256(seed as 8 little-endian bytes ‖ what)`: every random
/// choice of PAL training is one of these, named by what it is for (a tensor, a user), so none
/// depends on the order things are made in or on the thread count.
pub fn stream(seed: u64, what: &str) -> ChaCha8Rng {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(what.as_bytes());
    ChaCha8Rng::from_seed(h.finalize().into())
}

/// A standard normal draw (Box–Muller on two uniforms).
pub fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A user's initial weight row `[K]`: standard normal draws (the authors' `torch.randn(k)`),
/// from [`stream`]`(seed, "user/" + key)`, so a user's row depends on the seed and the user only.
pub fn init_user_row(seed: u64, key: &str, k: usize) -> Vec<f32> {
    let mut rng = stream(seed, &format!("user/{key}"));
    (0..k).map(|_| normal(&mut rng) as f32).collect()
}

mod file;
pub use file::{load_tensors, save_tensors};

#[cfg(test)]
mod tests;
