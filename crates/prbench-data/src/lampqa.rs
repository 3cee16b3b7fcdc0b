//! `lampqa:DIR[#SPLIT]`: LaMP-QA (Salemi & Zamani, arXiv 2506.00137; Hugging Face dataset
//! `alireza7/LaMP-QA`, code github.com/LaMP-Benchmark/LaMP-QA), the personalized questions
//! Personalized-RewardBench was built from, read as question rows for `prbench build`. LaMP-QA
//! has no chosen/rejected pair, so only [`crate::load_questions`] takes this spec
//! ([`crate::load()`] refuses it); the dataset's `kind` is [`KIND_LAMPQA`].
//!
//! `SPLIT` is `train`, `validation` or `test` (default `test`). `DIR` holds, per config (one
//! subset each; LaMP-QA's configs are `Art_and_Entertainment`,
//! `Lifestyle_and_Personal_Development` and `Society_and_Culture`), one of:
//!
//! | layout | files |
//! |---|---|
//! | Hugging Face parquet | `<config>/<SPLIT>-*.parquet`, or `<config>/<SPLIT>/*.parquet` (the hub's `refs/convert/parquet` branch) |
//! | LaMP-QA's `utils/download_datasets.py` | `<config>_<SPLIT>.json` (a JSON array of rows), or the same rows as `<config>_<SPLIT>.jsonl` |
//!
//! Files of other splits are ignored (that is what choosing a split means), as are hidden
//! entries and files with other names. One config in two layouts is an error. Parquet rows are
//! converted to JSON objects first, so both layouts go through one row parser and messages name
//! the same field paths (1-based rows: array index + 1, JSONL line, parquet row).
//!
//! Mapping of one row of config `CONFIG` (extra fields, including any `chosen`/`rejected`, are
//! ignored):
//!
//! | PRB field | from |
//! |---|---|
//! | `id`, `question`, `narrative` | `id`, `question`, `narrative` (required strings) |
//! | `rubric_aspects` | `rubric_aspects`: each `{aspect, evidence, reason}`, all three required strings (as in the PRB schema derived from LaMP-QA); `aspect` must be non-empty |
//! | `profile` | `profile`: each post's `id` and `text` (required strings) and `category` (optional: absent or null = empty string) |
//! | `category` | the row's `category` if present (a string), else `CONFIG` |
//! | `subset` | `CONFIG` |
//! | `chosen`, `rejected` | empty (`prbench build` writes them) |
//!
//! Rows are validated as [`RowShape::Questions`]: non-empty `id` and `question`, at least one
//! rubric aspect, ids unique across the dataset, post ids unique within a profile. The content
//! hash covers the files read, each under its name relative to `DIR` (e.g.
//! `Art_and_Entertainment_test.json` or `Art_and_Entertainment/test-00000-of-00001.parquet`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::DataError;
use crate::json_rows::{profile_posts, rubric, visit_json, visit_jsonl, RowCtx};
use crate::load::{select_subsets, sorted_entries, Format, RowShape};
use crate::parquet_values::visit_parquet;
use crate::rows::{finish, subset_rank, ContentHash, RawRow};
use crate::schema::{canonical_subset, Dataset, Example};

/// Dataset `kind` of LaMP-QA question data.
pub const KIND_LAMPQA: &str = "lampqa";

/// LaMP-QA's splits, as `lampqa:DIR#SPLIT` names them.
pub const LAMPQA_SPLITS: [&str; 3] = ["train", "validation", "test"];

/// The split read when the spec names none.
pub const DEFAULT_SPLIT: &str = "test";

/// Splits `DIR[#SPLIT]` (the part after `lampqa:`) into the directory and the split (default
/// [`DEFAULT_SPLIT`]; any case); `spec` is the full spec, for messages. The split is what
/// follows the last `#`.
///
/// # Errors
/// [`DataError::BadSpec`] for an empty directory or a split that is not one of
/// [`LAMPQA_SPLITS`].
pub fn parse_spec(rest: &str, spec: &str) -> Result<(PathBuf, String), DataError> {
    let bad = |detail: String| DataError::BadSpec { spec: spec.to_string(), detail };
    let (dir, split) = match rest.rsplit_once('#') {
        Some((dir, split)) => (dir, split.trim().to_ascii_lowercase()),
        None => (rest, DEFAULT_SPLIT.to_string()),
    };
    if !LAMPQA_SPLITS.contains(&split.as_str()) {
        return Err(bad(format!(
            "unknown LaMP-QA split `{}`; write lampqa:DIR#SPLIT with SPLIT one of {} (default {DEFAULT_SPLIT})",
            rest.rsplit_once('#').map_or("", |(_, s)| s),
            LAMPQA_SPLITS.join(", ")
        )));
    }
    if dir.trim().is_empty() {
        return Err(bad("no directory given; write lampqa:DIR or lampqa:DIR#SPLIT".into()));
    }
    Ok((PathBuf::from(dir), split))
}

/// One config's files for the chosen split.
struct Config {
    subset: String,
    /// The directory entry it came from (for messages).
    entry: String,
    /// (path, hash name, format)
    files: Vec<(PathBuf, String, Format)>,
}

/// The parquet files of `split` in config folder `dir` (named `name` in `DIR`).
fn parquet_files(
    dir: &Path,
    name: &str,
    split: &str,
) -> Result<Vec<(PathBuf, String, Format)>, DataError> {
    let is_parquet = |p: &Path| p.is_file() && Format::from_path(p) == Some(Format::Parquet);
    let prefix = format!("{split}-");
    let mut files: Vec<_> = sorted_entries(dir)?
        .into_iter()
        .filter(|(f, p)| f.starts_with(&prefix) && is_parquet(p))
        .map(|(f, p)| (p, format!("{name}/{f}"), Format::Parquet))
        .collect();
    let converted = dir.join(split);
    if converted.is_dir() {
        files.extend(
            sorted_entries(&converted)?
                .into_iter()
                .filter(|(_, p)| is_parquet(p))
                .map(|(f, p)| (p, format!("{name}/{split}/{f}"), Format::Parquet)),
        );
    }
    Ok(files)
}

/// Finds each config's files of `split` in `dir`, in subset order.
fn discover(dir: &Path, split: &str, source: &str) -> Result<Vec<Config>, DataError> {
    let suffix = format!("_{split}");
    let mut configs: Vec<Config> = Vec::new();
    for (name, path) in sorted_entries(dir)? {
        let config = if path.is_dir() {
            let files = parquet_files(&path, &name, split)?;
            if files.is_empty() {
                continue;
            }
            Config { subset: canonical_subset(&name), entry: format!("{name}/"), files }
        } else {
            let format = match Format::from_path(&path) {
                Some(f @ (Format::Json | Format::Jsonl)) => f,
                _ => continue,
            };
            let stem =
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let Some(config) = stem.strip_suffix(&suffix).filter(|c| !c.is_empty()) else {
                continue;
            };
            Config {
                subset: canonical_subset(config),
                entry: name.clone(),
                files: vec![(path, name, format)],
            }
        };
        if let Some(prev) = configs.iter().find(|c| c.subset == config.subset) {
            return Err(DataError::DuplicateSubset {
                source_name: source.to_string(),
                subset: config.subset,
                first: prev.entry.clone(),
                second: config.entry,
            });
        }
        configs.push(config);
    }
    configs.sort_by_cached_key(|c| subset_rank(&c.subset));
    Ok(configs)
}

/// Maps one LaMP-QA row object of config `config` (see the module docs).
fn example(v: &Value, ctx: RowCtx, config: &str) -> Result<Example, DataError> {
    let obj = ctx.object(v, "(row)")?;
    Ok(Example {
        id: ctx.string(obj, "id", "id")?,
        subset: config.to_string(),
        question: ctx.string(obj, "question", "question")?,
        profile: profile_posts(ctx, obj, false)?,
        rubric_aspects: rubric(ctx, obj)?,
        narrative: ctx.string(obj, "narrative", "narrative")?,
        category: ctx.opt_string(obj, "category")?.unwrap_or_else(|| config.to_string()),
        chosen: String::new(),
        rejected: String::new(),
        // LaMP-QA's rows carry their own profile; no user id is read.
        user_id: None,
    })
}

/// Loads one split of the LaMP-QA files in a directory as question rows. `rest` is the spec
/// after `lampqa:` (`DIR[#SPLIT]`); `subsets` selects configs as [`crate::load()`] does (long
/// or short names, any case; empty = every config present); `source` becomes the dataset's
/// `source`. Only the selected configs' files are read and hashed.
///
/// # Errors
/// [`DataError::BadSpec`] for a bad split or a `DIR` that is not a directory;
/// [`DataError::NoData`] (listing the expected file names) when `DIR` holds no files of the
/// split; [`DataError::DuplicateSubset`] for a config in two layouts; subset-selection errors;
/// and every read or validation error, naming file, 1-based row and field.
pub fn load_lampqa(rest: &str, subsets: &[String], source: &str) -> Result<Dataset, DataError> {
    let (dir, split) = parse_spec(rest, source)?;
    if !dir.is_dir() {
        return Err(DataError::BadSpec {
            spec: source.to_string(),
            detail: format!(
                "`{}` is not a directory; lampqa:DIR[#SPLIT] takes the folder holding the LaMP-QA files",
                dir.display()
            ),
        });
    }
    let configs = discover(&dir, &split, source)?;
    if configs.is_empty() {
        return Err(DataError::NoData {
            source_name: source.to_string(),
            detail: format!(
                "no LaMP-QA files of split `{split}` found: expected <config>/{split}-*.parquet or \
                 <config>/{split}/*.parquet (Hugging Face layout), or <config>_{split}.json / \
                 <config>_{split}.jsonl (as LaMP-QA's utils/download_datasets.py saves them); \
                 choose another split with lampqa:DIR#SPLIT"
            ),
        });
    }
    let available: Vec<String> = configs.iter().map(|c| c.subset.clone()).collect();
    let selected = select_subsets(source, subsets, &available)?;
    let mut hash = ContentHash::new();
    let mut rows = Vec::new();
    for config in configs.iter().filter(|c| selected.contains(&c.subset)) {
        for (path, name, format) in &config.files {
            let file = path.display().to_string();
            let mut push = |row: usize, v: Value| -> Result<(), DataError> {
                let example = example(&v, RowCtx { file: &file, row }, &config.subset)?;
                rows.push(RawRow {
                    example,
                    subset_field: None,
                    file: file.clone(),
                    row,
                    extra: Default::default(),
                });
                Ok(())
            };
            match format {
                Format::Json => visit_json(path, name, &mut hash, &mut push)?,
                Format::Jsonl => visit_jsonl(path, name, &mut hash, &mut push)?,
                Format::Parquet => visit_parquet(path, name, &mut hash, &mut push)?,
            }
        }
    }
    finish(rows, source, KIND_LAMPQA, hash, RowShape::Questions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_split_defaults_to_test_and_is_checked() {
        assert_eq!(parse_spec("d/x", "lampqa:d/x").unwrap(), (PathBuf::from("d/x"), "test".into()));
        assert_eq!(
            parse_spec("d#Validation", "s").unwrap(),
            (PathBuf::from("d"), "validation".into())
        );
        let err = parse_spec("d#dev", "lampqa:d#dev").unwrap_err().to_string();
        assert_eq!(
            err,
            "spec `lampqa:d#dev`: unknown LaMP-QA split `dev`; write lampqa:DIR#SPLIT with SPLIT one of train, validation, test (default test)"
        );
        assert!(parse_spec("#test", "lampqa:#test")
            .unwrap_err()
            .to_string()
            .contains("no directory given"));
    }
}
