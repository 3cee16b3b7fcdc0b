//! The rows of a training export: their shapes per format, the planner target, and the leakage
//! check every row passes before it is written.

use serde::Serialize;

use prbench_data::{Example, ProfilePost};
use prbench_models::{ChatPrompt, Role};

use super::{Counts, Format};
use crate::condition::Condition;
use crate::leakage;
use crate::planner::parse_plan;
use crate::prompt::Prompts;
use crate::runner::{rm_request, EvalOptions};
use crate::EvalError;

/// One chat message of a row.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The turn's text.
    pub content: String,
}

fn messages(prompt: &ChatPrompt) -> Vec<Message> {
    prompt
        .messages
        .iter()
        .map(|m| Message { role: m.role.as_str(), content: m.content.clone() })
        .collect()
}

fn assistant(content: &str) -> Message {
    Message { role: Role::Assistant.as_str(), content: content.to_string() }
}

/// A `trl-reward` row.
#[derive(Debug, Serialize)]
struct TrlRewardRow<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_id: Option<&'a str>,
    subset: &'a str,
    condition: String,
    chosen: Vec<Message>,
    rejected: Vec<Message>,
}

/// An `openrlhf-reward` row.
#[derive(Debug, Serialize)]
struct OpenRlhfRow<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_id: Option<&'a str>,
    subset: &'a str,
    condition: String,
    prompt: Vec<Message>,
    chosen: Vec<Message>,
    rejected: Vec<Message>,
}

/// A `trl-sft-planner` row.
#[derive(Debug, Serialize)]
struct PlannerRow<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_id: Option<&'a str>,
    subset: &'a str,
    prompt: Vec<Message>,
    completion: Vec<Message>,
}

/// Every string inside `value` (keys excluded), joined by newlines: the text the leakage guard
/// scans for a row.
pub fn all_strings(value: &serde_json::Value) -> String {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Object(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut out);
    out.join("\n")
}

/// The planner SFT target for `example`: its rubric aspect titles, trimmed, as `- ` items one
/// per line (the list form planner-system.txt asks for), checked to parse back through the
/// planner's reply parser to exactly those titles. `None` for an example without aspects.
///
/// # Errors
/// [`EvalError::Evaluation`] naming the example when the titles do not read back as themselves
/// (a title with a line break, a trailing `:`, markdown marks, a repeated title, …).
pub fn planner_target(example: &Example) -> Result<Option<String>, EvalError> {
    let titles: Vec<String> =
        example.rubric_aspects.iter().map(|a| a.aspect.trim().to_string()).collect();
    if titles.is_empty() {
        return Ok(None);
    }
    let target = titles.iter().map(|t| format!("- {t}")).collect::<Vec<_>>().join("\n");
    match parse_plan(&target) {
        Ok(back) if back == titles => Ok(Some(target)),
        got => Err(EvalError::evaluation(format!(
            "example `{}`: its rubric aspect titles {titles:?} do not read back through the planner's reply parser as themselves (got {got:?}), so a planner trained on them would be read differently than taught; fix the titles in the dataset (one line each, no trailing `:`, no markdown, no repeats) or leave the example out with --subset/--limit",
            example.id
        ))),
    }
}

/// One reward row for `ex`, or `None` when the planner's generator failed on it.
pub(super) fn reward_row(
    ex: &Example,
    format: Format,
    opts: &EvalOptions,
    prompts: &Prompts,
    counts: &mut Counts,
) -> Result<Option<String>, EvalError> {
    let condition = opts.condition;
    if opts.inputs.blocked(condition, ex).is_some() {
        counts.skipped_planner_error += 1;
        return Ok(None);
    }
    if opts.inputs.planner_failed(ex) && condition == Condition::Planner {
        counts.planner_failed += 1;
    }
    match condition.empty_material(ex, &opts.inputs) {
        Some(crate::condition::EmptyMaterial::Profile) => counts.empty_profile += 1,
        Some(crate::condition::EmptyMaterial::Rubric) => counts.empty_rubric += 1,
        None => {}
    }
    // The requests eval sends for this example (each already through the leakage guard).
    let chosen = rm_request(ex, &ex.chosen, opts, prompts, None)?.prompt;
    let rejected = rm_request(ex, &ex.rejected, opts, prompts, None)?.prompt;
    let user = |p: &ChatPrompt| -> Result<Message, EvalError> {
        match p.messages.as_slice() {
            [u, _] if u.role == Role::User => {
                Ok(Message { role: u.role.as_str(), content: u.content.clone() })
            }
            _ => Err(EvalError::evaluation(format!(
                "example `{}`: the reward-model prompt is not one user turn and one answer",
                ex.id
            ))),
        }
    };
    let (uc, ur) = (user(&chosen)?, user(&rejected)?);
    if uc != ur {
        return Err(EvalError::evaluation(format!(
            "example `{}`: chosen and rejected were rendered with different user turns",
            ex.id
        )));
    }
    let user_id = ex.user_id.as_deref();
    let (value, line) = match format {
        Format::TrlReward => serialize(&TrlRewardRow {
            id: &ex.id,
            user_id,
            subset: &ex.subset,
            condition: condition.to_string(),
            chosen: messages(&chosen),
            rejected: messages(&rejected),
        }),
        Format::OpenrlhfReward => serialize(&OpenRlhfRow {
            id: &ex.id,
            user_id,
            subset: &ex.subset,
            condition: condition.to_string(),
            prompt: vec![uc],
            chosen: vec![assistant(&chosen.messages[1].content)],
            rejected: vec![assistant(&rejected.messages[1].content)],
        }),
        Format::TrlSftPlanner => unreachable!("planner rows are rendered by planner_row"),
    };
    leakage::check_with(
        ex,
        condition,
        &all_strings(&value),
        &condition.allowed_texts(ex, &opts.inputs),
    )?;
    Ok(Some(line))
}

/// A row as a JSON value (for the leakage scan) and as its JSON line (fields in the struct's
/// order, so `id` comes first).
fn serialize<T: Serialize>(row: &T) -> (serde_json::Value, String) {
    (
        serde_json::to_value(row).expect("rows serialize"),
        serde_json::to_string(row).expect("rows serialize"),
    )
}

/// One planner SFT row for `ex` (its top `k` of `ranked` posts in the prompt), or `None` when
/// it has no rubric aspects.
pub(super) fn planner_row(
    ex: &Example,
    ranked: &[ProfilePost],
    k: usize,
    prompts: &Prompts,
) -> Result<Option<String>, EvalError> {
    let Some(target) = planner_target(ex)? else { return Ok(None) };
    let shown: Vec<&ProfilePost> = ranked.iter().take(k).collect();
    // The prompt eval's planner sends (Planner::request), checked as a `none` input.
    let prompt = prompts.planner(&ex.question, &shown)?;
    let row = PlannerRow {
        id: &ex.id,
        user_id: ex.user_id.as_deref(),
        subset: &ex.subset,
        prompt: messages(&prompt),
        completion: vec![assistant(&target)],
    };
    let mut input = serde_json::to_value(&row).expect("rows serialize");
    if let Some(m) = input.as_object_mut() {
        m.remove("completion");
    }
    leakage::check(ex, Condition::None, &all_strings(&input))?;
    Ok(Some(serde_json::to_string(&row).expect("rows serialize")))
}
