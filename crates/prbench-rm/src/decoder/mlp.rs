//! Gated feed-forward block, `<Arch>MLP.forward`: down(act(gate(x)) · up(x)). Gate and up are
//! one GEMM over their stacked weights; act(gate)·up is one fused, vectorised pass
//! ([`GatedAct`]).

use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};
use prbench_models::ModelError;

use super::config::{Activation, DecoderConfig};
use super::fastmath;
use super::linear::Linear;
use super::par::for_row_chunks;
use super::weights::Weights;

/// The MLP of one decoder layer.
#[derive(Debug, Clone)]
pub struct Mlp {
    gate_up: Linear,
    down: Linear,
    inter: usize,
    act: Activation,
}

/// act(gate) · up over `[m, 2·inter]` (gate columns first) → `[m, inter]`; SiLU and tanh-GELU
/// through [`fastmath`]. The erf GELU is not handled here (see [`Mlp::forward`]).
#[derive(Debug, Clone, Copy)]
pub struct GatedAct {
    /// Width of each half.
    pub inter: usize,
    /// Activation (SiLU or tanh-GELU).
    pub act: Activation,
}

impl CustomOp1 for GatedAct {
    fn name(&self) -> &'static str {
        "prbench-gated-act"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(data) = storage else { candle_core::bail!("gated act: f32 expected") };
        let Some((o1, o2)) = layout.contiguous_offsets() else {
            candle_core::bail!("gated act: contiguous input expected")
        };
        let src = &data[o1..o2];
        let (m, w) = layout.shape().dims2()?;
        let n = self.inter;
        if w != 2 * n {
            candle_core::bail!("gated act: width {w}, expected {}", 2 * n);
        }
        let mut dst = vec![0f32; m * n];
        let act = self.act;
        for_row_chunks(&mut dst, n, |first, chunk| {
            for (i, out) in chunk.chunks_exact_mut(n).enumerate() {
                let row = &src[(first + i) * w..(first + i + 1) * w];
                let (gate, up) = row.split_at(n);
                match act {
                    Activation::Silu => {
                        for ((o, g), u) in out.iter_mut().zip(gate).zip(up) {
                            *o = fastmath::silu(*g) * *u;
                        }
                    }
                    _ => {
                        for ((o, g), u) in out.iter_mut().zip(gate).zip(up) {
                            *o = fastmath::gelu_tanh(*g) * *u;
                        }
                    }
                }
            }
        });
        Ok((CpuStorage::F32(dst), Shape::from_dims(&[m, n])))
    }
}

impl Mlp {
    /// Reads `{prefix}.{gate,up,down}_proj` (with biases when `mlp_bias`).
    ///
    /// # Errors
    /// As [`Weights::tensor`].
    pub fn load(
        w: &mut Weights,
        prefix: &str,
        cfg: &DecoderConfig,
    ) -> std::result::Result<Self, ModelError> {
        let (h, i, bias) = (cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias);
        let gate = Linear::load(w, &format!("{prefix}.gate_proj"), h, i, bias)?;
        let up = Linear::load(w, &format!("{prefix}.up_proj"), h, i, bias)?;
        let down = Linear::load(w, &format!("{prefix}.down_proj"), i, h, bias)?;
        let gate_up = Linear::concat(&[gate, up]).map_err(|e| ModelError::engine(prefix, e))?;
        Ok(Self { gate_up, down, inter: i, act: cfg.activation })
    }

    /// `[m, hidden]` → `[m, hidden]`.
    ///
    /// # Errors
    /// A candle error on a shape mismatch.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let gu = self.gate_up.forward(x)?;
        let h = match self.act {
            Activation::Silu | Activation::GeluTanh => {
                gu.apply_op1_no_bwd(&GatedAct { inter: self.inter, act: self.act })?
            }
            Activation::GeluErf => {
                (gu.narrow(1, 0, self.inter)?.gelu_erf()?
                    * gu.narrow(1, self.inter, self.inter)?)?
            }
        };
        self.down.forward(&h)
    }
}
