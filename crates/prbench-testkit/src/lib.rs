//! What prbench's tests share: where the pinned models, the reference Python and the real
//! P-Soups data are, and **one rule for a test that cannot run**.
//!
//! The rule: a test that needs something the machine may lack (a model that
//! `scripts/setup.sh` fetches, Chromium, the reference Python, a real server, the P-Soups data
//! beside the repository) asks for it here. Outside CI, a missing thing prints
//! `skipped: <reason>` to stderr and the test returns early. Under `CI=true` (CI installs
//! everything), the same call panics with the reason, so no test passes in CI by not running.
//!
//! ```no_run
//! let Some(gguf) = prbench_testkit::smollm2() else { return };
//! // … use the model at `gguf` …
//! # let _ = gguf;
//! ```
#![deny(missing_docs)]

use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether this is a CI run: the environment variable `CI` is set and not empty.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// Reports that a test cannot run because of `reason`.
///
/// # Panics
/// Under `CI=true`, always, with the reason: CI installs everything a test needs, so a missing
/// piece there is a failure. Elsewhere it writes `skipped: <reason>` straight to stderr (not
/// through `eprintln!`, which libtest captures and hides for a passing test) and returns, so the
/// caller returns early.
pub fn unavailable(reason: impl Display) {
    if in_ci() {
        panic!("CI is set, so this test must run, but it cannot: {reason}");
    }
    let _ = writeln!(std::io::stderr(), "skipped: {reason}");
}

/// `Some(path)` when `path` exists; otherwise [`unavailable`] with `what` and the path, then
/// `None`.
pub fn require_path(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        Some(path)
    } else {
        unavailable(format!("{what} is not at {}", path.display()));
        None
    }
}

/// `Some(value)` of environment variable `name` when it is set and not empty; otherwise
/// [`unavailable`] with `what` (how to set it), then `None`.
pub fn require_env(name: &str, what: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            unavailable(format!("{name} is not set ({what})"));
            None
        }
    }
}

/// The repository root (this crate sits at `crates/prbench-testkit`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where `scripts/setup.sh` puts the pinned models: `$PRBENCH_MODELS`, else
/// `~/.cache/prbench/models`.
pub fn models_dir() -> PathBuf {
    match std::env::var_os("PRBENCH_MODELS") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => home().join(".cache/prbench/models"),
    }
}

/// Where `scripts/setup.sh --tests` puts the pinned tools (the reference Python, the real
/// servers): `$PRBENCH_TOOLS`, else `~/.cache/prbench/tools`.
pub fn tools_dir() -> PathBuf {
    match std::env::var_os("PRBENCH_TOOLS") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => home().join(".cache/prbench/tools"),
    }
}

fn home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
}

/// The file name of the SmolLM2-135M-Instruct GGUF in [`models_dir`].
pub const SMOLLM2_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The SmolLM2-135M-Instruct GGUF (the tests' judge and generator), or [`unavailable`].
pub fn smollm2() -> Option<PathBuf> {
    require_path(models_dir().join(SMOLLM2_FILE), "the SmolLM2 GGUF (run scripts/setup.sh --tests)")
}

/// The all-MiniLM-L6-v2 folder (the dense retriever and embedding backbone), or
/// [`unavailable`].
pub fn minilm() -> Option<PathBuf> {
    require_path(models_dir().join("all-MiniLM-L6-v2"), "MiniLM (run scripts/setup.sh --tests)")
}

/// The real P-Soups data that sits beside the repository (`../shared/data/alignx-psoups`;
/// `PRBENCH_PSOUPS` overrides), or [`unavailable`]: CI lays it beside the clone.
pub fn psoups() -> Option<PathBuf> {
    let dir = match std::env::var_os("PRBENCH_PSOUPS") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => repo().join("../shared/data/alignx-psoups"),
    };
    require_path(
        dir,
        "the P-Soups data (CI and the developers' machines have it beside the repository)",
    )
}

/// Copies the folder `from` to `to` (files and sub-folders, recursively), for tests that work
/// on a copy of a committed fixture.
///
/// # Panics
/// When a file or folder cannot be read or written.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("creating {}: {e}", to.display()));
    for entry in
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()))
    {
        let p = entry.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest)
                .unwrap_or_else(|e| panic!("copying {} to {}: {e}", p.display(), dest.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_path_is_none_outside_ci_and_a_failure_under_ci() {
        let missing = PathBuf::from("/nonexistent/prbench-testkit-probe");
        if in_ci() {
            let caught = std::panic::catch_unwind(|| require_path(missing.clone(), "probe"));
            let msg = caught.expect_err("under CI a missing path must panic");
            let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(
                msg.contains("CI is set") && msg.contains("/nonexistent/prbench-testkit-probe"),
                "{msg}"
            );
        } else {
            assert_eq!(require_path(missing, "probe"), None);
        }
        assert_eq!(
            require_path(repo().join("Cargo.toml"), "the workspace manifest"),
            Some(repo().join("Cargo.toml"))
        );
    }
}
