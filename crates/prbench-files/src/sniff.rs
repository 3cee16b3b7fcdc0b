//! What a file is, from its first bytes.

use std::io::Read;
use std::path::Path;

/// The 16 bytes every SQLite 3 database file starts with (sqlite.org/fileformat.html, §1.3,
/// "The Database Header": the header string `"SQLite format 3\000"`).
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The first `n` bytes of the file at `path`, or all of it when it is shorter.
///
/// # Errors
/// The [`std::io::Error`] of opening or reading the file (a missing file is
/// [`std::io::ErrorKind::NotFound`]).
pub fn read_head(path: &Path, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    std::fs::File::open(path)?.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Whether the file at `path` starts with `magic` (a file shorter than `magic` does not).
///
/// # Errors
/// As [`read_head`].
pub fn starts_with(path: &Path, magic: &[u8]) -> std::io::Result<bool> {
    Ok(read_head(path, magic.len())? == magic)
}

/// Whether the file at `path` is a SQLite 3 database: it starts with [`SQLITE_MAGIC`].
///
/// # Errors
/// As [`read_head`].
pub fn is_sqlite(path: &Path) -> std::io::Result<bool> {
    starts_with(path, SQLITE_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_the_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("a.sqlite");
        let mut bytes = SQLITE_MAGIC.to_vec();
        bytes.extend_from_slice(b"rest of the page");
        std::fs::write(&db, &bytes).unwrap();
        assert!(is_sqlite(&db).unwrap());
        let short = dir.path().join("short");
        std::fs::write(&short, b"SQLite").unwrap();
        assert!(!is_sqlite(&short).unwrap());
        assert_eq!(read_head(&short, 100).unwrap(), b"SQLite");
        assert!(starts_with(&short, b"SQL").unwrap());
        assert!(starts_with(&short, b"").unwrap());
        let missing = dir.path().join("missing");
        assert_eq!(is_sqlite(&missing).unwrap_err().kind(), std::io::ErrorKind::NotFound);
    }
}
