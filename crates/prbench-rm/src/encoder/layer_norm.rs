//! LayerNorm over the last dimension (`torch.nn.LayerNorm`): y = (x − mean) / √(var + ε)·w + b,
//! var the biased variance, in place over `[rows, width]` and row-parallel. BERT's post-norm
//! residual (`BertSelfOutput`, `BertOutput`: LayerNorm(dense(x) + input)) gets its sum from the
//! dense layer's destination ([`super::matmul::Dense::forward_into`] with a residual).

use rayon::prelude::*;

/// One LayerNorm's scale and shift (`[width]`) and epsilon.
#[derive(Clone)]
pub struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

const LANES: usize = 16;

/// Σ of `x` in 16 lanes (vectorisable), then across lanes.
#[inline]
fn lane_sum(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += f(*v);
        }
    }
    chunks.remainder().iter().fold(acc.iter().sum::<f32>(), |s, v| s + f(*v))
}

impl std::fmt::Debug for LayerNorm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LayerNorm")
            .field("width", &self.weight.len())
            .field("eps", &self.eps)
            .finish()
    }
}

impl LayerNorm {
    /// From `weight` and `bias` (`[width]`, equal lengths) and ε.
    ///
    /// # Panics
    /// When the lengths differ (a caller bug: the loader checks shapes).
    pub fn new(weight: Vec<f32>, bias: Vec<f32>, eps: f32) -> Self {
        assert_eq!(weight.len(), bias.len(), "layer norm: weight and bias lengths");
        Self { weight, bias, eps }
    }

    /// Normalises one row in place (two passes: mean, then variance about it).
    #[inline]
    pub fn row(&self, x: &mut [f32]) {
        let n = x.len() as f32;
        let mean = lane_sum(x, |v| v) / n;
        let var = lane_sum(x, |v| (v - mean) * (v - mean)) / n;
        let inv = 1.0 / (var + self.eps).sqrt();
        for ((v, w), b) in x.iter_mut().zip(&self.weight).zip(&self.bias) {
            *v = (*v - mean) * inv * *w + *b;
        }
    }

    /// Normalises every row of `x` (`[rows, width]`) in place.
    ///
    /// # Panics
    /// When `x` is not whole rows of the norm's width.
    pub fn forward(&self, x: &mut [f32]) {
        let w = self.weight.len();
        assert_eq!(x.len() % w, 0, "layer norm: input is not whole rows");
        x.par_chunks_mut(w * 64).for_each(|c| c.chunks_exact_mut(w).for_each(|r| self.row(r)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formula_in_f64() {
        let w = 37;
        let x: Vec<f32> = (0..w * 130).map(|i| ((i * 31 % 97) as f32 - 40.0) / 7.0).collect();
        let weight: Vec<f32> = (0..w).map(|i| 0.5 + i as f32 / 50.0).collect();
        let bias: Vec<f32> = (0..w).map(|i| i as f32 / 100.0 - 0.2).collect();
        let ln = LayerNorm::new(weight.clone(), bias.clone(), 1e-5);
        let mut y = x.clone();
        ln.forward(&mut y);
        for (r, row) in x.chunks(w).enumerate() {
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / w as f64;
            let var = row.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / w as f64;
            for j in 0..w {
                let want = (f64::from(row[j]) - mean) / (var + 1e-5).sqrt() * f64::from(weight[j])
                    + f64::from(bias[j]);
                assert!((f64::from(y[r * w + j]) - want).abs() < 1e-5, "row {r} col {j}");
            }
        }
    }
}
