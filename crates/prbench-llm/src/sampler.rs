//! A small seeded sampler over logits: greedy, or temperature + nucleus (top-p).
//!
//! Implemented here rather than with llama.cpp's sampler chain so that a (seed, logits)
//! pair maps to the same token on every platform and llama.cpp version.

use std::cmp::Ordering;

/// SplitMix64: a tiny, well-mixed 64-bit PRNG; deterministic for a given seed.
#[derive(Debug, Clone)]
pub(super) struct SplitMix64(u64);

impl SplitMix64 {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub(super) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Index of the largest logit (lowest index on ties; NaN never wins).
pub(super) fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    let mut best_v = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v > best_v {
            best = i;
            best_v = v;
        }
    }
    best
}

/// Samples an index from softmax(logits / temperature) restricted to the smallest set of
/// most probable tokens whose mass reaches `top_p` (values outside (0, 1) mean no cut).
/// `temperature` must be > 0.
pub(super) fn sample_top_p(
    logits: &[f32],
    temperature: f32,
    top_p: f32,
    rng: &mut SplitMix64,
) -> usize {
    let t = f64::from(temperature);
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let mut probs: Vec<(usize, f64)> = logits
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            let p = ((l as f64 - max) / t).exp();
            (i, if p.is_finite() { p } else { 0.0 })
        })
        .collect();
    let total: f64 = probs.iter().map(|p| p.1).sum();
    if total.is_nan() || total <= 0.0 {
        return argmax(logits);
    }
    // Descending probability, ascending index on ties: a total order, so the result does not
    // depend on the sort algorithm.
    let desc = |a: &(usize, f64), b: &(usize, f64)| {
        b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal).then(a.0.cmp(&b.0))
    };
    let kept: &[(usize, f64)] = if top_p > 0.0 && top_p < 1.0 {
        let target = f64::from(top_p) * total;
        let n = probs.len();
        // Grow a sorted head until it holds `top_p` of the mass: exact nucleus without
        // sorting the whole vocabulary in the common case.
        let mut k = 64.min(n);
        loop {
            if k < n {
                probs.select_nth_unstable_by(k - 1, desc);
            }
            probs[..k].sort_by(desc);
            let mut acc = 0.0;
            let mut cut = None;
            for (j, p) in probs[..k].iter().enumerate() {
                acc += p.1;
                if acc >= target {
                    cut = Some(j + 1);
                    break;
                }
            }
            match cut {
                Some(c) => break &probs[..c],
                None if k == n => break &probs[..],
                None => k = (k * 4).min(n),
            }
        }
    } else {
        &probs[..]
    };
    let mass: f64 = kept.iter().map(|p| p.1).sum();
    let mut u = rng.next_f64() * mass;
    for p in kept {
        if u < p.1 {
            return p.0;
        }
        u -= p.1;
    }
    kept.iter().rev().find(|p| p.1 > 0.0).map_or_else(|| argmax(logits), |p| p.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_ties_and_nan() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, f32::NAN]), 1);
    }

    #[test]
    fn seeded_sampling_reproduces() {
        let logits: Vec<f32> = (0..1000).map(|i| ((i * 37 % 101) as f32) / 10.0).collect();
        let draw = |seed| {
            let mut rng = SplitMix64::new(seed);
            (0..50).map(|_| sample_top_p(&logits, 0.8, 0.9, &mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn tiny_top_p_is_greedy() {
        let logits = [0.0f32, 5.0, 1.0, 4.9];
        let mut rng = SplitMix64::new(1);
        for _ in 0..20 {
            assert_eq!(sample_top_p(&logits, 1.0, 1e-6, &mut rng), 1);
        }
    }

    #[test]
    fn nucleus_excludes_tail() {
        // Two tokens hold ~all the mass; the others are never drawn at top_p 0.9.
        let mut logits = vec![-20.0f32; 500];
        logits[10] = 5.0;
        logits[20] = 5.0;
        let mut rng = SplitMix64::new(3);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.insert(sample_top_p(&logits, 1.0, 0.9, &mut rng));
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![10, 20]);
    }
}
