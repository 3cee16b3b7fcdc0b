//! Internals shared by the readers: a row with its provenance, the dataset content hash, and the
//! validation every loader runs before handing out a [`Dataset`].

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::load::RowShape;
use crate::schema::{Dataset, Example, DATASET_KIND_FIELD, PRB_SUBSETS, PROFILE_RANKING_FIELD};

/// One example as read, before subsets are assigned and rows validated.
#[derive(Debug, Clone)]
pub(crate) struct RawRow {
    /// The example; `subset` is filled in by the loader.
    pub example: Example,
    /// The row's own optional `subset` field, as written.
    pub subset_field: Option<String>,
    /// File the row came from (for messages).
    pub file: String,
    /// 1-based row (JSONL line, JSON array index + 1, parquet row).
    pub row: usize,
    /// Fields of data re-written by prbench (JSON/JSONL only; empty elsewhere).
    pub extra: RowExtra,
}

/// Optional row fields written by `prbench retrieve` (checked per row by the JSON reader, across
/// rows by [`finish`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct RowExtra {
    /// `profile_ranking.retriever`, when the row's profile is in ranked order.
    pub profile_ranking: Option<String>,
    /// `dataset_kind`.
    pub dataset_kind: Option<String>,
}

/// Checks that all rows or none carry `field` (read by `get`), with one value; returns it.
fn one_value(
    rows: &[RawRow],
    field: &str,
    get: impl Fn(&RawRow) -> Option<&String>,
) -> Result<Option<String>, DataError> {
    let Some(first) = rows.iter().find(|r| get(r).is_some()) else {
        return Ok(None);
    };
    let value = get(first).cloned();
    if let Some(bare) = rows.iter().find(|r| get(r).is_none()) {
        return Err(DataError::Ranking {
            file: bare.file.clone(),
            row: bare.row,
            field: field.to_string(),
            detail: format!(
                "is missing, but {} row {} has it; a file written by `prbench retrieve` has it on every row: re-run `prbench retrieve` rather than mixing ranked and unranked rows",
                first.file, first.row
            ),
        });
    }
    if let Some(other) = rows.iter().find(|r| get(r) != value.as_ref()) {
        return Err(DataError::Ranking {
            file: other.file.clone(),
            row: other.row,
            field: field.to_string(),
            detail: format!(
                "is {:?}, but {} row {} has {:?}; one dataset holds one ranking and one kind: re-run `prbench retrieve` on the whole dataset",
                get(other).map_or("", |s| s.as_str()),
                first.file,
                first.row,
                value.as_deref().unwrap_or("")
            ),
        });
    }
    Ok(value)
}

/// sha256 over the files a loader reads, in read order. Each file contributes its name (relative
/// to the dataset root, e.g. `Art_and_Entertainment/test-00000-of-00001.parquet`), a NUL byte,
/// its length as 8 little-endian bytes, then its bytes; so the same files give the same hash
/// wherever they are stored (a local copy of the HF layout and the hub cache agree).
pub(crate) struct ContentHash(Sha256);

impl ContentHash {
    pub fn new() -> Self {
        ContentHash(Sha256::new())
    }

    fn header(&mut self, name: &str, len: u64) {
        self.0.update(name.as_bytes());
        self.0.update([0u8]);
        self.0.update(len.to_le_bytes());
    }

    /// Adds a file whose bytes are already in memory.
    pub fn add_bytes(&mut self, name: &str, bytes: &[u8]) {
        self.header(name, bytes.len() as u64);
        self.0.update(bytes);
    }

    /// Adds a file by streaming it from disk.
    pub fn add_file(&mut self, name: &str, path: &Path) -> Result<(), DataError> {
        let io = |source| DataError::Io { file: path.display().to_string(), source };
        let mut f = std::fs::File::open(path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len();
        self.header(name, len);
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        loop {
            let n = f.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            total += n as u64;
            self.0.update(&buf[..n]);
        }
        if total != len {
            return Err(io(std::io::Error::other("file changed while it was being read")));
        }
        Ok(())
    }

    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// Sort key of a subset: PRB configs in `PRB_SUBSETS` order, then every other name alphabetically.
pub(crate) fn subset_rank(name: &str) -> (usize, String) {
    match PRB_SUBSETS.iter().position(|(long, _)| *long == name) {
        Some(i) => (i, String::new()),
        None => (PRB_SUBSETS.len(), name.to_string()),
    }
}

/// Checks every row: non-empty `id` and `question`; post ids unique within each profile (the
/// error names both posts); ids unique across all rows (the error names both rows). Then, by
/// `shape`:
/// - [`RowShape::Pairs`]: non-empty `chosen` and `rejected`, and they differ. Empty profiles and
///   empty rubrics are allowed (stats count them, [`crate::dataset_warnings`] warns about them).
/// - [`RowShape::Questions`]: at least one rubric aspect, each with a non-empty `aspect` text
///   (`prbench build` writes chosen/rejected from them); `chosen`/`rejected` are not checked.
pub(crate) fn validate(rows: &[RawRow], shape: RowShape) -> Result<(), DataError> {
    validate_examples(rows.iter().map(|r| (&r.example, r.file.as_str(), r.row)), shape)
}

/// [`validate`] over (example, file, 1-based row) triples: for writers that check examples
/// before writing them (the messages then name the file and row a later load would read).
pub(crate) fn validate_examples<'a>(
    rows: impl Iterator<Item = (&'a Example, &'a str, usize)>,
    shape: RowShape,
) -> Result<(), DataError> {
    let mut seen: HashMap<&str, (&str, usize)> = HashMap::new();
    for (ex, file, row) in rows {
        let empty = |field: String| DataError::EmptyField { file: file.to_string(), row, field };
        for (field, value) in [("id", &ex.id), ("question", &ex.question)] {
            if value.trim().is_empty() {
                return Err(empty(field.to_string()));
            }
        }
        match shape {
            RowShape::Pairs => {
                for (field, value) in [("chosen", &ex.chosen), ("rejected", &ex.rejected)] {
                    if value.trim().is_empty() {
                        return Err(empty(field.to_string()));
                    }
                }
                if ex.chosen.trim() == ex.rejected.trim() {
                    return Err(DataError::SameAnswers { file: file.to_string(), row });
                }
            }
            RowShape::Questions => {
                if ex.rubric_aspects.is_empty() {
                    return Err(DataError::NoAspects { file: file.to_string(), row });
                }
                if let Some(i) = ex.rubric_aspects.iter().position(|a| a.aspect.trim().is_empty()) {
                    return Err(empty(format!("rubric_aspects[{i}].aspect")));
                }
            }
        }
        let mut posts: HashMap<&str, usize> = HashMap::with_capacity(ex.profile.len());
        for (i, p) in ex.profile.iter().enumerate() {
            if let Some(first) = posts.insert(&p.id, i) {
                return Err(DataError::DuplicatePostId {
                    file: file.to_string(),
                    row,
                    field: format!("profile[{i}].id"),
                    id: p.id.clone(),
                    first_field: format!("profile[{first}].id"),
                });
            }
        }
        if let Some((first_file, first_row)) = seen.insert(&ex.id, (file, row)) {
            return Err(DataError::DuplicateId {
                id: ex.id.clone(),
                file: file.to_string(),
                row,
                first_file: first_file.to_string(),
                first_row,
            });
        }
    }
    Ok(())
}

/// Validates `rows` (non-empty; whose subsets are already assigned) for `shape`, orders them by subset (stable, so rows
/// keep file order within a subset) and wraps them up.
pub(crate) fn finish(
    mut rows: Vec<RawRow>,
    source: &str,
    kind: &str,
    hash: ContentHash,
    shape: RowShape,
) -> Result<Dataset, DataError> {
    if rows.is_empty() {
        return Err(DataError::NoData {
            source_name: source.to_string(),
            detail: "the files read hold no rows; point at a file or directory with examples"
                .into(),
        });
    }
    validate(&rows, shape)?;
    let profile_ranking =
        one_value(&rows, PROFILE_RANKING_FIELD, |r| r.extra.profile_ranking.as_ref())?;
    let kind = one_value(&rows, DATASET_KIND_FIELD, |r| r.extra.dataset_kind.as_ref())?
        .unwrap_or_else(|| kind.to_string());
    rows.sort_by_cached_key(|r| subset_rank(&r.example.subset));
    Ok(Dataset {
        examples: rows.into_iter().map(|r| r.example).collect(),
        source: source.to_string(),
        kind,
        hash: hash.finish(),
        profile_ranking,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subset_rank_puts_prb_configs_first_then_alphabetical() {
        let mut names = vec![
            "zeta",
            "Society_and_Culture",
            "alpha",
            "Art_and_Entertainment",
            "Lifestyle_and_Personal_Development",
        ];
        names.sort_by_key(|n| subset_rank(n));
        assert_eq!(
            names,
            [
                "Art_and_Entertainment",
                "Lifestyle_and_Personal_Development",
                "Society_and_Culture",
                "alpha",
                "zeta"
            ]
        );
    }

    #[test]
    fn streamed_and_in_memory_hashes_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let mut a = ContentHash::new();
        a.add_file("x/f.bin", &path).unwrap();
        let mut b = ContentHash::new();
        b.add_bytes("x/f.bin", &bytes);
        assert_eq!(a.finish(), b.finish());
        // Name and length are part of the hash: moving bytes between files changes it.
        let mut c = ContentHash::new();
        c.add_bytes("ab", b"c");
        let mut d = ContentHash::new();
        d.add_bytes("a", b"bc");
        assert_ne!(c.finish(), d.finish());
    }

    #[test]
    fn empty_hash_is_sha256_of_nothing() {
        // sha256("") from `printf '' | sha256sum`.
        assert_eq!(
            ContentHash::new().finish(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
