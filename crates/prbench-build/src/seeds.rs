//! Seeds of the build's sampled calls, from (run seed, example id, side) only, so an answer
//! never depends on batch size, threads, `--limit` or order.

use sha2::{Digest, Sha256};

use crate::stages::Side;

/// The sampling seed of one answer: the first 8 bytes, little-endian, of sha256(run seed as
/// little-endian u64 ‖ example id ‖ 0xFF ‖ side name (`chosen` / `rejected`)). The 0xFF byte
/// cannot occur in UTF-8, so no id/side split collides with another.
pub fn answer_seed(run_seed: u64, example_id: &str, side: Side) -> u64 {
    let mut h = Sha256::new();
    h.update(run_seed.to_le_bytes());
    h.update(example_id.as_bytes());
    h.update([0xFF]);
    h.update(side.as_str().as_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().expect("32-byte digest"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: Python `int.from_bytes(hashlib.sha256((7).to_bytes(8,'little') + b'ex-1' +
    /// b'\xff' + b'chosen').digest()[:8], 'little')`.
    #[test]
    fn answer_seed_matches_the_documented_hash() {
        assert_eq!(answer_seed(7, "ex-1", Side::Chosen), 6_028_404_313_512_746_512);
        assert_ne!(answer_seed(7, "ex-1", Side::Chosen), answer_seed(7, "ex-1", Side::Rejected));
        assert_ne!(answer_seed(7, "ex-1", Side::Chosen), answer_seed(8, "ex-1", Side::Chosen));
    }
}
