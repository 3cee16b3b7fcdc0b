//! `--limit N --sample` takes a seeded random sample of N examples per subset: the N with the
//! smallest sha256(seed ‖ id), whatever the input order.

mod common;

use std::collections::BTreeSet;

use common::sample;
use prbench_data::Example;
use prbench_eval::run::{sample_per_subset, select_examples};
use sha2::{Digest, Sha256};

/// The documented draw, computed here from scratch.
fn expected(examples: &[Example], n: usize, seed: u64) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let subsets: BTreeSet<&str> = examples.iter().map(|e| e.subset.as_str()).collect();
    for subset in subsets {
        let mut keyed: Vec<(Vec<u8>, &str)> = examples
            .iter()
            .filter(|e| e.subset == subset)
            .map(|e| {
                let mut h = Sha256::new();
                h.update(seed.to_le_bytes());
                h.update(e.id.as_bytes());
                (h.finalize().to_vec(), e.id.as_str())
            })
            .collect();
        keyed.sort();
        out.extend(keyed.into_iter().take(n).map(|(_, id)| id.to_string()));
    }
    out
}

fn ids(examples: &[Example]) -> BTreeSet<String> {
    examples.iter().map(|e| e.id.clone()).collect()
}

#[test]
fn sample_takes_the_smallest_sha256_keys_per_subset_whatever_the_order() {
    let examples = sample();
    for (n, seed) in [(1, 42), (2, 42), (2, 7), (3, 123_456_789)] {
        let got = sample_per_subset(&examples, n, seed);
        assert_eq!(ids(&got), expected(&examples, n, seed), "n {n}, seed {seed}");
        assert_eq!(got.len(), 3 * n, "n per subset");
        // Input order kept among the chosen.
        let positions: Vec<usize> =
            got.iter().map(|g| examples.iter().position(|e| e.id == g.id).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
        // Reversed and rotated input: the same examples.
        let mut reversed = examples.clone();
        reversed.reverse();
        assert_eq!(ids(&sample_per_subset(&reversed, n, seed)), ids(&got));
        let mut rotated = examples.clone();
        rotated.rotate_left(5);
        assert_eq!(ids(&sample_per_subset(&rotated, n, seed)), ids(&got));
    }
    // Another seed draws another sample (the first 2 of 4 per subset would be the same each time).
    assert_ne!(ids(&sample_per_subset(&examples, 2, 1)), ids(&sample_per_subset(&examples, 2, 2)));
    // Without a sample seed, --limit keeps the first N; a limit above the subset size keeps all.
    assert_eq!(
        ids(&select_examples(&examples, Some(1), None)),
        ids(&prbench_eval::run::limit_per_subset(&examples, Some(1)))
    );
    assert_eq!(select_examples(&examples, Some(10), Some(3)).len(), examples.len());
}
