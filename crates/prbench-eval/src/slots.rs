//! Per-example slot assignment for pairwise judges (PROTOCOL.md §4).
//!
//! Each example gets a key sha256(seed, id). Within each subset, examples are ordered by
//! (key, id) and alternate A, B, A, … so exactly ⌈n/2⌉ have chosen in slot A. The result
//! depends only on the seed and the set of ids in the subset: never on batch size, thread
//! count or the order examples arrive in.

use std::collections::{BTreeMap, HashMap};

use prbench_data::Example;
use sha2::{Digest, Sha256};

pub use prbench_stats::Slot;

/// sha256(seed as little-endian u64 ‖ id) as a 32-byte key.
pub fn slot_key(seed: u64, id: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(id.as_bytes());
    h.finalize().into()
}

/// Assigns the slot that holds `chosen` for every example, balanced within each subset.
pub fn assign_slots(examples: &[Example], seed: u64) -> HashMap<String, Slot> {
    let mut by_subset: BTreeMap<&str, Vec<([u8; 32], &str)>> = BTreeMap::new();
    for ex in examples {
        by_subset.entry(&ex.subset).or_default().push((slot_key(seed, &ex.id), &ex.id));
    }
    let mut out = HashMap::with_capacity(examples.len());
    for (_, mut keyed) in by_subset {
        keyed.sort();
        for (rank, (_, id)) in keyed.into_iter().enumerate() {
            out.insert(id.to_string(), if rank % 2 == 0 { Slot::A } else { Slot::B });
        }
    }
    out
}
