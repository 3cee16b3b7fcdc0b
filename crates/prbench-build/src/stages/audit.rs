//! Stage 3, `audit`: a judge rates both answers of a pair 1–5 on the four dimensions, with a
//! reason per rating, and says which fits the rubric better — in both orders (chosen as
//! answer 1, then as answer 2), decoded greedily. Replies are read by
//! [`super::audit_parse::parse_audit`]; an unparsed reply is kept with its error, never
//! given a default score.

use prbench_data::dims::Dimension;
use prbench_data::Example;
use prbench_models::{ChatRequest, Generator, TokenStats};
use serde::{Deserialize, Serialize};

use super::audit_parse::{parse_audit, AuditReply};
use super::{generate_batched, StageContext};
use crate::error::BuildError;

/// Where chosen sat in one audit call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOrder {
    /// Chosen was answer 1.
    ChosenFirst,
    /// Chosen was answer 2.
    RejectedFirst,
}

impl AuditOrder {
    /// Both orders, in call order.
    pub const BOTH: [AuditOrder; 2] = [AuditOrder::ChosenFirst, AuditOrder::RejectedFirst];

    /// `chosen_first` / `rejected_first`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOrder::ChosenFirst => "chosen_first",
            AuditOrder::RejectedFirst => "rejected_first",
        }
    }

    /// The judge's label (1 or 2) of chosen.
    pub fn chosen_label(self) -> u8 {
        match self {
            AuditOrder::ChosenFirst => 1,
            AuditOrder::RejectedFirst => 2,
        }
    }
}

/// One audit call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditCall {
    /// Where chosen sat.
    pub order: AuditOrder,
    /// The judge's reply as written (empty when the call failed).
    pub raw: String,
    /// The reply read, when it could be.
    pub reply: Option<AuditReply>,
    /// Why the reply could not be read.
    pub parse_error: Option<String>,
    /// The call's failure (after the engine's retries).
    pub error: Option<String>,
    /// The reply used up its token budget.
    pub truncated: bool,
    /// Prompt and generated tokens.
    pub tokens: TokenStats,
}

impl AuditCall {
    /// `[chosen, rejected]` scores on the four dimensions, from this call's reply.
    pub fn scores(&self) -> Option<[[u8; 4]; 2]> {
        let r = self.reply.as_ref()?;
        let (c, j) = match self.order {
            AuditOrder::ChosenFirst => (0, 1),
            AuditOrder::RejectedFirst => (1, 0),
        };
        Some([
            std::array::from_fn(|d| r.ratings[c][d].score),
            std::array::from_fn(|d| r.ratings[j][d].score),
        ])
    }

    /// Whether the judge said chosen fits better; `None` when unread.
    pub fn picks_chosen(&self) -> Option<bool> {
        self.reply.as_ref().map(|r| r.better == self.order.chosen_label())
    }
}

/// The audit of one pair; one line of `build/audit.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// The example.
    pub example_id: String,
    /// Its subset.
    pub subset: String,
    /// The two calls, chosen first then rejected first.
    pub calls: Vec<AuditCall>,
    /// Chosen's score per dimension (factuality, relevance, helpfulness, rubric fit), the mean
    /// of the two orders; `None` unless both replies were read.
    pub chosen: Option<[f64; 4]>,
    /// Rejected's scores, likewise.
    pub rejected: Option<[f64; 4]>,
}

impl AuditRecord {
    /// Assembles a record from its calls (in [`AuditOrder::BOTH`] order).
    pub fn from_calls(example: &Example, calls: Vec<AuditCall>) -> Self {
        let all: Option<Vec<[[u8; 4]; 2]>> = calls.iter().map(AuditCall::scores).collect();
        let mean = |side: usize| {
            all.as_ref().map(|v| {
                std::array::from_fn(|d| {
                    v.iter().map(|s| f64::from(s[side][d])).sum::<f64>() / v.len() as f64
                })
            })
        };
        Self {
            example_id: example.id.clone(),
            subset: example.subset.clone(),
            chosen: mean(0),
            rejected: mean(1),
            calls,
        }
    }

    /// Both replies were read.
    pub fn parsed(&self) -> bool {
        self.chosen.is_some()
    }
}

/// The audit requests of one pair, in [`AuditOrder::BOTH`] order.
///
/// # Errors
/// Template errors.
pub fn requests_for(
    ctx: &StageContext<'_>,
    example: &Example,
    chosen: &str,
    rejected: &str,
) -> Result<Vec<ChatRequest>, BuildError> {
    AuditOrder::BOTH
        .iter()
        .map(|order| {
            let (a1, a2) = match order {
                AuditOrder::ChosenFirst => (chosen, rejected),
                AuditOrder::RejectedFirst => (rejected, chosen),
            };
            let prompt = ctx.prompts.audit(&example.question, &example.rubric_aspects, a1, a2)?;
            Ok(ChatRequest {
                prompt,
                max_new_tokens: ctx.settings.audit_max_new_tokens,
                temperature: 0.0,
                top_p: 1.0,
                seed: 0,
            })
        })
        .collect()
}

/// Audits each `(example, chosen, rejected)` pair in both orders.
///
/// # Errors
/// Template errors; [`BuildError::BackendShape`].
pub fn run(
    ctx: &StageContext<'_>,
    judge: &dyn Generator,
    pairs: &[(&Example, &str, &str)],
) -> Result<Vec<AuditRecord>, BuildError> {
    let mut requests = Vec::with_capacity(pairs.len() * 2);
    for (ex, chosen, rejected) in pairs {
        requests.extend(requests_for(ctx, ex, chosen, rejected)?);
    }
    ctx.reporter.start("audit", requests.len() as u64);
    let results = generate_batched(judge, &requests, ctx.settings.batch, ctx.reporter);
    ctx.reporter.finish();
    let model = judge.identity().spec;
    let mut results = results?.into_iter();
    let mut out = Vec::with_capacity(pairs.len());
    for (ex, _, _) in pairs {
        let calls = AuditOrder::BOTH
            .iter()
            .map(|&order| {
                let result = results.next().expect("two results per pair");
                match result {
                    Ok(reply) => {
                        let parsed = parse_audit(&reply.text);
                        AuditCall {
                            order,
                            truncated: reply.hit_length_limit(ctx.settings.audit_max_new_tokens),
                            parse_error: parsed.as_ref().err().map(|e| e.to_string()),
                            reply: parsed.ok(),
                            raw: reply.text,
                            error: None,
                            tokens: reply.tokens,
                        }
                    }
                    Err(e) => AuditCall {
                        order,
                        raw: String::new(),
                        reply: None,
                        parse_error: None,
                        error: Some(format!(
                            "`{model}` on example `{}`: {}",
                            ex.id,
                            prbench_models::error::chain(&e)
                        )),
                        truncated: false,
                        tokens: TokenStats::default(),
                    },
                }
            })
            .collect();
        out.push(AuditRecord::from_calls(ex, calls));
    }
    Ok(out)
}

/// Names of the four dimensions in score order, for tables.
pub fn dimension_labels() -> [&'static str; 4] {
    Dimension::ALL.map(|d| d.label())
}
