//! What an existing run folder holds, read without a model: its manifest, and for a finished
//! run whether its outcomes and summary are there, parse, and agree with the manifest and each
//! other. Every refusal names the folder and the file and says what to do.

use std::fs;
use std::path::Path;

use prbench_records::Summary;

use super::Manifest;
use crate::error::EvalError;
use crate::outcome::Outcome;

/// The manifest in `dir`, or an error saying it cannot be used and what to do.
pub(crate) fn read_manifest_in(dir: &Path) -> Result<Manifest, EvalError> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path)
        .map_err(|e| damaged(dir, "manifest.json", "cannot be read".into(), MANIFEST_TODO, e))?;
    serde_json::from_str(&text).map_err(|e| {
        damaged(dir, "manifest.json", describe_unparsed(&text, "a run manifest"), MANIFEST_TODO, e)
    })
}

/// What to do about a run folder whose manifest cannot be read: without it the settings the
/// run was made with are unknown, so nothing in the folder can be trusted.
const MANIFEST_TODO: &str =
    "without it the run's settings are unknown: remove the folder and rerun this command (the cache answers every call the run completed), or pass another --run-id";

/// What to do about a finished run whose outcomes or summary cannot be used: the manifest still
/// says how the run was made, so the same command can redo it into the folder once the file is
/// out of the way (a missing file makes it resume), with every completed call from the cache.
const FILE_TODO: &str = "move the file out of the folder and rerun this command: the run is redone into the folder, every call it completed answered by the cache (or pass another --run-id)";

/// The error for a run file that cannot be used: names the folder, the file and what is
/// wrong, says what to do, and keeps the cause.
fn damaged(
    dir: &Path,
    file: &str,
    what: String,
    todo: &str,
    source: impl std::error::Error + Send + Sync + 'static,
) -> EvalError {
    EvalError::evaluation_with(format!("run folder `{}`: its {file} {what}, so the run can be neither reused nor resumed; {todo}", dir.display()), source)
}

/// Like [`damaged`] for a file that reads but disagrees with the rest of the run.
fn inconsistent(dir: &Path, file: &str, what: String) -> EvalError {
    EvalError::evaluation(format!("run folder `{}`: its {file} {what}, so the run can be neither reused nor resumed; {FILE_TODO}", dir.display()))
}

/// Why `text` did not parse as `expected`: an HTML page (what a report written over a run file
/// leaves) is named as such.
fn describe_unparsed(text: &str, expected: &str) -> String {
    let head = text.trim_start().get(..64).unwrap_or(text.trim_start()).to_ascii_lowercase();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        format!("holds an HTML page, not {expected} (a report written over it?)")
    } else if text.trim().is_empty() {
        format!("is empty, not {expected}")
    } else {
        format!("does not parse as {expected}")
    }
}

/// What an existing run folder holds, as [`inspect_run`] finds it: what rerunning the command
/// that made it does with it.
#[derive(Debug)]
pub(crate) enum Found {
    /// Killed before its end (no end time in the manifest): resumed; `written` outcome lines
    /// were kept.
    Unfinished {
        /// Outcome lines in `outcomes.jsonl`.
        written: usize,
    },
    /// Finished, but the backend failed on `errors` of its `items`: resumed, which retries
    /// exactly those (the cache answers the rest).
    Errored {
        /// Items whose outcome carries an error.
        errors: usize,
        /// Items of the run.
        items: usize,
    },
    /// Finished, but `file` is missing: resumed, which writes every run file again from the
    /// cache.
    Missing {
        /// The missing file's name.
        file: &'static str,
    },
    /// Finished with every item answered and its files consistent: reused as it is.
    Complete(Box<Summary>),
}

/// Says what the run folder `dir` (named `run_id`, whose manifest is `manifest`) holds, without
/// a model: for a finished run, whether its outcomes and summary are there, read, and agree with
/// the manifest and each other.
///
/// # Errors
/// An `outcomes.jsonl` or `summary.json` that cannot be read or parsed, or that disagree
/// (another run's summary, a count that does not match): the message names the file and what is
/// wrong, and says what to do.
pub(crate) fn inspect_run(
    dir: &Path,
    run_id: &str,
    manifest: &Manifest,
) -> Result<Found, EvalError> {
    if manifest.finished.is_none() {
        // A killed run may have left a half-written last line: resuming rewrites the file, so
        // its lines are only counted.
        let written = fs::read_to_string(dir.join("outcomes.jsonl"))
            .map_or(0, |t| t.lines().filter(|l| !l.trim().is_empty()).count());
        return Ok(Found::Unfinished { written });
    }
    let read = |file: &'static str| match fs::read_to_string(dir.join(file)) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(damaged(dir, file, "cannot be read".into(), FILE_TODO, e)),
    };
    let Some(text) = read("outcomes.jsonl")? else {
        return Ok(Found::Missing { file: "outcomes.jsonl" });
    };
    let mut outcomes = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let o: Outcome = serde_json::from_str(line).map_err(|e| {
            damaged(
                dir,
                "outcomes.jsonl",
                format!("line {}: {}", i + 1, describe_unparsed(line, "an outcome")),
                FILE_TODO,
                e,
            )
        })?;
        if o.condition != manifest.condition {
            return Err(inconsistent(
                dir,
                "outcomes.jsonl",
                format!(
                    "line {} is an outcome under `{}`, not the manifest's `{}`",
                    i + 1,
                    o.condition,
                    manifest.condition
                ),
            ));
        }
        outcomes.push(o);
    }
    if outcomes.len() != manifest.n_examples {
        return Err(inconsistent(
            dir,
            "outcomes.jsonl",
            format!(
                "holds {} outcomes where the manifest records {} examples",
                outcomes.len(),
                manifest.n_examples
            ),
        ));
    }
    let errors = outcomes.iter().filter(|o| o.error.is_some()).count();
    let Some(text) = read("summary.json")? else {
        return Ok(Found::Missing { file: "summary.json" });
    };
    let summary: Summary = serde_json::from_str(&text).map_err(|e| {
        damaged(dir, "summary.json", describe_unparsed(&text, "a run summary"), FILE_TODO, e)
    })?;
    if summary.run_id != run_id {
        return Err(inconsistent(
            dir,
            "summary.json",
            format!("is the summary of run `{}`", summary.run_id),
        ));
    }
    let fields = [
        ("model", &summary.model, &manifest.model.spec),
        ("condition", &summary.condition, &manifest.condition),
        ("dataset_hash", &summary.dataset_hash, &manifest.dataset_hash),
    ];
    if let Some((name, theirs, mine)) = fields.into_iter().find(|(_, a, b)| a != b) {
        return Err(inconsistent(
            dir,
            "summary.json",
            format!("has `{name}` {theirs} where the manifest has {mine}"),
        ));
    }
    if summary.seed != manifest.seed {
        return Err(inconsistent(
            dir,
            "summary.json",
            format!("has seed {} where the manifest has {}", summary.seed, manifest.seed),
        ));
    }
    // The micro row is recounted from the outcomes: a summary whose figures were edited, or
    // that belongs to other outcomes, is not shown as this run's result.
    let recount =
        prbench_stats::Tally::from_results(&outcomes.iter().map(|o| o.result).collect::<Vec<_>>());
    match summary.rows.iter().find(|r| r.label == "micro") {
        Some(micro) if micro.tally != recount => {
            let t = |t: &prbench_stats::Tally| {
                format!(
                    "{} items: {} correct, {} wrong, {} ties, {} unparsed, {} errors",
                    t.n, t.correct, t.wrong, t.ties, t.unparsed, t.errors
                )
            };
            return Err(inconsistent(
                dir,
                "summary.json",
                format!("counts {} where outcomes.jsonl holds {}", t(&micro.tally), t(&recount)),
            ));
        }
        Some(micro) => {
            let strict = (recount.n > 0).then(|| recount.correct as f64 / recount.n as f64);
            let agrees = match (micro.strict, strict) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-9,
                (a, b) => a.is_none() && b.is_none(),
            };
            if !agrees {
                return Err(inconsistent(
                    dir,
                    "summary.json",
                    format!(
                        "gives micro accuracy {:?} where its own counts give {strict:?}",
                        micro.strict
                    ),
                ));
            }
        }
        None => return Err(inconsistent(dir, "summary.json", "has no `micro` row".into())),
    }
    if errors > 0 {
        return Ok(Found::Errored { errors, items: outcomes.len() });
    }
    Ok(Found::Complete(Box::new(summary)))
}
