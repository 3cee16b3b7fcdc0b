//! Position-bias figures for pairwise judges (PROTOCOL.md §4, "Report position bias").

use serde::{Deserialize, Serialize};

use crate::accuracy::{Tally, TieMode};
use crate::outcome::ItemResult;

/// A response slot in a pairwise prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Slot {
    /// The first response shown.
    A,
    /// The second response shown.
    B,
}

impl Slot {
    /// The other slot.
    pub fn other(self) -> Self {
        match self {
            Self::A => Self::B,
            Self::B => Self::A,
        }
    }
}

/// One pairwise item as position bias sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PositionItem {
    /// Where `chosen` was shown.
    pub chosen_slot: Slot,
    /// The item's result.
    pub result: ItemResult,
    /// The slot the judge picked: `Some(true)` for A, `Some(false)` for B, `None` when the
    /// verdict was a tie, unparsed or an error.
    pub picked_a: Option<bool>,
}

impl PositionItem {
    /// A single-order item, with the picked slot derived from the result: a correct item
    /// picked `chosen_slot`, a wrong one the other slot, any other result none.
    pub fn single_order(chosen_slot: Slot, result: ItemResult) -> Self {
        let picked_chosen = match result {
            ItemResult::Correct => Some(true),
            ItemResult::Wrong => Some(false),
            _ => None,
        };
        let picked_a = picked_chosen.map(|c| c == (chosen_slot == Slot::A));
        PositionItem { chosen_slot, result, picked_a }
    }
}

/// Position-bias figures of a pairwise judge over a set of items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionBias {
    /// Results of the items with `chosen` in slot A.
    pub chosen_in_a: Tally,
    /// Results of the items with `chosen` in slot B.
    pub chosen_in_b: Tally,
    /// Strict accuracy ([`TieMode::Strict`]) over the items with `chosen` in A; `None`
    /// without such items.
    pub accuracy_chosen_in_a: Option<f64>,
    /// Strict accuracy over the items with `chosen` in B; `None` without such items.
    pub accuracy_chosen_in_b: Option<f64>,
    /// Items whose verdict was slot A.
    pub verdicts_a: usize,
    /// Items whose verdict was slot B.
    pub verdicts_b: usize,
    /// `verdicts_a / (verdicts_a + verdicts_b)`: the share of A among parsed verdicts (ties,
    /// unparsed and errors left out); 0.5 means no preference for a slot. `None` without
    /// parsed verdicts.
    pub share_a: Option<f64>,
}

/// Computes the [`PositionBias`] figures of `items`.
pub fn position_bias(items: &[PositionItem]) -> PositionBias {
    let mut chosen_in_a = Tally::default();
    let mut chosen_in_b = Tally::default();
    let (mut verdicts_a, mut verdicts_b) = (0, 0);
    for it in items {
        match it.chosen_slot {
            Slot::A => chosen_in_a.add(it.result),
            Slot::B => chosen_in_b.add(it.result),
        }
        match it.picked_a {
            Some(true) => verdicts_a += 1,
            Some(false) => verdicts_b += 1,
            None => {}
        }
    }
    let parsed = verdicts_a + verdicts_b;
    PositionBias {
        accuracy_chosen_in_a: chosen_in_a.accuracy(TieMode::Strict),
        accuracy_chosen_in_b: chosen_in_b.accuracy(TieMode::Strict),
        chosen_in_a,
        chosen_in_b,
        verdicts_a,
        verdicts_b,
        share_a: (parsed > 0).then(|| verdicts_a as f64 / parsed as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ItemResult::*;

    /// Chosen in A: correct, correct, wrong, unparsed → 2/4 = 0.5; verdicts A, A, B.
    /// Chosen in B: correct, wrong, wrong, tie → 1/4 = 0.25; verdicts B, A, A.
    /// Verdicts: A 4, B 2 → share of A = 4/6.
    #[test]
    fn hand_made_case() {
        let items = [
            PositionItem { chosen_slot: Slot::A, result: Correct, picked_a: Some(true) },
            PositionItem { chosen_slot: Slot::A, result: Correct, picked_a: Some(true) },
            PositionItem { chosen_slot: Slot::A, result: Wrong, picked_a: Some(false) },
            PositionItem { chosen_slot: Slot::A, result: Unparsed, picked_a: None },
            PositionItem { chosen_slot: Slot::B, result: Correct, picked_a: Some(false) },
            PositionItem { chosen_slot: Slot::B, result: Wrong, picked_a: Some(true) },
            PositionItem { chosen_slot: Slot::B, result: Wrong, picked_a: Some(true) },
            PositionItem { chosen_slot: Slot::B, result: Tie, picked_a: None },
        ];
        let pb = position_bias(&items);
        assert_eq!(pb.accuracy_chosen_in_a, Some(0.5));
        assert_eq!(pb.accuracy_chosen_in_b, Some(0.25));
        assert_eq!((pb.verdicts_a, pb.verdicts_b), (4, 2));
        assert_eq!(pb.share_a, Some(4.0 / 6.0));
        assert_eq!(
            pb.chosen_in_a,
            Tally { n: 4, correct: 2, wrong: 1, ties: 0, unparsed: 1, errors: 0 }
        );
        assert_eq!(
            pb.chosen_in_b,
            Tally { n: 4, correct: 1, wrong: 2, ties: 1, unparsed: 0, errors: 0 }
        );
        // The same items built from (slot, result) alone.
        for it in items {
            assert_eq!(PositionItem::single_order(it.chosen_slot, it.result), it);
        }
    }

    #[test]
    fn empty_and_unparsed_only() {
        let pb = position_bias(&[]);
        assert_eq!(
            (pb.accuracy_chosen_in_a, pb.accuracy_chosen_in_b, pb.share_a),
            (None, None, None)
        );
        let pb = position_bias(&[PositionItem::single_order(Slot::B, Error)]);
        assert_eq!(pb.accuracy_chosen_in_a, None);
        assert_eq!(pb.accuracy_chosen_in_b, Some(0.0));
        assert_eq!(pb.share_a, None);
    }
}
