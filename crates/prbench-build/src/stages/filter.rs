//! Stage 4, `filter`: which pairs are kept, and every reason each dropped pair is dropped.
//!
//! A pair is kept only if all of these hold (defaults from [`BuildSettings`]):
//! 1. both answers are usable: generated, non-empty, not truncated, and not the same text
//!    (always checked, even with `skip_audit`: such a pair is never exported);
//! 2. both are within `max_words` words;
//! 3. the longer has at most `max_length_ratio` times the words of the shorter;
//! 4. both audit replies were read;
//! 5. rubric fit of chosen minus rubric fit of rejected ≥ `min_fit_gap` (means of the two
//!    orders);
//! 6. on each of factuality, relevance and helpfulness, |chosen − rejected| ≤
//!    `max_quality_gap` in each order (not on the means, where a position bias would cancel);
//! 7. the audit picks chosen as the better fit in both orders.
//!
//! With `skip_audit` only check 1 applies ([`crate::settings::SKIP_AUDIT_RULE`] says so in the
//! help, the card, the report and the guide's build page). Pairs failing 1–3 are not sent to the
//! audit (it would be a paid call for a pair that cannot be kept); their reasons list 1–3 only.

use prbench_data::dims::Dimension;
use serde::{Deserialize, Serialize};

use super::answers::{AnswerRecord, AnswerStatus};
use super::audit::{AuditOrder, AuditRecord};
use super::Side;
use crate::settings::BuildSettings;

/// One reason a pair is dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DropReason {
    /// The generator failed on this answer.
    GenerationFailed {
        /// Which answer.
        side: Side,
    },
    /// The answer is empty.
    Empty {
        /// Which answer.
        side: Side,
    },
    /// The answer used up its token budget (`finish_reason: length`).
    Truncated {
        /// Which answer.
        side: Side,
    },
    /// Chosen and rejected are the same text (after trimming): not a pair. Checked even with
    /// `skip_audit` (the loader refuses such rows).
    SameText,
    /// The answer is over the word limit.
    TooLong {
        /// Which answer.
        side: Side,
        /// Its words.
        words: usize,
        /// The limit.
        max: usize,
    },
    /// One answer is much longer than the other.
    LengthRatio {
        /// Words of the longer over words of the shorter.
        ratio: f64,
        /// The limit.
        max: f64,
    },
    /// The audit call failed.
    AuditFailed {
        /// Which order.
        order: AuditOrder,
    },
    /// The audit reply could not be read.
    AuditUnparsed {
        /// Which order.
        order: AuditOrder,
        /// What the reader found wrong.
        detail: String,
    },
    /// Chosen does not fit the rubric clearly better than rejected.
    FitGap {
        /// Rubric fit of chosen minus that of rejected.
        gap: f64,
        /// The minimum.
        min: f64,
    },
    /// The answers differ in general quality.
    QualityGap {
        /// The dimension (`factuality`, `relevance`, `helpfulness`).
        dimension: String,
        /// |chosen − rejected| on it, the larger of the two orders.
        gap: f64,
        /// The maximum.
        max: f64,
    },
    /// The audit said rejected fits better in this order.
    PrefersRejected {
        /// Which order.
        order: AuditOrder,
    },
}

impl DropReason {
    /// A short name for counting tables (`empty`, `fit_gap`, …).
    pub fn code(&self) -> &'static str {
        match self {
            DropReason::GenerationFailed { .. } => "generation_failed",
            DropReason::Empty { .. } => "empty",
            DropReason::Truncated { .. } => "truncated",
            DropReason::SameText => "same_text",
            DropReason::TooLong { .. } => "too_long",
            DropReason::LengthRatio { .. } => "length_ratio",
            DropReason::AuditFailed { .. } => "audit_failed",
            DropReason::AuditUnparsed { .. } => "audit_unparsed",
            DropReason::FitGap { .. } => "fit_gap",
            DropReason::QualityGap { .. } => "quality_gap",
            DropReason::PrefersRejected { .. } => "prefers_rejected",
        }
    }

    /// A sentence for the report.
    pub fn describe(&self) -> String {
        match self {
            DropReason::GenerationFailed { side } => format!("{} generation failed", side.as_str()),
            DropReason::Empty { side } => format!("{} is empty", side.as_str()),
            DropReason::Truncated { side } => {
                format!("{} was truncated at the token budget", side.as_str())
            }
            DropReason::SameText => "chosen and rejected are the same text".into(),
            DropReason::TooLong { side, words, max } => {
                format!("{} has {words} words (limit {max})", side.as_str())
            }
            DropReason::LengthRatio { ratio, max } => {
                format!("length ratio {ratio:.2} (limit {max})")
            }
            DropReason::AuditFailed { order } => format!("audit call {} failed", order.as_str()),
            DropReason::AuditUnparsed { order, detail } => {
                format!("audit reply {} unparsed: {detail}", order.as_str())
            }
            DropReason::FitGap { gap, min } => format!("rubric-fit gap {gap:+.1} (minimum {min})"),
            DropReason::QualityGap { dimension, gap, max } => {
                format!("{dimension} gap {gap:.1} (maximum {max})")
            }
            DropReason::PrefersRejected { order } => {
                format!("audit prefers rejected ({})", order.as_str())
            }
        }
    }
}

/// The filter's decision on one pair; one line of `build/filter.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The example.
    pub example_id: String,
    /// Its subset.
    pub subset: String,
    /// Exported.
    pub kept: bool,
    /// Every reason it is dropped (empty when kept).
    pub reasons: Vec<DropReason>,
}

fn usability(a: &AnswerRecord) -> Option<DropReason> {
    match a.status {
        AnswerStatus::Ok => None,
        AnswerStatus::Empty => Some(DropReason::Empty { side: a.side }),
        AnswerStatus::Truncated => Some(DropReason::Truncated { side: a.side }),
        AnswerStatus::Failed => Some(DropReason::GenerationFailed { side: a.side }),
    }
}

/// Checks 1–3 (everything that needs no audit); empty when the pair may go to the audit.
pub fn pre_audit(
    chosen: &AnswerRecord,
    rejected: &AnswerRecord,
    s: &BuildSettings,
) -> Vec<DropReason> {
    let mut out: Vec<DropReason> = [chosen, rejected].into_iter().filter_map(usability).collect();
    if out.is_empty() && chosen.text.trim() == rejected.text.trim() {
        out.push(DropReason::SameText);
    }
    if !out.is_empty() || s.skip_audit {
        return out;
    }
    for a in [chosen, rejected] {
        if a.words > s.max_words {
            out.push(DropReason::TooLong { side: a.side, words: a.words, max: s.max_words });
        }
    }
    let (long, short) = (chosen.words.max(rejected.words), chosen.words.min(rejected.words));
    let ratio = long as f64 / short.max(1) as f64;
    if ratio > s.max_length_ratio {
        out.push(DropReason::LengthRatio { ratio, max: s.max_length_ratio });
    }
    out
}

/// Checks 4–7 on an audit record.
pub fn post_audit(audit: &AuditRecord, s: &BuildSettings) -> Vec<DropReason> {
    let mut out = Vec::new();
    for call in &audit.calls {
        if call.error.is_some() {
            out.push(DropReason::AuditFailed { order: call.order });
        } else if let Some(detail) = &call.parse_error {
            out.push(DropReason::AuditUnparsed { order: call.order, detail: detail.clone() });
        }
    }
    let (Some(c), Some(r)) = (audit.chosen, audit.rejected) else { return out };
    let fit = Dimension::RubricFit.index();
    let gap = c[fit] - r[fit];
    if gap < s.min_fit_gap {
        out.push(DropReason::FitGap { gap, min: s.min_fit_gap });
    }
    // Per order, not on the means: a judge that rates whichever answer comes first higher
    // would otherwise have its two biases cancel out.
    let per_order: Vec<[[u8; 4]; 2]> = audit.calls.iter().filter_map(|c| c.scores()).collect();
    for d in 0..fit {
        let gap = per_order
            .iter()
            .map(|[c, r]| (f64::from(c[d]) - f64::from(r[d])).abs())
            .fold(0.0, f64::max);
        if gap > s.max_quality_gap {
            out.push(DropReason::QualityGap {
                dimension: Dimension::ALL[d].label().into(),
                gap,
                max: s.max_quality_gap,
            });
        }
    }
    for call in &audit.calls {
        if call.picks_chosen() == Some(false) {
            out.push(DropReason::PrefersRejected { order: call.order });
        }
    }
    out
}

/// The decision on one pair from its answers and, when it was audited, its audit.
pub fn decide(
    chosen: &AnswerRecord,
    rejected: &AnswerRecord,
    audit: Option<&AuditRecord>,
    s: &BuildSettings,
) -> Decision {
    let mut reasons = pre_audit(chosen, rejected, s);
    if reasons.is_empty() && !s.skip_audit {
        match audit {
            Some(a) => reasons.extend(post_audit(a, s)),
            None => reasons.push(DropReason::AuditFailed { order: AuditOrder::ChosenFirst }),
        }
    }
    Decision {
        example_id: chosen.example_id.clone(),
        subset: chosen.subset.clone(),
        kept: reasons.is_empty(),
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::super::audit::AuditCall;
    use super::super::audit_parse::{AuditReply, Rating};
    use super::*;
    use prbench_models::TokenStats;

    fn answer(side: Side, words: usize, status: AnswerStatus) -> AnswerRecord {
        AnswerRecord {
            example_id: "x".into(),
            subset: "s".into(),
            side,
            // `words` words, the first naming the side, so chosen and rejected differ.
            text: (0..words)
                .map(|i| if i == 0 { side.as_str() } else { "w" })
                .collect::<Vec<_>>()
                .join(" "),
            words,
            status,
            posts_shown: 0,
            posts_dropped: 0,
            seed: 0,
            tokens: TokenStats::default(),
            finish_reason: None,
            error: None,
        }
    }

    /// An audit where chosen gets `c` and rejected `r` in both orders, and the judge picks
    /// chosen in the orders listed in `picks`.
    fn audit(c: [u8; 4], r: [u8; 4], picks: [bool; 2]) -> AuditRecord {
        let rate = |s: [u8; 4]| s.map(|score| Rating { score, reason: "r".into() });
        let calls = AuditOrder::BOTH
            .iter()
            .zip(picks)
            .map(|(&order, pick)| {
                let (first, second) =
                    if order == AuditOrder::ChosenFirst { (c, r) } else { (r, c) };
                let better = if pick { order.chosen_label() } else { 3 - order.chosen_label() };
                AuditCall {
                    order,
                    raw: String::new(),
                    reply: Some(AuditReply { ratings: [rate(first), rate(second)], better }),
                    parse_error: None,
                    error: None,
                    truncated: false,
                    tokens: TokenStats::default(),
                }
            })
            .collect();
        AuditRecord::from_calls(&example(), calls)
    }

    fn codes(d: &Decision) -> Vec<&'static str> {
        d.reasons.iter().map(DropReason::code).collect()
    }

    #[test]
    fn a_clean_pair_is_kept() {
        let s = BuildSettings::default();
        let d = decide(
            &answer(Side::Chosen, 60, AnswerStatus::Ok),
            &answer(Side::Rejected, 50, AnswerStatus::Ok),
            Some(&audit([5, 5, 5, 5], [5, 4, 5, 2], [true, true])),
            &s,
        );
        assert!(d.kept, "{:?}", d.reasons);
    }

    #[test]
    fn every_reason_is_listed() {
        let s = BuildSettings::default();
        // Fit gap exactly 2 is kept; 1.5 is not. Quality gap exactly 1 is kept; 2 is not.
        let d = decide(
            &answer(Side::Chosen, 60, AnswerStatus::Ok),
            &answer(Side::Rejected, 60, AnswerStatus::Ok),
            Some(&audit([5, 5, 3, 4], [4, 5, 5, 2], [true, true])),
            &s,
        );
        assert_eq!(codes(&d), ["quality_gap"], "{:?}", d.reasons);
        assert_eq!(
            d.reasons[0],
            DropReason::QualityGap { dimension: "helpfulness".into(), gap: 2.0, max: 1.0 }
        );
        let mut a = audit([5, 5, 5, 4], [5, 5, 5, 2], [true, false]);
        // Make the orders disagree on rubric fit: 4 vs 2 and 3 vs 2 → mean gap 1.5.
        a.calls[1].reply.as_mut().unwrap().ratings[1][3].score = 3;
        let a = AuditRecord::from_calls(&example(), a.calls);
        let d = decide(
            &answer(Side::Chosen, 60, AnswerStatus::Ok),
            &answer(Side::Rejected, 60, AnswerStatus::Ok),
            Some(&a),
            &s,
        );
        assert_eq!(codes(&d), ["fit_gap", "prefers_rejected"]);
        assert_eq!(d.reasons[0], DropReason::FitGap { gap: 1.5, min: 2.0 });
        assert_eq!(d.reasons[1], DropReason::PrefersRejected { order: AuditOrder::RejectedFirst });
    }

    /// The example an audit record names: id `x` in subset `s`, every other field empty.
    fn example() -> prbench_data::Example {
        prbench_data::ExampleBuilder::new("x").subset("s").build()
    }

    #[test]
    fn a_position_biased_quality_rating_does_not_cancel_out() {
        // Answer 1 always gets 5/5/5, answer 2 always 3/3/3: the means are equal, each order
        // has a gap of 2.
        let mut a = audit([5, 5, 5, 5], [3, 3, 3, 1], [true, true]);
        let r = a.calls[1].reply.as_mut().unwrap();
        r.ratings[0] = [5, 5, 5, 1].map(|score| Rating { score, reason: String::new() });
        r.ratings[1] = [3, 3, 3, 5].map(|score| Rating { score, reason: String::new() });
        let a = AuditRecord::from_calls(&example(), a.calls);
        assert_eq!(a.chosen.unwrap()[..3], [4.0, 4.0, 4.0]);
        assert_eq!(a.rejected.unwrap()[..3], [4.0, 4.0, 4.0]);
        let d = decide(
            &answer(Side::Chosen, 60, AnswerStatus::Ok),
            &answer(Side::Rejected, 60, AnswerStatus::Ok),
            Some(&a),
            &BuildSettings::default(),
        );
        assert_eq!(codes(&d), ["quality_gap", "quality_gap", "quality_gap"]);
    }

    #[test]
    fn length_checks_come_before_the_audit() {
        let s = BuildSettings::default();
        // 151/100 > 1.5 and 151 > 100 words; 150/100 = 1.5 is within.
        let long = decide(
            &answer(Side::Chosen, 151, AnswerStatus::Ok),
            &answer(Side::Rejected, 100, AnswerStatus::Ok),
            None,
            &s,
        );
        assert_eq!(codes(&long), ["too_long", "length_ratio"]);
        assert!(pre_audit(
            &answer(Side::Chosen, 99, AnswerStatus::Ok),
            &answer(Side::Rejected, 66, AnswerStatus::Ok),
            &s
        )
        .is_empty());
        assert_eq!(
            codes(&decide(
                &answer(Side::Chosen, 99, AnswerStatus::Ok),
                &answer(Side::Rejected, 65, AnswerStatus::Ok),
                None,
                &s
            )),
            ["length_ratio"]
        );
        let broken = decide(
            &answer(Side::Chosen, 0, AnswerStatus::Empty),
            &answer(Side::Rejected, 80, AnswerStatus::Truncated),
            None,
            &s,
        );
        assert_eq!(codes(&broken), ["empty", "truncated"]);
    }

    #[test]
    fn skip_audit_keeps_usable_pairs_and_never_exports_broken_ones() {
        let s = BuildSettings { skip_audit: true, ..BuildSettings::default() };
        let same = |side| AnswerRecord {
            text: " Same words. ".into(),
            ..answer(side, 2, AnswerStatus::Ok)
        };
        assert_eq!(
            codes(&decide(&same(Side::Chosen), &same(Side::Rejected), None, &s)),
            ["same_text"]
        );
        assert!(
            decide(
                &answer(Side::Chosen, 300, AnswerStatus::Ok),
                &answer(Side::Rejected, 10, AnswerStatus::Ok),
                None,
                &s
            )
            .kept
        );
        let d = decide(
            &answer(Side::Chosen, 0, AnswerStatus::Failed),
            &answer(Side::Rejected, 10, AnswerStatus::Ok),
            None,
            &s,
        );
        assert_eq!(codes(&d), ["generation_failed"]);
    }

    #[test]
    fn an_unparsed_reply_drops_the_pair_without_scores() {
        let s = BuildSettings::default();
        let mut a = audit([5, 5, 5, 5], [5, 5, 5, 1], [true, true]);
        a.calls[1].reply = None;
        a.calls[1].parse_error = Some("missing better fit".into());
        let a = AuditRecord::from_calls(&example(), a.calls);
        assert!(a.chosen.is_none(), "no default score from one order");
        let d = decide(
            &answer(Side::Chosen, 60, AnswerStatus::Ok),
            &answer(Side::Rejected, 60, AnswerStatus::Ok),
            Some(&a),
            &s,
        );
        assert_eq!(codes(&d), ["audit_unparsed"]);
    }
}
