//! Dense projection y = x·Wᵀ (+ b), as `torch.nn.Linear`, over a 2-D activation matrix so every
//! batch and position goes through one GEMM.
//!
//! Row invariance: gemm 0.19 (candle's CPU matmul) picks its kernel by shape and strides, and
//! the kernels sum in different orders. With Wᵀ stored contiguous (`[in, out]`) and at least
//! two rows, every output element is one sequential FMA chain over `in` (kc ≥ `in` up to 512),
//! whatever the number of rows, so a token gets bit-identical projections alone and in a batch.
//! With the transposed view `W.t()` gemm would use a dot-product kernel whenever rows × out ≤
//! 256, and with one row a GEMV kernel.

use candle_core::{Result, Tensor};
use prbench_models::ModelError;

use super::weights::Weights;

/// A linear layer: weight `[out, in]` f32 as stored by PyTorch (kept transposed, `[in, out]`
/// contiguous, see the module notes), optional bias `[out]`.
#[derive(Debug, Clone)]
pub struct Linear {
    weight_t: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    /// Reads `{prefix}.weight` `[out, in]` and, when `bias`, `{prefix}.bias` `[out]`.
    ///
    /// # Errors
    /// As [`Weights::tensor`].
    pub fn load(
        w: &mut Weights,
        prefix: &str,
        in_dim: usize,
        out_dim: usize,
        bias: bool,
    ) -> std::result::Result<Self, ModelError> {
        let weight = w.tensor(&format!("{prefix}.weight"), &[out_dim, in_dim])?;
        let bias = if bias { Some(w.tensor(&format!("{prefix}.bias"), &[out_dim])?) } else { None };
        Self::new(weight, bias).map_err(|e| ModelError::engine(prefix, e))
    }

    fn new(weight: Tensor, bias: Option<Tensor>) -> Result<Self> {
        Ok(Self { weight_t: weight.t()?.contiguous()?, bias })
    }

    /// Stacks layers with the same input along the output dimension (q, k, v → qkv; gate, up
    /// → gate_up), so one GEMM computes all of them; outputs appear in the given order.
    ///
    /// # Errors
    /// A candle error when the input widths differ or only some parts have a bias.
    pub fn concat(parts: &[Linear]) -> Result<Self> {
        let weights: Vec<&Tensor> = parts.iter().map(|p| &p.weight_t).collect();
        let weight_t = Tensor::cat(&weights, 1)?;
        let bias = match parts.iter().map(|p| p.bias.as_ref()).collect::<Option<Vec<_>>>() {
            Some(b) => Some(Tensor::cat(&b, 0)?),
            None if parts.iter().all(|p| p.bias.is_none()) => None,
            None => candle_core::bail!("linear concat: some parts have a bias, some do not"),
        };
        Ok(Self { weight_t, bias })
    }

    /// `[m, in]` → `[m, out]`.
    ///
    /// A single row is computed as two identical rows (gemm sends one row to a GEMV kernel
    /// with another summation order; see the module notes).
    ///
    /// # Errors
    /// A candle error on a shape mismatch.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = if x.dim(0)? == 1 {
            Tensor::cat(&[x, x], 0)?.matmul(&self.weight_t)?.narrow(0, 0, 1)?
        } else {
            x.matmul(&self.weight_t)?
        };
        match &self.bias {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }

    /// `[m, in]` → `[m, out]` by plain dot products, each summed sequentially over `in` in
    /// f32: for heads with few outputs (the score head), whose GEMM kernels would otherwise
    /// depend on m.
    ///
    /// # Errors
    /// A candle error on a shape mismatch.
    pub fn forward_dot(&self, x: &Tensor) -> Result<Tensor> {
        let (m, k) = x.dims2()?;
        let (k2, n) = self.weight_t.dims2()?;
        if k != k2 {
            candle_core::bail!("linear: input width {k}, weight {:?}", self.weight_t.t()?.dims());
        }
        let xs = x.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        let ws = self.weight_t.t()?.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        let bias = match &self.bias {
            Some(b) => Some(b.to_vec1::<f32>()?),
            None => None,
        };
        let mut out = Vec::with_capacity(m * n);
        for row in xs.chunks_exact(k) {
            for (j, w) in ws.chunks_exact(k).enumerate() {
                let mut acc = 0f32;
                for (a, b) in row.iter().zip(w) {
                    acc += a * b;
                }
                out.push(bias.as_ref().map_or(acc, |b| acc + b[j]));
            }
        }
        Tensor::from_vec(out, (m, n), x.device())
    }
}
