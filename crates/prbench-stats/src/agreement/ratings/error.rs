//! Errors of reading a ratings CSV.

/// Why a ratings CSV cannot be read. Every variant names the file (`file`, as given) and,
/// where there is one, the 1-based line as a text editor shows it.
#[derive(Debug, thiserror::Error)]
pub enum RatingsError {
    /// The file cannot be opened or read (the I/O error is the cause, printed once).
    #[error("cannot read `{file}`")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// No header line.
    #[error("`{file}` is empty: it needs a header line naming the columns annotator, unit, dimension and score")]
    Empty {
        /// The file.
        file: String,
    },
    /// A required column is missing from the header.
    #[error("`{file}` line {line}: no `{column}` column (the header has {}); name the columns annotator, unit, dimension and score, in any order", quoted(.header))]
    MissingColumn {
        /// The file.
        file: String,
        /// The header's line.
        line: u64,
        /// The missing column.
        column: &'static str,
        /// The header's column names.
        header: Vec<String>,
    },
    /// A required column appears twice in the header.
    #[error("`{file}` line {line}: column `{column}` appears twice; keep one")]
    DuplicateColumn {
        /// The file.
        file: String,
        /// The header's line.
        line: u64,
        /// The repeated column.
        column: &'static str,
    },
    /// The header has no rows after it.
    #[error("`{file}` has a header but no ratings: add one row per score")]
    NoRatings {
        /// The file.
        file: String,
    },
    /// A row has more or fewer fields than the header.
    #[error("`{file}` line {line}: {got} fields, the header has {expected}; quote a field that contains a comma")]
    FieldCount {
        /// The file.
        file: String,
        /// The row's line.
        line: u64,
        /// Fields in the header.
        expected: u64,
        /// Fields in the row.
        got: u64,
    },
    /// A row is not valid UTF-8.
    #[error("`{file}` line {line}: field {field} is not valid UTF-8; save the file as UTF-8")]
    NotUtf8 {
        /// The file.
        file: String,
        /// The row's line.
        line: u64,
        /// The 1-based field number.
        field: usize,
    },
    /// Another CSV fault.
    #[error("`{file}` line {line}: not valid CSV: {message}")]
    Csv {
        /// The file.
        file: String,
        /// The line (0 when the parser gives none).
        line: u64,
        /// The parser's description.
        message: String,
    },
    /// A required field is empty.
    #[error("`{file}` line {line}: field `{field}` is empty; every row needs an annotator, a unit, a dimension and a score")]
    EmptyField {
        /// The file.
        file: String,
        /// The row's line.
        line: u64,
        /// The empty field.
        field: &'static str,
    },
    /// The score is not a finite number.
    #[error("`{file}` line {line}: field `score`: `{value}` is not a finite number; write a number such as 4 or 3.5")]
    BadScore {
        /// The file.
        file: String,
        /// The row's line.
        line: u64,
        /// The field's text.
        value: String,
    },
    /// The same annotator scored the same unit on the same dimension twice.
    #[error("`{file}` line {line}: annotator `{annotator}` already scored unit `{unit}` on dimension `{dimension}` at line {first_line}; keep one of the two rows")]
    DuplicateRating {
        /// The file.
        file: String,
        /// The later row's line.
        line: u64,
        /// The earlier row's line.
        first_line: u64,
        /// The annotator.
        annotator: String,
        /// The unit.
        unit: String,
        /// The dimension.
        dimension: String,
    },
}

fn quoted(names: &[String]) -> String {
    if names.is_empty() {
        return "no columns".into();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}
