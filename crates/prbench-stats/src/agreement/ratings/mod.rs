//! Ratings from any source: a CSV file with a header naming the columns `annotator`, `unit`,
//! `dimension` and `score`, in any order. Other columns are allowed and reported
//! ([`Ratings::ignored_columns`]) so the caller can say they were ignored.
//!
//! One row is one score: annotator `annotator` gave unit `unit` the score `score` (any finite
//! number, e.g. 1–5) on dimension `dimension`. Fields are trimmed of surrounding spaces; a UTF-8
//! byte-order mark and blank lines are skipped (and still counted in the line numbers of errors). Dimensions are kept in ascending byte order of their names (not
//! in the order first seen) so that the report does not depend on the row order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;

use super::data::{Rating, ReliabilityData};

mod error;

pub use error::RatingsError;

/// The four columns a ratings CSV must have.
pub const REQUIRED_COLUMNS: [&str; 4] = ["annotator", "unit", "dimension", "score"];

/// The ratings of one dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionRatings {
    data: ReliabilityData,
    n_annotators: usize,
}

impl DimensionRatings {
    /// The reliability data: one unit per `unit` value, its ratings the rows' scores.
    pub fn data(&self) -> &ReliabilityData {
        &self.data
    }

    /// Rows (scores) of this dimension.
    pub fn n_ratings(&self) -> usize {
        self.data.n_ratings()
    }

    /// Distinct annotators who scored this dimension.
    pub fn n_annotators(&self) -> usize {
        self.n_annotators
    }
}

/// Ratings read from a CSV, grouped by dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratings {
    source: String,
    ignored_columns: Vec<String>,
    dimensions: BTreeMap<String, DimensionRatings>,
}

impl Ratings {
    /// Reads the ratings CSV at `path`.
    ///
    /// # Errors
    /// [`RatingsError`] naming the file and line, see [`Ratings::from_csv_reader`].
    pub fn from_csv_path(path: impl AsRef<Path>) -> Result<Self, RatingsError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        match std::fs::File::open(path) {
            Ok(f) => Ratings::from_csv_reader(file, f),
            Err(source) => Err(RatingsError::Io { file, source }),
        }
    }

    /// Reads a ratings CSV from `reader`, whole, into memory; `source` names it in errors (a
    /// path, or e.g. `<stdin>`).
    ///
    /// # Errors
    /// [`RatingsError`]: the input is empty or not CSV, a required column is missing or
    /// repeated, there are no rows, a row has an empty annotator, unit, dimension or score, a
    /// score is not a finite number, or an (annotator, unit, dimension) appears twice (the error
    /// names both lines: neither row is kept silently).
    pub fn from_csv_reader(
        source: impl Into<String>,
        mut reader: impl Read,
    ) -> Result<Self, RatingsError> {
        let file = source.into();
        // The whole input is held in memory (a ratings file is small) so that a row's line can
        // be found from its byte offset, see `line_at`.
        let mut bytes = Vec::new();
        if let Err(source) = reader.read_to_end(&mut bytes) {
            return Err(RatingsError::Io { file, source });
        }
        let line = |pos: Option<&csv::Position>| line_at(&bytes, pos);
        let mut rdr = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(bytes.as_slice());
        let header = rdr.headers().map_err(|e| csv_error(&file, &bytes, e))?.clone();
        if header.is_empty() {
            return Err(RatingsError::Empty { file });
        }
        let header_line = line(header.position());
        let names: Vec<String> = header.iter().map(str::to_string).collect();
        let cols = required_columns(&file, header_line, &names)?;
        let ignored_columns =
            names.iter().filter(|n| !REQUIRED_COLUMNS.contains(&n.as_str())).cloned().collect();

        let mut seen: HashMap<(String, String, String), u64> = HashMap::new();
        let mut by_dim: BTreeMap<String, DimensionBuilder> = BTreeMap::new();
        let mut record = csv::StringRecord::new();
        while rdr.read_record(&mut record).map_err(|e| csv_error(&file, &bytes, e))? {
            let line = line(record.position());
            let mut fields = [""; 4];
            for (f, (&col, &name)) in fields.iter_mut().zip(cols.iter().zip(&REQUIRED_COLUMNS)) {
                *f = &record[col];
                if f.is_empty() {
                    return Err(RatingsError::EmptyField { file, line, field: name });
                }
            }
            let [annotator, unit, dimension, score] = fields;
            let value = score.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                RatingsError::BadScore { file: file.clone(), line, value: score.to_string() }
            })?;
            let key = (annotator.to_string(), unit.to_string(), dimension.to_string());
            if let Some(&first_line) = seen.get(&key) {
                let (annotator, unit, dimension) = key;
                return Err(RatingsError::DuplicateRating {
                    file,
                    line,
                    first_line,
                    annotator,
                    unit,
                    dimension,
                });
            }
            seen.insert(key, line);
            let dim = by_dim.entry(dimension.to_string()).or_default();
            dim.units.entry(unit.to_string()).or_default().push(Rating::new(annotator, value));
            dim.annotators.insert(annotator.to_string());
        }
        if by_dim.is_empty() {
            return Err(RatingsError::NoRatings { file });
        }
        let dimensions = by_dim
            .into_iter()
            .map(|(name, dim)| {
                // Finite scores, one per (annotator, unit) and at least one per unit: checked above.
                let data = ReliabilityData::new(dim.units).expect("ratings checked while reading");
                (name, DimensionRatings { data, n_annotators: dim.annotators.len() })
            })
            .collect();
        Ok(Ratings { source: file, ignored_columns, dimensions })
    }

    /// The source's name as given (the path, for [`Ratings::from_csv_path`]).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Header columns other than the four required ones, in header order.
    pub fn ignored_columns(&self) -> &[String] {
        &self.ignored_columns
    }

    /// The ratings by dimension, ascending by name; never empty.
    pub fn dimensions(&self) -> &BTreeMap<String, DimensionRatings> {
        &self.dimensions
    }
}

/// One dimension's ratings while reading.
#[derive(Default)]
struct DimensionBuilder {
    units: BTreeMap<String, Vec<Rating>>,
    annotators: BTreeSet<String>,
}

/// The index of each of [`REQUIRED_COLUMNS`] in the header `names` (on line `line`).
fn required_columns(file: &str, line: u64, names: &[String]) -> Result<[usize; 4], RatingsError> {
    let mut cols = [0usize; 4];
    for (col, &name) in cols.iter_mut().zip(&REQUIRED_COLUMNS) {
        let mut at = names.iter().enumerate().filter(|(_, n)| *n == name).map(|(i, _)| i);
        *col = at.next().ok_or_else(|| RatingsError::MissingColumn {
            file: file.to_string(),
            line,
            column: name,
            header: names.to_vec(),
        })?;
        if at.next().is_some() {
            return Err(RatingsError::DuplicateColumn {
                file: file.to_string(),
                line,
                column: name,
            });
        }
    }
    Ok(cols)
}

/// The 1-based line on which the record at `pos` starts. csv's position of a record is where
/// the reader stood before it, which is before any blank lines it skipped; those are skipped
/// here too, counting their newlines. 0 when there is no position.
fn line_at(bytes: &[u8], pos: Option<&csv::Position>) -> u64 {
    let Some(pos) = pos else { return 0 };
    let mut line = pos.line();
    let start = usize::try_from(pos.byte()).unwrap_or(bytes.len()).min(bytes.len());
    for &b in bytes[start..].iter().take_while(|&&b| b == b'\n' || b == b'\r') {
        line += u64::from(b == b'\n');
    }
    line
}

fn csv_error(file: &str, bytes: &[u8], e: csv::Error) -> RatingsError {
    let file = file.to_string();
    let line = line_at(bytes, e.position());
    match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            return RatingsError::FieldCount { file, line, expected: *expected_len, got: *len };
        }
        csv::ErrorKind::Utf8 { err, .. } => {
            return RatingsError::NotUtf8 { file, line, field: err.field() + 1 }
        }
        _ => {}
    }
    let message = e.to_string();
    match e.into_kind() {
        csv::ErrorKind::Io(source) => RatingsError::Io { file, source },
        _ => RatingsError::Csv { file, line, message },
    }
}
