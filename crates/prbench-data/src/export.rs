//! Writes examples as a dataset in the Hugging Face layout of Personalized-RewardBench
//! (PROTOCOL.md §1): one parquet file per subset (config) at
//! `<dir>/<subset>/test-00000-of-00001.parquet`, plus the YAML of a dataset card that declares
//! the configs ([`card_yaml`]).
//!
//! What is written loads unchanged with [`crate::load()`] (`prbench eval --data DIR`) and with
//! Hugging Face `datasets` (`load_dataset("parquet", data_dir=DIR)`, or `load_dataset(DIR)` once
//! a `README.md` carries the card). `tools/read_prb_export.py` is the pyarrow reference reader
//! the tests check the files against.
//!
//! The Arrow schema is PRB's, column for column, with the types `datasets` writes for the
//! published dataset (its card declares `dtype: string` and `list:` of structs): `Utf8` strings
//! and `List` lists whose item field is called `item`, every field nullable as `datasets` marks
//! them (no value is ever null: the loader rejects nulls). pyarrow prints it as
//! `profile: list<item: struct<category: string, id: string, text: string>>`. The files carry no
//! `huggingface` schema metadata; `datasets` infers the same features from the Arrow types.
//!
//! PRB data has no user id, and its export is exactly the schema above. A config in which some
//! example has a [`Example::user_id`] (adapted data such as SynthesizeMe or PRISM) gets one more
//! `Utf8` column, `user_id`, after `rejected`, null for the examples without one; the loader
//! reads it back (null = no user id).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder, StructBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::load::Format;
use crate::load::RowShape;
use crate::rows::{subset_rank, validate_examples};
use crate::schema::{canonical_subset, Example, USER_ID_FIELD};

/// File name of a config's one parquet file (split `test`, one shard).
const FILE_NAME: &str = "test-00000-of-00001.parquet";
/// Rows per record batch handed to the parquet writer.
const BATCH_ROWS: usize = 256;

/// One column of the PRB schema: a string, or a list of structs of string fields.
enum Column {
    Str(&'static str),
    List(&'static str, [&'static str; 3]),
}

/// PRB's columns in PRB's order (PROTOCOL.md §1); struct fields in the published order.
const COLUMNS: [Column; 8] = [
    Column::Str("id"),
    Column::Str("question"),
    Column::List("profile", ["category", "id", "text"]),
    Column::List("rubric_aspects", ["aspect", "evidence", "reason"]),
    Column::Str("narrative"),
    Column::Str("category"),
    Column::Str("chosen"),
    Column::Str("rejected"),
];

/// One config (subset) [`write_hf_layout`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportedConfig {
    /// Config name: the examples' `subset`, e.g. `Art_and_Entertainment`.
    pub subset: String,
    /// The parquet file, relative to the export directory, e.g.
    /// `Art_and_Entertainment/test-00000-of-00001.parquet`.
    pub path: PathBuf,
    /// Rows in the file.
    pub rows: usize,
    /// Size of the file in bytes (the card's `download_size`).
    pub bytes: u64,
    /// Size of the data in Arrow memory as `datasets` counts it (pyarrow `Table.nbytes`): per
    /// string value 4 offset bytes plus its UTF-8 bytes, per list value 4 offset bytes, no
    /// validity bitmaps (no value is null). The card's `num_bytes` and `dataset_size`.
    pub arrow_bytes: u64,
    /// sha256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// Whether the file has the `user_id` column (some example of the config has a user id).
    #[serde(default)]
    pub user_id_column: bool,
}

fn string_fields(names: &[&str]) -> Fields {
    names.iter().map(|n| Field::new(*n, DataType::Utf8, true)).collect::<Vec<_>>().into()
}

fn item_field(fields: &[&str]) -> Field {
    Field::new("item", DataType::Struct(string_fields(fields)), true)
}

/// The export's Arrow schema (see the module docs): PRB's columns, plus `user_id` when
/// `with_user_id`.
fn schema(with_user_id: bool) -> Schema {
    let mut fields: Vec<Field> = COLUMNS
        .iter()
        .map(|c| match c {
            Column::Str(name) => Field::new(*name, DataType::Utf8, true),
            Column::List(name, fields) => {
                Field::new(*name, DataType::List(Arc::new(item_field(fields))), true)
            }
        })
        .collect();
    if with_user_id {
        fields.push(Field::new(USER_ID_FIELD, DataType::Utf8, true));
    }
    Schema::new(fields)
}

fn list_builder(fields: &[&str], capacity: usize) -> ListBuilder<StructBuilder> {
    ListBuilder::new(StructBuilder::from_fields(string_fields(fields), capacity))
        .with_field(item_field(fields))
}

fn push_struct(list: &mut ListBuilder<StructBuilder>, values: [&str; 3]) {
    let s = list.values();
    for (i, v) in values.iter().enumerate() {
        s.field_builder::<StringBuilder>(i).expect("string field").append_value(v);
    }
    s.append(true);
}

/// One record batch of `rows`, columns in [`COLUMNS`] order (then `user_id` if `schema` has it).
fn batch(schema: &SchemaRef, rows: &[&Example]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let strings = |get: fn(&Example) -> &str| -> ArrayRef {
        let mut b = StringBuilder::new();
        for ex in rows {
            b.append_value(get(ex));
        }
        Arc::new(b.finish())
    };
    let mut profile = list_builder(&["category", "id", "text"], 0);
    let mut rubric = list_builder(&["aspect", "evidence", "reason"], 0);
    for ex in rows {
        for p in &ex.profile {
            push_struct(&mut profile, [&p.category, &p.id, &p.text]);
        }
        profile.append(true);
        for a in &ex.rubric_aspects {
            push_struct(&mut rubric, [&a.aspect, &a.evidence, &a.reason]);
        }
        rubric.append(true);
    }
    let mut columns: Vec<ArrayRef> = vec![
        strings(|e| e.id.as_str()),
        strings(|e| e.question.as_str()),
        Arc::new(profile.finish()),
        Arc::new(rubric.finish()),
        strings(|e| e.narrative.as_str()),
        strings(|e| e.category.as_str()),
        strings(|e| e.chosen.as_str()),
        strings(|e| e.rejected.as_str()),
    ];
    if schema.column_with_name(USER_ID_FIELD).is_some() {
        let mut b = StringBuilder::new();
        for ex in rows {
            b.append_option(ex.user_id.as_deref());
        }
        columns.push(Arc::new(b.finish()));
    }
    RecordBatch::try_new(schema.clone(), columns)
}

/// [`ExportedConfig::arrow_bytes`] of `rows`. The `user_id` column, when written, counts like
/// the other strings (a null as 4 offset bytes), plus its validity bitmap (one bit per row,
/// rounded up to bytes) when some value is null, as pyarrow counts it for a file of one row
/// group.
fn arrow_bytes(rows: &[&Example], with_user_id: bool) -> u64 {
    let s = |v: &str| 4 + v.len() as u64;
    let user_ids = if with_user_id {
        let nulls = rows.iter().any(|e| e.user_id.is_none());
        rows.iter().map(|e| s(e.user_id.as_deref().unwrap_or(""))).sum::<u64>()
            + if nulls { (rows.len() as u64).div_ceil(8) } else { 0 }
    } else {
        0
    };
    let prb: u64 = rows
        .iter()
        .map(|e| {
            [&e.id, &e.question, &e.narrative, &e.category, &e.chosen, &e.rejected]
                .iter()
                .map(|v| s(v))
                .sum::<u64>()
                + 4
                + e.profile.iter().map(|p| s(&p.category) + s(&p.id) + s(&p.text)).sum::<u64>()
                + 4
                + e.rubric_aspects
                    .iter()
                    .map(|a| s(&a.aspect) + s(&a.evidence) + s(&a.reason))
                    .sum::<u64>()
        })
        .sum();
    prb + user_ids
}

/// A file writer that hashes and counts what goes through it.
struct HashingWriter {
    inner: prbench_files::AtomicFile,
    hash: Sha256,
    bytes: u64,
}

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn write_err(path: &Path, e: impl std::fmt::Display) -> DataError {
    DataError::Write { file: path.display().to_string(), detail: e.to_string() }
}

fn refuse(dir: &Path, detail: String) -> DataError {
    DataError::Export { dir: dir.display().to_string(), detail }
}

/// Checks that `name` is usable as a config folder that loads back under the same name.
fn check_subset_name(dir: &Path, name: &str) -> Result<(), DataError> {
    if name.trim().is_empty() {
        return Err(refuse(
            dir,
            "an example has an empty subset name; give every example the subset (config) it belongs to".into(),
        ));
    }
    let safe = name.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !safe {
        return Err(refuse(
            dir,
            format!(
                "subset {name:?} is not a safe folder name: use ASCII letters, digits, `_`, `-` and \
                 `.`, starting with a letter, digit or `_`"
            ),
        ));
    }
    let canonical = canonical_subset(name);
    if canonical != name {
        return Err(refuse(
            dir,
            format!(
                "subset {name:?} would load back as {canonical:?} (the loader reads PRB short names \
                 as the long config name); name the subset {canonical:?}"
            ),
        ));
    }
    Ok(())
}

/// Refuses a directory that already holds data the loader would read beside the export: another
/// config folder with parquet files, a flat `.parquet`/`.json`/`.jsonl` file, or another parquet
/// file in one of the export's config folders. The export's own files (an earlier export of the
/// same configs) are overwritten. `subsets` are the configs whose
/// `<config>/test-00000-of-00001.parquet` may be there (to be replaced). [`write_hf_layout`] runs
/// it before writing; a caller that writes after a long computation (`prbench build`) runs it
/// first too, so a folder it could not export into is refused before any work.
///
/// # Errors
/// [`DataError::Export`] naming the first file that would be mixed in; I/O errors.
pub fn check_target(dir: &Path, subsets: &[&str]) -> Result<(), DataError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(write_err(dir, e)),
    };
    let clash = |what: String| {
        refuse(
            dir,
            format!(
                "{what} is already there, and `prbench eval --data DIR` would load it together with \
                 the export; remove it or export to an empty directory"
            ),
        )
    };
    for entry in entries {
        let entry = entry.map_err(|e| write_err(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            let ours = subsets.contains(&name.as_str());
            for inner in std::fs::read_dir(&path).map_err(|e| write_err(&path, e))? {
                let inner = inner.map_err(|e| write_err(&path, e))?;
                let file = inner.file_name().to_string_lossy().into_owned();
                let is_parquet = !file.starts_with('.')
                    && Format::from_path(Path::new(&file)) == Some(Format::Parquet);
                if is_parquet && !(ours && file == FILE_NAME) {
                    return Err(clash(format!("`{name}/{file}`")));
                }
            }
        } else if Format::from_path(&path).is_some() {
            return Err(clash(format!("`{name}`")));
        }
    }
    Ok(())
}

/// Writes one config's file atomically ([`prbench_files::AtomicFile`]: a hidden temporary file
/// in the same folder, fsync, renamed into place; removed on an error), hashing what it writes.
fn write_config(dir: &Path, subset: &str, rows: &[&Example]) -> Result<ExportedConfig, DataError> {
    let with_user_id = rows.iter().any(|e| e.user_id.is_some());
    let folder = dir.join(subset);
    std::fs::create_dir_all(&folder).map_err(|e| write_err(&folder, e))?;
    let path = folder.join(FILE_NAME);
    let file =
        prbench_files::AtomicFile::create(&path).map_err(|e| write_err(&e.path, e.source))?;
    let sink = HashingWriter { inner: file, hash: Sha256::new(), bytes: 0 };
    let schema = Arc::new(schema(with_user_id));
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let mut writer =
        ArrowWriter::try_new(sink, schema.clone(), Some(props)).map_err(|e| write_err(&path, e))?;
    for chunk in rows.chunks(BATCH_ROWS) {
        let b = batch(&schema, chunk).map_err(|e| write_err(&path, e))?;
        writer.write(&b).map_err(|e| write_err(&path, e))?;
    }
    let sink = writer.into_inner().map_err(|e| write_err(&path, e))?;
    let (bytes, sha256) = (sink.bytes, hex::encode(sink.hash.finalize()));
    sink.inner.commit().map_err(|e| write_err(&e.path, e.source))?;
    Ok(ExportedConfig {
        subset: subset.to_string(),
        path: PathBuf::from(subset).join(FILE_NAME),
        rows: rows.len(),
        bytes,
        arrow_bytes: arrow_bytes(rows, with_user_id),
        sha256,
        user_id_column: with_user_id,
    })
}

/// Writes `examples` under `dir` in the Hugging Face layout of PROTOCOL.md §1 and returns one
/// [`ExportedConfig`] per subset, in the order the loader reads them.
///
/// Each example goes to `<dir>/<subset>/test-00000-of-00001.parquet` (the folder is its
/// `subset`, the `subset` field itself is not a column); configs come in `PRB_SUBSETS` order,
/// then other names alphabetically, rows in input order within a config. Columns are exactly
/// PRB's, in PRB's order (see the module docs for the types), plus `user_id` in a config where
/// some example has one; files are snappy-compressed. Each
/// file is written to a hidden temporary file in its folder and renamed into place, so a reader
/// never sees half a file. `dir` is created if needed; an earlier export's files for the same
/// configs are replaced, other files (a `README.md`, …) are left alone.
///
/// Everything is checked before anything is written, so on a refusal nothing changes.
///
/// # Errors
/// - [`DataError::Export`] for an empty `examples`, an empty subset name, a subset name that is
///   not a safe single folder name (ASCII letters, digits, `_`, `-`, `.`; not starting with `.`
///   or `-`), a PRB short name such as `Art` (it would load back as `Art_and_Entertainment`), two
///   subsets differing only in case, or a `dir` that already holds other data the loader would
///   read with the export (another config's parquet files, a flat `.parquet`/`.json`/`.jsonl`).
/// - The loader's row errors ([`DataError::EmptyField`], [`DataError::SameAnswers`],
///   [`DataError::DuplicatePostId`], [`DataError::DuplicateId`]) for examples the loader would
///   reject, naming the file and 1-based row a later load would report.
/// - [`DataError::Write`] naming the file when a folder or file cannot be written.
pub fn write_hf_layout(dir: &Path, examples: &[Example]) -> Result<Vec<ExportedConfig>, DataError> {
    if examples.is_empty() {
        return Err(refuse(
            dir,
            "no examples to export; the loader refuses an empty dataset".into(),
        ));
    }
    let mut subsets: Vec<&str> = Vec::new();
    for ex in examples {
        if !subsets.contains(&ex.subset.as_str()) {
            check_subset_name(dir, &ex.subset)?;
            if let Some(other) = subsets.iter().find(|s| s.eq_ignore_ascii_case(&ex.subset)) {
                return Err(refuse(
                    dir,
                    format!(
                        "subsets {other:?} and {:?} differ only in case; their folders would clash on \
                         case-insensitive file systems and subset selection cannot tell them apart: \
                         rename one",
                        ex.subset
                    ),
                ));
            }
            subsets.push(&ex.subset);
        }
    }
    subsets.sort_by_cached_key(|s| subset_rank(s));
    let groups: Vec<(&str, Vec<&Example>)> = subsets
        .iter()
        .map(|s| (*s, examples.iter().filter(|e| e.subset == *s).collect()))
        .collect();
    let labels: Vec<String> =
        subsets.iter().map(|s| dir.join(s).join(FILE_NAME).display().to_string()).collect();
    validate_examples(
        groups.iter().zip(&labels).flat_map(|((_, rows), label)| {
            rows.iter().enumerate().map(move |(i, ex)| (*ex, label.as_str(), i + 1))
        }),
        RowShape::Pairs,
    )?;
    check_target(dir, &subsets)?;
    std::fs::create_dir_all(dir).map_err(|e| write_err(dir, e))?;
    groups.iter().map(|(subset, rows)| write_config(dir, subset, rows)).collect()
}

/// Words a YAML 1.1 parser (PyYAML) reads as something other than a string when unquoted.
const YAML_RESERVED: [&str; 11] =
    ["y", "n", "yes", "no", "true", "false", "on", "off", "null", "nan", "inf"];

/// `s` as a YAML scalar: plain when that reads back as the same string, else double-quoted
/// (a JSON string, which YAML reads as a double-quoted scalar).
fn yaml_str(s: &str) -> String {
    let plain = s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '*'))
        && !YAML_RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s));
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string serializes")
    }
}

/// The YAML front matter of a Hugging Face dataset card for `configs` (as returned by
/// [`write_hf_layout`]), without the `---` fences: the caller writes
/// `---\n{card_yaml}---\n` at the top of `<dir>/README.md` (optionally with more keys, such as
/// `license:`, before the closing fence).
///
/// It holds `configs:` (per config: `config_name` and `data_files: [{split: test, path:
/// <subset>/test-*}]`, which `load_dataset(DIR)` follows) and `dataset_info:` (per config: the
/// PRB `features` in the card syntax of the published dataset, `string` dtypes and `list:` of
/// struct fields, then `user_id` for a config that has the column; `splits: [{name: test, num_bytes: <arrow_bytes>, num_examples: <rows>}]`;
/// `download_size` (the file's bytes) and `dataset_size` (`arrow_bytes`), as the published card
/// has them; `datasets` ignores a `splits` entry without `num_bytes`, and checks
/// `num_examples` against the files when it loads). Names are quoted where YAML would read them as something else. Every line
/// ends with a newline; an empty `configs` gives `configs: []` and `dataset_info: []`.
pub fn card_yaml(configs: &[ExportedConfig]) -> String {
    if configs.is_empty() {
        return "configs: []\ndataset_info: []\n".into();
    }
    let mut y = String::from("configs:\n");
    for c in configs {
        y += &format!(
            "- config_name: {}\n  data_files:\n  - split: test\n    path: {}\n",
            yaml_str(&c.subset),
            yaml_str(&format!("{}/test-*", c.subset))
        );
    }
    y += "dataset_info:\n";
    for c in configs {
        y += &format!("- config_name: {}\n  features:\n", yaml_str(&c.subset));
        for col in &COLUMNS {
            match col {
                Column::Str(name) => y += &format!("  - name: {name}\n    dtype: string\n"),
                Column::List(name, fields) => {
                    y += &format!("  - name: {name}\n    list:\n");
                    for f in fields {
                        y += &format!("    - name: {f}\n      dtype: string\n");
                    }
                }
            }
        }
        if c.user_id_column {
            y += &format!("  - name: {USER_ID_FIELD}\n    dtype: string\n");
        }
        y += &format!(
            "  splits:\n  - name: test\n    num_bytes: {}\n    num_examples: {}\n  download_size: {}\n  dataset_size: {}\n",
            c.arrow_bytes, c.rows, c.bytes, c.arrow_bytes
        );
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_quotes_what_yaml_would_misread() {
        assert_eq!(yaml_str("Art_and_Entertainment"), "Art_and_Entertainment");
        assert_eq!(yaml_str("friendly_unfriendly/test-*"), "friendly_unfriendly/test-*");
        assert_eq!(yaml_str("yes"), "\"yes\"");
        assert_eq!(yaml_str("Null"), "\"Null\"");
        assert_eq!(yaml_str("2024"), "\"2024\"");
        assert_eq!(yaml_str("1.5/test-*"), "\"1.5/test-*\"");
        assert_eq!(yaml_str("-x"), "\"-x\"");
    }
}
