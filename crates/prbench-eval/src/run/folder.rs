//! Run ids and new run folders: an id is a plain folder name, and a run never writes into a
//! folder that exists.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::EvalError;

/// Checks that a run id is a plain folder name: non-empty, ASCII letters, digits, `.`, `_`
/// and `-` only, not starting with `.`.
///
/// # Errors
/// [`EvalError::RunDir`] saying what is wrong.
pub fn validate_run_id(id: &str) -> Result<(), EvalError> {
    let ok = !id.is_empty()
        && !id.starts_with('.')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(EvalError::RunDir {
            path: PathBuf::from(id),
            reason: "a run id must be a plain folder name: letters, digits, `.`, `_`, `-`, not starting with `.`".into(),
        })
    }
}

/// Why a run folder is refused: it exists already.
const RUN_EXISTS: &str =
    "a run with this id already exists; pass another --run-id or remove the folder";

/// Checks, without creating anything, that `run_id` is valid and `out_dir/run_id` does not exist
/// yet; returns that path. [`create_run_dir`] makes the same check atomically when it creates it.
///
/// # Errors
/// [`EvalError::RunDir`] for an invalid id or an existing folder.
pub fn check_run_dir_free(out_dir: &Path, run_id: &str) -> Result<PathBuf, EvalError> {
    validate_run_id(run_id)?;
    let dir = out_dir.join(run_id);
    if dir.exists() {
        return Err(EvalError::RunDir { path: dir, reason: RUN_EXISTS.into() });
    }
    Ok(dir)
}

/// Creates `out_dir/run_id` as a new, empty folder. `prbench eval` checks ids with
/// [`check_run_dir_free`] before loading a model and creates the folders after.
///
/// # Errors
/// [`EvalError::RunDir`] when the id is invalid, the folder already exists (runs are never
/// overwritten) or cannot be created.
pub fn create_run_dir(out_dir: &Path, run_id: &str) -> Result<PathBuf, EvalError> {
    validate_run_id(run_id)?;
    fs::create_dir_all(out_dir)
        .map_err(|e| EvalError::RunDir { path: out_dir.to_path_buf(), reason: e.to_string() })?;
    let dir = out_dir.join(run_id);
    fs::create_dir(&dir).map_err(|e| EvalError::RunDir {
        path: dir.clone(),
        reason: if e.kind() == std::io::ErrorKind::AlreadyExists {
            RUN_EXISTS.into()
        } else {
            e.to_string()
        },
    })?;
    Ok(dir)
}
