//! Branch-free f32 transcendental functions that the compiler vectorises (libm's `expf` is a
//! scalar call, which made the attention softmax and the MLP activation the slowest non-GEMM
//! steps). Accuracy: `exp` within 2 ulp of the correctly rounded result on [−87, 88]
//! (Cephes `expf` polynomial), far below the 1e-4 parity budget; every path (single, batch,
//! left or right padding) uses the same functions, so they do not break batch == single.

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in a part exact in f32 and a remainder (Cody–Waite reduction).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// e^x for x in [−87.3, 88.3] (inputs outside are clamped: e^−87.3 ≈ 1.2e−38, e^88.3 ≈
/// 2.2e38). Range reduction x = n·ln2 + r, |r| ≤ ln2/2, then Cephes' degree-6 polynomial.
#[inline(always)]
// Cephes' coefficients as published (5.000_000_1e-1 rounds to 0.5 in f32), kept for provenance.
#[allow(clippy::excessive_precision)]
pub fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.3);
    let n = (x * LOG2E + 0.5).floor();
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, x));
    let mut p = 1.987_569_2e-4f32;
    p = p.mul_add(r, 1.398_2e-3);
    p = p.mul_add(r, 8.333_452e-3);
    p = p.mul_add(r, 4.166_579_6e-2);
    p = p.mul_add(r, 1.666_666_5e-1);
    p = p.mul_add(r, 5.000_000_1e-1);
    let p = p.mul_add(r * r, r) + 1.0;
    f32::from_bits(((n as i32 + 127) as u32) << 23) * p
}

/// SiLU x·σ(x) = x / (1 + e^−x) (transformers `ACT2FN["silu"]` = `torch.nn.functional.silu`).
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + exp(-x))
}

/// tanh(x) = 1 − 2 / (e^{2x} + 1) (saturates to ±1).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    1.0 - 2.0 / (exp(2.0 * x) + 1.0)
}

/// GELU, tanh approximation (`gelu_pytorch_tanh`, `gelu_new`):
/// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    const K: f32 = 0.797_884_6; // √(2/π)
    0.5 * x * (1.0 + tanh(K * (x + 0.044_715 * x * x * x)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> i64 {
        (a.to_bits() as i64 - b.to_bits() as i64).abs()
    }

    #[test]
    fn exp_within_two_ulp() {
        let mut worst = 0;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = (x as f64).exp() as f32;
            worst = worst.max(ulps(exp(x), want));
            x += 0.000_97;
        }
        assert!(worst <= 2, "worst {worst} ulp");
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-1e30) >= 0.0 && exp(-1e30) < 1e-37);
    }

    #[test]
    fn activations_match_reference() {
        let mut x = -30.0f32;
        while x < 30.0 {
            let xd = x as f64;
            let silu_ref = xd / (1.0 + (-xd).exp());
            assert!(
                (silu(x) as f64 - silu_ref).abs() <= 1e-6 * silu_ref.abs().max(1e-3),
                "silu {x}"
            );
            let g = 0.5
                * xd
                * (1.0
                    + ((2.0 / std::f64::consts::PI).sqrt() * (xd + 0.044715 * xd.powi(3))).tanh());
            assert!((gelu_tanh(x) as f64 - g).abs() <= 2e-6 * g.abs().max(1.0), "gelu {x}");
            assert!((tanh(x) as f64 - xd.tanh()).abs() <= 2e-7, "tanh {x}");
            x += 0.013;
        }
    }
}
