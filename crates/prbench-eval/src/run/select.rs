//! Which examples a run evaluates: all, the first N of each subset, or a seeded sample of N
//! per subset.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use prbench_data::Example;

use crate::slots::slot_key;

/// The first `limit` examples of each subset, in order (all when `limit` is `None`):
/// [`prbench_data::select::first_per_subset`], cloned.
pub fn limit_per_subset(examples: &[Example], limit: Option<usize>) -> Vec<Example> {
    let Some(limit) = limit else { return examples.to_vec() };
    prbench_data::select::first_per_subset(examples, Some(limit)).into_iter().cloned().collect()
}

/// A seeded random sample of `n` examples of each subset, in input order: in each subset the
/// `n` examples with the smallest sha256(seed ‖ id) key ([`slot_key`], ties by id). The draw
/// depends only on the seed and the ids, never on the order examples arrive in; since slots
/// alternate in the same key order, a sampled subset keeps chosen balanced between A and B.
pub fn sample_per_subset(examples: &[Example], n: usize, seed: u64) -> Vec<Example> {
    let mut by_subset: HashMap<&str, Vec<([u8; 32], &str)>> = HashMap::new();
    for ex in examples {
        by_subset
            .entry(ex.subset.as_str())
            .or_default()
            .push((slot_key(seed, &ex.id), ex.id.as_str()));
    }
    let mut keep: HashSet<&str> = HashSet::new();
    for keyed in by_subset.values_mut() {
        keyed.sort_unstable();
        keep.extend(keyed.iter().take(n).map(|(_, id)| *id));
    }
    examples.iter().filter(|ex| keep.contains(ex.id.as_str())).cloned().collect()
}

/// The examples a run evaluates: all (`limit` `None`), the first `limit` of each subset, or
/// with `sample_seed` a random sample of `limit` per subset drawn with that seed
/// ([`sample_per_subset`]).
pub fn select_examples(
    examples: &[Example],
    limit: Option<usize>,
    sample_seed: Option<u64>,
) -> Vec<Example> {
    selected_examples(examples, limit, sample_seed).into_owned()
}

/// [`select_examples`], borrowing `examples` when all are evaluated (at full scale they hold
/// ~100 MB of profile text, which a copy would double).
pub fn selected_examples(
    examples: &[Example],
    limit: Option<usize>,
    sample_seed: Option<u64>,
) -> Cow<'_, [Example]> {
    match (limit, sample_seed) {
        (None, _) => Cow::Borrowed(examples),
        (Some(n), Some(seed)) => Cow::Owned(sample_per_subset(examples, n, seed)),
        (limit, None) => Cow::Owned(limit_per_subset(examples, limit)),
    }
}
