//! Batching shared by the engines: length-sorted batches ([`by_length`]: sequences of similar
//! length go in one forward pass, so padding stays small, and results come back in input
//! order), and groups of sequences that share a token prefix ([`prefix_groups`]), whose
//! prefix is then computed once.

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
            return Err(ModelError::Engine(format!(
                "a batch of {} gave {} outputs",
                chunk.len(),
                got.len()
            )));
        }
        for (&i, v) in chunk.iter().zip(got) {
            out[i] = Some(v);
        }
    }
    Ok(out.into_iter().map(|v| v.expect("every index is in exactly one chunk")).collect())
}

/// Sequences that share their first `prefix_len` tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixGroup {
    /// Tokens shared by every member.
    pub prefix_len: usize,
    /// Input indices of the members (≥ 2), in the order the grouping met them.
    pub members: Vec<usize>,
}

/// Longest common prefix of two token sequences, in tokens.
pub fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Partitions `seqs` into groups that share a prefix of at least `min_prefix` tokens, choosing
/// the partition that saves the most prefix tokens; returns the groups and the indices left
/// alone (input order). Member i may share at most `limit[i]` tokens (the caller's bound, e.g.
/// so that every member keeps its pooled token and ≥ 1 token after the prefix).
///
/// Method: sequences sorted lexicographically put any set of sequences with a common prefix
/// next to each other, and the common prefix of a run of neighbours is the minimum of their
/// adjacent common prefixes (each capped by both neighbours' limits). A dynamic programme over
/// the sorted order picks the runs maximising Σ (members − 1) × prefix (the tokens not
/// recomputed); runs are cut where the adjacent prefix falls below `min_prefix`, so its cost is
/// O(n log n) comparisons plus O(n × longest run).
///
/// # Panics
/// If `limit.len() != seqs.len()`.
pub fn prefix_groups(
    seqs: &[&[u32]],
    limit: &[usize],
    min_prefix: usize,
) -> (Vec<PrefixGroup>, Vec<usize>) {
    assert_eq!(seqs.len(), limit.len());
    let n = seqs.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| seqs[a].cmp(seqs[b]).then(a.cmp(&b)));
    // adj[k]: what sorted neighbours k and k + 1 may share.
    let adj: Vec<usize> = order
        .windows(2)
        .map(|w| common_prefix(seqs[w[0]], seqs[w[1]]).min(limit[w[0]]).min(limit[w[1]]))
        .collect();
    // best[j]: most tokens saved over the first j sorted items; from[j]: where its last run starts.
    let min_prefix = min_prefix.max(1);
    let mut best = vec![0usize; n + 1];
    let mut from = vec![0usize; n + 1];
    for j in 1..=n {
        best[j] = best[j - 1];
        from[j] = j - 1;
        let mut shared = usize::MAX;
        // Run order[i..j] (≥ 2 items), its prefix the minimum of adj[i..j − 1].
        for i in (0..j - 1).rev() {
            shared = shared.min(adj[i]);
            if shared < min_prefix {
                break;
            }
            let saved = best[i] + (j - 1 - i) * shared;
            if saved > best[j] {
                best[j] = saved;
                from[j] = i;
            }
        }
    }
    let (mut groups, mut alone) = (Vec::new(), Vec::new());
    let mut j = n;
    while j > 0 {
        let i = from[j];
        if j - i == 1 {
            alone.push(order[i]);
        } else {
            let prefix_len = adj[i..j - 1].iter().copied().min().unwrap_or(0);
            groups.push(PrefixGroup { prefix_len, members: order[i..j].to_vec() });
        }
        j = i;
    }
    groups.reverse();
    alone.sort_unstable();
    (groups, alone)
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

    #[test]
    fn prefix_groups_pick_the_runs_that_save_most() {
        // Two pairs sharing 6 tokens each, all four sharing 2; one stranger; a duplicate pair
        // whose limit caps the shared part.
        let a1 = [1, 2, 3, 3, 3, 3, 7];
        let a2 = [1, 2, 3, 3, 3, 3, 8, 9];
        let b1 = [1, 2, 4, 4, 4, 4, 7];
        let b2 = [1, 2, 4, 4, 4, 4, 5];
        let c = [9, 9];
        let d1 = [5, 5, 5, 5, 5];
        let d2 = [5, 5, 5, 5, 5];
        let seqs: Vec<&[u32]> = vec![&b1, &a1, &c, &a2, &b2, &d1, &d2];
        let limit: Vec<usize> = seqs.iter().map(|s| s.len() - 1).collect();
        let (groups, alone) = prefix_groups(&seqs, &limit, 3);
        assert_eq!(
            groups,
            vec![
                PrefixGroup { prefix_len: 6, members: vec![1, 3] },
                PrefixGroup { prefix_len: 6, members: vec![4, 0] },
                PrefixGroup { prefix_len: 4, members: vec![5, 6] },
            ]
        );
        assert_eq!(alone, vec![2]);
        // A minimum above every shared length leaves everything alone.
        let (groups, alone) = prefix_groups(&seqs, &limit, 7);
        assert!(groups.is_empty());
        assert_eq!(alone, (0..7).collect::<Vec<_>>());
        // With a minimum of 2 tokens one group of the four a/b sequences saves 3 × 2 = 6 < 2 × 6.
        let (groups, _) = prefix_groups(&seqs, &limit, 2);
        assert_eq!(groups.len(), 3);
        assert!(prefix_groups(&[], &[], 4).0.is_empty());
    }
}
