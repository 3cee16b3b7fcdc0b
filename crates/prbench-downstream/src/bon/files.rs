//! Reading and writing the Best-of-N files (JSON Lines, one record per line), with errors that
//! name the file and line.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::BonError;

/// Every record of a JSONL file; blank lines are skipped.
///
/// # Errors
/// [`BonError::File`] naming the file and the 1-based line that is not a valid record (with
/// serde's reason: a missing or unknown field, a wrong type), or the file when unreadable.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, BonError> {
    let text = std::fs::read_to_string(path).map_err(|e| BonError::File {
        path: path.display().to_string(),
        line: 0,
        reason: e.to_string(),
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| BonError::File {
                path: path.display().to_string(),
                line: i + 1,
                reason: format!("{e}; was this file written by this version of prbench?"),
            })
        })
        .collect()
}

/// Writes `rows` as JSONL to `path` atomically ([`prbench_files::write_jsonl`]: a temporary
/// file beside it, renamed into place), so a killed run never leaves a half-written file under
/// the final name. Nothing is kept for a resume: a killed stage resumes from the run cache, never
/// from a half-written file.
///
/// # Errors
/// [`BonError::File`] when the file cannot be written.
pub fn write_jsonl<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), BonError> {
    prbench_files::write_jsonl(path, rows).map_err(|e| file_error(path, e))
}

/// Writes `value` as pretty JSON (with a final newline) atomically
/// ([`prbench_files::write_json_pretty`]).
///
/// # Errors
/// [`BonError::File`] when the file cannot be written.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), BonError> {
    prbench_files::write_json_pretty(path, value).map_err(|e| file_error(path, e))
}

/// A write error as [`BonError::File`]: the path, no line, the I/O (or serde) message.
fn file_error(path: &Path, e: prbench_files::WriteError) -> BonError {
    BonError::File { path: path.display().to_string(), line: 0, reason: e.source.to_string() }
}

/// Reads a JSON file.
///
/// # Errors
/// [`BonError::File`] when unreadable or not a valid value of `T`.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, BonError> {
    let text = std::fs::read_to_string(path).map_err(|e| BonError::File {
        path: path.display().to_string(),
        line: 0,
        reason: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| BonError::File {
        path: path.display().to_string(),
        line: e.line(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Row {
        a: u32,
    }

    #[test]
    fn round_trips_and_names_the_bad_line() {
        let dir = std::env::temp_dir().join(format!("prbench-bon-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.jsonl");
        write_jsonl(&p, &[Row { a: 1 }, Row { a: 2 }]).unwrap();
        assert_eq!(read_jsonl::<Row>(&p).unwrap(), [Row { a: 1 }, Row { a: 2 }]);
        assert!(!dir.join("x.jsonl.partial").exists());
        std::fs::write(&p, "{\"a\":1}\n\n{\"a\":2,\"b\":3}\n").unwrap();
        let e = read_jsonl::<Row>(&p).unwrap_err().to_string();
        assert!(e.contains("x.jsonl` line 3") && e.contains("unknown field `b`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
