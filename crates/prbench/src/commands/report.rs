//! `prbench report` and `prbench leaderboard`: flags to [`prbench_report`] options, then write.

use anyhow::{Context, Result};
use prbench_report::html::ReportOptions;
use prbench_report::leaderboard::{self, Format};

use crate::cli::{HtmlReportArgs, LeaderboardArgs, LeaderboardFormat};

/// Runs `prbench report`.
pub fn run(args: HtmlReportArgs) -> Result<()> {
    // The store's own refusal first: it says what would be lost (ratings).
    prbench_annotate::store::refuse_store_path(&args.out)?;
    prbench_report::html::check_out(&args.out)?;
    let sources = prbench_report::sources::load(&args.paths)?;
    for note in &sources.skipped {
        eprintln!("prbench: note: {note}");
    }
    let opts = ReportOptions {
        data: args.data,
        title: args.title,
        generator: format!("prbench {}", crate::code_version()),
        study: vec![],
    };
    let html = prbench_report::html::render(&sources, &opts)?;
    std::fs::write(&args.out, &html)
        .with_context(|| format!("writing `{}`", args.out.display()))?;
    use prbench_report::plural::count;
    let parts: Vec<String> = [
        (sources.runs.len(), "run", "runs"),
        (sources.matrices.len(), "matrix", "matrices"),
        (sources.bons.len(), "Best-of-N folder", "Best-of-N folders"),
        (sources.correlations.len(), "correlate result", "correlate results"),
        (sources.builds.len(), "build folder", "build folders"),
        (sources.annotations.len(), "annotation folder", "annotation folders"),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| count(n, one, many))
    .collect();
    eprintln!(
        "prbench: report of {} in {} ({:.1} MB); open it in a browser (it needs no network)",
        parts.join(", "),
        args.out.display(),
        html.len() as f64 / 1e6
    );
    Ok(())
}

/// Runs `prbench leaderboard`.
pub fn leaderboard(args: LeaderboardArgs) -> Result<()> {
    if let Some(out) = &args.out {
        leaderboard::check_out(out)?;
    }
    let sources = prbench_report::sources::load(&args.paths)?;
    for note in &sources.skipped {
        eprintln!("prbench: note: {note}");
    }
    if sources.runs.is_empty() {
        anyhow::bail!("no run folder among the paths: the leaderboard lists runs (give run folders, matrices or a folder holding them)");
    }
    let format = match args.format {
        LeaderboardFormat::Md => Format::Markdown,
        LeaderboardFormat::Csv => Format::Csv,
        LeaderboardFormat::Json => Format::Json,
        LeaderboardFormat::Latex => Format::Latex,
    };
    let text = leaderboard::render(&leaderboard::build(&sources.runs), format)?;
    match &args.out {
        Some(out) => {
            std::fs::write(out, &text).with_context(|| format!("writing `{}`", out.display()))?
        }
        None => print!("{text}"),
    }
    Ok(())
}
