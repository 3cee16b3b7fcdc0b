//! Helpers shared by the binary's integration tests: run the real `prbench` binary in a folder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the built binary with `args` in `cwd`.
pub fn prbench(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prbench")).args(args).current_dir(cwd).output().expect("binary runs")
}

/// Lossy UTF-8 of captured output.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The bundled sample dataset's path.
pub fn sample() -> String {
    repo().join("data/sample").display().to_string()
}
