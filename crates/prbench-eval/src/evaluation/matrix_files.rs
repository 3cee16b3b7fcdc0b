//! The conditioning matrix of a multi-condition evaluation, built from every condition's
//! outcomes as written (finished earlier or now) and written next to the run folders as
//! `<base>.md` and `<base>.json`.

use std::path::{Path, PathBuf};

use prbench_data::Dataset;
use prbench_records::matrix::Matrix;
use prbench_stats::bootstrap::BootstrapConfig;

use crate::condition::{Condition, ConditionInputs};
use crate::matrix::ConditionRun;
use crate::EvalError;

/// The matrix files an evaluation wrote.
#[derive(Debug)]
pub struct MatrixFiles {
    /// The matrix, as `<base>.json` holds it.
    pub matrix: Matrix,
    /// Its Markdown rendering, as `<base>.md` holds it.
    pub markdown: String,
    /// `<out>/<base>.md`.
    pub md_path: PathBuf,
    /// `<out>/<base>.json`.
    pub json_path: PathBuf,
}

fn read_outcomes(path: &Path) -> Result<Vec<crate::outcome::Outcome>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        EvalError::evaluation_with(format!("reading `{}` for the matrix", path.display()), e)
    })?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                EvalError::evaluation_with(
                    format!("`{}` line {}: not an outcome", path.display(), i + 1),
                    e,
                )
            })
        })
        .collect()
}

fn write(path: &Path, text: &str) -> Result<(), EvalError> {
    std::fs::write(path, text)
        .map_err(|e| EvalError::evaluation_with(format!("writing `{}`", path.display()), e))
}

/// Reads back every condition's outcomes from `out/<run id>/outcomes.jsonl` and writes the
/// conditioning matrix as `out/<base>.{md,json}`, with the profile and planner figures as notes.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_matrix(
    out: &Path,
    spec: &str,
    base: &str,
    data: &Dataset,
    runs: &[(Condition, String)],
    inputs: &ConditionInputs,
    seed: u64,
    boot: &BootstrapConfig,
) -> Result<MatrixFiles, EvalError> {
    let mut condition_runs = Vec::with_capacity(runs.len());
    for (condition, id) in runs {
        let outcomes = read_outcomes(&out.join(id).join("outcomes.jsonl"))?;
        condition_runs.push(ConditionRun { condition: *condition, run_id: id.clone(), outcomes });
    }
    let mut notes = Vec::new();
    let retriever = inputs.retriever.clone().unwrap_or_else(|| "unknown".into());
    for cr in &condition_runs {
        if let (Condition::Profile { k }, true) =
            (cr.condition, cr.outcomes.iter().any(|o| o.posts_shown.is_some()))
        {
            notes.push(format!(
                "`profile:{k}`: {}",
                crate::run::profile_figures(k, retriever.clone(), &cr.outcomes).line()
            ));
        }
    }
    if let Some(p) = &inputs.planner_report {
        notes.push(format!("`planner`: {}", p.line()));
    }
    let matrix =
        crate::matrix::build(&condition_runs, spec, &data.source, &data.kind, seed, boot, notes);
    let md_path = out.join(format!("{base}.md"));
    let markdown = prbench_records::matrix::render(&matrix);
    write(&md_path, &markdown)?;
    let json_path = out.join(format!("{base}.json"));
    write(
        &json_path,
        &(serde_json::to_string_pretty(&matrix).expect("the matrix serializes") + "\n"),
    )?;
    Ok(MatrixFiles { matrix, markdown, md_path, json_path })
}

/// The share of A verdicts a finished run's `summary.json` reports (`None` when it has none or
/// cannot be read).
pub(super) fn share_a_verdicts(dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    let summary: prbench_records::Summary = serde_json::from_str(&text).ok()?;
    summary.position_bias?.share_a_verdicts
}
