//! Which run folder each condition writes, decided before any model loads: fresh ids, an
//! unfinished run to resume, a finished one to reuse; and the matrix files' name.

use std::path::Path;

use crate::condition::Condition;
use crate::run::check_run_dir_free;
use crate::EvalError;

/// One run folder to write: a fresh id, or an unfinished run to resume.
#[derive(Debug, Clone)]
pub(super) struct PlannedRun {
    pub(super) id: String,
    /// The folder exists with a manifest that has no end time (a killed run): resume into it.
    pub(super) resume: bool,
    /// The folder holds a finished run of this condition, part of a multi-condition run run
    /// again with the same run id: skip it (its settings are checked) and reuse its outcomes.
    pub(super) done: bool,
}

/// The file-name form of a model spec: its last path or spec segment, `.gguf` dropped.
fn slug(s: &str) -> String {
    let tail = s.rsplit(['/', ':']).next().unwrap_or(s);
    let tail = tail.strip_suffix(".gguf").unwrap_or(tail);
    tail.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// A folder a killed multi-condition command left before its run started: no manifest, at
/// most the planner's `planner.jsonl`. It holds nothing a run needs.
fn not_started(dir: &Path) -> bool {
    !dir.join("manifest.json").exists()
        && std::fs::read_dir(dir).is_ok_and(|entries| entries.flatten().all(|e| e.file_name() == "planner.jsonl"))
}

/// Picks one run id per condition and checks, before any model loads, that its folder is free
/// (default ids get a `-2`, `-3`, … suffix when two runs start in the same second). An explicit
/// run id whose folder holds an unfinished run (killed before its end time was written) is
/// resumed: its settings are checked against this command once the model has loaded, and the
/// cache answers every call it had completed. In a multi-condition command, a condition whose
/// folder holds a finished run is skipped (settings checked likewise), and a folder left empty
/// by a kill is reused. New folders are created only when their run starts, so a failed load
/// or a kill leaves nothing half-made behind.
pub(super) fn plan_run_dirs(
    out: &Path,
    run_id: Option<&str>,
    no_cache: bool,
    spec: &str,
    conditions: &[Condition],
    stamp: &str,
) -> Result<Vec<PlannedRun>, EvalError> {
    conditions
        .iter()
        .map(|condition| {
            let explicit = match run_id {
                Some(id) if conditions.len() == 1 => Some(id.to_string()),
                Some(id) => Some(format!("{id}-{}", condition.slug())),
                None => None,
            };
            if let Some(id) = explicit {
                let dir = out.join(&id);
                if dir.join("manifest.json").is_file() && !dir.join("summary.json").exists() {
                    if no_cache {
                        return Err(EvalError::evaluation(format!(
                            "run folder `{}` holds an unfinished run; resuming it needs the cache (drop --no-cache), or pass another --run-id",
                            dir.display()
                        )));
                    }
                    return Ok(PlannedRun { id, resume: true, done: false });
                }
                if conditions.len() > 1 && dir.join("summary.json").is_file() {
                    return Ok(PlannedRun { id, resume: false, done: true });
                }
                if dir.is_dir() && not_started(&dir) {
                    std::fs::remove_dir_all(&dir)
                        .map_err(|e| EvalError::evaluation_with(format!("removing the unstarted run folder `{}`", dir.display()), e))?;
                }
                check_run_dir_free(out, &id)?;
                return Ok(PlannedRun { id, resume: false, done: false });
            }
            let base = format!("{stamp}-{}-{}", slug(spec), condition.slug());
            for n in 1..1000 {
                let id = if n == 1 { base.clone() } else { format!("{base}-{n}") };
                if !out.join(&id).exists() {
                    return Ok(PlannedRun { id, resume: false, done: false });
                }
            }
            Err(EvalError::evaluation(format!("too many runs named `{base}-*` in `{}`", out.display())))
        })
        .collect()
}

/// The matrix files' name (without extension) for a multi-condition command: `<run-id>-matrix`,
/// or `<time>-<model>-matrix[-N]` for default ids (never an existing file). An explicit id whose
/// matrix file belongs to another command (other model or conditions) is refused, so a matrix
/// is only ever replaced by the same command run again.
pub(super) fn matrix_base(out: &Path, run_id: Option<&str>, spec: &str, conditions: &[Condition], stamp: &str) -> Result<String, EvalError> {
    match run_id {
        Some(id) => {
            let base = format!("{id}-matrix");
            let path = out.join(format!("{base}.json"));
            if let Ok(text) = std::fs::read_to_string(&path) {
                let old: prbench_report::matrix::Matrix = serde_json::from_str(&text)
                    .map_err(|e| EvalError::evaluation_with(format!("`{}` is not a matrix file; pass another --run-id", path.display()), e))?;
                let mine: Vec<String> = conditions.iter().map(ToString::to_string).collect();
                let theirs: Vec<String> = old.conditions.iter().map(|c| c.condition.clone()).collect();
                if old.model != spec || theirs != mine {
                    return Err(EvalError::evaluation(format!(
                        "`{}` holds the matrix of another command (model `{}`, conditions {}); pass another --run-id",
                        path.display(),
                        old.model,
                        theirs.join(",")
                    )));
                }
            }
            Ok(base)
        }
        None => {
            let base = format!("{stamp}-{}-matrix", slug(spec));
            (1..1000)
                .map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") })
                .find(|b| !out.join(format!("{b}.md")).exists() && !out.join(format!("{b}.json")).exists())
                .ok_or_else(|| EvalError::evaluation(format!("too many matrices named `{base}-*` in `{}`", out.display())))
        }
    }
}
