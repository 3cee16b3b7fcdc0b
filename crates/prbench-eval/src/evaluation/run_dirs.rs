//! Which run folder each condition writes, decided before any model loads: fresh ids, a run
//! to resume, a finished one to reuse; and the matrix files' name.

use std::path::Path;

use prbench_data::{Dataset, Example};
use prbench_models::spec::ModelSpec;

use super::EvaluationOptions;
use crate::condition::Condition;
use crate::run::{
    check_run_dir_free, check_settings_before_load, inspect_run, read_manifest_in, EarlySettings,
    Found,
};
use crate::EvalError;

/// One run folder to write: a fresh id, or an existing run of the same settings to resume or
/// reuse.
#[derive(Debug)]
pub(super) struct PlannedRun {
    pub(super) id: String,
    /// What the folder held when it exists with a run in it ([`inspect_run`]): a complete run
    /// is reused, anything else resumed. `None`: a new folder.
    pub(super) found: Option<Found>,
}

impl PlannedRun {
    /// The folder holds a finished run with every item answered: skip it (its settings are
    /// checked once the model is loaded) and reuse its files.
    pub(super) fn reused(&self) -> bool {
        matches!(self.found, Some(Found::Complete(_)))
    }

    /// The folder holds a run to resume into (unfinished, with errored items, or missing a
    /// file): it is run again there, the cache answering every call it had completed.
    pub(super) fn resumed(&self) -> bool {
        self.found.is_some() && !self.reused()
    }
}

/// The file-name form of a model spec: its short name ([`ModelSpec::short_name`], never a piece
/// of a server URL), characters other than ASCII letters, digits, `-` and `.` as `_`. A spec
/// that does not parse (the evaluation refuses it later) falls back to its last segment.
pub(super) fn slug(s: &str) -> String {
    let name = ModelSpec::parse(s)
        .map_or_else(|_| s.rsplit(['/', ':']).next().unwrap_or(s).to_string(), |m| m.short_name());
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
        .collect()
}

/// A folder a killed multi-condition command left before its run started: no manifest, at
/// most the planner's `planner.jsonl`. It holds nothing a run needs.
fn not_started(dir: &Path) -> bool {
    !dir.join("manifest.json").exists()
        && std::fs::read_dir(dir)
            .is_ok_and(|entries| entries.flatten().all(|e| e.file_name() == "planner.jsonl"))
}

/// Picks one run id per condition and checks, before any model loads, what its folder holds
/// (default ids get a `-2`, `-3`, … suffix when two runs start in the same second). An explicit
/// run id whose folder holds a run follows one rule, whatever the number of conditions:
/// - settings that differ from the run's (those known before the model loads are compared
///   here, the model's own once it has loaded): refused, naming the setting;
/// - the same settings and finished with every item answered: reused as it is;
/// - the same settings and unfinished (killed), with errored items, or missing its outcomes or
///   summary: resumed into the same folder, the cache answering every call it completed, so
///   only the missing and errored items are called (this needs the cache);
/// - run files that cannot be read or disagree: refused, naming the file and what to do.
///
/// A folder left empty by a kill is reused; a folder without a run manifest is refused. New
/// folders are created only when their run starts, so a failed load or a kill leaves nothing
/// half-made behind.
pub(super) fn plan_run_dirs(
    opts: &EvaluationOptions,
    data: &Dataset,
    examples: &[Example],
    stamp: &str,
) -> Result<Vec<PlannedRun>, EvalError> {
    let out = opts.out.as_path();
    let conditions = &opts.conditions;
    conditions
        .iter()
        .map(|&condition| {
            let explicit = match opts.run_id.as_deref() {
                Some(id) if conditions.len() == 1 => Some(id.to_string()),
                Some(id) => Some(format!("{id}-{}", condition.slug())),
                None => None,
            };
            if let Some(id) = explicit {
                crate::run::validate_run_id(&id)?;
                let dir = out.join(&id);
                if dir.join("manifest.json").is_file() {
                    // Settings first: a run of other settings is refused as such, whatever
                    // state its files are in.
                    let manifest = read_manifest_in(&dir)?;
                    let early = EarlySettings {
                        data,
                        examples,
                        condition,
                        seed: opts.seed,
                        both_orders: opts.both_orders,
                        limit: opts.limit,
                        sample: opts.sample,
                        bootstrap_resamples: opts.bootstrap,
                    };
                    check_settings_before_load(&dir, &manifest, &early)?;
                    let found = inspect_run(&dir, &id, &manifest)?;
                    let planned = PlannedRun { id, found: Some(found) };
                    if planned.resumed() && opts.cache.is_none() {
                        return Err(EvalError::evaluation(format!(
                            "run folder `{}` holds {}; resuming it needs the cache, which answers the calls it completed (drop --no-cache), or pass another --run-id",
                            dir.display(),
                            describe(planned.found.as_ref().expect("found"))
                        )));
                    }
                    return Ok(planned);
                }
                if dir.is_dir() && not_started(&dir) {
                    std::fs::remove_dir_all(&dir)
                        .map_err(|e| EvalError::evaluation_with(format!("removing the unstarted run folder `{}`", dir.display()), e))?;
                }
                check_run_dir_free(out, &id).map_err(|e| match e {
                    EvalError::RunDir { path, .. } if path == dir => EvalError::RunDir {
                        path,
                        reason: "it exists but holds no manifest.json, so it is no run prbench can resume or reuse; pass another --run-id or remove the folder".into(),
                    },
                    e => e,
                })?;
                return Ok(PlannedRun { id, found: None });
            }
            let base = format!("{stamp}-{}-{}", slug(&opts.model), condition.slug());
            for n in 1..1000 {
                let id = if n == 1 { base.clone() } else { format!("{base}-{n}") };
                if !out.join(&id).exists() {
                    return Ok(PlannedRun { id, found: None });
                }
            }
            Err(EvalError::evaluation(format!("too many runs named `{base}-*` in `{}`", out.display())))
        })
        .collect()
}

/// What an existing run holds, for messages: "an unfinished run (12 outcomes written)", ….
pub(super) fn describe(found: &Found) -> String {
    match found {
        Found::Unfinished { written } => format!(
            "an unfinished run ({} written before it stopped)",
            if *written == 1 {
                "1 outcome was".to_string()
            } else {
                format!("{written} outcomes were")
            }
        ),
        Found::Errored { errors, items } => {
            format!("a finished run whose backend failed on {errors} of its {items} items")
        }
        Found::Missing { file } => format!("a finished run whose {file} is missing"),
        Found::Complete(_) => "a finished run".into(),
    }
}

/// The matrix files' name (without extension) for a multi-condition command: `<run-id>-matrix`,
/// or `<time>-<model>-matrix[-N]` for default ids (never an existing file). An explicit id whose
/// matrix file belongs to another command (other model or conditions) is refused, so a matrix
/// is only ever replaced by the same command run again.
pub(super) fn matrix_base(
    out: &Path,
    run_id: Option<&str>,
    spec: &str,
    conditions: &[Condition],
    stamp: &str,
) -> Result<String, EvalError> {
    match run_id {
        Some(id) => {
            let base = format!("{id}-matrix");
            let path = out.join(format!("{base}.json"));
            if let Ok(text) = std::fs::read_to_string(&path) {
                let old: prbench_records::matrix::Matrix =
                    serde_json::from_str(&text).map_err(|e| {
                        EvalError::evaluation_with(
                            format!(
                                "`{}` is not a matrix file; pass another --run-id",
                                path.display()
                            ),
                            e,
                        )
                    })?;
                let mine: Vec<String> = conditions.iter().map(ToString::to_string).collect();
                let theirs: Vec<String> =
                    old.conditions.iter().map(|c| c.condition.clone()).collect();
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
                .find(|b| {
                    !out.join(format!("{b}.md")).exists() && !out.join(format!("{b}.json")).exists()
                })
                .ok_or_else(|| {
                    EvalError::evaluation(format!(
                        "too many matrices named `{base}-*` in `{}`",
                        out.display()
                    ))
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_run_ids_name_the_served_model_not_the_urls_last_segment() {
        let out = tempfile::tempdir().unwrap();
        let data = Dataset {
            examples: Vec::new(),
            source: String::new(),
            kind: "prb".into(),
            hash: String::new(),
            profile_ranking: None,
        };
        let id = |spec: &str| {
            plan_run_dirs(
                &EvaluationOptions::new(spec, vec![Condition::None], out.path(), "test"),
                &data,
                &[],
                "20260101-000000",
            )
            .unwrap()[0]
                .id
                .clone()
        };
        assert_eq!(id("openai:smollm2@http://127.0.0.1:8080/v1"), "20260101-000000-smollm2-none");
        assert_eq!(
            id("vllm-classify:Skywork/Skywork-Reward-V2@http://h:8000"),
            "20260101-000000-Skywork-Reward-V2-none"
        );
        assert_eq!(id("openai:llama3:8b@http://h:11434/v1"), "20260101-000000-llama3_8b-none");
        assert_eq!(
            id("gguf:/m/SmolLM2-135M-Instruct.Q4_1.gguf"),
            "20260101-000000-SmolLM2-135M-Instruct.Q4_1-none"
        );
        assert_eq!(
            matrix_base(
                out.path(),
                None,
                "openai:smollm2@http://127.0.0.1:8080/v1",
                &[Condition::None, Condition::Oracle],
                "20260101-000000"
            )
            .unwrap(),
            "20260101-000000-smollm2-matrix"
        );
    }
}
