//! Length-sorted batching shared by the engines: sequences of similar length go in one forward
//! pass, so padding stays small, and results come back in input order.

use prbench_models::ModelError;

/// Calls `run` with the input indices in groups of at most `max_batch` (≥ 1), taken in order of
/// `lens` (ties by index), and returns its outputs (one per index, in the order it was given) in
/// input order.
///
/// # Errors
/// The first error `run` returns; [`ModelError::Engine`] when `run` returns a different number
/// of outputs than indices.
pub fn by_length<T>(
    lens: &[usize],
    max_batch: usize,
    mut run: impl FnMut(&[usize]) -> Result<Vec<T>, ModelError>,
) -> Result<Vec<T>, ModelError> {
    let mut order: Vec<usize> = (0..lens.len()).collect();
    order.sort_by_key(|&i| (lens[i], i));
    let mut out: Vec<Option<T>> = (0..lens.len()).map(|_| None).collect();
    for chunk in order.chunks(max_batch.max(1)) {
        let got = run(chunk)?;
        if got.len() != chunk.len() {
            return Err(ModelError::Engine(format!("a batch of {} gave {} outputs", chunk.len(), got.len())));
        }
        for (&i, v) in chunk.iter().zip(got) {
            out[i] = Some(v);
        }
    }
    Ok(out.into_iter().map(|v| v.expect("every index is in exactly one chunk")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_length_and_restores_input_order() {
        let lens = [5, 1, 3, 1, 9];
        let mut groups = Vec::new();
        let out = by_length(&lens, 2, |idx| {
            groups.push(idx.to_vec());
            Ok(idx.iter().map(|&i| i * 10).collect())
        })
        .unwrap();
        assert_eq!(groups, vec![vec![1, 3], vec![2, 0], vec![4]]);
        assert_eq!(out, vec![0, 10, 20, 30, 40]);
        assert!(by_length(&lens, 2, |_| Ok(vec![0])).is_err());
    }
}
