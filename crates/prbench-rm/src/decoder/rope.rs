//! Rotary position embeddings: inverse frequencies per model, and one cos/sin table per model
//! (shared by all layers, grown on demand), gathered once per forward pass into `[batch, seq,
//! d/2]` for the non-interleaved "rotate half" form of transformers' `apply_rotary_pos_emb`
//! ([`super::qkv`], or `candle_nn::rotary_emb::rope` with [`Rope::cos_sin`]).

use std::sync::RwLock;

use candle_core::{Device, Result, Tensor};

use super::config::{DecoderConfig, RopeScaling};

/// Inverse frequencies `[head_dim / 2]` in f32, computed in f32 as transformers does.
///
/// Default: `inv_freq[i] = 1 / θ^(2i/d)` (`<Arch>RotaryEmbedding.compute_default_rope_parameters`).
/// Linear: inv_freq / factor. Llama 3 (`modeling_rope_utils._compute_llama3_parameters`):
/// wavelen = 2π / inv_freq; wavelengths above `original_max / low_freq_factor` are divided by
/// `factor`, those below `original_max / high_freq_factor` kept, the band between interpolated
/// with smooth = (original_max / wavelen − low) / (high − low):
/// (1 − smooth)·f/factor + smooth·f.
pub fn inv_freq(head_dim: usize, theta: f64, scaling: RopeScaling) -> Vec<f32> {
    let dim = head_dim as f32;
    let base = theta as f32;
    let plain = (0..head_dim / 2).map(|i| 1.0f32 / base.powf((2 * i) as f32 / dim));
    match scaling {
        RopeScaling::Default => plain.collect(),
        RopeScaling::Linear { factor } => plain.map(|f| f / factor as f32).collect(),
        RopeScaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_position_embeddings,
        } => {
            let factor = factor as f32;
            let low = low_freq_factor as f32;
            let old = original_max_position_embeddings as f32;
            let low_freq_wavelen = (original_max_position_embeddings / low_freq_factor) as f32;
            let high_freq_wavelen = (original_max_position_embeddings / high_freq_factor) as f32;
            let band = (high_freq_factor - low_freq_factor) as f32;
            plain
                .map(|f| {
                    let wavelen = (2.0 * std::f64::consts::PI) as f32 / f;
                    let scaled = if wavelen > low_freq_wavelen { f / factor } else { f };
                    let medium = !(wavelen < high_freq_wavelen || wavelen > low_freq_wavelen);
                    if medium {
                        let smooth = (old / wavelen - low) / band;
                        (1.0 - smooth) * scaled / factor + smooth * scaled
                    } else {
                        scaled
                    }
                })
                .collect()
        }
    }
}

struct Table {
    len: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

/// The RoPE tables of one model.
pub struct Rope {
    inv_freq: Vec<f32>,
    table: RwLock<Table>,
}

impl std::fmt::Debug for Rope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rope").field("half_dim", &self.inv_freq.len()).finish_non_exhaustive()
    }
}

impl Rope {
    /// Inverse frequencies from the configuration (see [`inv_freq`]); the table starts empty.
    pub fn new(cfg: &DecoderConfig) -> Self {
        Self::from_inv_freq(inv_freq(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling))
    }

    /// A table over given inverse frequencies.
    pub fn from_inv_freq(inv_freq: Vec<f32>) -> Self {
        Self { inv_freq, table: RwLock::new(Table { len: 0, cos: Vec::new(), sin: Vec::new() }) }
    }

    /// The inverse frequencies, `[head_dim / 2]`.
    pub fn inv_freq(&self) -> &[f32] {
        &self.inv_freq
    }

    /// Grows the table to cover positions `0..len` (to the next power of two, at least 256).
    /// Entry (p, i) is cos/sin of `(p as f32) · inv_freq[i]` in f32, as transformers'
    /// `<Arch>RotaryEmbedding.forward` (attention_scaling is 1 for the supported types).
    fn ensure(&self, len: usize) {
        if self.table.read().map(|t| t.len >= len).unwrap_or(false) {
            return;
        }
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        if t.len >= len {
            return;
        }
        let new_len = len.next_power_of_two().max(256);
        let half = self.inv_freq.len();
        let old_len = t.len;
        t.cos.reserve((new_len - old_len) * half);
        t.sin.reserve((new_len - old_len) * half);
        for p in old_len..new_len {
            for &f in &self.inv_freq {
                let angle = p as f32 * f;
                t.cos.push(angle.cos());
                t.sin.push(angle.sin());
            }
        }
        t.len = new_len;
    }

    /// cos and sin for each position, both `[batch, seq_len, head_dim / 2]` f32;
    /// `positions` is `[batch * seq_len]`, row-major.
    ///
    /// # Errors
    /// A candle error only if `positions.len() != batch * seq_len`.
    pub fn cos_sin(
        &self,
        positions: &[u32],
        batch: usize,
        seq_len: usize,
    ) -> Result<(Tensor, Tensor)> {
        if positions.len() != batch * seq_len {
            candle_core::bail!(
                "rope: {} positions for a [{batch}, {seq_len}] batch",
                positions.len()
            );
        }
        let (cos, sin) = self.cos_sin_vec(positions);
        let shape = (batch, seq_len, self.inv_freq.len());
        Ok((
            Tensor::from_vec(cos, shape, &Device::Cpu)?,
            Tensor::from_vec(sin, shape, &Device::Cpu)?,
        ))
    }

    /// cos and sin for each position, `[positions.len() * head_dim / 2]` each, row-major.
    pub fn cos_sin_vec(&self, positions: &[u32]) -> (Vec<f32>, Vec<f32>) {
        let max = positions.iter().copied().max().unwrap_or(0) as usize;
        self.ensure(max + 1);
        let t = self.table.read().unwrap_or_else(|e| e.into_inner());
        let half = self.inv_freq.len();
        let mut cos = Vec::with_capacity(positions.len() * half);
        let mut sin = Vec::with_capacity(positions.len() * half);
        for &p in positions {
            let r = p as usize * half..(p as usize + 1) * half;
            cos.extend_from_slice(&t.cos[r.clone()]);
            sin.extend_from_slice(&t.sin[r]);
        }
        (cos, sin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_frequencies() {
        let f = inv_freq(8, 10000.0, RopeScaling::Default);
        let want = [1.0f32, 0.1, 0.01, 0.001];
        for (a, b) in f.iter().zip(want) {
            assert!((a - b).abs() <= 1e-6 * b.max(1e-3), "{a} vs {b}");
        }
    }

    #[test]
    fn llama3_frequencies_keep_high_and_divide_low() {
        let s = RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192.0,
        };
        let plain = inv_freq(128, 500000.0, RopeScaling::Default);
        let scaled = inv_freq(128, 500000.0, s);
        // Highest frequency (wavelength 2π) is kept; the lowest is divided by the factor.
        assert_eq!(scaled[0], plain[0]);
        assert!((scaled[63] - plain[63] / 8.0).abs() <= 1e-12);
        // Monotone non-increasing across the band.
        assert!(scaled.windows(2).all(|w| w[0] >= w[1]));
    }

    #[test]
    fn table_rows_match_direct_computation() {
        let rope = Rope::from_inv_freq(vec![1.0, 0.5]);
        let (cos, sin) = rope.cos_sin(&[0, 3, 700, 1], 2, 2).unwrap();
        let cos = cos.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let sin = sin.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        for (k, p) in [0u32, 3, 700, 1].iter().enumerate() {
            for (i, f) in [1.0f32, 0.5].iter().enumerate() {
                assert_eq!(cos[k * 2 + i], (*p as f32 * f).cos());
                assert_eq!(sin[k * 2 + i], (*p as f32 * f).sin());
            }
        }
    }
}
