//! Parquet reader for the PRB schema (PROTOCOL.md §1), through the Arrow record-batch reader.
//!
//! Accepts `Utf8`, `LargeUtf8` and `Utf8View` strings, `List` and `LargeList` lists. A column that
//! is absent or has another type fails for the whole file; a null value fails for its row. Extra
//! columns are ignored, except the optional string columns `subset` and `user_id` (null = no
//! user id; an empty string is an error). Rows read as
//! [`RowShape::Questions`] may lack the `chosen`/`rejected` columns (or hold nulls there): they
//! read as empty strings; a column that is present must still be a string column.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, GenericListArray, GenericStringArray, RecordBatch, StringViewArray,
};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::DataError;
use crate::load::RowShape;
use crate::rows::{ContentHash, RawRow};
use crate::schema::{Example, ProfilePost, RubricAspect, USER_ID_FIELD};

const STRING_TYPES: &str = "a string column (Utf8, LargeUtf8 or Utf8View)";
const POST_FIELDS: [&str; 3] = ["category", "id", "text"];
const ASPECT_FIELDS: [&str; 3] = ["aspect", "evidence", "reason"];
const BATCH_ROWS: usize = 256;

/// A string column of any of the accepted physical types.
enum StrCol<'a> {
    Small(&'a GenericStringArray<i32>),
    Large(&'a GenericStringArray<i64>),
    View(&'a StringViewArray),
}

impl<'a> StrCol<'a> {
    fn new(a: &'a dyn Array) -> Option<Self> {
        match a.data_type() {
            DataType::Utf8 => Some(StrCol::Small(a.as_string::<i32>())),
            DataType::LargeUtf8 => Some(StrCol::Large(a.as_string::<i64>())),
            DataType::Utf8View => Some(StrCol::View(a.as_string_view())),
            _ => None,
        }
    }

    /// The value at `i`, or `None` when it is null.
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            StrCol::Small(a) => (!a.is_null(i)).then(|| a.value(i)),
            StrCol::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
            StrCol::View(a) => (!a.is_null(i)).then(|| a.value(i)),
        }
    }
}

/// A list column with 32- or 64-bit offsets.
enum ListCol<'a> {
    Small(&'a GenericListArray<i32>),
    Large(&'a GenericListArray<i64>),
}

impl<'a> ListCol<'a> {
    fn get(&self, i: usize) -> Option<ArrayRef> {
        match self {
            ListCol::Small(a) => (!a.is_null(i)).then(|| a.value(i)),
            ListCol::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
        }
    }
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Column accessors for one record batch, checked against the schema.
struct Columns<'a> {
    file: &'a str,
    batch: &'a RecordBatch,
}

impl<'a> Columns<'a> {
    fn column(&self, name: &str) -> Result<&'a ArrayRef, DataError> {
        self.batch.column_by_name(name).ok_or_else(|| DataError::MissingColumn {
            file: self.file.to_string(),
            field: name.to_string(),
            present: self
                .batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    fn type_error(&self, field: &str, expected: &str, found: &DataType) -> DataError {
        DataError::ColumnType {
            file: self.file.to_string(),
            field: field.to_string(),
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }

    fn string(&self, name: &str) -> Result<StrCol<'a>, DataError> {
        let c = self.column(name)?;
        StrCol::new(c.as_ref()).ok_or_else(|| self.type_error(name, STRING_TYPES, c.data_type()))
    }

    fn opt_string(&self, name: &str) -> Result<Option<StrCol<'a>>, DataError> {
        match self.batch.column_by_name(name) {
            None => Ok(None),
            Some(c) => StrCol::new(c.as_ref())
                .map(Some)
                .ok_or_else(|| self.type_error(name, STRING_TYPES, c.data_type())),
        }
    }

    /// A `list<struct<fields…: string>>` column (the struct may have extra fields).
    fn list_of_structs(&self, name: &str, fields: &[&str]) -> Result<ListCol<'a>, DataError> {
        let c = self.column(name)?;
        let expected = format!(
            "list<struct<{}>> (List or LargeList, string fields)",
            fields.iter().map(|f| format!("{f}: string")).collect::<Vec<_>>().join(", ")
        );
        let item = match c.data_type() {
            DataType::List(f) | DataType::LargeList(f) => f.data_type(),
            other => return Err(self.type_error(name, &expected, other)),
        };
        let DataType::Struct(struct_fields) = item else {
            return Err(self.type_error(name, &expected, c.data_type()));
        };
        for f in fields {
            match struct_fields.iter().find(|sf| sf.name() == f) {
                None => {
                    return Err(DataError::MissingColumn {
                        file: self.file.to_string(),
                        field: format!("{name}[].{f}"),
                        present: struct_fields
                            .iter()
                            .map(|sf| format!("{name}[].{}", sf.name()))
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
                }
                Some(sf) if !is_string(sf.data_type()) => {
                    return Err(self.type_error(
                        &format!("{name}[].{f}"),
                        STRING_TYPES,
                        sf.data_type(),
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(match c.data_type() {
            DataType::List(_) => ListCol::Small(c.as_list::<i32>()),
            _ => ListCol::Large(c.as_list::<i64>()),
        })
    }
}

fn missing(file: &str, row: usize, field: String) -> DataError {
    DataError::MissingField { file: file.to_string(), row, field }
}

fn need(col: &StrCol, i: usize, file: &str, row: usize, field: &str) -> Result<String, DataError> {
    col.get(i).map(str::to_string).ok_or_else(|| missing(file, row, field.to_string()))
}

/// Reads one list-of-structs cell as rows of `fields.len()` strings each.
fn structs(
    list: &ListCol,
    i: usize,
    file: &str,
    row: usize,
    name: &str,
    fields: &[&str; 3],
) -> Result<Vec<[String; 3]>, DataError> {
    let cell = list.get(i).ok_or_else(|| missing(file, row, name.to_string()))?;
    let s = cell.as_struct();
    let cols: Vec<StrCol> = fields
        .iter()
        .map(|f| {
            StrCol::new(s.column_by_name(f).expect("checked against the schema").as_ref())
                .expect("checked")
        })
        .collect();
    let mut out = Vec::with_capacity(s.len());
    for j in 0..s.len() {
        if s.is_null(j) {
            return Err(missing(file, row, format!("{name}[{j}]")));
        }
        let mut vals: [String; 3] = Default::default();
        for (k, f) in fields.iter().enumerate() {
            vals[k] = need(&cols[k], j, file, row, &format!("{name}[{j}].{f}"))?;
        }
        out.push(vals);
    }
    Ok(out)
}

/// `chosen` or `rejected` for `shape`: a required column for pairs, an optional one for
/// questions.
fn answer_column<'a>(
    c: &Columns<'a>,
    name: &str,
    shape: RowShape,
) -> Result<Option<StrCol<'a>>, DataError> {
    match shape {
        RowShape::Pairs => c.string(name).map(Some),
        RowShape::Questions => c.opt_string(name),
    }
}

/// The answer at row `i`: required for pairs (`col` is then always there), empty when absent or
/// null for questions.
fn answer(
    col: &Option<StrCol>,
    shape: RowShape,
    i: usize,
    file: &str,
    row: usize,
    field: &str,
) -> Result<String, DataError> {
    match (col, shape) {
        (Some(col), RowShape::Pairs) => need(col, i, file, row, field),
        (col, _) => Ok(col.as_ref().and_then(|c| c.get(i)).unwrap_or_default().to_string()),
    }
}

fn batch_rows(
    batch: &RecordBatch,
    file: &str,
    first_row: usize,
    shape: RowShape,
    out: &mut Vec<RawRow>,
) -> Result<(), DataError> {
    let c = Columns { file, batch };
    let id = c.string("id")?;
    let question = c.string("question")?;
    let profile = c.list_of_structs("profile", &POST_FIELDS)?;
    let aspects = c.list_of_structs("rubric_aspects", &ASPECT_FIELDS)?;
    let narrative = c.string("narrative")?;
    let category = c.string("category")?;
    let chosen = answer_column(&c, "chosen", shape)?;
    let rejected = answer_column(&c, "rejected", shape)?;
    let subset = c.opt_string("subset")?;
    let user_id = c.opt_string(USER_ID_FIELD)?;
    for i in 0..batch.num_rows() {
        let row = first_row + i;
        let posts = structs(&profile, i, file, row, "profile", &POST_FIELDS)?
            .into_iter()
            .map(|[category, id, text]| ProfilePost { id, category, text })
            .collect();
        let rubric = structs(&aspects, i, file, row, "rubric_aspects", &ASPECT_FIELDS)?
            .into_iter()
            .map(|[aspect, evidence, reason]| RubricAspect { aspect, evidence, reason })
            .collect();
        let example = Example {
            id: need(&id, i, file, row, "id")?,
            subset: String::new(),
            question: need(&question, i, file, row, "question")?,
            profile: posts,
            rubric_aspects: rubric,
            narrative: need(&narrative, i, file, row, "narrative")?,
            category: need(&category, i, file, row, "category")?,
            chosen: answer(&chosen, shape, i, file, row, "chosen")?,
            rejected: answer(&rejected, shape, i, file, row, "rejected")?,
            user_id: user_id.as_ref().and_then(|c| c.get(i)).map(str::to_string),
        };
        if example.user_id.as_deref().is_some_and(|u| u.trim().is_empty()) {
            return Err(DataError::EmptyField {
                file: file.to_string(),
                row,
                field: USER_ID_FIELD.into(),
            });
        }
        let subset_field = subset.as_ref().and_then(|s| s.get(i)).map(str::to_string);
        out.push(RawRow {
            example,
            subset_field,
            file: file.to_string(),
            row,
            extra: Default::default(),
        });
    }
    Ok(())
}

/// Reads a PRB parquet file of `shape`; adds it to the hash under `name`. Row n = the file's
/// n-th row.
pub(crate) fn read_parquet(
    path: &Path,
    name: &str,
    hash: &mut ContentHash,
    shape: RowShape,
) -> Result<Vec<RawRow>, DataError> {
    hash.add_file(name, path)?;
    read_parquet_rows(path, shape)
}

/// [`read_parquet`] without the hash (the caller hashes the file).
pub(crate) fn read_parquet_rows(path: &Path, shape: RowShape) -> Result<Vec<RawRow>, DataError> {
    let file = path.display().to_string();
    let f =
        std::fs::File::open(path).map_err(|source| DataError::Io { file: file.clone(), source })?;
    let reader_error =
        |row: usize, detail: String| DataError::Parquet { file: file.clone(), row, detail };
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| reader_error(1, e.to_string()))?;
    let mut rows = Vec::new();
    // Check the schema even when the file has no rows.
    batch_rows(&RecordBatch::new_empty(builder.schema().clone()), &file, 1, shape, &mut rows)?;
    let reader =
        builder.with_batch_size(BATCH_ROWS).build().map_err(|e| reader_error(1, e.to_string()))?;
    for batch in reader {
        let batch = batch.map_err(|e| reader_error(rows.len() + 1, e.to_string()))?;
        batch_rows(&batch, &file, rows.len() + 1, shape, &mut rows)?;
    }
    Ok(rows)
}
