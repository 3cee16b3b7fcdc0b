//! The resampling loop of [`super::bootstrap_distributions`] (step 2 of the
//! [procedure](super)), with the same draws and sums as the plain loop
//!
//! ```text
//! for item in 0..n_s { let r = group[rng.random_range(0..n_s)]; num += r.num; den += r.den; }
//! ```
//!
//! and about three times faster, bit for bit identical:
//!
//! - **Draws.** For `n_s ≤ u32::MAX`, rand 0.9's `random_range(0..n_s)` on `usize` is
//!   `UniformInt::<u32>::sample_single_inclusive(0, n_s − 1)` (`rand-0.9.5/src/distr/uniform_int.rs`,
//!   the default biased Canon method): with `range = n_s` and one 32-bit word `w`,
//!   `(hi, lo) = w·range` split into its high and low 32 bits; the index is `hi`, except when
//!   `lo > 2³² − range`, where a second word `w2` is read and the index is `hi + 1` if
//!   `lo + ⌊w2·range / 2³²⌋` overflows 32 bits. The words are `ChaCha8Rng`'s `next_u32`
//!   words, which are its core's blocks in order: [`Draws`] takes them 64 at a time from
//!   `ChaCha8Core::generate` (`ChaCha8Rng` is a `BlockRng` over that core, seeded alike),
//!   without `BlockRng`'s per-word call. Strata larger than `u32::MAX` items go through
//!   `random_range` itself.
//! - **Sums.** Accuracy items are `(num, den)` in {0, ½, 1} (and cluster sums of them, see
//!   [`super::cluster_sums`]). When every `num` and `den` of a stratum is a non-negative
//!   multiple of ½ and the stratum's size times its largest value in half-units is at most
//!   `u32::MAX`, every partial sum of its draws is `k/2` with `k < 2³²`, which an f64 holds
//!   exactly, so the f64 loop never rounds and its sums equal integer sums of half-units,
//!   halved. [`Resampler`] adds those, `num` in the high and `den` in the low 32 bits of one
//!   `u64` (neither can carry into the other under that bound). Any other value (e.g.
//!   [`crate::accuracy::Ratio::from_value`] scores) is summed in f64 in draw order, as the
//!   plain loop does.

use rand::rand_core::block::BlockRngCore;
use rand::{Rng, SeedableRng};
use rand_chacha::{ChaCha8Core, ChaCha8Rng};

use crate::accuracy::Ratio;

/// The generator's 32-bit words in stream order, a core block (64 words) at a time.
struct Draws {
    core: ChaCha8Core,
    block: <ChaCha8Core as BlockRngCore>::Results,
    next: usize,
}

impl Draws {
    fn new(seed: u64) -> Self {
        let block = <ChaCha8Core as BlockRngCore>::Results::default();
        let next = block.as_ref().len();
        Draws { core: ChaCha8Core::seed_from_u64(seed), block, next }
    }

    #[inline]
    fn word(&mut self) -> u32 {
        let words = self.block.as_ref();
        if self.next == words.len() {
            self.core.generate(&mut self.block);
            self.next = 0;
        }
        let w = self.block.as_ref()[self.next];
        self.next += 1;
        w
    }

    /// `rng.random_range(0..n)` for `1 ≤ n ≤ u32::MAX` (see the module docs).
    #[inline]
    fn below(&mut self, n: u32) -> usize {
        let m = u64::from(self.word()) * u64::from(n);
        let (mut index, lo) = ((m >> 32) as u32, m as u32);
        if lo > n.wrapping_neg() {
            let hi2 = ((u64::from(self.word()) * u64::from(n)) >> 32) as u32;
            if lo.checked_add(hi2).is_none() {
                index += 1;
            }
        }
        index as usize
    }
}

/// `x` as a count of half-units when it is a non-negative multiple of ½ below 2³¹.
fn half_units(x: f64) -> Option<u64> {
    let h = x * 2.0;
    (h >= 0.0 && h <= f64::from(u32::MAX) && h.fract() == 0.0).then_some(h as u64)
}

/// A stratum's items as `num` half-units << 32 | `den` half-units, when they are half-units
/// and `len × largest ≤ u32::MAX` (see the module docs).
fn packed(g: &[Ratio]) -> Option<Vec<u64>> {
    let units: Vec<(u64, u64)> =
        g.iter().map(|r| Some((half_units(r.num)?, half_units(r.den)?))).collect::<Option<_>>()?;
    let largest = units.iter().map(|&(a, b)| a.max(b)).max().unwrap_or(0);
    (largest.checked_mul(g.len() as u64)? <= u64::from(u32::MAX))
        .then(|| units.iter().map(|&(a, b)| a << 32 | b).collect())
}

/// How the strata's draws are summed.
enum Sums {
    /// Every stratum [`packed`].
    Packed(Vec<Vec<u64>>),
    /// Some stratum is not: f64 sums in draw order.
    Float,
}

/// Draws the resamples of [`super::bootstrap_distributions`] one at a time.
pub(super) struct Resampler<'a> {
    groups: &'a [Vec<Ratio>],
    sums: Sums,
    /// `None` when a stratum has more than `u32::MAX` items: draws then go through
    /// `random_range` on `rng` itself.
    draws: Option<Draws>,
    rng: ChaCha8Rng,
}

impl<'a> Resampler<'a> {
    /// A resampler of `groups` (each non-empty) seeded with `seed`.
    pub(super) fn new(groups: &'a [Vec<Ratio>], seed: u64) -> Self {
        let packed: Option<Vec<Vec<u64>>> = groups.iter().map(|g| packed(g)).collect();
        let small = groups.iter().all(|g| u32::try_from(g.len()).is_ok());
        Resampler {
            groups,
            sums: packed.map_or(Sums::Float, Sums::Packed),
            draws: small.then(|| Draws::new(seed)),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The next resample's per-stratum `(Σ num, Σ den)`, stratum `s` in `out[s]`.
    pub(super) fn resample(&mut self, out: &mut [(f64, f64)]) {
        let Some(draws) = self.draws.as_mut() else {
            for (g, sum) in self.groups.iter().zip(out.iter_mut()) {
                let (mut num, mut den) = (0.0, 0.0);
                for _ in 0..g.len() {
                    let r = g[self.rng.random_range(0..g.len())];
                    num += r.num;
                    den += r.den;
                }
                *sum = (num, den);
            }
            return;
        };
        match &self.sums {
            Sums::Packed(packed) => {
                for (g, sum) in packed.iter().zip(out.iter_mut()) {
                    let n = g.len() as u32;
                    let mut total = 0u64;
                    for _ in 0..n {
                        total += g[draws.below(n)];
                    }
                    // Both halves below 2³²: exact as f64, and halving is exact.
                    *sum = ((total >> 32) as f64 * 0.5, (total & u64::from(u32::MAX)) as f64 * 0.5);
                }
            }
            Sums::Float => {
                for (g, sum) in self.groups.iter().zip(out.iter_mut()) {
                    let n = g.len() as u32;
                    let (mut num, mut den) = (0.0, 0.0);
                    for _ in 0..n {
                        let r = g[draws.below(n)];
                        num += r.num;
                        den += r.den;
                    }
                    *sum = (num, den);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain loop of the module docs: the definition the fast paths must reproduce.
    fn reference(groups: &[Vec<Ratio>], seed: u64, resamples: usize) -> Vec<Vec<(f64, f64)>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..resamples)
            .map(|_| {
                groups
                    .iter()
                    .map(|g| {
                        let (mut num, mut den) = (0.0, 0.0);
                        for _ in 0..g.len() {
                            let r = g[rng.random_range(0..g.len())];
                            num += r.num;
                            den += r.den;
                        }
                        (num, den)
                    })
                    .collect()
            })
            .collect()
    }

    fn fast(groups: &[Vec<Ratio>], seed: u64, resamples: usize) -> Vec<Vec<(f64, f64)>> {
        let mut r = Resampler::new(groups, seed);
        (0..resamples)
            .map(|_| {
                let mut out = vec![(f64::NAN, f64::NAN); groups.len()];
                r.resample(&mut out);
                out
            })
            .collect()
    }

    /// Items from a small LCG: `num` in {0, ½, 1} (or `odd` values), `den` in {0, 1}.
    fn items(n: usize, state: &mut u64, odd: bool) -> Vec<Ratio> {
        (0..n)
            .map(|_| {
                *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let k = (*state >> 33) % 4;
                let num =
                    if odd { (k as f64) * 0.3 + 0.1 } else { [0.0, 0.5, 1.0, 0.0][k as usize] };
                Ratio { num, den: if k == 3 { 0.0 } else { 1.0 } }
            })
            .collect()
    }

    fn bits(v: &[Vec<(f64, f64)>]) -> Vec<Vec<(u64, u64)>> {
        v.iter().map(|r| r.iter().map(|(a, b)| (a.to_bits(), b.to_bits())).collect()).collect()
    }

    #[test]
    fn equals_the_plain_loop_on_accuracy_items_and_on_arbitrary_values() {
        let mut state = 7;
        for (sizes, odd) in
            [(vec![767, 989, 1074], false), (vec![1, 2, 3, 50], false), (vec![10, 333], true)]
        {
            let groups: Vec<Vec<Ratio>> =
                sizes.iter().map(|&n| items(n, &mut state, odd)).collect();
            let r = Resampler::new(&groups, 0);
            assert_eq!(
                matches!(r.sums, Sums::Packed(_)),
                !odd,
                "the test must cover both sum paths"
            );
            for seed in [0, 42, u64::MAX] {
                assert_eq!(
                    bits(&fast(&groups, seed, 300)),
                    bits(&reference(&groups, seed, 300)),
                    "sizes {sizes:?} seed {seed}"
                );
            }
        }
    }

    /// A stratum of n = 1,000,003 items takes the second word on about n/2³² of its draws
    /// (`lo > 2³² − n`; never for a power of two, whose `lo` is a multiple of n), some 230
    /// times per resample, and about half of those add one to the index: a wrong second-word
    /// rule shifts every later draw.
    #[test]
    fn equals_the_plain_loop_where_a_draw_takes_a_second_word() {
        let n = 1_000_003;
        let mut state = 11;
        let groups = vec![items(n as usize, &mut state, false), items(5, &mut state, false)];
        let mut draws = Draws::new(3);
        let mut second = 0;
        for _ in 0..n {
            let before = draws.next;
            draws.below(n);
            let len = draws.block.as_ref().len();
            second += usize::from((draws.next + len - before) % len == 2);
        }
        assert!(second > 100, "only {second} draws took a second word");
        assert_eq!(bits(&fast(&groups, 3, 2)), bits(&reference(&groups, 3, 2)));
    }

    #[test]
    fn half_units_take_only_exact_non_negative_halves() {
        assert_eq!(half_units(0.0), Some(0));
        assert_eq!(half_units(-0.0), Some(0));
        assert_eq!(half_units(0.5), Some(1));
        assert_eq!(half_units(3.5), Some(7));
        assert_eq!(half_units(f64::from(u32::MAX) / 2.0), Some(u64::from(u32::MAX)));
        for x in [0.25, 0.1, -0.5, f64::from(u32::MAX), f64::NAN, f64::INFINITY] {
            assert_eq!(half_units(x), None, "{x}");
        }
    }

    /// Packing stops where a stratum's sum could carry from `den` into `num`.
    #[test]
    fn strata_pack_only_while_their_sums_fit_32_bits() {
        let r = |num, den| Ratio { num, den };
        assert_eq!(
            packed(&[r(1.0, 1.0), r(0.5, 1.0), r(0.0, 0.0)]),
            Some(vec![2 << 32 | 2, 1 << 32 | 2, 0])
        );
        // 3 items of at most 2³¹ − 1 half-units: 3·(2³¹ − 1) > 2³² − 1.
        let big = f64::from(u32::MAX / 2) / 2.0;
        assert_eq!(packed(&[r(big, 1.0), r(0.0, 1.0)]).map(|v| v.len()), Some(2));
        assert_eq!(packed(&[r(big, 1.0), r(0.0, 1.0), r(0.0, 1.0)]), None);
        assert_eq!(packed(&[r(0.3, 1.0)]), None);
    }

    /// Strata whose sums would not fit take the f64 path and still equal the plain loop.
    #[test]
    fn large_values_take_the_float_path() {
        let groups = vec![vec![
            Ratio { num: 1e9, den: 1.0 },
            Ratio { num: 3e9, den: 1.0 },
            Ratio { num: 0.5, den: 0.0 },
        ]];
        assert!(matches!(Resampler::new(&groups, 5).sums, Sums::Float));
        assert_eq!(bits(&fast(&groups, 5, 100)), bits(&reference(&groups, 5, 100)));
    }
}
