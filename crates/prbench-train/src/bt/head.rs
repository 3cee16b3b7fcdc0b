//! The scoring head: `Linear(dim → hidden) → GELU → Linear(hidden → 1)`, or `Linear(dim → 1)`
//! when `hidden` is 0. The output layer has no bias: a constant offset cancels in
//! `r_chosen − r_rejected` and would get no gradient.
//!
//! Tensors (f32, safetensors names): `hidden.weight` `(hidden, dim)`, `hidden.bias` `(hidden)`,
//! `out.weight` `(1, hidden)`; linear head: `out.weight` `(1, dim)` only.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor, Var};
use prbench_models::ModelError;
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn engine(e: impl Into<prbench_models::BoxError>) -> ModelError {
    ModelError::engine("BT head", e)
}

/// A scoring head on fixed-size embeddings.
#[derive(Debug, Clone)]
pub struct BtHead {
    dim: usize,
    hidden: usize,
    /// `(weight, bias)` of the hidden layer, when `hidden > 0`.
    hidden_layer: Option<(Tensor, Tensor)>,
    out: Tensor,
}

impl BtHead {
    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Hidden width (0 = linear head).
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// Fresh trainable parameters, seeded: hidden layer uniform in ±1/√dim (PyTorch's default
    /// for `nn.Linear`), output layer zero, so every initial score is 0 and the initial BT loss is
    /// ln 2. Returns the head (whose tensors are the variables' tensors, so it follows optimizer
    /// steps) and the variables.
    pub fn init(
        dim: usize,
        hidden: usize,
        seed: u64,
    ) -> Result<(Self, Vec<(String, Var)>), ModelError> {
        let device = Device::Cpu;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut uniform = |n: usize, bound: f32| -> Vec<f32> {
            (0..n).map(|_| rng.random_range(-bound..bound)).collect()
        };
        let mut vars = Vec::new();
        let hidden_layer = if hidden > 0 {
            let bound = 1.0 / (dim as f32).sqrt();
            let w = Var::from_vec(uniform(hidden * dim, bound), (hidden, dim), &device)
                .map_err(engine)?;
            let b = Var::from_vec(uniform(hidden, bound), hidden, &device).map_err(engine)?;
            let layer = (w.as_tensor().clone(), b.as_tensor().clone());
            vars.push(("hidden.weight".to_string(), w));
            vars.push(("hidden.bias".to_string(), b));
            Some(layer)
        } else {
            None
        };
        let width = if hidden > 0 { hidden } else { dim };
        let out = Var::zeros((1, width), DType::F32, &device).map_err(engine)?;
        let head = Self { dim, hidden, hidden_layer, out: out.as_tensor().clone() };
        vars.push(("out.weight".to_string(), out));
        Ok((head, vars))
    }

    /// Builds a head from named tensors (as saved), checking names and shapes.
    ///
    /// # Errors
    /// [`ModelError::Engine`] naming a missing tensor or a wrong shape.
    pub fn from_tensors(
        tensors: &HashMap<String, Tensor>,
        dim: usize,
        hidden: usize,
    ) -> Result<Self, ModelError> {
        Self::from_tensors_in(tensors, dim, hidden, DType::F32)
    }

    /// Trainable parameters holding copies of `tensors` (names and shapes as
    /// [`BtHead::from_tensors`]) in their own dtype, F32 or F64 (all tensors must share it):
    /// [`BtHead::init`]'s result for a given start, e.g. to replay another implementation's run.
    pub(crate) fn trainable(
        tensors: &HashMap<String, Tensor>,
        dim: usize,
        hidden: usize,
    ) -> Result<(Self, Vec<(String, Var)>), ModelError> {
        let dtype = tensors.get("out.weight").map_or(DType::F32, |t| t.dtype());
        if !matches!(dtype, DType::F32 | DType::F64) || tensors.values().any(|t| t.dtype() != dtype)
        {
            return Err(ModelError::Engine(format!(
                "initial head tensors must all be f32 or all f64 (out.weight is {dtype:?})"
            )));
        }
        let checked = Self::from_tensors_in(tensors, dim, hidden, dtype)?;
        // `detach` first: `Var::from_tensor` copies a plain tensor but would share a variable's.
        let var = |t: &Tensor| Var::from_tensor(&t.detach()).map_err(engine);
        let mut vars = Vec::new();
        let hidden_layer = match &checked.hidden_layer {
            Some((w, b)) => {
                let (w, b) = (var(w)?, var(b)?);
                let layer = (w.as_tensor().clone(), b.as_tensor().clone());
                vars.push(("hidden.weight".to_string(), w));
                vars.push(("hidden.bias".to_string(), b));
                Some(layer)
            }
            None => None,
        };
        let out = var(&checked.out)?;
        let head = Self { dim, hidden, hidden_layer, out: out.as_tensor().clone() };
        vars.push(("out.weight".to_string(), out));
        Ok((head, vars))
    }

    fn from_tensors_in(
        tensors: &HashMap<String, Tensor>,
        dim: usize,
        hidden: usize,
        dtype: DType,
    ) -> Result<Self, ModelError> {
        let get = |name: &str, shape: &[usize]| -> Result<Tensor, ModelError> {
            let t = tensors
                .get(name)
                .ok_or_else(|| ModelError::Engine(format!("head tensor `{name}` is missing")))?;
            if t.dims() != shape {
                return Err(ModelError::Engine(format!(
                    "head tensor `{name}` has shape {:?}, expected {shape:?}",
                    t.dims()
                )));
            }
            t.to_dtype(dtype).map_err(engine)
        };
        let expected = if hidden > 0 { 3 } else { 1 };
        if tensors.len() != expected {
            let mut names: Vec<&String> = tensors.keys().collect();
            names.sort();
            return Err(ModelError::Engine(format!(
                "head has tensors {names:?}; expected {expected} for hidden = {hidden}"
            )));
        }
        let hidden_layer = if hidden > 0 {
            Some((get("hidden.weight", &[hidden, dim])?, get("hidden.bias", &[hidden])?))
        } else {
            None
        };
        let out = get("out.weight", &[1, if hidden > 0 { hidden } else { dim }])?;
        Ok(Self { dim, hidden, hidden_layer, out })
    }

    /// Loads `head.safetensors`-style weights.
    ///
    /// # Errors
    /// [`ModelError::File`] when the file cannot be read; shape errors as in
    /// [`BtHead::from_tensors`].
    pub fn load(path: &Path, dim: usize, hidden: usize) -> Result<Self, ModelError> {
        let tensors = candle_core::safetensors::load(path, &Device::Cpu)
            .map_err(|e| ModelError::file(path, "", e))?;
        Self::from_tensors(&tensors, dim, hidden)
    }

    /// A detached copy of the current weights (a snapshot that later optimizer steps do not
    /// change), in their dtype.
    pub fn snapshot(&self) -> Result<Self, ModelError> {
        let copy = |t: &Tensor| -> Result<Tensor, ModelError> {
            let v = t
                .flatten_all()
                .and_then(|f| f.to_dtype(DType::F64)?.to_vec1::<f64>())
                .map_err(engine)?;
            Tensor::from_vec(v, t.dims(), &Device::Cpu)
                .and_then(|c| c.to_dtype(t.dtype()))
                .map_err(engine)
        };
        Ok(Self {
            dim: self.dim,
            hidden: self.hidden,
            hidden_layer: match &self.hidden_layer {
                Some((w, b)) => Some((copy(w)?, copy(b)?)),
                None => None,
            },
            out: copy(&self.out)?,
        })
    }

    /// The weights by name.
    pub fn tensors(&self) -> HashMap<String, Tensor> {
        let mut m = HashMap::new();
        if let Some((w, b)) = &self.hidden_layer {
            m.insert("hidden.weight".to_string(), w.clone());
            m.insert("hidden.bias".to_string(), b.clone());
        }
        m.insert("out.weight".to_string(), self.out.clone());
        m
    }

    /// Writes the weights as safetensors (tensor order fixed by the format's sort, so the same
    /// weights give the same bytes).
    ///
    /// # Errors
    /// [`ModelError::File`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        candle_core::safetensors::save(&self.tensors(), path)
            .map_err(|e| ModelError::file(path, "", e))
    }

    /// Scores a batch `(n, dim)` → `(n,)`, in the head's dtype; differentiable (used in
    /// training).
    ///
    /// # Errors
    /// Candle errors (shape mismatch).
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let h = match &self.hidden_layer {
            Some((w, b)) => gelu(&x.matmul(&w.t()?)?.broadcast_add(b)?)?,
            None => x.clone(),
        };
        h.matmul(&self.out.t()?)?.squeeze(1)
    }

    /// The dtype of the weights: F32, or F64 for a head trained in f64 (see
    /// [`super::train::TrainStart`]).
    pub fn dtype(&self) -> DType {
        self.out.dtype()
    }

    /// Scores embeddings given as rows (computed in the head's dtype, returned as f32).
    ///
    /// # Errors
    /// [`ModelError::Engine`] when a row's length differs from [`BtHead::dim`].
    pub fn score_rows(&self, rows: &[Vec<f32>]) -> Result<Vec<f32>, ModelError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(bad) = rows.iter().position(|r| r.len() != self.dim) {
            return Err(ModelError::Engine(format!(
                "embedding {bad} has {} values; the head takes {}",
                rows[bad].len(),
                self.dim
            )));
        }
        let x = rows_tensor(rows, self.dim)?.to_dtype(self.dtype()).map_err(engine)?;
        self.forward(&x).and_then(|s| s.to_dtype(DType::F32)?.to_vec1::<f32>()).map_err(engine)
    }
}

/// The exact (erf) GELU, `x · (1 + erf(x/√2)) / 2`, composed from candle ops: the same values
/// as candle's `gelu_erf`, but its gradient goes through `erf`'s exact derivative, where
/// `gelu_erf`'s backward rounds 1/√(2π) to 0.398942 (a 7e-7 relative error, seen as a 1e-10
/// drift within 6 epochs against the f64 PyTorch reference, `tools/bt_reference.py`).
fn gelu(x: &Tensor) -> candle_core::Result<Tensor> {
    (((x * std::f64::consts::FRAC_1_SQRT_2)?.erf()? + 1.0)? * 0.5)? * x
}

/// Stacks equal-length rows into an `(n, dim)` tensor.
pub(crate) fn rows_tensor(rows: &[Vec<f32>], dim: usize) -> Result<Tensor, ModelError> {
    let flat: Vec<f32> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_vec(flat, (rows.len(), dim), &Device::Cpu).map_err(engine)
}
