//! The annotation folder around the store: what it may hold before a start, the output paths
//! that would destroy it, and the lock a serving process holds on it.

use std::path::Path;

use super::STORE_FILE;
use crate::error::AnnotateError;

/// Refuses `path` as an output file when writing it would destroy ratings: a store's own files
/// (`annotate.sqlite`, its `-wal`/`-shm`, the lock) or any existing SQLite database.
///
/// # Errors
/// [`AnnotateError::Refused`] naming the path and what to pass instead.
pub fn refuse_store_path(path: &Path) -> Result<(), AnnotateError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ours = [STORE_FILE, LOCK_FILE].contains(&name)
        || [STORE_FILE].iter().any(|f| name == format!("{f}-wal") || name == format!("{f}-shm"));
    // A file that cannot be read is no database this would destroy.
    let sqlite = prbench_files::is_sqlite(path).unwrap_or(false);
    if ours || sqlite {
        return Err(AnnotateError::Refused {
            path: path.to_path_buf(),
            reason: "this is an annotation store (or another SQLite database): writing here would destroy ratings; pass another output file".into(),
        });
    }
    Ok(())
}

/// Whether `name` is a file an annotation folder holds before its store exists: the lock, or
/// the side file a new store is built in (and its `-wal`/`-shm`), left by a start that was
/// killed or refused mid-way.
fn made_before_the_store(name: &str) -> bool {
    let side = format!("{STORE_FILE}.new");
    name == LOCK_FILE
        || name == side
        || name == format!("{side}-wal")
        || name == format!("{side}-shm")
}

/// Checks that `dir` can be an annotation folder without creating or changing anything: it
/// does not exist yet, is empty, holds a store (`annotate.sqlite`, resumed), or holds only what
/// a start that stopped before its store was made leaves behind (the lock, the side file).
///
/// # Errors
/// [`AnnotateError::Refused`] when `dir` is a file, or a folder holding other files (ratings
/// are never mixed into someone else's folder); [`AnnotateError::Io`] when it cannot be read.
pub fn check_folder(dir: &Path) -> Result<(), AnnotateError> {
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(AnnotateError::Io { path: dir.to_path_buf(), source }),
    };
    if !meta.is_dir() {
        return Err(AnnotateError::Refused {
            path: dir.to_path_buf(),
            reason: "this is a file; --out names the annotation folder: pass a new folder path"
                .into(),
        });
    }
    if dir.join(STORE_FILE).is_file() {
        return Ok(());
    }
    let io = |source| AnnotateError::Io { path: dir.to_path_buf(), source };
    let mut others: Vec<String> = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        let name = e.map_err(io)?.file_name().to_string_lossy().into_owned();
        if !made_before_the_store(&name) {
            others.push(name);
        }
    }
    if others.is_empty() {
        return Ok(());
    }
    others.sort();
    let shown: Vec<String> = others.iter().take(3).map(|n| format!("`{n}`")).collect();
    let more =
        if others.len() > 3 { format!(" and {} more", others.len() - 3) } else { String::new() };
    Err(AnnotateError::Refused {
        path: dir.to_path_buf(),
        reason: format!(
            "this folder holds {}{more} but no `{STORE_FILE}`, so `prbench annotate serve` did not make it; pass a new or empty folder as --out",
            shown.join(", ")
        ),
    })
}

/// The lock file of an annotation folder: `annotate serve` holds it (an advisory lock, released
/// when the process ends, even by SIGKILL), so two servers never share a folder.
pub const LOCK_FILE: &str = "annotate.lock";

pub(super) fn lock(dir: &Path) -> Result<std::fs::File, AnnotateError> {
    let path = dir.join(LOCK_FILE);
    let io = |source| AnnotateError::Io { path: path.clone(), source };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(AnnotateError::Refused {
            path: dir.to_path_buf(),
            reason: "another `prbench annotate serve` is serving this folder: stop it first (two servers on one folder would hand out different links)".into(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}
