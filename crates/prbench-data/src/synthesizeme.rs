//! `synthesizeme:DIR[#SPLIT]`: SynthesizeMe's PersonalRewardBench (Ryan et al., "SynthesizeMe!
//! Inducing Persona-Guided Prompts for Personalized Reward Models in LLMs", ACL 2025, arXiv
//! 2506.05598; code github.com/SALT-NLP/SynthesizeMe), the Hugging Face datasets
//! `MichaelR207/chatbot_arena_personalized_0125` and `MichaelR207/prism_personalized_0125`,
//! mapped onto the PRB schema. These examples are not Personalized-RewardBench data: the
//! dataset's `kind` is [`KIND_SYNTHESIZEME`], so reports say so.
//!
//! # Layout
//!
//! `DIR` is one dataset's folder (a download of one of the two repos, holding `data/`), or a
//! folder holding several such folders (e.g. `chatbot_arena_personalized_0125/` and
//! `prism_personalized_0125/`). Each dataset is one subset, named after its folder with a
//! trailing `_personalized_<digits>` removed: `chatbot_arena`, `prism` (other folder names are
//! kept as they are). A Hugging Face cache snapshot (`…/datasets--ORG--NAME/snapshots/<commit>`,
//! as `prbench data fetch` leaves it) is named after the repo's `NAME` instead of the commit.
//! Its files are `data/<SPLIT>-*.parquet`, read in name order.
//!
//! The Hugging Face splits (`train`, `validation`, `test`; default `test`) hold disjoint sets of
//! users. Inside each, every row also has a per-user `split` column (`train`, `val`, `test`):
//! the pairs each user contributed to their own training, validation and test data. prbench
//! evaluates one Hugging Face split (`#SPLIT`); within it:
//!
//! - a row whose `split` is `test` becomes one example;
//! - a user's `train` rows become that user's history: the profile of each of their examples,
//!   and the structured pairs [`load_synthesizeme_with_history`] returns (for personalized
//!   reward models, e.g. `prbench train bt --pairs history`);
//! - `val` rows are read and validated but not used (SynthesizeMe tunes its prompts on them;
//!   prbench has no such step).
//!
//! A user with no `train` rows gets an empty profile (counted and warned about, like any empty
//! profile).
//!
//! # Mapping
//!
//! Columns read (other columns, such as `chosen_score`, `dataset`, the `prediction_*` and
//! `reasoning_*` columns and `agreement`, are neither read nor type-checked):
//!
//! | column | type | use |
//! |---|---|---|
//! | `conversation_id`, `user_id` | string, non-empty | the example id; `user_id` → [`Example::user_id`] |
//! | `context` | list of struct `{role, content}` | the conversation up to the answers; its last message must be the user's, with non-empty content |
//! | `chosen`, `rejected` | struct `{role, content}`, role `model` or `assistant` | `chosen`, `rejected` (the content; non-empty) |
//! | `split` | string, `train` / `val` / `test` | see above |
//! | `type` | string (optional) | `category` (absent, null or empty: the subset name) |
//! | `turns` | integer (optional) | checked, not used |
//! | `flip` | boolean (optional) | checked, not used: SynthesizeMe's loader uses it to put `chosen` first or second when it shows the pair to a judge; prbench draws the slot itself from (seed, example id), PROTOCOL.md §4 |
//!
//! Per `test` row of subset `S`:
//!
//! | PRB field | from |
//! |---|---|
//! | `id` | `"{user_id}-{conversation_id}-{n}"`, `n` = how many rows of the same user and conversation (any `split`) came before it in the files of the split, from 0 (one conversation can give several pairs) |
//! | `subset` | `S` |
//! | `question` | the last `context` message alone when `context` has one message; else the earlier messages as a labelled transcript above it ([`crate::dialogue`]; roles `user` → `User:`, `model`/`assistant` → `Assistant:`, `system` → `System:`) |
//! | `chosen`, `rejected` | `chosen.content`, `rejected.content` |
//! | `profile` | the user's `train` rows in file order, row `k` (0-based) as post `id = "{k+1}"`, `category` = that row's category, `text = "Q: {question}\nPreferred: {chosen}\nNot preferred: {rejected}"` ([`crate::psoups::history_text`], the question rendered as above) |
//! | `category` | `type`, else `S` |
//! | `rubric_aspects`, `narrative` | empty: the dataset has no scoring standard besides the label, so the `oracle` condition has nothing to show and is refused for it |
//! | `user_id` | `user_id` |
//!
//! Errors name the file, the 1-based parquet row and the field path (e.g. `context[2].role`,
//! `chosen.content`); a required column missing from a file is reported for the whole file.
//!
//! # What was and was not confirmed
//!
//! Confirmed from SynthesizeMe's public loader (`synthesizeme/datasets/dataset.py`, the helpers
//! in `synthesizeme/utils/`, and the row printed in `examples/prism.ipynb`): the two repo ids;
//! the columns `conversation_id`, `user_id`, `context` (list of `{content, role}`), `chosen` and
//! `rejected` (`{content, role}`, role `model` in the PRISM row), `turns`, `type` (e.g. `values
//! guided`), `split` (`train`/`val`/`test`, grouped per user after concatenating every Hugging
//! Face split) and `flip` (bool; `True` puts `chosen` first); and the names of the columns the
//! loader drops. Not confirmed (the released parquet files themselves were not read here): the exact
//! parquet file names (`data/<split>-*.parquet` is the Hugging Face default for these repos), the
//! Arrow types of each column, whether any `context` holds roles other than `user`,
//! `assistant`/`model`, the meaning of `turns`, the values of `type` in the Chatbot Arena data,
//! and whether `conversation_id` is a string there too (an integer id is refused with a message
//! naming the column).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::dialogue::{render_question, Speaker, ROLES};
use crate::error::DataError;
use crate::json_rows::RowCtx;
use crate::load::{select_subsets, sorted_entries, RowShape};
use crate::parquet_values::{visit_parquet_columns, Projection};
use crate::psoups::{history_text, HistoryPair, RowHistory};
use crate::rows::{finish, ContentHash, RawRow};
use crate::schema::{Dataset, Example, ProfilePost};

/// Dataset `kind` of SynthesizeMe data.
pub const KIND_SYNTHESIZEME: &str = "synthesizeme";

/// The Hugging Face splits, as `synthesizeme:DIR#SPLIT` names them.
pub const SYNTHESIZEME_SPLITS: [&str; 3] = ["train", "validation", "test"];

/// The Hugging Face split read when the spec names none.
pub const DEFAULT_SPLIT: &str = "test";

/// The values of the per-user `split` column.
pub const USER_SPLITS: [&str; 3] = ["train", "val", "test"];

/// Columns every file must have.
const REQUIRED: [&str; 6] =
    ["conversation_id", "user_id", "context", "chosen", "rejected", "split"];

/// Columns read and checked when present.
const OPTIONAL: [&str; 3] = ["type", "turns", "flip"];

/// Splits `DIR[#SPLIT]` (the part after `synthesizeme:`) into the directory and the Hugging
/// Face split (default [`DEFAULT_SPLIT`]; any case); `spec` is the full spec, for messages.
///
/// # Errors
/// [`DataError::BadSpec`] for an empty directory or a split not in [`SYNTHESIZEME_SPLITS`].
pub fn parse_spec(rest: &str, spec: &str) -> Result<(PathBuf, String), DataError> {
    let bad = |detail: String| DataError::BadSpec { spec: spec.to_string(), detail };
    let (dir, split) = match rest.rsplit_once('#') {
        Some((dir, split)) => (dir, split.trim().to_ascii_lowercase()),
        None => (rest, DEFAULT_SPLIT.to_string()),
    };
    if !SYNTHESIZEME_SPLITS.contains(&split.as_str()) {
        return Err(bad(format!(
            "unknown SynthesizeMe split `{}`; write synthesizeme:DIR#SPLIT with SPLIT one of {} (default {DEFAULT_SPLIT})",
            rest.rsplit_once('#').map_or("", |(_, s)| s),
            SYNTHESIZEME_SPLITS.join(", ")
        )));
    }
    if dir.trim().is_empty() {
        return Err(bad(
            "no directory given; write synthesizeme:DIR or synthesizeme:DIR#SPLIT".into()
        ));
    }
    Ok((PathBuf::from(dir), split))
}

/// The subset name of a dataset folder: the name without a trailing `_personalized_<digits>`
/// (`chatbot_arena_personalized_0125` → `chatbot_arena`), or the name itself.
pub fn dataset_name(folder: &str) -> String {
    if let Some((head, tail)) = folder.rsplit_once('_') {
        if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit()) {
            if let Some(name) = head.strip_suffix("_personalized").filter(|n| !n.is_empty()) {
                return name.to_string();
            }
        }
    }
    folder.to_string()
}

/// The dataset name of folder `path`: its name, or for a Hugging Face cache snapshot
/// (`…/datasets--ORG--NAME/snapshots/<commit>`, where `prbench data fetch` puts the data) the
/// repo's `NAME`.
fn folder_name(path: &Path) -> Option<String> {
    let own = path.file_name()?.to_string_lossy().into_owned();
    let parent = path.parent()?;
    if parent.file_name().is_some_and(|n| n == "snapshots") {
        let repo = parent.parent()?.file_name()?.to_string_lossy().into_owned();
        if let Some(name) = repo.strip_prefix("datasets--").and_then(|r| r.rsplit("--").next()) {
            return Some(name.to_string());
        }
    }
    Some(own)
}

/// One dataset folder's files of the split.
struct Source {
    subset: String,
    /// The folder (for messages).
    entry: String,
    /// (path, hash name)
    files: Vec<(PathBuf, String)>,
}

/// `data/<split>-*.parquet` in `folder`, hash names prefixed with `prefix`.
fn split_files(
    folder: &Path,
    prefix: &str,
    split: &str,
) -> Result<Vec<(PathBuf, String)>, DataError> {
    let want = format!("{split}-");
    Ok(sorted_entries(&folder.join("data"))?
        .into_iter()
        .filter(|(f, p)| {
            f.starts_with(&want) && f.to_ascii_lowercase().ends_with(".parquet") && p.is_file()
        })
        .map(|(f, p)| (p, format!("{prefix}data/{f}")))
        .collect())
}

/// The dataset folders under `dir` (itself, or its children that hold `data/`), with their
/// files of `split`, in subset-name order.
fn discover(dir: &Path, split: &str, source: &str) -> Result<Vec<Source>, DataError> {
    let mut sources: Vec<Source> = Vec::new();
    if dir.join("data").is_dir() {
        let name = std::fs::canonicalize(dir)
            .ok()
            .and_then(|p| folder_name(&p))
            .unwrap_or_else(|| "synthesizeme".into());
        let files = split_files(dir, "", split)?;
        if !files.is_empty() {
            sources.push(Source {
                subset: dataset_name(&name),
                entry: dir.display().to_string(),
                files,
            });
        }
    } else {
        for (name, path) in sorted_entries(dir)? {
            if !path.join("data").is_dir() {
                continue;
            }
            let files = split_files(&path, &format!("{name}/"), split)?;
            if files.is_empty() {
                continue;
            }
            let subset = dataset_name(&name);
            if let Some(prev) = sources.iter().find(|s| s.subset == subset) {
                return Err(DataError::DuplicateSubset {
                    source_name: source.to_string(),
                    subset,
                    first: prev.entry.clone(),
                    second: format!("{name}/"),
                });
            }
            sources.push(Source { subset, entry: format!("{name}/"), files });
        }
    }
    sources.sort_by(|a, b| a.subset.cmp(&b.subset));
    Ok(sources)
}

/// One parsed row.
struct Row {
    conversation_id: String,
    user_id: String,
    question: String,
    chosen: String,
    rejected: String,
    split: &'static str,
    category: Option<String>,
    file: String,
    row: usize,
}

/// A `{role, content}` answer (`chosen` or `rejected`): role `model` or `assistant`, non-empty
/// content.
fn answer(ctx: RowCtx, obj: &Map<String, Value>, key: &str) -> Result<String, DataError> {
    let v = obj.get(key).ok_or_else(|| ctx.missing(key))?;
    let o = ctx.object(v, key)?;
    let role_path = format!("{key}.role");
    let role = ctx.string(o, "role", &role_path)?;
    if Speaker::from_role(&role) != Some(Speaker::Assistant) {
        return Err(ctx.wrong(
            &role_path,
            "`model` or `assistant` (an answer is the model's message)",
            &Value::String(role),
        ));
    }
    ctx.text(o, "content", &format!("{key}.content"))
}

/// Parses one row (see the module docs).
fn parse_row(v: &Value, ctx: RowCtx) -> Result<Row, DataError> {
    let obj = ctx.object(v, "(row)")?;
    let conversation_id = ctx.text(obj, "conversation_id", "conversation_id")?;
    let user_id = ctx.text(obj, "user_id", "user_id")?;
    let context = ctx.list(obj, "context", "context")?;
    if context.is_empty() {
        return Err(ctx.invalid(
            "context",
            "is an empty list; it must end with the user message both answers reply to: fix or remove the row",
        ));
    }
    let mut messages: Vec<(Speaker, String)> = Vec::with_capacity(context.len());
    for (i, m) in context.iter().enumerate() {
        let path = format!("context[{i}]");
        let o = ctx.object(m, &path)?;
        let role_path = format!("{path}.role");
        let role = ctx.string(o, "role", &role_path)?;
        let speaker = Speaker::from_role(&role).ok_or_else(|| {
            ctx.wrong(&role_path, &format!("one of {ROLES}"), &Value::String(role.clone()))
        })?;
        messages.push((speaker, ctx.string(o, "content", &format!("{path}.content"))?));
    }
    let last = context.len() - 1;
    let (speaker, latest) = messages.pop().expect("context is not empty");
    if speaker != Speaker::User {
        return Err(ctx.invalid(
            &format!("context[{last}].role"),
            "is not `user`, but the last message of the context must be the user's (the message both answers reply to): fix or remove the row",
        ));
    }
    if latest.trim().is_empty() {
        return Err(ctx.empty(&format!("context[{last}].content")));
    }
    let prior: Vec<(Speaker, &str)> = messages.iter().map(|(s, t)| (*s, t.as_str())).collect();
    let split_value = ctx.string(obj, "split", "split")?;
    let split = USER_SPLITS.iter().find(|s| **s == split_value).copied().ok_or_else(|| {
        ctx.invalid(
            "split",
            format!(
                "is {split_value:?}, but SynthesizeMe's per-user split is one of {}: fix the value or remove the row",
                USER_SPLITS.join(", ")
            ),
        )
    })?;
    ctx.opt_boolean(obj, "flip", "flip")?;
    ctx.opt_integer(obj, "turns", "turns")?;
    let category = ctx.opt_string(obj, "type")?.filter(|t| !t.trim().is_empty());
    Ok(Row {
        question: render_question(&prior, &latest),
        chosen: answer(ctx, obj, "chosen")?,
        rejected: answer(ctx, obj, "rejected")?,
        conversation_id,
        user_id,
        split,
        category,
        file: ctx.file.to_string(),
        row: ctx.row,
    })
}

/// Loads one Hugging Face split of SynthesizeMe data (see the module docs). `rest` is the spec
/// after `synthesizeme:` (`DIR[#SPLIT]`); `subsets` selects datasets by name (`chatbot_arena`,
/// `prism`, any unambiguous prefix; empty = all present); `source` becomes the dataset's
/// `source`. Only the selected datasets' files are read and hashed, each under its name
/// relative to `DIR`.
///
/// # Errors
/// [`DataError::BadSpec`] for a bad split or a `DIR` that is not a directory;
/// [`DataError::NoData`] when no dataset folder holds files of the split;
/// [`DataError::DuplicateSubset`] for two folders with one subset name;
/// [`DataError::AdapterColumn`] for a file without a required column; and every row error,
/// naming the file, 1-based row and field.
pub fn load_synthesizeme(
    rest: &str,
    subsets: &[String],
    source: &str,
) -> Result<Dataset, DataError> {
    load_synthesizeme_with_history(rest, subsets, source).map(|(d, _)| d)
}

/// [`load_synthesizeme`] plus each example's user history as structured pairs, in the dataset's
/// example order: `histories[i].id == dataset.examples[i].id`, and pair `k` of it is profile
/// post `k + 1` of that example (the layout [`crate::psoups::load_psoups_with_history`] gives).
///
/// # Errors
/// As [`load_synthesizeme`].
pub fn load_synthesizeme_with_history(
    rest: &str,
    subsets: &[String],
    source: &str,
) -> Result<(Dataset, Vec<RowHistory>), DataError> {
    let (dir, split) = parse_spec(rest, source)?;
    if !dir.is_dir() {
        return Err(DataError::BadSpec {
            spec: source.to_string(),
            detail: format!(
                "`{}` is not a directory; synthesizeme:DIR[#SPLIT] takes a dataset folder holding data/<split>-*.parquet, or a folder of such folders",
                dir.display()
            ),
        });
    }
    let sources = discover(&dir, &split, source)?;
    if sources.is_empty() {
        return Err(DataError::NoData {
            source_name: source.to_string(),
            detail: format!(
                "no SynthesizeMe files of split `{split}` found: expected DIR/data/{split}-*.parquet (one dataset, e.g. a download of \
                 MichaelR207/prism_personalized_0125) or DIR/<dataset>/data/{split}-*.parquet (several); choose another split with \
                 synthesizeme:DIR#SPLIT"
            ),
        });
    }
    let available: Vec<String> = sources.iter().map(|s| s.subset.clone()).collect();
    let selected = select_subsets(source, subsets, &available)?;
    let mut hash = ContentHash::new();
    let projection = Projection {
        required: &REQUIRED,
        optional: &OPTIONAL,
        layout: "SynthesizeMe (PersonalRewardBench)",
    };
    let mut raw = Vec::new();
    let mut histories: HashMap<String, Vec<HistoryPair>> = HashMap::new();
    for src in sources.iter().filter(|s| selected.contains(&s.subset)) {
        let mut rows = Vec::new();
        for (path, name) in &src.files {
            let file = path.display().to_string();
            visit_parquet_columns(path, name, &mut hash, Some(&projection), |row, v| {
                rows.push(parse_row(&v, RowCtx { file: &file, row })?);
                Ok(())
            })?;
        }
        for (example, row, pairs) in examples(&rows, &src.subset) {
            histories.insert(example.id.clone(), pairs);
            raw.push(RawRow {
                example,
                subset_field: None,
                file: row.file.clone(),
                row: row.row,
                extra: Default::default(),
            });
        }
    }
    if raw.is_empty() {
        return Err(DataError::NoData {
            source_name: source.to_string(),
            detail: format!(
                "the files of split `{split}` hold no row whose per-user `split` is `test`, so there is nothing to evaluate; \
                 choose another split with synthesizeme:DIR#SPLIT"
            ),
        });
    }
    let dataset = finish(raw, source, KIND_SYNTHESIZEME, hash, RowShape::Pairs)?;
    let histories = dataset
        .examples
        .iter()
        .map(|e| RowHistory {
            id: e.id.clone(),
            pairs: histories.remove(&e.id).unwrap_or_default(),
        })
        .collect();
    Ok((dataset, histories))
}

/// The examples of one dataset's rows: each `test` row with its user's `train` rows as history
/// (see the module docs), in row order, with the row it came from and its history pairs.
fn examples<'r>(rows: &'r [Row], subset: &str) -> Vec<(Example, &'r Row, Vec<HistoryPair>)> {
    let mut history: HashMap<&str, Vec<(HistoryPair, &str)>> = HashMap::new();
    for r in rows.iter().filter(|r| r.split == "train") {
        let pair = HistoryPair {
            prompt: r.question.clone(),
            chosen: r.chosen.clone(),
            rejected: r.rejected.clone(),
        };
        history
            .entry(&r.user_id)
            .or_default()
            .push((pair, r.category.as_deref().unwrap_or(subset)));
    }
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    let mut out = Vec::new();
    for r in rows {
        let n = seen.entry((r.user_id.as_str(), r.conversation_id.as_str())).or_insert(0);
        let id = format!("{}-{}-{n}", r.user_id, r.conversation_id);
        *n += 1;
        if r.split != "test" {
            continue;
        }
        let past = history.get(r.user_id.as_str()).map(Vec::as_slice).unwrap_or_default();
        let profile = past
            .iter()
            .enumerate()
            .map(|(k, (p, category))| ProfilePost {
                id: (k + 1).to_string(),
                category: category.to_string(),
                text: history_text(&p.prompt, &p.chosen, &p.rejected),
            })
            .collect();
        let example = Example {
            id,
            subset: subset.to_string(),
            question: r.question.clone(),
            profile,
            rubric_aspects: Vec::new(),
            narrative: String::new(),
            category: r.category.clone().unwrap_or_else(|| subset.to_string()),
            chosen: r.chosen.clone(),
            rejected: r.rejected.clone(),
            user_id: Some(r.user_id.clone()),
        };
        out.push((example, r, past.iter().map(|(p, _)| p.clone()).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hub_snapshot_is_named_after_its_repo() {
        let snap = Path::new("/c/datasets--MichaelR207--prism_personalized_0125/snapshots/abc123");
        assert_eq!(folder_name(snap).as_deref(), Some("prism_personalized_0125"));
        assert_eq!(dataset_name(&folder_name(snap).unwrap()), "prism");
        let plain = Path::new("/d/chatbot_arena_personalized_0125");
        assert_eq!(folder_name(plain).as_deref(), Some("chatbot_arena_personalized_0125"));
        let other = Path::new("/d/snapshots/abc123");
        assert_eq!(folder_name(other).as_deref(), Some("abc123"));
    }

    #[test]
    fn dataset_names_drop_the_personalized_suffix_only() {
        assert_eq!(dataset_name("chatbot_arena_personalized_0125"), "chatbot_arena");
        assert_eq!(dataset_name("prism_personalized_0125"), "prism");
        assert_eq!(dataset_name("prism_personalized_1023"), "prism");
        assert_eq!(dataset_name("prism_personalized"), "prism_personalized");
        assert_eq!(dataset_name("_personalized_0125"), "_personalized_0125");
        assert_eq!(dataset_name("prism_personalized_v2"), "prism_personalized_v2");
        assert_eq!(dataset_name("mine"), "mine");
    }

    #[test]
    fn spec_split_defaults_to_test_and_is_checked() {
        assert_eq!(parse_spec("d", "s").unwrap(), (PathBuf::from("d"), "test".into()));
        assert_eq!(parse_spec("d#Train", "s").unwrap(), (PathBuf::from("d"), "train".into()));
        let err = parse_spec("d#val", "synthesizeme:d#val").unwrap_err().to_string();
        assert_eq!(
            err,
            "spec `synthesizeme:d#val`: unknown SynthesizeMe split `val`; write synthesizeme:DIR#SPLIT with SPLIT one of train, validation, test (default test)"
        );
        assert!(parse_spec("#test", "s").unwrap_err().to_string().contains("no directory given"));
    }
}
