//! The one error type of this crate.
//!
//! Every message says where the problem is and what to do about it. Row-level variants carry the
//! file, the 1-based row (the line number for JSONL, the array index + 1 for a JSON array, the row
//! number for parquet) and the field; nested fields are written as paths with 0-based list indices,
//! e.g. `profile[2].text`. File-level variants (unreadable file, missing parquet column) name the
//! file and, where it applies, the column.

use std::path::PathBuf;

/// Why a dataset could not be loaded or failed validation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The dataset spec itself is unusable (no such path, unknown extension, bad `hf:` repo id).
    #[error("spec `{spec}`: {detail}")]
    BadSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong and what to do.
        detail: String,
    },

    /// A file an adapter needs is not there (no underlying error: the message says which files
    /// the adapter reads and what to do).
    #[error("required file {file} is missing: {detail}")]
    MissingFile {
        /// The path looked for.
        file: String,
        /// Which files the adapter needs, and what to do.
        detail: String,
    },

    /// A file or directory could not be read (the I/O error is the cause, printed once).
    #[error("cannot read {file}; check that the path exists and is readable")]
    Io {
        /// The path that failed.
        file: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A file or directory could not be written (the synthetic-benchmark generator).
    #[error(
        "cannot write {file}: {detail}; check that the folder is writable and the disk has room"
    )]
    Write {
        /// The path that failed.
        file: String,
        /// The writer's message.
        detail: String,
    },

    /// [`crate::export::write_hf_layout`] refused its input before writing (no examples, a
    /// subset name that is not a safe folder name, a folder that already holds other data).
    #[error("cannot export to {dir}: {detail}")]
    Export {
        /// The export directory.
        dir: String,
        /// What is wrong and what to do.
        detail: String,
    },

    /// A JSON or JSONL file is not valid UTF-8.
    #[error(
        "{file}: line {line} (byte offset {offset}): the file is not valid UTF-8 (for JSONL the \
         line is the row); re-encode the file as UTF-8"
    )]
    NotUtf8 {
        /// The file.
        file: String,
        /// 1-based line holding the first invalid byte.
        line: usize,
        /// Byte offset of the first invalid byte.
        offset: usize,
    },

    /// JSON syntax error (or a blank JSONL line, or a JSON file that is not an array of rows).
    #[error(
        "{file}: line {line}, column {column}: malformed JSON: {detail}; fix the JSON on that line"
    )]
    MalformedJson {
        /// The file.
        file: String,
        /// 1-based line (for JSONL, the row).
        line: usize,
        /// 1-based column (0 when unknown).
        column: usize,
        /// What the parser found.
        detail: String,
    },

    /// A required field is absent (or null in parquet).
    #[error(
        "{file}: row {row}: required field `{field}` is missing or null; add it or remove the row"
    )]
    MissingField {
        /// The file.
        file: String,
        /// 1-based row.
        row: usize,
        /// Field path, e.g. `chosen` or `profile[0].text`.
        field: String,
    },

    /// A field holds a value of the wrong type.
    #[error(
        "{file}: row {row}: field `{field}` must be {expected} but is {found}; fix the value or \
         remove the row"
    )]
    WrongType {
        /// The file.
        file: String,
        /// 1-based row.
        row: usize,
        /// Field path (`(row)` for the row value itself).
        field: String,
        /// The type the schema needs.
        expected: String,
        /// What was found.
        found: String,
    },

    /// A text field that must carry content is empty or whitespace only.
    #[error("{file}: row {row}: field `{field}` is empty (or whitespace only); fill it in or remove the row")]
    EmptyField {
        /// The file.
        file: String,
        /// 1-based row.
        row: usize,
        /// The field (`id`, `question`, `chosen`, `rejected`, `user_id`, an adapter's field path,
        /// or `rubric_aspects[i].aspect` for question rows).
        field: String,
    },

    /// A question row (loaded for `prbench build`) has no rubric aspects: the build writes its
    /// chosen/rejected answers from them, so a row without aspects cannot become an example.
    #[error(
        "{file}: row {row}: field `rubric_aspects` is empty; `prbench build` needs the rubric \
         aspects to write the chosen/rejected answers: add at least one aspect or remove the row"
    )]
    NoAspects {
        /// The file.
        file: String,
        /// 1-based row.
        row: usize,
    },

    /// `chosen` and `rejected` hold the same text (after trimming), so the pair ranks nothing.
    #[error(
        "{file}: row {row}: fields `chosen` and `rejected` are identical, so the pair cannot be \
         ranked; fix or remove the row"
    )]
    SameAnswers {
        /// The file.
        file: String,
        /// 1-based row.
        row: usize,
    },

    /// A ranked dataset file's `profile_ranking` (or `dataset_kind`) does not fit its row or the
    /// other rows: post ids that are not the row's profile ids in order (ids detached from their
    /// text, PROTOCOL.md §10 defect 10), scores of the wrong length or order, or a field that
    /// some rows carry and others lack or carry with another value.
    #[error("{file}: row {row}: field `{field}` {detail}")]
    Ranking {
        /// The file.
        file: String,
        /// 1-based row.
        row: usize,
        /// Field path, e.g. `profile_ranking.post_ids`.
        field: String,
        /// What is wrong and what to do (starts with a verb phrase: "is missing, …").
        detail: String,
    },

    /// A value an adapter reads is well-typed but breaks one of the dataset's rules (a
    /// conversation turn with no chosen reply, a role out of place, a user missing from the
    /// survey, an unknown split name, …).
    #[error("{file}: row {row}: field `{field}` {detail}")]
    InvalidField {
        /// The file.
        file: String,
        /// 1-based row (the JSONL line, or the parquet row).
        row: usize,
        /// Field path, e.g. `conversation_history[3].if_chosen`.
        field: String,
        /// What is wrong and what to do (starts with a verb phrase: "is …", "has …").
        detail: String,
    },

    /// Two posts of one profile share an id: retrieval and `profile:k` keep each id attached to
    /// its own text, so ids must be unique within a profile.
    #[error(
        "{file}: row {row}: field `{field}` value {id:?} repeats `{first_field}`; post ids must be \
         unique within a profile (retrieval and `profile:k` attach each id to its own text): give \
         one of the two posts another id, or remove the repeated post"
    )]
    DuplicatePostId {
        /// The file.
        file: String,
        /// 1-based row.
        row: usize,
        /// The repeated post's id field, e.g. `profile[7].id`.
        field: String,
        /// The id.
        id: String,
        /// The first post with that id, e.g. `profile[2].id`.
        first_field: String,
    },

    /// A file holds the other JSON layout than its extension names (a JSON array in a `.jsonl`
    /// file, JSON lines in a `.json` file).
    #[error("{file}: {detail}")]
    WrongJsonLayout {
        /// The file.
        file: String,
        /// What the content looks like and which extension to use.
        detail: String,
    },

    /// Two rows share an id (ids must be unique across the whole dataset).
    #[error(
        "{file}: row {row}: field `id` value {id:?} duplicates {first_file} row {first_row}; ids \
         must be unique across the dataset: rename or remove one of the two rows"
    )]
    DuplicateId {
        /// The id.
        id: String,
        /// File of the second occurrence.
        file: String,
        /// 1-based row of the second occurrence.
        row: usize,
        /// File of the first occurrence.
        first_file: String,
        /// 1-based row of the first occurrence.
        first_row: usize,
    },

    /// A row's `subset` field disagrees with the config (directory or file stem) it was read from.
    #[error(
        "{file}: row {row}: field `subset` is {found:?} but the row belongs to config {expected:?} \
         (its directory or file name); remove the field or move the row to the right file"
    )]
    SubsetMismatch {
        /// The file.
        file: String,
        /// 1-based row.
        row: usize,
        /// The subset the file belongs to.
        expected: String,
        /// The row's `subset` value.
        found: String,
    },

    /// A required parquet column is absent (affects all rows of the file).
    #[error(
        "{file}: all rows: required column `{field}` is missing (columns present: {present}); \
         re-export the file with the schema of PROTOCOL.md §1"
    )]
    MissingColumn {
        /// The file.
        file: String,
        /// Column (or nested field) path.
        field: String,
        /// Comma-separated names of the columns that are there.
        present: String,
    },

    /// A column an adapter needs is absent from a parquet file (affects all rows of the file):
    /// the file is not in the layout the adapter reads.
    #[error(
        "{file}: all rows: required column `{field}` is missing (columns present: {present}); \
         this file is not in the {layout} layout: point the spec at the dataset's own files"
    )]
    AdapterColumn {
        /// The file.
        file: String,
        /// The missing column.
        field: String,
        /// Comma-separated names of the columns that are there.
        present: String,
        /// The layout the adapter reads (e.g. `SynthesizeMe`).
        layout: String,
    },

    /// A parquet column has the wrong Arrow type (affects all rows of the file).
    #[error(
        "{file}: all rows: column `{field}` must be {expected} but is {found}; re-export the file \
         with the schema of PROTOCOL.md §1"
    )]
    ColumnType {
        /// The file.
        file: String,
        /// Column (or nested field) path.
        field: String,
        /// Accepted types.
        expected: String,
        /// The Arrow type found.
        found: String,
    },

    /// The parquet reader failed (not a parquet file, corrupt, invalid UTF-8 in a string column).
    #[error("{file}: cannot read as parquet (around row {row}): {detail}; re-download or re-export the file")]
    Parquet {
        /// The file.
        file: String,
        /// 1-based row at which reading stopped (1 when the file could not be opened).
        row: usize,
        /// The reader's message.
        detail: String,
    },

    /// A dataset location holds no data files.
    #[error("{source_name}: {detail}")]
    NoData {
        /// The spec or directory.
        source_name: String,
        /// What was expected.
        detail: String,
    },

    /// Two files in one dataset directory map to the same subset.
    #[error(
        "{source_name}: both {first} and {second} hold subset {subset:?}; keep one of them (or \
         load them separately)"
    )]
    DuplicateSubset {
        /// The directory.
        source_name: String,
        /// The canonical subset name.
        subset: String,
        /// First file or directory.
        first: String,
        /// Second file or directory.
        second: String,
    },

    /// A requested subset is not in the dataset.
    #[error(
        "{source_name}: subset {requested:?} is not present (available: {}); pick one of these \
         (long or short name, any case) or omit the subset selection",
        available.join(", ")
    )]
    SubsetNotFound {
        /// The spec.
        source_name: String,
        /// The name as requested.
        requested: String,
        /// Subsets the dataset has.
        available: Vec<String>,
    },

    /// A short subset name fits several subsets.
    #[error(
        "{source_name}: subset {requested:?} is ambiguous: it fits {}; give more of the name",
        matches.join(", ")
    )]
    SubsetAmbiguous {
        /// The spec.
        source_name: String,
        /// The name as requested.
        requested: String,
        /// The subsets it fits.
        matches: Vec<String>,
    },

    /// Offline mode is on and a file is not in the local Hugging Face cache.
    #[error(
        "hf:{repo}@{revision}: file {file} is not in the Hugging Face cache at {} and offline mode \
         is on (HF_HUB_OFFLINE); run once with network access (unset HF_HUB_OFFLINE) or \
         pre-populate the cache, e.g. `huggingface-cli download --repo-type {repo_type} {repo} {file} \
         --revision {revision}`",
        cache_dir.display()
    )]
    HubNotCached {
        /// `dataset` or `model`.
        repo_type: &'static str,
        /// `ORG/NAME`.
        repo: String,
        /// Revision (branch, tag or commit).
        revision: String,
        /// Repository-relative file path.
        file: String,
        /// Cache directory searched.
        cache_dir: PathBuf,
    },

    /// `prbench data fetch`: a downloaded file is not the one its source publishes. The
    /// download was refused: its temporary file is removed and nothing was put in place.
    #[error(
        "{file} (from {url}): {what} is {found}, but the source publishes {expected}; the \
         download was refused and nothing was kept. Run the fetch again; if it repeats, the \
         server (or a proxy or mirror in between) does not serve the published file: fetch from \
         another mirror or report it"
    )]
    FetchMismatch {
        /// The file as the source names it.
        file: String,
        /// Where it was downloaded from.
        url: String,
        /// `size` or `sha256`.
        what: &'static str,
        /// The published value.
        expected: String,
        /// The downloaded file's value.
        found: String,
    },

    /// `prbench data fetch`: a request failed.
    #[error(
        "cannot download {what} from {url}: {detail}; check the network, or point prbench at a \
         mirror (HF_ENDPOINT for the hub; PRBENCH_GITHUB_RAW or --github-raw for GitHub files: an \
         http(s) base URL serving the same paths as the URL above), or put the file in place \
         yourself (a rerun checks it)"
    )]
    Download {
        /// The file or source.
        what: String,
        /// The URL requested.
        url: String,
        /// What went wrong.
        detail: String,
    },

    /// `prbench data fetch` in offline mode (`HF_HUB_OFFLINE`): a file is not in place, or not
    /// the published one.
    #[error(
        "{name}: {file} is not there, or is not the published file (its size or sha256 differs), \
         and offline mode is on (HF_HUB_OFFLINE), so it was not downloaded from {url}; unset \
         HF_HUB_OFFLINE and fetch again, or put the published file there"
    )]
    FetchOffline {
        /// The source's name.
        name: String,
        /// The missing file.
        file: String,
        /// Where a fetch would download it from.
        url: String,
    },

    /// Fetching a file from the Hugging Face Hub failed.
    #[error(
        "hf:{repo}@{revision}: cannot fetch {file} (cache {}): {detail}; check the repo id, \
         revision and network, or set HF_HUB_OFFLINE=1 to use the cache only",
        cache_dir.display()
    )]
    Hub {
        /// `ORG/NAME`.
        repo: String,
        /// Revision (branch, tag or commit).
        revision: String,
        /// Repository-relative file path.
        file: String,
        /// Cache directory used.
        cache_dir: PathBuf,
        /// The hub client's message.
        detail: String,
    },
}
