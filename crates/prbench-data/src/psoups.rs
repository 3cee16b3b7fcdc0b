//! `psoups:DIR`: the P-Soups personalized preference pairs (AlignX benchmark copy), mapped onto
//! the PRB schema. These examples are not Personalized-RewardBench data: the dataset's `kind` is
//! `psoups` so reports can say so.
//!
//! `DIR` holds `friendly_unfriendly.json` and `student_phd.json`, each a JSON array of objects
//! `{prompt, chosen, rejected, ground_truth_persona, profile, "Pair-wise Comparative Feedback":
//! [{prompt, chosen, rejected}, …]}`. Both files are required unless `subsets` selects one.
//!
//! Mapping, per row `i` (0-based) of file `STEM.json`:
//!
//! | PRB field | from |
//! |---|---|
//! | `id` | `"{STEM}-{i:04}"` |
//! | `subset`, `category` | `STEM` |
//! | `question`, `chosen`, `rejected` | `prompt`, `chosen`, `rejected` |
//! | `profile` | one post per history pair `k` (1-based): `id = "k"`, `category = STEM`, `text = "Q: {prompt}\nPreferred: {chosen}\nNot preferred: {rejected}"` |
//! | `narrative` | `ground_truth_persona` |
//! | `rubric_aspects` | one aspect: `aspect = ground_truth_persona`, `evidence = profile` (the free-text trait list), `reason = "ground-truth persona stated by P-Soups"` |

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::error::DataError;
use crate::json_rows::{parse_array, read_text, RowCtx};
use crate::load::{select_subsets, RowShape};
use crate::rows::{finish, ContentHash, RawRow};
use crate::schema::{Dataset, Example, ProfilePost, RubricAspect};

/// Dataset `kind` of P-Soups data.
pub const KIND_PSOUPS: &str = "psoups";

/// The P-Soups files (stems) the adapter reads, in load order.
pub const PSOUPS_SUBSETS: [&str; 2] = ["friendly_unfriendly", "student_phd"];

/// The `reason` text of the single rubric aspect of every P-Soups example.
pub const PERSONA_REASON: &str = "ground-truth persona stated by P-Soups";

/// Name of the history field in the P-Soups files.
const HISTORY: &str = "Pair-wise Comparative Feedback";

/// Renders one history pair as profile-post text.
pub fn history_text(prompt: &str, chosen: &str, rejected: &str) -> String {
    format!("Q: {prompt}\nPreferred: {chosen}\nNot preferred: {rejected}")
}

/// One past preference pair of a P-Soups user (an entry of "Pair-wise Comparative Feedback").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryPair {
    /// The past instruction.
    pub prompt: String,
    /// The response the user preferred.
    pub chosen: String,
    /// The response the user did not prefer.
    pub rejected: String,
}

/// The history pairs of one P-Soups row, in file order. Pair `k` (0-based here) is the profile
/// post with id `k + 1` of the example with the same `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowHistory {
    /// The example id as the adapter names it (`"{STEM}-{i:04}"`).
    pub id: String,
    /// The row's history pairs, in file order.
    pub pairs: Vec<HistoryPair>,
}

/// Parses one row: the mapped example and its structured history pairs (the profile posts are
/// rendered from the same pairs).
fn parse_row(
    v: &Value,
    stem: &str,
    index: usize,
    ctx: RowCtx,
) -> Result<(Example, Vec<HistoryPair>), DataError> {
    let obj = ctx.object(v, "(row)")?;
    let persona = ctx.string(obj, "ground_truth_persona", "ground_truth_persona")?;
    let traits = ctx.string(obj, "profile", "profile")?;
    let mut profile = Vec::new();
    let mut history = Vec::new();
    for (k, pair) in ctx.list(obj, HISTORY, HISTORY)?.iter().enumerate() {
        let path = format!("{HISTORY}[{k}]");
        let p = ctx.object(pair, &path)?;
        let prompt = ctx.string(p, "prompt", &format!("{path}.prompt"))?;
        let chosen = ctx.string(p, "chosen", &format!("{path}.chosen"))?;
        let rejected = ctx.string(p, "rejected", &format!("{path}.rejected"))?;
        profile.push(ProfilePost {
            id: (k + 1).to_string(),
            category: stem.to_string(),
            text: history_text(&prompt, &chosen, &rejected),
        });
        history.push(HistoryPair { prompt, chosen, rejected });
    }
    let example = Example {
        id: format!("{stem}-{index:04}"),
        subset: stem.to_string(),
        question: ctx.string(obj, "prompt", "prompt")?,
        profile,
        rubric_aspects: vec![RubricAspect {
            aspect: persona.clone(),
            evidence: traits,
            reason: PERSONA_REASON.to_string(),
        }],
        narrative: persona,
        category: stem.to_string(),
        chosen: ctx.string(obj, "chosen", "chosen")?,
        rejected: ctx.string(obj, "rejected", "rejected")?,
        // The P-Soups files name no user: each row is its own user (with its own history).
        user_id: None,
    };
    Ok((example, history))
}

/// Loads the P-Soups files in `dir` (`subsets`: `friendly_unfriendly`, `student_phd`, any case;
/// empty = both). `source` becomes the dataset's `source`. The hash covers the files read, each
/// recorded under its file name.
pub fn load_psoups(dir: &Path, subsets: &[String], source: &str) -> Result<Dataset, DataError> {
    load_psoups_with_history(dir, subsets, source).map(|(dataset, _)| dataset)
}

/// [`load_psoups`] plus each row's structured history pairs (the same rows, parsed once), in
/// the dataset's example order: `histories[i].id == dataset.examples[i].id`.
pub fn load_psoups_with_history(
    dir: &Path,
    subsets: &[String],
    source: &str,
) -> Result<(Dataset, Vec<RowHistory>), DataError> {
    load_psoups_as(dir, subsets, source, RowShape::Pairs)
}

/// [`load_psoups_with_history`] validated for `shape` (P-Soups rows always carry their pair).
pub(crate) fn load_psoups_as(
    dir: &Path,
    subsets: &[String],
    source: &str,
    shape: RowShape,
) -> Result<(Dataset, Vec<RowHistory>), DataError> {
    let available: Vec<String> = PSOUPS_SUBSETS.iter().map(|s| s.to_string()).collect();
    if !dir.is_dir() {
        return Err(DataError::BadSpec {
            spec: source.to_string(),
            detail: format!(
                "`{}` is not a directory; psoups:DIR takes the folder holding friendly_unfriendly.json and student_phd.json",
                dir.display()
            ),
        });
    }
    let selected = select_subsets(source, subsets, &available)?;
    let mut hash = ContentHash::new();
    let mut rows = Vec::new();
    let mut histories: HashMap<String, Vec<HistoryPair>> = HashMap::new();
    for stem in &selected {
        let name = format!("{stem}.json");
        let path = dir.join(&name);
        let file = path.display().to_string();
        if !path.is_file() {
            return Err(DataError::MissingFile {
                file,
                detail: "psoups:DIR needs friendly_unfriendly.json and student_phd.json, or select the subset that is present"
                    .into(),
            });
        }
        let text = read_text(&path, &name, &mut hash)?;
        for (i, v) in parse_array(&text, &file)?.iter().enumerate() {
            let ctx = RowCtx { file: &file, row: i + 1 };
            let (example, history) = parse_row(v, stem, i, ctx)?;
            histories.insert(example.id.clone(), history);
            rows.push(RawRow {
                example,
                subset_field: None,
                file: file.clone(),
                row: i + 1,
                extra: Default::default(),
            });
        }
    }
    let dataset = finish(rows, source, KIND_PSOUPS, hash, shape)?;
    // Ids are unique (validated by `finish`), so every example has exactly one entry.
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
