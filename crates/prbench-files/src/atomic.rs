//! Writing a file so that it appears whole or not at all.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// A write that failed: the file it was for and the I/O error, kept as the source (and not
/// repeated in the message: a chain printer shows it).
#[derive(Debug, thiserror::Error)]
#[error("cannot write `{}`", path.display())]
pub struct WriteError {
    /// The target file (not its temporary file, whose name means nothing to a user).
    pub path: PathBuf,
    /// What the operating system said (serialization errors of [`write_jsonl`] and
    /// [`write_json_pretty`] come as [`std::io::ErrorKind::InvalidData`] with serde's message).
    #[source]
    pub source: std::io::Error,
}

/// Temporary files made by this process so far: with the process id, a name no other writer
/// of the same target uses at the same time.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// `<folder>/.<name>.<pid>-<n>.tmp`: in the target's folder, so the rename stays on one file
/// system (and is atomic); hidden and ending in `.tmp`, so a leftover after a crash is never
/// read by a loader that lists the folder (a `.jsonl`, `.parquet` or `.json` file); unique per
/// process and write, so two writers never share one.
fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy());
    path.with_file_name(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A file being written atomically: bytes go (buffered) to a temporary file beside the target;
/// [`AtomicFile::commit`] flushes them to disk and renames the file over the target. Dropped
/// without a commit (an error on the way), the temporary file is removed and the target is
/// untouched.
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    tmp: PathBuf,
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `path`: creates its temporary file (the folder must exist).
    ///
    /// # Errors
    /// [`WriteError`] naming `path` when the temporary file cannot be created.
    pub fn create(path: &Path) -> Result<AtomicFile, WriteError> {
        let tmp = temp_path(path);
        let file =
            File::create(&tmp).map_err(|source| WriteError { path: path.to_path_buf(), source })?;
        Ok(AtomicFile { target: path.to_path_buf(), tmp, file: Some(BufWriter::new(file)) })
    }

    /// The target file.
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// Flushes, `fsync`s and renames the temporary file over the target (replacing a file
    /// there). The data is on disk before the rename, so after a crash the target holds the old
    /// contents or the new, never an empty or partial file.
    ///
    /// # Errors
    /// [`WriteError`] naming the target; the temporary file is removed.
    pub fn commit(mut self) -> Result<(), WriteError> {
        let err = |source| WriteError { path: self.target.clone(), source };
        let w = self.file.take().expect("the file is open until commit");
        let file = w.into_inner().map_err(|e| err(e.into_error()))?;
        file.sync_all().map_err(err)?;
        drop(file);
        std::fs::rename(&self.tmp, &self.target).map_err(err)?;
        // Renamed: nothing left for drop to remove.
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("the file is open until commit").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("the file is open until commit").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` atomically ([`AtomicFile`]: temporary file beside it, `fsync`,
/// rename). The folder must exist.
///
/// # Errors
/// [`WriteError`] naming `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes).map_err(|source| WriteError { path: path.to_path_buf(), source })?;
    f.commit()
}

/// Writes `rows` to `path` atomically as JSON Lines: one compact JSON value per row, each
/// followed by `\n`.
///
/// # Errors
/// [`WriteError`] naming `path` (a row that does not serialize is
/// [`std::io::ErrorKind::InvalidData`]).
pub fn write_jsonl<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_path_buf(), source };
    let mut f = AtomicFile::create(path)?;
    for r in rows {
        serde_json::to_writer(&mut f, r).map_err(|e| err(e.into()))?;
        f.write_all(b"\n").map_err(err)?;
    }
    f.commit()
}

/// Writes `value` to `path` atomically as pretty JSON (serde_json's two-space indentation)
/// with a final newline.
///
/// # Errors
/// [`WriteError`] naming `path` (a value that does not serialize is
/// [`std::io::ErrorKind::InvalidData`]).
pub fn write_json_pretty<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), WriteError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| WriteError { path: path.to_path_buf(), source: e.into() })?;
    write_atomic(path, (text + "\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn writes_replaces_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        write_jsonl(&dir.path().join("r.jsonl"), &[1, 2]).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap(), "1\n2\n");
        write_json_pretty(&p, &serde_json::json!({ "a": [1] })).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\n  \"a\": [\n    1\n  ]\n}\n");
        assert_eq!(names(dir.path()), ["a.json", "r.jsonl"]);
    }

    #[test]
    fn a_failed_write_names_the_target_and_leaves_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "old").unwrap();
        // Dropped without a commit: the target keeps its contents, the temporary file goes.
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"new").unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(names(dir.path()), ["a.txt"]);
        // A folder that does not exist: the error names the target and keeps the io error.
        let missing = dir.path().join("no/such/b.txt");
        let e = write_atomic(&missing, b"x").unwrap_err();
        assert_eq!(e.path, missing);
        assert_eq!(e.source.kind(), std::io::ErrorKind::NotFound);
        assert!(std::error::Error::source(&e).is_some());
        assert!(e.to_string().contains("no/such/b.txt"), "{e}");
        // A map key that is not a string does not serialize: InvalidData, nothing written.
        let bad: std::collections::HashMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        let e = write_jsonl(&dir.path().join("bad.jsonl"), &[bad]).unwrap_err();
        assert_eq!(e.source.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(names(dir.path()), ["a.txt"]);
    }
}
