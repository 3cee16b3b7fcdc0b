//! `prbench report` and `prbench leaderboard`: flags to [`prbench_report`] options, then write.

use anyhow::{Context, Result};
use prbench_report::html::ReportOptions;
use prbench_report::leaderboard::{self, Format};

use crate::cli::{LeaderboardArgs, LeaderboardFormat, HtmlReportArgs};

/// Runs `prbench report`.
pub fn run(args: HtmlReportArgs) -> Result<()> {
    if args.out.is_dir() {
        anyhow::bail!("--out `{}` is a folder; name the HTML file to write, e.g. {}/report.html", args.out.display(), args.out.display());
    }
    let sources = prbench_report::sources::load(&args.paths)?;
    let opts = ReportOptions { data: args.data, title: args.title, generator: format!("prbench {}", crate::code_version()) };
    let html = prbench_report::html::render(&sources, &opts)?;
    std::fs::write(&args.out, &html).with_context(|| format!("writing `{}`", args.out.display()))?;
    eprintln!(
        "prbench: report of {} runs, {} matrices, {} Best-of-N folders and {} correlate results in {} ({:.1} MB); open it in a browser (it needs no network)",
        sources.runs.len(),
        sources.matrices.len(),
        sources.bons.len(),
        sources.correlations.len(),
        args.out.display(),
        html.len() as f64 / 1e6
    );
    Ok(())
}

/// Runs `prbench leaderboard`.
pub fn leaderboard(args: LeaderboardArgs) -> Result<()> {
    let sources = prbench_report::sources::load(&args.paths)?;
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
        Some(out) => std::fs::write(out, &text).with_context(|| format!("writing `{}`", out.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}
