//! Matrix products of the encoder, through the `gemm` crate (the kernels candle's CPU matmul
//! calls) on plain f32 buffers: no tensor allocation per op, bias and residual folded into the
//! product's destination, and strided operands so attention reads q, k and v straight out of
//! the fused projection.

use gemm::{gemm, Parallelism};

/// Worker threads of the encoder's loops and GEMMs: candle's setting (`RAYON_NUM_THREADS`,
/// else the number of CPUs).
pub fn threads() -> usize {
    candle_core::utils::get_num_threads().max(1)
}

/// A read-only matrix view: element (i, j) is `data[i * rs + j * cs]`.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// Backing storage.
    pub data: &'a [f32],
    /// Row stride (elements).
    pub rs: usize,
    /// Column stride (elements).
    pub cs: usize,
}

impl View<'_> {
    fn check(&self, rows: usize, cols: usize, what: &str) {
        if rows > 0 && cols > 0 {
            let last = (rows - 1) * self.rs + (cols - 1) * self.cs;
            assert!(
                last < self.data.len(),
                "matmul: {what} view [{rows}, {cols}] overruns its {} elements",
                self.data.len()
            );
        }
    }
}

/// dst\[m, n\] (row stride `dst_rs`, unit column stride) ← (dst if `accumulate`) + scale·a·b,
/// with a `[m, k]` and b `[k, n]`. Runs on [`threads`] threads when `parallel` and the product
/// is large enough to gain from it.
///
/// # Panics
/// When a view or the destination is too short for its shape (a caller bug).
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    m: usize,
    n: usize,
    k: usize,
    a: View<'_>,
    b: View<'_>,
    dst: &mut [f32],
    dst_rs: usize,
    accumulate: bool,
    scale: f32,
    parallel: bool,
) {
    a.check(m, k, "lhs");
    b.check(k, n, "rhs");
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        (m - 1) * dst_rs + n <= dst.len() && dst_rs >= n,
        "matmul: destination [{m}, {n}] overruns"
    );
    if k == 0 {
        if !accumulate {
            for r in 0..m {
                dst[r * dst_rs..r * dst_rs + n].fill(0.0);
            }
        }
        return;
    }
    let t = threads();
    let parallelism = if parallel && t > 1 && m * n * k >= 1 << 18 {
        Parallelism::Rayon(t)
    } else {
        Parallelism::None
    };
    // SAFETY: every element the views and the destination address was bounds-checked above;
    // dst is exclusively borrowed, so it does not alias a or b.
    unsafe {
        gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_rs as isize,
            accumulate,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// A dense layer y = x·Wᵀ + b (`torch.nn.Linear`), W kept transposed (`[in, out]`
/// contiguous, the layout gemm reads fastest).
#[derive(Clone)]
pub struct Dense {
    w_t: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl std::fmt::Debug for Dense {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dense")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

impl Dense {
    /// From a PyTorch weight `[out, in]` (row-major) and bias `[out]`.
    ///
    /// # Panics
    /// When the lengths do not match `inputs`·`outputs` and `outputs` (a caller bug: the loader
    /// checks shapes first).
    pub fn from_torch(weight: &[f32], bias: Vec<f32>, inputs: usize, outputs: usize) -> Self {
        assert_eq!(
            (weight.len(), bias.len()),
            (inputs * outputs, outputs),
            "dense: weight/bias shape"
        );
        let mut w_t = vec![0f32; inputs * outputs];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            for (i, w) in row.iter().enumerate() {
                w_t[i * outputs + o] = *w;
            }
        }
        Self { w_t, bias, inputs, outputs }
    }

    /// Layers with the same input stacked along the output (q, k, v → qkv): one GEMM computes
    /// all of them, outputs in the given order.
    ///
    /// # Panics
    /// When the input widths differ.
    pub fn concat(parts: &[Dense]) -> Self {
        let inputs = parts[0].inputs;
        assert!(parts.iter().all(|p| p.inputs == inputs), "dense concat: input widths differ");
        let outputs: usize = parts.iter().map(|p| p.outputs).sum();
        let mut w_t = Vec::with_capacity(inputs * outputs);
        for i in 0..inputs {
            for p in parts {
                w_t.extend_from_slice(&p.w_t[i * p.outputs..(i + 1) * p.outputs]);
            }
        }
        let bias = parts.iter().flat_map(|p| p.bias.iter().copied()).collect();
        Self { w_t, bias, inputs, outputs }
    }

    /// Output width.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `dst[m, out]` ← x\[m, in\]·Wᵀ + b (+ `residual[m, out]` when given: the sum that feeds a
    /// post-LayerNorm), in one GEMM over every row.
    ///
    /// # Panics
    /// When the buffers do not hold m rows of their widths.
    pub fn forward_into(&self, x: &[f32], m: usize, residual: Option<&[f32]>, dst: &mut [f32]) {
        let (k, n) = (self.inputs, self.outputs);
        assert!(x.len() == m * k && dst.len() == m * n, "dense: input or output length");
        match residual {
            Some(r) => {
                assert_eq!(r.len(), m * n, "dense: residual length");
                for (d, r) in dst.chunks_exact_mut(n).zip(r.chunks_exact(n)) {
                    for ((d, r), b) in d.iter_mut().zip(r).zip(&self.bias) {
                        *d = *r + *b;
                    }
                }
            }
            None => {
                for d in dst.chunks_exact_mut(n) {
                    d.copy_from_slice(&self.bias);
                }
            }
        }
        if m == 1 {
            // gemm sends a single row to a GEMV kernel with another summation order; two equal
            // rows take the GEMM kernel, so a 1-token batch rounds like every other batch.
            let x2 = [x, x].concat();
            let mut d2 = [&*dst, &*dst].concat();
            matmul(
                2,
                n,
                k,
                View { data: &x2, rs: k, cs: 1 },
                View { data: &self.w_t, rs: n, cs: 1 },
                &mut d2,
                n,
                true,
                1.0,
                true,
            );
            dst.copy_from_slice(&d2[..n]);
            return;
        }
        matmul(
            m,
            n,
            k,
            View { data: x, rs: k, cs: 1 },
            View { data: &self.w_t, rs: n, cs: 1 },
            dst,
            n,
            true,
            1.0,
            true,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain triple loop in f64.
    fn reference(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
        let mut out = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] =
                    (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum();
            }
        }
        out
    }

    fn data(len: usize, seed: usize) -> Vec<f32> {
        (0..len).map(|i| (((i * 7919 + seed * 104_729) % 1000) as f32 - 500.0) / 250.0).collect()
    }

    #[test]
    fn dense_matches_a_plain_product_with_bias_and_residual() {
        let (m, k, n) = (70, 33, 45);
        let x = data(m * k, 1);
        let w = data(n * k, 2); // [out, in]
        let b = data(n, 3);
        let r = data(m * n, 4);
        let dense = Dense::from_torch(&w, b.clone(), k, n);
        let mut wt = vec![0f32; k * n];
        for o in 0..n {
            for i in 0..k {
                wt[i * n + o] = w[o * k + i];
            }
        }
        let want = reference(m, n, k, &x, &wt);
        let mut got = vec![0f32; m * n];
        dense.forward_into(&x, m, Some(&r), &mut got);
        for i in 0..m * n {
            let exp = want[i] + f64::from(b[i % n]) + f64::from(r[i]);
            assert!((f64::from(got[i]) - exp).abs() < 1e-4, "{i}: {} vs {exp}", got[i]);
        }
        // Stacked layers give the parts' outputs side by side.
        let both =
            Dense::concat(&[dense.clone(), Dense::from_torch(&w[..k * 5], b[..5].to_vec(), k, 5)]);
        let mut cat = vec![0f32; m * (n + 5)];
        both.forward_into(&x, m, None, &mut cat);
        for i in 0..m {
            for j in 0..n + 5 {
                let jj = if j < n { j } else { j - n };
                let exp = want[i * n + jj] + f64::from(b[jj]);
                assert!((f64::from(cat[i * (n + 5) + j]) - exp).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn strided_views_and_scale() {
        // aᵀ read through strides: a is stored [k, m] and viewed as [m, k].
        let (m, n, k) = (9, 6, 11);
        let a_t = data(k * m, 5);
        let b = data(k * n, 6);
        let mut a = vec![0f32; m * k];
        for i in 0..m {
            for p in 0..k {
                a[i * k + p] = a_t[p * m + i];
            }
        }
        let want = reference(m, n, k, &a, &b);
        let mut dst = vec![1f32; m * 8];
        matmul(
            m,
            n,
            k,
            View { data: &a_t, rs: 1, cs: m },
            View { data: &b, rs: n, cs: 1 },
            &mut dst,
            8,
            false,
            0.5,
            false,
        );
        for i in 0..m {
            for j in 0..n {
                assert!((f64::from(dst[i * 8 + j]) - 0.5 * want[i * n + j]).abs() < 1e-4);
            }
            assert_eq!(&dst[i * 8 + n..i * 8 + 8], &[1.0, 1.0], "columns past n untouched");
        }
    }
}
