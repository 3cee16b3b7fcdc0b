//! [`load`] and [`load_questions`]: one entry point for every dataset spec, for the two row
//! shapes ([`RowShape`]): benchmark pairs (`prbench eval`) and questions (`prbench build`).
//!
//! | spec | meaning |
//! |---|---|
//! | `PATH` (directory) | Hugging Face layout `<config>/test-*.parquet` (e.g. `<config>/test-00000-of-00001.parquet`; another split's parquet file there is an error), or flat files `<config>.parquet`, `<config>.json`, `<config>.jsonl`; the subset of each row is its config name |
//! | `PATH` (file) | one `.parquet`, `.json` (array of row objects) or `.jsonl` file; the subset is the file stem unless a row has a string field `subset` |
//! | `psoups:DIR` | the P-Soups adapter ([`crate::psoups`]) |
//! | `hf:ORG/NAME[@REV]` | a Hugging Face dataset repo through the hub cache ([`crate::hub`]) |
//! | `lampqa:DIR[#SPLIT]` | LaMP-QA questions, one split (default `test`) ([`crate::lampqa`]); [`load_questions`] only, since LaMP-QA rows have no chosen/rejected pair |
//! | `synthesizeme:DIR[#SPLIT]` | SynthesizeMe's PersonalRewardBench (Chatbot Arena and PRISM, personalized), one Hugging Face split (default `test`) ([`crate::synthesizeme`]); [`load`] only |
//! | `prism:DIR` | raw PRISM conversations and survey as preference pairs ([`crate::prism`]); [`load`] only |
//!
//! Subset names are canonicalized with [`canonical_subset`] (so `Art.jsonl` holds
//! `Art_and_Entertainment`). Subsets come out in `PRB_SUBSETS` order, then other names
//! alphabetically; rows keep file order within a subset. Everything is validated before
//! [`load`] returns (see [`crate::error::DataError`]); nothing is dropped or defaulted, except
//! that [`load_questions`] reads absent `chosen`/`rejected` as empty strings.
//! In a directory, hidden entries (`.…`) and files with other extensions (README, …) are ignored.

use std::path::{Path, PathBuf};

use crate::error::DataError;
use crate::hub::{self, HubOptions};
use crate::json_rows::{read_json, read_jsonl};
use crate::parquet_rows::{read_parquet, read_parquet_rows};
use crate::rows::{finish, subset_rank, validate, ContentHash, RawRow};
use crate::schema::{canonical_subset, Dataset};

/// Dataset `kind` of data in the PRB schema.
pub const KIND_PRB: &str = "prb";

/// What a row must hold, i.e. which command the data is loaded for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowShape {
    /// Benchmark rows for `prbench eval` ([`load`]): `chosen` and `rejected` are required,
    /// non-empty and different.
    Pairs,
    /// Question rows for `prbench build` ([`load_questions`]), LaMP-QA's own row shape:
    /// `chosen`/`rejected` may be absent or null (read as empty strings; a present value must
    /// still be a string), and every row needs at least one rubric aspect with a non-empty
    /// `aspect` text, from which the build writes the pair.
    Questions,
}

/// File formats the PRB-schema loader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Apache Parquet with the columns of PROTOCOL.md §1.
    Parquet,
    /// A JSON array of row objects.
    Json,
    /// One row object per line.
    Jsonl,
}

impl Format {
    /// The format a file name's extension (any case) names, if any.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" => Some(Format::Parquet),
            "json" => Some(Format::Json),
            "jsonl" => Some(Format::Jsonl),
            _ => None,
        }
    }
}

/// Loads and validates the dataset named by `spec`, keeping only `subsets` (long or short names,
/// any case; empty = every subset present). A requested subset that is absent is an error that
/// lists the available ones. `hf:` specs read `HF_HUB_OFFLINE` and the hub cache variables from
/// the environment (see [`crate::hub`]).
///
/// # Errors
/// Any [`DataError`]: the spec names nothing loadable, a file is unreadable or malformed, a row
/// fails validation for [`RowShape::Pairs`], or the spec is `lampqa:` (LaMP-QA rows have no
/// pair: build one with `prbench build --data lampqa:DIR`).
pub fn load(spec: &str, subsets: &[String]) -> Result<Dataset, DataError> {
    load_as(spec, subsets, RowShape::Pairs)
}

/// Loads `spec` as [`load`] does, plus each example's user history as structured preference
/// pairs, for the data that has them: `psoups:DIR` (a row's "Pair-wise Comparative Feedback")
/// and `synthesizeme:DIR[#SPLIT]` (the user's own `train`-split pairs). In both, pair `k`
/// (0-based) of `histories[i]` is profile post `k + 1` of `dataset.examples[i]`, and
/// `histories[i].id == dataset.examples[i].id`. Personalized reward models train on these pairs
/// (`train bt|pal --pairs history`) and adapt unseen users from them.
///
/// Returns `Ok(None)` for any other spec: its rows carry no history pairs.
///
/// # Errors
/// As [`load`].
pub fn load_with_history(
    spec: &str,
    subsets: &[String],
) -> Result<Option<(Dataset, Vec<crate::psoups::RowHistory>)>, DataError> {
    if let Some(dir) = spec.strip_prefix("psoups:") {
        return crate::psoups::load_psoups_with_history(Path::new(dir), subsets, spec).map(Some);
    }
    if let Some(rest) = spec.strip_prefix("synthesizeme:") {
        return crate::synthesizeme::load_synthesizeme_with_history(rest, subsets, spec).map(Some);
    }
    Ok(None)
}

/// The dataset specs whose rows carry history pairs ([`load_with_history`]), for messages.
pub const HISTORY_SPECS: &str = "`psoups:DIR` or `synthesizeme:DIR[#SPLIT]`";

/// Loads question rows (input for `prbench build`) from `spec`, keeping only `subsets` as
/// [`load`] does. Takes every spec [`load`] takes plus `lampqa:DIR[#SPLIT]`; rows are read and
/// validated as [`RowShape::Questions`]: `chosen`/`rejected` may be absent (empty strings in the
/// [`crate::Example`]), and every row needs a non-empty `id` and `question` and at least one
/// rubric aspect with a non-empty `aspect`.
///
/// # Errors
/// As [`load`]; validation errors name the file, the 1-based row and the field (e.g.
/// `rubric_aspects` or `rubric_aspects[1].aspect`).
pub fn load_questions(spec: &str, subsets: &[String]) -> Result<Dataset, DataError> {
    load_as(spec, subsets, RowShape::Questions)
}

fn load_as(spec: &str, subsets: &[String], shape: RowShape) -> Result<Dataset, DataError> {
    if let Some(rest) = spec.strip_prefix("lampqa:") {
        return match shape {
            RowShape::Questions => crate::lampqa::load_lampqa(rest, subsets, spec),
            RowShape::Pairs => Err(DataError::BadSpec {
                spec: spec.to_string(),
                detail: "LaMP-QA rows have no chosen/rejected pair to evaluate; build a benchmark \
                         from them first with `prbench build --data lampqa:DIR`"
                    .into(),
            }),
        };
    }
    for (prefix, name) in [("synthesizeme:", "SynthesizeMe"), ("prism:", "PRISM")] {
        if spec.starts_with(prefix) && shape == RowShape::Questions {
            return Err(DataError::BadSpec {
                spec: spec.to_string(),
                detail: format!(
                    "{name} data has no rubric aspects, and `prbench build` writes its answers from them; \
                     evaluate it with `prbench eval --data {spec}` instead"
                ),
            });
        }
    }
    if let Some(rest) = spec.strip_prefix("synthesizeme:") {
        return crate::synthesizeme::load_synthesizeme(rest, subsets, spec);
    }
    if let Some(dir) = spec.strip_prefix("prism:") {
        return crate::prism::load_prism(Path::new(dir), subsets, spec);
    }
    if let Some(dir) = spec.strip_prefix("psoups:") {
        return crate::psoups::load_psoups_as(Path::new(dir), subsets, spec, shape)
            .map(|(dataset, _)| dataset);
    }
    if let Some(repo) = spec.strip_prefix("hf:") {
        let (repo, revision) = hub::parse_repo(repo, spec)?;
        return hub::load_hub_as(
            &repo,
            revision.as_deref(),
            subsets,
            &HubOptions::from_env(),
            spec,
            shape,
        );
    }
    let path = Path::new(spec);
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => load_dir_as(path, subsets, spec, shape),
        Ok(_) => load_file_as(path, subsets, spec, shape),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(DataError::BadSpec {
            spec: spec.to_string(),
            detail: "no such file or directory; give a dataset directory, a .parquet/.json/.jsonl \
                     file, psoups:DIR, synthesizeme:DIR[#SPLIT], prism:DIR, hf:ORG/NAME[@REV] or (for prbench \
                     build) lampqa:DIR[#SPLIT]"
                .into(),
        }),
        Err(source) => Err(DataError::Io {
            file: spec.to_string(),
            source,
        }),
    }
}

/// Resolves requested subset names against the `available` ones (already in load order):
/// empty `requested` = all; otherwise each name must match one, and the result keeps load
/// order. A name matches (any case) a subset's long or PRB short name (`Art`), or else, when
/// exactly one subset fits, a prefix of its name (`life`, `friendly`, `student`) or one of its
/// `_`-separated words (`culture`, `phd`): P-Soups' `friendly_unfriendly` and `student_phd`
/// take short names the way PRB's configs do.
///
/// # Errors
/// [`DataError::SubsetNotFound`] listing the available subsets for a name that matches none;
/// [`DataError::SubsetAmbiguous`] listing the candidates for a short name that fits several.
pub fn select_subsets(
    source: &str,
    requested: &[String],
    available: &[String],
) -> Result<Vec<String>, DataError> {
    if requested.is_empty() {
        return Ok(available.to_vec());
    }
    let mut keep = vec![false; available.len()];
    for r in requested {
        keep[subset_index(source, r, available)?] = true;
    }
    Ok(available.iter().zip(keep).filter(|(_, k)| *k).map(|(a, _)| a.clone()).collect())
}

/// The index in `available` of the one subset `requested` names (see [`select_subsets`]).
fn subset_index(source: &str, requested: &str, available: &[String]) -> Result<usize, DataError> {
    let want = canonical_subset(requested.trim());
    if let Some(i) = available.iter().position(|a| a.eq_ignore_ascii_case(&want)) {
        return Ok(i);
    }
    let short = requested.trim().to_lowercase();
    let fits: Vec<usize> = if short.is_empty() {
        Vec::new()
    } else {
        available
            .iter()
            .enumerate()
            .filter(|(_, a)| {
                let a = a.to_lowercase();
                a.starts_with(&short) || a.split('_').any(|w| w == short)
            })
            .map(|(i, _)| i)
            .collect()
    };
    match fits.as_slice() {
        [i] => Ok(*i),
        [] => Err(DataError::SubsetNotFound {
            source_name: source.to_string(),
            requested: requested.to_string(),
            available: available.to_vec(),
        }),
        several => Err(DataError::SubsetAmbiguous {
            source_name: source.to_string(),
            requested: requested.to_string(),
            matches: several.iter().map(|&i| available[i].clone()).collect(),
        }),
    }
}

/// Reads one PRB-schema file of `shape`; `name` is what the content hash records for it.
pub(crate) fn read_rows(
    path: &Path,
    name: &str,
    format: Format,
    hash: &mut ContentHash,
    shape: RowShape,
) -> Result<Vec<RawRow>, DataError> {
    match format {
        Format::Parquet => read_parquet(path, name, hash, shape),
        Format::Json => read_json(path, name, hash, shape),
        Format::Jsonl => read_jsonl(path, name, hash, shape),
    }
}

/// One file of a dataset: its path, the name the content hash records for it, its format and
/// the subset (config) its rows belong to.
pub(crate) struct DataFile<'a> {
    pub path: &'a Path,
    pub name: &'a str,
    pub format: Format,
    pub subset: &'a str,
}

/// Reads `files` as [`read_rows`] and [`assign_config`] do one after another, rows in file
/// order, with the files decoded in parallel and the content hash (over the files in order)
/// computed beside them. The error is the one the sequential loop would meet first: file `i`'s
/// hash error, then its read error, before anything of file `i + 1`.
///
/// A JSON file's rows are read with a scratch hash: its bytes are hashed again from the file
/// ([`ContentHash::add_file`] equals `add_bytes` of the same bytes), as parquet files always were.
pub(crate) fn read_files(
    files: &[DataFile<'_>],
    shape: RowShape,
) -> Result<(ContentHash, Vec<RawRow>), DataError> {
    use rayon::prelude::*;
    let (hashed, read) = rayon::join(
        || {
            let mut hash = ContentHash::new();
            for (i, f) in files.iter().enumerate() {
                hash.add_file(f.name, f.path).map_err(|e| Box::new((i, e)))?;
            }
            Ok::<_, Box<(usize, DataError)>>(hash)
        },
        || {
            // Largest first, so the last file a core takes is a small one.
            let mut order: Vec<usize> = (0..files.len()).collect();
            order.sort_by_key(|&i| {
                std::cmp::Reverse(std::fs::metadata(files[i].path).map_or(0, |m| m.len()))
            });
            let mut read: Vec<(usize, Result<Vec<RawRow>, DataError>)> = order
                .into_par_iter()
                .with_max_len(1)
                .map(|i| {
                    let f = &files[i];
                    let rows = match f.format {
                        Format::Parquet => read_parquet_rows(f.path, shape),
                        format => read_rows(f.path, f.name, format, &mut ContentHash::new(), shape),
                    };
                    (i, rows.and_then(|r| assign_config(r, f.subset)))
                })
                .collect();
            read.sort_by_key(|(i, _)| *i);
            read
        },
    );
    let failed_hash = hashed.as_ref().err().map(|e| e.0);
    let mut rows = Vec::new();
    for (i, r) in read {
        if failed_hash == Some(i) {
            break;
        }
        rows.extend(r?);
    }
    match hashed {
        Ok(hash) => Ok((hash, rows)),
        Err(e) => Err(e.1),
    }
}

/// One subset's files in a dataset directory.
struct Config {
    subset: String,
    /// The directory entry it came from (for messages).
    entry: String,
    /// (path, hash name, format)
    files: Vec<(PathBuf, String, Format)>,
}

pub(crate) fn sorted_entries(dir: &Path) -> Result<Vec<(String, PathBuf)>, DataError> {
    let io = |source| DataError::Io { file: dir.display().to_string(), source };
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            out.push((name, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn discover(dir: &Path, source: &str) -> Result<Vec<Config>, DataError> {
    let mut configs: Vec<Config> = Vec::new();
    for (name, path) in sorted_entries(dir)? {
        let config = if path.is_dir() {
            let parquet: Vec<_> = sorted_entries(&path)?
                .into_iter()
                .filter(|(_, p)| p.is_file() && Format::from_path(p) == Some(Format::Parquet))
                .collect();
            // The benchmark has one split, `test`; another split's files beside it would be
            // mixed into the evaluation, so they are an error rather than silently read.
            if let Some((other, _)) = parquet.iter().find(|(f, _)| !f.starts_with("test-")) {
                return Err(DataError::BadSpec {
                    spec: source.to_string(),
                    detail: format!(
                        "`{name}/{other}` is not a `test-*.parquet` file; Personalized-RewardBench has only a \
                         `test` split: move other splits out of the config folder"
                    ),
                });
            }
            let files: Vec<_> = parquet
                .into_iter()
                .map(|(f, p)| (p, format!("{name}/{f}"), Format::Parquet))
                .collect();
            if files.is_empty() {
                continue;
            }
            Config { subset: canonical_subset(&name), entry: format!("{name}/"), files }
        } else if let Some(format) = Format::from_path(&path) {
            let stem =
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            Config {
                subset: canonical_subset(&stem),
                entry: name.clone(),
                files: vec![(path, name, format)],
            }
        } else {
            continue;
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

fn check_subset_field(r: &RawRow) -> Result<Option<String>, DataError> {
    match &r.subset_field {
        None => Ok(None),
        Some(s) if s.trim().is_empty() => {
            Err(DataError::EmptyField { file: r.file.clone(), row: r.row, field: "subset".into() })
        }
        Some(s) => Ok(Some(canonical_subset(s.trim()))),
    }
}

/// Sets every row's subset to `config` (the directory or file it was read from); a row's own
/// `subset` field, if any, must agree.
pub(crate) fn assign_config(mut rows: Vec<RawRow>, config: &str) -> Result<Vec<RawRow>, DataError> {
    for r in &mut rows {
        if let Some(found) = check_subset_field(r)? {
            if found != config {
                return Err(DataError::SubsetMismatch {
                    file: r.file.clone(),
                    row: r.row,
                    expected: config.to_string(),
                    found: r.subset_field.clone().unwrap_or_default(),
                });
            }
        }
        r.example.subset = config.to_string();
    }
    Ok(rows)
}

/// Loads a dataset directory (HF layout or flat files). Only the selected subsets' files are read
/// (and hashed). A row's optional `subset` field must agree with its config.
pub fn load_dir(dir: &Path, subsets: &[String], source: &str) -> Result<Dataset, DataError> {
    load_dir_as(dir, subsets, source, RowShape::Pairs)
}

fn load_dir_as(
    dir: &Path,
    subsets: &[String],
    source: &str,
    shape: RowShape,
) -> Result<Dataset, DataError> {
    let configs = discover(dir, source)?;
    if configs.is_empty() {
        return Err(DataError::NoData {
            source_name: source.to_string(),
            detail:
                "no dataset files found: expected <config>/*.parquet directories (Hugging Face \
                     layout) or <config>.parquet|.json|.jsonl files"
                    .into(),
        });
    }
    let available: Vec<String> = configs.iter().map(|c| c.subset.clone()).collect();
    let selected = select_subsets(source, subsets, &available)?;
    let files: Vec<DataFile<'_>> = configs
        .iter()
        .filter(|c| selected.contains(&c.subset))
        .flat_map(|c| {
            c.files.iter().map(|(path, name, format)| DataFile {
                path,
                name,
                format: *format,
                subset: &c.subset,
            })
        })
        .collect();
    let (hash, rows) = read_files(&files, shape)?;
    finish(rows, source, KIND_PRB, hash, shape)
}

/// Loads a single `.parquet`, `.json` or `.jsonl` file. Each row's subset is its `subset` field
/// if it has one, else the file stem (both canonicalized). Every row is validated, then the
/// selected subsets are kept.
pub fn load_file(path: &Path, subsets: &[String], source: &str) -> Result<Dataset, DataError> {
    load_file_as(path, subsets, source, RowShape::Pairs)
}

fn load_file_as(
    path: &Path,
    subsets: &[String],
    source: &str,
    shape: RowShape,
) -> Result<Dataset, DataError> {
    let format = Format::from_path(path).ok_or_else(|| DataError::BadSpec {
        spec: source.to_string(),
        detail: "unsupported file type; expected a .parquet, .json or .jsonl file, or a directory"
            .into(),
    })?;
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let default_subset = canonical_subset(&stem);
    let mut hash = ContentHash::new();
    let mut rows = read_rows(path, &name, format, &mut hash, shape)?;
    for r in &mut rows {
        r.example.subset = check_subset_field(r)?.unwrap_or_else(|| default_subset.clone());
    }
    validate(&rows, shape)?;
    let mut available: Vec<String> = Vec::new();
    for r in &rows {
        if !available.contains(&r.example.subset) {
            available.push(r.example.subset.clone());
        }
    }
    available.sort_by_cached_key(|s| subset_rank(s));
    let selected = select_subsets(source, subsets, &available)?;
    rows.retain(|r| selected.contains(&r.example.subset));
    finish(rows, source, KIND_PRB, hash, shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn select_subsets_by_long_short_and_case() {
        let avail = v(&["Art_and_Entertainment", "Society_and_Culture", "zeta"]);
        assert_eq!(select_subsets("s", &[], &avail).unwrap(), avail);
        assert_eq!(
            select_subsets("s", &v(&["ZETA", "art"]), &avail).unwrap(),
            v(&["Art_and_Entertainment", "zeta"])
        );
        assert_eq!(
            select_subsets("s", &v(&["society", "Society_and_Culture"]), &avail).unwrap(),
            v(&["Society_and_Culture"])
        );
        let err = select_subsets("s", &v(&["Lifestyle"]), &avail).unwrap_err();
        assert!(matches!(err, DataError::SubsetNotFound { .. }), "{err}");
        assert!(
            err.to_string().contains("Art_and_Entertainment, Society_and_Culture, zeta"),
            "{err}"
        );
    }

    #[test]
    fn format_from_extension() {
        assert_eq!(Format::from_path(Path::new("a/B.PARQUET")), Some(Format::Parquet));
        assert_eq!(Format::from_path(Path::new("x.json")), Some(Format::Json));
        assert_eq!(Format::from_path(Path::new("x.jsonl")), Some(Format::Jsonl));
        assert_eq!(Format::from_path(Path::new("x.csv")), None);
        assert_eq!(Format::from_path(Path::new("x")), None);
    }

    #[test]
    fn psoups_subsets_take_unambiguous_short_names() {
        let avail = v(&["friendly_unfriendly", "student_phd"]);
        for (short, long) in [
            ("friendly", "friendly_unfriendly"),
            ("Unfriendly", "friendly_unfriendly"),
            ("f", "friendly_unfriendly"),
            ("student", "student_phd"),
            ("PHD", "student_phd"),
            ("stu", "student_phd"),
        ] {
            assert_eq!(
                select_subsets("psoups:d", &v(&[short]), &avail).unwrap(),
                v(&[long]),
                "{short}"
            );
        }
        assert_eq!(
            select_subsets("psoups:d", &v(&["phd", "friendly"]), &avail).unwrap(),
            avail,
            "load order kept"
        );
        // PRB names: a prefix or a word of one config works; a word of several is ambiguous.
        let prb = v(&[
            "Art_and_Entertainment",
            "Lifestyle_and_Personal_Development",
            "Society_and_Culture",
        ]);
        assert_eq!(
            select_subsets("s", &v(&["life", "culture"]), &prb).unwrap(),
            v(&["Lifestyle_and_Personal_Development", "Society_and_Culture"])
        );
        let err = select_subsets("s", &v(&["and"]), &prb).unwrap_err();
        assert!(matches!(err, DataError::SubsetAmbiguous { .. }), "{err}");
        assert!(
            err.to_string().contains(
                "Art_and_Entertainment, Lifestyle_and_Personal_Development, Society_and_Culture"
            ),
            "{err}"
        );
        // An unknown name lists the valid ones.
        let err = select_subsets("psoups:d", &v(&["kind"]), &avail).unwrap_err();
        assert!(
            err.to_string()
                .contains("\"kind\" is not present (available: friendly_unfriendly, student_phd)"),
            "{err}"
        );
        assert!(select_subsets("psoups:d", &v(&[" "]), &avail).is_err());
    }
}
