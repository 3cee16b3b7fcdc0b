//! File modes.

use std::path::Path;

/// Gives the file at `path` mode 0644 (the owner reads and writes, everyone else reads), the
/// mode `std::fs::write` gives a new file under the usual umask 022. For files written through
/// a temporary file that is created 0600 and renamed (candle's safetensors writer does this),
/// which would otherwise be unreadable to the other users of a shared machine. Does nothing on
/// platforms other than Unix.
///
/// # Errors
/// The [`std::io::Error`] of `chmod` (no such file, not permitted).
pub fn readable_by_all(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_file_becomes_readable_by_all() {
        let dir = std::env::temp_dir().join(format!("prbench-files-perm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("head.safetensors");
        std::fs::write(&file, b"x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        readable_by_all(&file).unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(mode, 0o644);
        assert!(readable_by_all(&dir.join("absent")).is_err());
    }
}
