//! How an outcome is scored: a verdict against the slot that held `chosen`, the two orders of a
//! pair combined, and the position-debiased result. The record itself is
//! [`prbench_records::outcome::Outcome`], one line of `outcomes.jsonl`.

use prbench_models::Choice;
use prbench_stats::outcome::ItemResult;

use crate::slots::Slot;

pub use prbench_records::outcome::{write_jsonl, Outcome};

/// Scores one verdict against the slot holding `chosen`.
pub fn judge_result(choice: Choice, chosen_slot: Slot) -> ItemResult {
    match (choice, chosen_slot) {
        (Choice::A, Slot::A) | (Choice::B, Slot::B) => ItemResult::Correct,
        (Choice::A, Slot::B) | (Choice::B, Slot::A) => ItemResult::Wrong,
        (Choice::Tie, _) => ItemResult::Tie,
        (Choice::Unparsed, _) => ItemResult::Unparsed,
    }
}

/// Both-orders result from the two single-order results: unparsed if either is unparsed,
/// correct if both are correct, wrong if either is wrong, otherwise a tie.
pub fn both_orders_result(first: ItemResult, second: ItemResult) -> ItemResult {
    use ItemResult::*;
    match (first, second) {
        (Error, _) | (_, Error) => Error,
        (Unparsed, _) | (_, Unparsed) => Unparsed,
        (Correct, Correct) => Correct,
        (Wrong, _) | (_, Wrong) => Wrong,
        _ => Tie,
    }
}

/// Position-debiased result (PROTOCOL.md §4): with m = log p(A) − log p(B), the judge prefers
/// `chosen` iff m(chosen in A) > m(chosen in B).
pub fn debiased_result(margin_chosen_in_a: f32, margin_chosen_in_b: f32) -> ItemResult {
    ItemResult::from_scores(f64::from(margin_chosen_in_a), f64::from(margin_chosen_in_b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ItemResult::*;

    #[test]
    fn verdicts_score_against_the_chosen_slot() {
        assert_eq!(judge_result(Choice::A, Slot::A), Correct);
        assert_eq!(judge_result(Choice::A, Slot::B), Wrong);
        assert_eq!(judge_result(Choice::B, Slot::B), Correct);
        assert_eq!(judge_result(Choice::Tie, Slot::A), Tie);
        assert_eq!(judge_result(Choice::Unparsed, Slot::B), Unparsed);
    }

    #[test]
    fn both_orders_needs_both_correct() {
        assert_eq!(both_orders_result(Correct, Correct), Correct);
        assert_eq!(both_orders_result(Correct, Wrong), Wrong);
        assert_eq!(both_orders_result(Correct, Tie), Tie);
        assert_eq!(both_orders_result(Unparsed, Correct), Unparsed);
        assert_eq!(both_orders_result(Tie, Wrong), Wrong);
    }

    #[test]
    fn debiased_compares_margins() {
        // A-biased judge: prefers A in both orders but more strongly when chosen is in A.
        assert_eq!(debiased_result(2.0, 0.5), Correct);
        assert_eq!(debiased_result(0.5, 2.0), Wrong);
        assert_eq!(debiased_result(1.0, 1.0), Tie);
    }
}
