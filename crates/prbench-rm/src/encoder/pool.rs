//! Sentence vectors from token states: the mean over a sequence's tokens (sentence-transformers
//! `Pooling` with `pooling_mode_mean_tokens`; over packed sequences every token is real, so
//! this is the attention-masked mean), optionally L2-normalised as
//! `torch.nn.functional.normalize` (x / max(‖x‖₂, 1e-12)).

/// One vector per sequence: `states` is `[tokens, width]`, `seqs` the `(start, len)` of each
/// sequence (len ≥ 1); returns `[seqs.len()][width]`.
///
/// # Panics
/// When a sequence lies outside `states` or is empty (a caller bug).
pub fn mean_pool(
    states: &[f32],
    width: usize,
    seqs: &[(usize, usize)],
    normalize: bool,
) -> Vec<Vec<f32>> {
    seqs.iter()
        .map(|&(start, len)| {
            assert!(
                len > 0 && (start + len) * width <= states.len(),
                "mean pool: sequence outside the states"
            );
            let mut v = vec![0f32; width];
            for row in states[start * width..(start + len) * width].chunks_exact(width) {
                v.iter_mut().zip(row).for_each(|(a, x)| *a += *x);
            }
            let n = len as f32;
            v.iter_mut().for_each(|a| *a /= n);
            if normalize {
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
                v.iter_mut().for_each(|a| *a /= norm);
            }
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_and_normalises_per_sequence() {
        // Two sequences of width 2: rows (1,2),(3,4) and (0,−6).
        let states = [1.0, 2.0, 3.0, 4.0, 0.0, -6.0];
        let raw = mean_pool(&states, 2, &[(0, 2), (2, 1)], false);
        assert_eq!(raw, vec![vec![2.0, 3.0], vec![0.0, -6.0]]);
        let unit = mean_pool(&states, 2, &[(0, 2), (2, 1)], true);
        let n = 13f32.sqrt();
        assert_eq!(unit, vec![vec![2.0 / n, 3.0 / n], vec![0.0, -1.0]]);
        assert_eq!(mean_pool(&[0.0, 0.0], 2, &[(0, 1)], true), vec![vec![0.0, 0.0]]);
    }
}
