//! The feed-forward activation over a buffer, vectorisable and row-parallel. The exact GELU
//! needs erf, which libm computes one scalar call at a time (the slowest non-GEMM step of
//! candle's BERT); [`erf`] is a branch-free rational approximation that the compiler vectorises.

use rayon::prelude::*;

use super::config::HiddenAct;
use crate::decoder::fastmath;

/// erf(x) in f32: the odd/even rational minimax approximation on [−4, 4] that Eigen
/// (`generic_fast_erf_float`) and XLA use, clamped outside (|erf| rounds to 1 in f32 beyond
/// 4). Absolute error below 1e-6 (tested against a power series in f64).
#[inline(always)]
// Eigen's coefficients as published, digit for digit, so they can be checked against the source.
#[allow(clippy::excessive_precision)]
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2.mul_add(-2.726_142_2e-10, 2.770_681_4e-8);
    p = x2.mul_add(p, -2.101_024e-6);
    p = x2.mul_add(p, -5.692_506_4e-5);
    p = x2.mul_add(p, -7.349_906_3e-4);
    p = x2.mul_add(p, -2.954_6e-3);
    p = x2.mul_add(p, -1.609_603_3e-2);
    let p = x * p;
    let mut q = x2.mul_add(-1.456_607_2e-5, -2.133_740_6e-4);
    q = x2.mul_add(q, -1.682_827e-3);
    q = x2.mul_add(q, -7.373_329e-3);
    q = x2.mul_add(q, -1.426_474e-2);
    p / q
}

/// Exact GELU, transformers `ACT2FN["gelu"]` = `torch.nn.functional.gelu`:
/// 0.5·x·(1 + erf(x/√2)).
#[inline(always)]
pub fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// Applies `act` to every element of `x` in place, on the rayon pool.
pub fn apply(act: HiddenAct, x: &mut [f32]) {
    const CHUNK: usize = 1 << 14;
    x.par_chunks_mut(CHUNK).for_each(|c| match act {
        HiddenAct::GeluErf => c.iter_mut().for_each(|v| *v = gelu_erf(*v)),
        HiddenAct::GeluTanh => c.iter_mut().for_each(|v| *v = fastmath::gelu_tanh(*v)),
        HiddenAct::Relu => c.iter_mut().for_each(|v| *v = v.max(0.0)),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf by its Maclaurin series in f64 (converges for every x; 120 terms are ample on
    /// |x| ≤ 5, where the largest term is below 1e10 and the f64 cancellation error below 1e-6).
    fn erf_series(x: f64) -> f64 {
        let mut term = x; // (−1)^n x^(2n+1) / n!
        let mut sum = x;
        for n in 1..120 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_and_gelu_match_the_series() {
        let mut worst = 0f64;
        let mut x = -5.0f32;
        while x <= 5.0 {
            let want =
                if x.abs() <= 4.5 { erf_series(f64::from(x)) } else { f64::from(x.signum()) * 1.0 };
            worst = worst.max((f64::from(erf(x)) - want).abs());
            let g =
                0.5 * f64::from(x) * (1.0 + erf_series(f64::from(x) / std::f64::consts::SQRT_2));
            assert!((f64::from(gelu_erf(x)) - g).abs() <= 1e-6 * g.abs().max(1.0), "gelu({x})");
            x += 0.001_7;
        }
        assert!(worst < 1e-6, "erf worst abs error {worst:e}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(30.0), erf(4.0));
    }

    #[test]
    fn apply_covers_every_element() {
        let mut x: Vec<f32> = (0..40_000).map(|i| (i as f32 - 20_000.0) / 3000.0).collect();
        let want: Vec<f32> = x.iter().map(|&v| v.max(0.0)).collect();
        let mut y = x.clone();
        apply(HiddenAct::Relu, &mut y);
        assert_eq!(y, want);
        let orig = x.clone();
        apply(HiddenAct::GeluErf, &mut x);
        assert!(x.iter().zip(&orig).all(|(g, v)| *g == gelu_erf(*v)));
    }
}
