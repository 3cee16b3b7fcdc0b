//! RMSNorm over the last dimension.
//!
//! Llama / Qwen 2 / Qwen 3 / Mistral (`<Arch>RMSNorm.forward`): y = w · x / √(mean(x²) + ε).
//! Gemma 2 (`Gemma2RMSNorm.forward`): y = (1 + w) · x / √(mean(x²) + ε); the stored weight is
//! centred on 0, so `1 + w` is formed once at load (in f32, as transformers' `1.0 +
//! self.weight.float()`). Both run through `candle_nn::ops::rms_norm` (f32, one pass per row).

use candle_core::{Result, Tensor};
use prbench_models::ModelError;

use super::weights::Weights;

/// One RMSNorm layer with its effective scale.
#[derive(Debug, Clone)]
pub struct RmsNorm {
    scale: Tensor,
    eps: f32,
}

impl RmsNorm {
    /// Reads `name` (`[dim]`); `gemma` selects the (1 + w) form.
    ///
    /// # Errors
    /// As [`Weights::tensor`].
    pub fn load(
        w: &mut Weights,
        name: &str,
        dim: usize,
        eps: f64,
        gemma: bool,
    ) -> std::result::Result<Self, ModelError> {
        let t = w.tensor(name, &[dim])?;
        let scale = if gemma { (t + 1.0).map_err(|e| ModelError::engine(name, e))? } else { t };
        Ok(Self { scale, eps: eps as f32 })
    }

    /// Normalises `x` (`[..., dim]`, contiguous) over its last dimension; same shape out.
    ///
    /// # Errors
    /// A candle error on a shape mismatch.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        candle_nn::ops::rms_norm(&x.contiguous()?, &self.scale, self.eps)
    }
}
