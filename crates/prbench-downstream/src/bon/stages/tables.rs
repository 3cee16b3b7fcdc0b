//! `bon report`, and the table every `judge` and `score` step ends with: `bon-<judge>.{md,json}`
//! from the judgements of one judge and every scores file present.

use crate::bon::error::BonError;
use crate::bon::files::{read_jsonl, write_json};
use crate::bon::folder::BonFolder;
use crate::bon::options::ReportOptions;
use crate::bon::report::{build, render, BonTable, ModelScores};
use crate::bon::rubric::RubricJudgement;
use crate::bon::sample::BonSample;
use crate::bon::score::BonScore;

use super::{io, BonReporter};

/// `bon report`: the table of the folder `opts.samples` for the judge asked for (or the only
/// one), shown through [`BonReporter::table`] (JSON with `opts.json`); written to the folder
/// unless `opts.k` asks for other k values. `None` when no judgement exists yet (with a note).
///
/// # Errors
/// As [`write_tables`], which it calls with `auto` off; an unreadable manifest first.
pub fn report(
    opts: &ReportOptions,
    reporter: &dyn BonReporter,
) -> Result<Option<BonTable>, BonError> {
    let folder = BonFolder::new(&opts.samples);
    folder.read_manifest()?;
    let ks = if opts.k.is_empty() { None } else { Some(opts.k.as_slice()) };
    write_tables(&folder, opts.judge.as_deref(), ks, opts.json, false, reporter)
}

/// Writes `bon-<judge>.{md,json}` for the chosen judge (or the only one) with every scores
/// file present, and shows the table. Does nothing (with a note) when no judgement exists yet.
///
/// `auto` (after `judge` or `score`) turns "which judge?" into a note instead of an error. With
/// `ks` the table is shown only: the files keep the default k values other commands read.
///
/// # Errors
/// [`BonError::Refused`]: no judgements of that name, or several judges and none named
/// without `auto`; the folder's files unreadable, computed from other samples or disagreeing
/// ([`BonError::File`], [`BonError::Mismatch`]); a k above N; the table not writable.
pub fn write_tables(
    folder: &BonFolder,
    judge: Option<&str>,
    ks: Option<&[usize]>,
    json: bool,
    auto: bool,
    reporter: &dyn BonReporter,
) -> Result<Option<BonTable>, BonError> {
    let judges = folder.stage_names("judgements");
    let dir = folder.dir.display();
    let judge = match (judge, judges.as_slice()) {
        (Some(j), _) if judges.iter().any(|x| x == j) => j.to_string(),
        (Some(j), _) => {
            return Err(BonError::Refused(format!(
                "no judgements named `{j}` in `{dir}` (present: {})",
                list(&judges)
            )))
        }
        (None, []) => {
            reporter.note(&format!(
                "no rubric judgements yet: run `prbench bon judge --samples {dir}` for the table"
            ));
            return Ok(None);
        }
        (None, [one]) => one.clone(),
        (None, _) if auto => {
            reporter.note(&format!("several judgements in `{dir}` ({}): see the table with `prbench bon report --samples {dir} --judge NAME`", list(&judges)));
            return Ok(None);
        }
        (None, _) => {
            return Err(BonError::Refused(format!(
                "several judgements in `{dir}` ({}); pass --judge NAME",
                list(&judges)
            )))
        }
    };
    let manifest = folder.read_manifest()?;
    let samples: Vec<BonSample> = read_jsonl(&folder.samples())?;
    let jpath = folder.judgements(&judge);
    folder.checked_stage(&jpath)?;
    let judgements: Vec<RubricJudgement> = read_jsonl(&jpath)?;
    let mut models = Vec::new();
    for name in folder.stage_names("scores") {
        let path = folder.scores(&name);
        let stage = folder.checked_stage(&path)?;
        let scores: Vec<BonScore> = read_jsonl(&path)?;
        models.push(ModelScores {
            name,
            spec: stage.model.spec,
            condition: stage.condition,
            scores,
        });
    }
    let table = build(&samples, manifest.settings.n, &judge, &judgements, &models, ks)?;
    let md = render(&table);
    reporter.table(&if json { serde_json::to_string(&table)? } else { md.clone() });
    if ks.is_some() {
        reporter.note(&format!("table for the k values asked printed only; bon-{judge}.md/json keep the default k values"));
        return Ok(Some(table));
    }
    let (md_path, json_path) = folder.table(&judge);
    std::fs::write(&md_path, &md).map_err(io(format!("writing `{}`", md_path.display())))?;
    write_json(&json_path, &table)?;
    reporter.note(&format!("best-of-k table in {} and {}", md_path.display(), json_path.display()));
    Ok(Some(table))
}

/// Names for a message, or `nothing`.
fn list(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".into()
    } else {
        names.join(", ")
    }
}
