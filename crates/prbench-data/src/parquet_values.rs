//! Parquet rows as JSON row objects, for adapters that parse rows with the JSON row helpers
//! ([`crate::json_rows::RowCtx`]), so that JSON and parquet input share one parser and every
//! message names the same field paths.
//!
//! Each row becomes an object of its columns. A null value is left out of its object, so a
//! required field reads as missing (as in the PRB parquet reader); a null list element stays
//! `null`. Strings (`Utf8`, `LargeUtf8`, `Utf8View`), booleans, integers, floats, lists (`List`,
//! `LargeList`) and structs convert; a column of any other type (checked against the schema
//! before any row is read) is a [`DataError::ColumnType`] for the whole file.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use serde_json::{Map, Number, Value};

use crate::error::DataError;
use crate::rows::ContentHash;

const BATCH_ROWS: usize = 256;

/// Checks that `t` (at column path `path`) is a type [`to_value`] converts.
fn check_type(t: &DataType, path: &str, file: &str) -> Result<(), DataError> {
    use DataType::*;
    match t {
        Null | Boolean | Utf8 | LargeUtf8 | Utf8View | Int8 | Int16 | Int32 | Int64 | UInt8
        | UInt16 | UInt32 | UInt64 | Float32 | Float64 => Ok(()),
        List(f) | LargeList(f) => check_type(f.data_type(), &format!("{path}[]"), file),
        Struct(fields) => fields
            .iter()
            .try_for_each(|f| check_type(f.data_type(), &format!("{path}.{}", f.name()), file)),
        other => Err(DataError::ColumnType {
            file: file.to_string(),
            field: path.to_string(),
            expected: "strings, numbers, booleans, lists or structs".into(),
            found: other.to_string(),
        }),
    }
}

fn number(n: Option<Number>) -> Value {
    n.map_or(Value::Null, Value::Number)
}

/// The value at `i` of `a` (whose type passed [`check_type`]) as JSON.
fn to_value(a: &dyn Array, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    macro_rules! int {
        ($t:ty) => {
            Value::from(a.as_primitive::<$t>().value(i))
        };
    }
    match a.data_type() {
        DataType::Boolean => Value::Bool(a.as_boolean().value(i)),
        DataType::Utf8 => Value::String(a.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Value::String(a.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Value::String(a.as_string_view().value(i).to_string()),
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float32 => {
            number(Number::from_f64(a.as_primitive::<Float32Type>().value(i) as f64))
        }
        DataType::Float64 => number(Number::from_f64(a.as_primitive::<Float64Type>().value(i))),
        DataType::List(_) => list(a.as_list::<i32>().value(i).as_ref()),
        DataType::LargeList(_) => list(a.as_list::<i64>().value(i).as_ref()),
        DataType::Struct(_) => {
            let s = a.as_struct();
            object(s.column_names().into_iter().zip(s.columns()).map(|(n, c)| (n, c.as_ref())), i)
        }
        _ => Value::Null, // excluded by `check_type`
    }
}

fn list(items: &dyn Array) -> Value {
    Value::Array((0..items.len()).map(|j| to_value(items, j)).collect())
}

/// An object of the non-null `(name, column)` values at row `i`.
fn object<'a>(columns: impl Iterator<Item = (&'a str, &'a dyn Array)>, i: usize) -> Value {
    let mut m = Map::new();
    for (name, col) in columns {
        if !col.is_null(i) {
            m.insert(name.to_string(), to_value(col, i));
        }
    }
    Value::Object(m)
}

fn batch_values(batch: &RecordBatch, i: usize) -> Value {
    let schema = batch.schema();
    object(
        schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .zip(batch.columns().iter().map(|c| c.as_ref())),
        i,
    )
}

/// Reads a parquet file, adds it to the hash under `name`, and hands each row to `f` as a JSON
/// object with its 1-based row, in order, stopping at the first error.
///
/// # Errors
/// [`DataError::Parquet`] when the file cannot be read as parquet, [`DataError::ColumnType`] for
/// a column type that does not convert, and whatever `f` returns.
pub(crate) fn visit_parquet(
    path: &Path,
    name: &str,
    hash: &mut ContentHash,
    f: impl FnMut(usize, Value) -> Result<(), DataError>,
) -> Result<(), DataError> {
    visit_parquet_columns(path, name, hash, None, f)
}

/// The columns an adapter reads from a parquet file: `required` ones (absent = a
/// [`DataError::AdapterColumn`] for the whole file, naming `layout`) and `optional` ones (read
/// when present). Other columns are neither read nor type-checked, so score or prediction
/// columns of any type do not matter.
pub(crate) struct Projection<'a> {
    /// Columns that must be there.
    pub required: &'a [&'a str],
    /// Columns read when there.
    pub optional: &'a [&'a str],
    /// The layout the file is meant to be in, for messages (e.g. `SynthesizeMe`).
    pub layout: &'a str,
}

/// [`visit_parquet`] reading only the columns `projection` names (all columns when `None`).
///
/// # Errors
/// As [`visit_parquet`], plus [`DataError::AdapterColumn`] for a required column that is absent.
pub(crate) fn visit_parquet_columns(
    path: &Path,
    name: &str,
    hash: &mut ContentHash,
    projection: Option<&Projection>,
    mut f: impl FnMut(usize, Value) -> Result<(), DataError>,
) -> Result<(), DataError> {
    let file = path.display().to_string();
    hash.add_file(name, path)?;
    let reader_error =
        |row: usize, detail: String| DataError::Parquet { file: file.clone(), row, detail };
    let handle =
        std::fs::File::open(path).map_err(|source| DataError::Io { file: file.clone(), source })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(handle)
        .map_err(|e| reader_error(1, e.to_string()))?;
    let schema = builder.schema().clone();
    let mut keep: Vec<usize> = (0..schema.fields().len()).collect();
    if let Some(p) = projection {
        let present: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        if let Some(missing) = p.required.iter().find(|c| !present.contains(c)) {
            return Err(DataError::AdapterColumn {
                file: file.clone(),
                field: missing.to_string(),
                present: present.join(", "),
                layout: p.layout.to_string(),
            });
        }
        keep.retain(|&i| {
            let n = present[i];
            p.required.contains(&n) || p.optional.contains(&n)
        });
    }
    for &i in &keep {
        let field = schema.field(i);
        check_type(field.data_type(), field.name(), &file)?;
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), keep.iter().copied());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| reader_error(1, e.to_string()))?;
    let mut row = 0;
    for batch in reader {
        let batch = batch.map_err(|e| reader_error(row + 1, e.to_string()))?;
        for i in 0..batch.num_rows() {
            row += 1;
            f(row, batch_values(&batch, i))?;
        }
    }
    Ok(())
}
