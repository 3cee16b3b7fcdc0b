//! sha256 of model files, streamed (weights are hundreds of MB): what manifests record as
//! `file_hash`, shared by every engine.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::ModelError;

fn file_err(path: &Path, e: std::io::Error) -> ModelError {
    ModelError::file(path, "", e)
}

/// Feeds `path`'s bytes into `hasher`, streamed in 1 MiB blocks. With `header = Some(name)` the
/// bytes are preceded by `name`, a NUL byte and the file length as 8 little-endian bytes (the
/// convention of prbench-data's content hash), so several files hash unambiguously.
///
/// # Errors
/// [`ModelError::File`] naming the file when it cannot be opened or read.
pub fn hash_file_into(
    hasher: &mut Sha256,
    path: &Path,
    header: Option<&str>,
) -> Result<(), ModelError> {
    let mut f = File::open(path).map_err(|e| file_err(path, e))?;
    if let Some(name) = header {
        let len = f.metadata().map_err(|e| file_err(path, e))?.len();
        hasher.update(name.as_bytes());
        hasher.update([0u8]);
        hasher.update(len.to_le_bytes());
    }
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| file_err(path, e))?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buf[..n]);
    }
}

/// sha256 (lowercase hex) of one file's bytes.
///
/// # Errors
/// As [`hash_file_into`].
pub fn sha256_file(path: &Path) -> Result<String, ModelError> {
    let mut hasher = Sha256::new();
    hash_file_into(&mut hasher, path, None)?;
    Ok(hex::encode(hasher.finalize()))
}
