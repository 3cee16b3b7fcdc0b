//! Bidirectional multi-head self-attention over packed sequences (`BertSelfAttention`:
//! softmax(q·kᵀ/√d)·v per head, every query seeing every key of its own sequence).
//!
//! Each (sequence, head) is one work item on the rayon pool: two small GEMMs reading q, k and v
//! in place from the fused projection `[tokens, 3·H]` (q heads, then k, then v), and a softmax
//! over that sequence's keys only. Packing removes padding, so there is no mask: a sequence's
//! scores do not depend on what else is in the batch.

use rayon::prelude::*;

use super::matmul::{matmul, View};
use crate::decoder::fastmath;

const LANES: usize = 16;

/// Softmax of one row in place: max, e^(s − max) (the vectorised [`fastmath::exp`], within 2
/// ulp), then division by the sum.
#[inline]
pub fn softmax_row(x: &mut [f32]) {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l = l.max(*v);
        }
    }
    let max = chunks
        .remainder()
        .iter()
        .fold(lanes.iter().copied().fold(f32::NEG_INFINITY, f32::max), |a, &b| a.max(b));
    let mut sums = [0f32; LANES];
    let mut chunks = x.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for (l, v) in sums.iter_mut().zip(c.iter_mut()) {
            *v = fastmath::exp(*v - max);
            *l += *v;
        }
    }
    let mut sum = sums.iter().sum::<f32>();
    for v in chunks.into_remainder() {
        *v = fastmath::exp(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    x.iter_mut().for_each(|v| *v *= inv);
}

/// Shapes of one attention call.
#[derive(Debug, Clone, Copy)]
pub struct Heads {
    /// Attention heads.
    pub heads: usize,
    /// Width of one head (H = heads · head_dim).
    pub head_dim: usize,
}

/// Self-attention of packed sequences.
///
/// - `qkv`: `[tokens, 3·H]`, row t = token t's q (heads in order), then k, then v.
/// - `seqs`: `(start, len)` of each sequence; they must tile `0..tokens` in order.
/// - `head_major`: scratch of `heads · tokens · head_dim`.
/// - `out`: `[tokens, H]`, the heads' outputs side by side (transformers' context layer,
///   before the output projection).
///
/// # Panics
/// When the buffers or the tiling do not match (a caller bug).
pub fn attention(
    qkv: &[f32],
    seqs: &[(usize, usize)],
    shape: Heads,
    head_major: &mut [f32],
    out: &mut [f32],
) {
    let (nh, d) = (shape.heads, shape.head_dim);
    let h = nh * d;
    let tokens = out.len() / h.max(1);
    assert!(
        qkv.len() == tokens * 3 * h && out.len() == tokens * h && head_major.len() == tokens * h,
        "attention: buffer lengths"
    );
    let mut next = 0;
    for &(start, len) in seqs {
        assert!(start == next && len > 0, "attention: sequences must tile the tokens in order");
        next += len;
    }
    assert_eq!(next, tokens, "attention: sequences must cover every token");
    let scale = 1.0 / (d as f32).sqrt();

    // Item (head, sequence) writes rows start..start+len of head block `head`: the items tile
    // `head_major` in (head, sequence) order, so it splits into their disjoint slices.
    let mut items = Vec::with_capacity(nh * seqs.len());
    let mut rest = &mut *head_major;
    for head in 0..nh {
        for &(start, len) in seqs {
            let (mine, tail) = rest.split_at_mut(len * d);
            items.push((head, start, len, mine));
            rest = tail;
        }
    }
    items.into_par_iter().for_each_init(
        Vec::new,
        |scores: &mut Vec<f32>, (head, start, n, dst)| {
            scores.clear();
            scores.resize(n * n, 0.0);
            let row = start * 3 * h;
            let q = View { data: &qkv[row + head * d..], rs: 3 * h, cs: 1 };
            let kt = View { data: &qkv[row + h + head * d..], rs: 1, cs: 3 * h };
            let v = View { data: &qkv[row + 2 * h + head * d..], rs: 3 * h, cs: 1 };
            matmul(n, n, d, q, kt, scores, n, false, scale, false);
            scores.chunks_exact_mut(n).for_each(softmax_row);
            matmul(n, d, n, View { data: scores, rs: n, cs: 1 }, v, dst, d, false, 1.0, false);
        },
    );

    // [heads, tokens, d] → [tokens, heads·d].
    let hm: &[f32] = head_major;
    out.par_chunks_mut(h * 64).enumerate().for_each(|(c, rows)| {
        for (i, o) in rows.chunks_exact_mut(h).enumerate() {
            let t = c * 64 + i;
            for head in 0..nh {
                o[head * d..(head + 1) * d]
                    .copy_from_slice(&hm[(head * tokens + t) * d..(head * tokens + t + 1) * d]);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// softmax(q·kᵀ/√d)·v of one sequence and head, in f64 loops.
    fn reference(
        qkv: &[f32],
        start: usize,
        len: usize,
        head: usize,
        nh: usize,
        d: usize,
    ) -> Vec<f64> {
        let h = nh * d;
        let at = |t: usize, part: usize, j: usize| {
            f64::from(qkv[(start + t) * 3 * h + part * h + head * d + j])
        };
        let mut out = vec![0f64; len * d];
        for i in 0..len {
            let s: Vec<f64> = (0..len)
                .map(|k| (0..d).map(|j| at(i, 0, j) * at(k, 1, j)).sum::<f64>() / (d as f64).sqrt())
                .collect();
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            for j in 0..d {
                out[i * d + j] = (0..len).map(|k| e[k] / sum * at(k, 2, j)).sum();
            }
        }
        out
    }

    #[test]
    fn matches_per_sequence_reference_and_ignores_neighbours() {
        let (nh, d) = (3, 8);
        let h = nh * d;
        let seqs = [(0, 5), (5, 1), (6, 40), (46, 17)];
        let tokens = 63;
        let qkv: Vec<f32> =
            (0..tokens * 3 * h).map(|i| (((i * 7919) % 1013) as f32 - 506.0) / 300.0).collect();
        let mut out = vec![0f32; tokens * h];
        let mut scratch = vec![0f32; tokens * h];
        attention(&qkv, &seqs, Heads { heads: nh, head_dim: d }, &mut scratch, &mut out);
        for &(start, len) in &seqs {
            for head in 0..nh {
                let want = reference(&qkv, start, len, head, nh, d);
                for i in 0..len {
                    for j in 0..d {
                        let got = f64::from(out[(start + i) * h + head * d + j]);
                        assert!(
                            (got - want[i * d + j]).abs() < 1e-5,
                            "seq {start} head {head} ({i}, {j})"
                        );
                    }
                }
            }
        }
        // The third sequence alone gives the same rows.
        let alone = &qkv[6 * 3 * h..46 * 3 * h];
        let mut out1 = vec![0f32; 40 * h];
        let mut scratch1 = vec![0f32; 40 * h];
        attention(alone, &[(0, 40)], Heads { heads: nh, head_dim: d }, &mut scratch1, &mut out1);
        assert_eq!(&out[6 * h..46 * h], &out1[..]);
    }

    #[test]
    fn softmax_row_sums_to_one() {
        let mut x: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin() * 20.0).collect();
        let orig = x.clone();
        softmax_row(&mut x);
        let max = orig.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f64 = orig.iter().map(|&v| (f64::from(v) - f64::from(max)).exp()).sum();
        for (p, v) in x.iter().zip(&orig) {
            assert!((f64::from(*p) - (f64::from(*v) - f64::from(max)).exp() / sum).abs() < 1e-7);
        }
    }
}
