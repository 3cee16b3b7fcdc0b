//! Stage 5, `export`: the output folder.
//!
//! ```text
//! DIR/README.md                              dataset card: YAML `configs:` + build statistics
//! DIR/<config>/test-00000-of-00001.parquet   the kept pairs, exact PRB columns (PROTOCOL.md §1)
//! DIR/build-report.md                        the build report (crate::report)
//! DIR/build/build.json                       generator, judge, hashes, seeds, counts, code version
//! DIR/build/chosen.jsonl, rejected.jsonl     every generated answer, with its status
//! DIR/build/audit.jsonl                      every audit call, raw reply and reading
//! DIR/build/filter.jsonl                     every pair: kept, or each reason it was dropped
//! ```
//!
//! `build.json` and the stage files live in `build/` because the dataset loader reads a
//! top-level `.json`/`.jsonl` file as a config: so the folder loads unchanged with
//! `prbench eval --data DIR` and with Hugging Face `datasets`.

use std::path::Path;

use prbench_data::export::{card_yaml, write_hf_layout, ExportedConfig};
use prbench_data::Example;
use serde::Serialize;

use crate::error::BuildError;
use crate::manifest::BuildManifest;

/// The build's own folder inside the output folder.
pub const BUILD_DIR: &str = "build";
/// The manifest, relative to the output folder (defined beside its record type).
pub use prbench_records::build::MANIFEST_FILE;
/// The chosen answers.
pub const CHOSEN_FILE: &str = "build/chosen.jsonl";
/// The rejected answers.
pub const REJECTED_FILE: &str = "build/rejected.jsonl";
/// The audit calls.
pub const AUDIT_FILE: &str = "build/audit.jsonl";
/// The filter's decisions.
pub const FILTER_FILE: &str = "build/filter.jsonl";
/// The build report (defined beside the manifest, for the report that reads both).
pub use prbench_records::build::REPORT_FILE;
/// The dataset card.
pub const CARD_FILE: &str = "README.md";

/// The lock file a running build holds (an advisory lock, released when the process ends,
/// however it ends).
pub const LOCK_FILE: &str = "build/lock";

/// A build's hold on its output folder; dropping it releases the folder.
#[derive(Debug)]
pub struct FolderLock {
    _file: std::fs::File,
}

/// The exported files a previous build in `out` listed in its manifest (none when there is no
/// manifest yet: a killed build's folder).
fn previous_files(out: &Path) -> Result<Vec<ExportedConfig>, BuildError> {
    let manifest = out.join(MANIFEST_FILE);
    match std::fs::read_to_string(&manifest) {
        Ok(text) => {
            let old: BuildManifest = serde_json::from_str(&text).map_err(|e| {
                BuildError::Input(format!(
                    "`{}` is not a build manifest ({e}); move the folder aside or pass a new --out",
                    manifest.display()
                ))
            })?;
            Ok(old.files)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(BuildError::io(&manifest, e)),
    }
}

/// Makes `out` ready for a build of `subsets` and locks it, before any model call: creates it
/// and `build/`, refuses a folder the export could not write into (checked now, not after
/// every call was paid for), and takes [`LOCK_FILE`]. Nothing is deleted here: a previous
/// build's exported files are replaced only at export ([`write_dataset`]), so a build that
/// fails on the way leaves the previous export as it was. A killed build's folder (no
/// manifest yet) is reused as is: the cache holds its calls.
///
/// # Errors
/// [`BuildError::Input`] when `out` is a file, a non-empty folder that is not a build's (no
/// `build/` in it: a build never writes over other data), holds data files the export would
/// be mixed with, or is being built by another process; I/O errors.
pub fn prepare_folder(out: &Path, subsets: &[&str]) -> Result<FolderLock, BuildError> {
    check_folder(out, subsets)?;
    create_folder(out)?;
    let lock_path = out.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| BuildError::io(&lock_path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(FolderLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(busy(out)),
        Err(std::fs::TryLockError::Error(e)) => Err(BuildError::io(&lock_path, e)),
    }
}

fn busy(out: &Path) -> BuildError {
    BuildError::Input(format!(
        "another `prbench build` is writing `{}` right now; wait for it, or pass another --out",
        out.display()
    ))
}

/// Refuses `out` when another build holds its lock now, creating nothing: a lock file that is
/// not there is held by nobody (a running build made it). The lock itself is taken later by
/// [`prepare_folder`]; this only lets a caller fail before it loads models.
fn check_not_locked(out: &Path) -> Result<(), BuildError> {
    let lock_path = out.join(LOCK_FILE);
    let file = match std::fs::File::open(&lock_path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(BuildError::io(&lock_path, e)),
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(busy(out)),
        Err(std::fs::TryLockError::Error(e)) => Err(BuildError::io(&lock_path, e)),
    }
}

/// The checks of [`prepare_folder`], creating nothing: for a caller that must refuse a bad
/// folder before it checks its other arguments, loads models or opens the cache in `build/`
/// (then [`create_folder`]), so a refused build leaves no folder behind.
///
/// # Errors
/// As [`prepare_folder`], except the lock.
pub fn check_folder(out: &Path, subsets: &[&str]) -> Result<(), BuildError> {
    if out.exists() {
        if !out.is_dir() {
            return Err(BuildError::Input(format!(
                "--out `{}` is a file; a build writes a folder: pass a new folder path",
                out.display()
            )));
        }
        let mut entries = std::fs::read_dir(out).map_err(|e| BuildError::io(out, e))?;
        if entries.next().is_some() && !out.join(BUILD_DIR).is_dir() {
            return Err(BuildError::Input(format!(
                "--out `{}` holds files but no `{BUILD_DIR}/` folder, so it is not a previous build; pass a new or empty folder",
                out.display()
            )));
        }
    }
    check_not_locked(out)?;
    let mut replaceable: Vec<&str> = subsets.to_vec();
    let previous = previous_files(out)?;
    replaceable.extend(previous.iter().map(|f| f.subset.as_str()));
    prbench_data::export::check_target(out, &replaceable)?;
    Ok(())
}

/// Creates `out` and its `build/` folder (after [`check_folder`] accepted it).
///
/// # Errors
/// I/O errors.
pub fn create_folder(out: &Path) -> Result<(), BuildError> {
    let dir = out.join(BUILD_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| BuildError::io(&dir, e))
}

/// Writes `path` atomically ([`prbench_files::write_atomic`]: a temporary file beside it,
/// fsync, then a rename).
///
/// # Errors
/// [`BuildError::Io`] naming `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    prbench_files::write_atomic(path, bytes).map_err(|e| BuildError::io(&e.path, e.source))
}

/// Writes one JSON object per line, atomically ([`prbench_files::write_jsonl`]).
///
/// # Errors
/// [`BuildError::Io`] naming `path`.
pub fn write_jsonl<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), BuildError> {
    prbench_files::write_jsonl(path, rows).map_err(|e| BuildError::io(&e.path, e.source))
}

/// Replaces a previous build's exported files (listed in its manifest; config folders left
/// empty are removed) with the kept pairs in the HF layout; writes nothing (and returns an
/// empty list) when none was kept.
///
/// # Errors
/// I/O and parquet write errors.
pub fn write_dataset(out: &Path, kept: &[Example]) -> Result<Vec<ExportedConfig>, BuildError> {
    for f in previous_files(out)? {
        let path = out.join(&f.path);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(BuildError::io(&path, e)),
        }
        if let Some(dir) = path.parent() {
            // Only an empty folder goes (remove_dir refuses others).
            let _ = std::fs::remove_dir(dir);
        }
    }
    if kept.is_empty() {
        return Ok(Vec::new());
    }
    Ok(write_hf_layout(out, kept)?)
}

/// Writes `build/build.json`, the build report and the dataset card.
///
/// # Errors
/// I/O errors.
pub fn write_metadata(
    out: &Path,
    manifest: &BuildManifest,
    report: &str,
) -> Result<(), BuildError> {
    write_atomic(&out.join(REPORT_FILE), report.as_bytes())?;
    write_atomic(&out.join(CARD_FILE), card(manifest).as_bytes())?;
    let json = serde_json::to_string_pretty(manifest).expect("manifest serializes") + "\n";
    write_atomic(&out.join(MANIFEST_FILE), json.as_bytes())
}

/// The dataset card: YAML front matter (configs and features, when pairs were exported),
/// then what the data is, how it was built and how many pairs each stage kept.
pub fn card(m: &BuildManifest) -> String {
    let mut out = String::new();
    if !m.files.is_empty() {
        out.push_str("---\n");
        out.push_str(&card_yaml(&m.files));
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("---\n\n");
    }
    let all = m.counts.iter().find(|c| c.subset == "all");
    out.push_str("# Personalized reward benchmark built with prbench\n\n");
    out.push_str(&format!(
        "Pairs of answers to users' questions: `chosen` was written to meet the user's rubric aspects, `rejected` to avoid them while \
         keeping general quality (the construction of Personalized RewardBench, arXiv 2604.07343). Built from `{}` (kind `{}`, \
         sha256 `{}`) by `prbench build` {}.\n\n",
        m.input.source, m.input.kind, m.input.hash, m.code_version
    ));
    if m.settings.skip_audit {
        out.push_str(&format!(
            "**Not audited**: built with `--skip-audit`: {}. Nothing checks that chosen fits the user better or that both are of \
             equal quality.\n\n",
            crate::settings::SKIP_AUDIT_RULE
        ));
    } else if let Some(j) = &m.judge {
        out.push_str(&format!(
            "Audited by `{}`; kept only pairs with a rubric-fit gap of at least {}, general-quality gaps of at most {}, a length \
             ratio of at most {} and both answers within {} words, which the audit prefers as chosen in both orders.\n\n",
            j.spec, m.settings.min_fit_gap, m.settings.max_quality_gap, m.settings.max_length_ratio, m.settings.max_words
        ));
    }
    out.push_str(&format!(
        "- generator: `{}` ({}; model `{}`)\n",
        m.generator.spec, m.generator.engine, m.generator.file_hash
    ));
    if let Some(j) = &m.judge {
        out.push_str(&format!(
            "- audit judge: `{}` ({}; model `{}`)\n",
            j.spec, j.engine, j.file_hash
        ));
    }
    if let Some(a) = all {
        out.push_str(&format!("- pairs: {} built, {} kept\n", a.examples, a.kept));
    }
    out.push_str("\n| subset | built | kept |\n|---|---:|---:|\n");
    for c in &m.counts {
        out.push_str(&format!("| {} | {} | {} |\n", c.subset, c.examples, c.kept));
    }
    out.push_str(&format!(
        "\nLoad it with `prbench eval --data DIR`, or with `datasets.load_dataset(DIR, \"<config>\")` (one config; \
         `load_dataset(\"parquet\", data_dir=DIR)` merges every config into one split). The statistics are in \
         `{REPORT_FILE}`; generator and judge identities, prompt hashes, seed and counts in `{MANIFEST_FILE}`. The rows inherit \
         the input's licence.\n"
    ));
    out
}
