//! What a finished study writes in its folder, every figure read from the run files:
//!
//! - `study.md`: every table in Markdown, with the command that reproduces each comparison;
//! - `tables/<name>.csv` and `tables/<name>.tex`: each table as CSV and LaTeX;
//! - `proxy/<leg>.json`: each leg's comparison as `prbench correlate --benchmark-set` writes it;
//! - `report.html`: the HTML report of the runs, the Best-of-N folders and the comparisons.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::execute::{read_record, StepRecord};
use crate::graph::{LegKind, Study};
use crate::proxy::{compare_legs, difference_table, proxy_gap_table};
use crate::table::Table;
use crate::tables::{conditioning_table, per_user_table, reward_model_table, scored};

/// The files a study wrote.
#[derive(Debug)]
pub struct Written {
    /// The tables, in the order of `study.md`, with their file stem.
    pub tables: Vec<(String, Table)>,
    /// `study.md`.
    pub markdown: PathBuf,
    /// `report.html`, unless it could not be written (the reason).
    pub html: Result<PathBuf, String>,
}

/// Writes every table and the report of a study whose steps all finished.
///
/// # Errors
/// A step without a record (the study did not finish), unreadable run files, a comparison
/// `correlate` refuses, a file that cannot be written.
pub fn write(study: &Study, generator: &str, note: &mut dyn FnMut(&str)) -> Result<Written> {
    let record = |id: &str| -> Result<StepRecord> {
        read_record(&study.out, id)?
            .with_context(|| format!("step `{id}` has not finished; run the study"))
    };
    let scored = scored(study, &record)?;
    let mut tables: Vec<(String, Table)> = Vec::new();
    for b in &study.benchmarks {
        let on: Vec<_> = scored.iter().filter(|s| s.entry.benchmark == b.name).collect();
        if !on.is_empty() {
            tables.push((format!("reward-models-{}", b.name), reward_model_table(&b.title, &on)));
        }
        if let Some(t) = conditioning_table(study, &b.name, &record)? {
            tables.push((format!("conditioning-{}", b.name), t));
        }
        if let Some(t) = per_user_table(study, &b.name, &on)? {
            tables.push((format!("per-user-{}", b.name), t));
        }
    }
    let legs = if study.legs.is_empty() { vec![] } else { compare_legs(study, &record, note)? };
    let mut downstream = Vec::new();
    for leg in &study.legs {
        if leg.kind == LegKind::Rl {
            let mut rows = Vec::new();
            for (entry, step) in &leg.entries {
                let r = record(step)?;
                let get = |k: &str| r.outputs.get(k).cloned().unwrap_or_default();
                let mean: f64 = get("mean").parse().unwrap_or(f64::NAN);
                rows.push(vec![
                    entry.clone(),
                    format!("{mean:.4}"),
                    get("judged"),
                    get("unjudged"),
                ]);
            }
            downstream.push((
                format!("rl-{}", leg.name),
                Table {
                    title: format!(
                        "{}: mean rubric score (0–2) of each reward model's policy",
                        leg.title
                    ),
                    header: ["model", "mean rubric score", "answers judged", "unparsed or failed"]
                        .map(String::from)
                        .to_vec(),
                    rows,
                    numeric_from: 1,
                },
            ));
        }
    }
    tables.extend(downstream);
    if !legs.is_empty() {
        tables.push(("proxy-gap".into(), proxy_gap_table(study, &legs)));
        if let Some(t) = difference_table(study, &legs) {
            tables.push(("proxy-gap-differences".into(), t));
        }
    }
    let tdir = study.out.join("tables");
    std::fs::create_dir_all(&tdir).with_context(|| format!("creating `{}`", tdir.display()))?;
    let mut md = format!(
        "# Study `{}`\n\nWritten by {generator} from the run files of `{}`.\n\n",
        study.file.path.display(),
        study.out.display()
    );
    for (stem, t) in &tables {
        md += &t.markdown();
        md += "\n";
        for (ext, text) in [("csv", t.csv()), ("tex", t.latex())] {
            let p = tdir.join(format!("{stem}.{ext}"));
            prbench_files::write_atomic(&p, text.as_bytes())
                .with_context(|| format!("writing `{}`", p.display()))?;
        }
    }
    let mut sources: Vec<PathBuf> = scored.iter().map(|s| s.dir.clone()).collect();
    sources.dedup();
    for l in &legs {
        md += &format!("Leg `{}` reproduced by:\n\n```sh\n{}\n```\n\n", l.leg, l.command);
        let p = study.out.join("proxy").join(format!("{}.json", l.leg));
        match &l.comparison {
            Ok(c) => {
                prbench_files::write_json_pretty(&p, c)
                    .with_context(|| format!("writing `{}`", p.display()))?;
                sources.push(p);
            }
            Err(why) => {
                md += &format!(
                    "Leg `{}` has no comparison: {why}

",
                    l.leg
                );
                // A comparison file of an earlier run would be read as this one's.
                if p.exists() {
                    std::fs::remove_file(&p)
                        .with_context(|| format!("removing the stale `{}`", p.display()))?;
                }
            }
        }
    }
    for leg in &study.legs {
        if let Some(f) = &leg.folder {
            sources.push(f.clone());
        }
    }
    let markdown = study.out.join("study.md");
    prbench_files::write_atomic(&markdown, md.as_bytes())
        .with_context(|| format!("writing `{}`", markdown.display()))?;
    let commands: Vec<prbench_report::html::ReportCommand> = legs
        .iter()
        .map(|l| prbench_report::html::ReportCommand {
            label: format!("Leg {}", l.leg),
            command: l.command.clone(),
        })
        .collect();
    let html =
        write_html(study, &sources, &tables, &commands, generator).map_err(|e| format!("{e:#}"));
    Ok(Written { tables, markdown, html })
}

fn write_html(
    study: &Study,
    sources: &[PathBuf],
    tables: &[(String, Table)],
    commands: &[prbench_report::html::ReportCommand],
    generator: &str,
) -> Result<PathBuf> {
    let path = study.out.join("report.html");
    let loaded = prbench_report::sources::load(sources)?;
    let opts = prbench_report::html::ReportOptions {
        data: vec![],
        title: Some(format!("prbench study {}", study.file.path.display())),
        generator: generator.to_string(),
        study: tables
            .iter()
            .map(|(stem, t)| prbench_report::html::ReportTable {
                title: t.title.clone(),
                header: t.header.clone(),
                rows: t.rows.clone(),
                // The proxy-gap table's figures come from one `correlate` per leg.
                commands: if stem == "proxy-gap" { commands.to_vec() } else { vec![] },
            })
            .collect(),
    };
    let html = prbench_report::html::render(&loaded, &opts)?;
    prbench_files::write_atomic(&path, html.as_bytes())
        .with_context(|| format!("writing `{}`", path.display()))?;
    Ok(path)
}
