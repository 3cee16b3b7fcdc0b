//! `prbench annotate`: flags → [`prbench_annotate`].

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use prbench_annotate::export::{self, Format};
use prbench_annotate::server::{page_url_at, public_base, run_blocking};
use prbench_annotate::{agreement, report, Opened, Store, StoreSpec};
use prbench_data::load;

use crate::cli::{
    AnnotateAgreementArgs, AnnotateCommand, AnnotateExportArgs, AnnotateReportArgs,
    AnnotateServeArgs, ExportFormat,
};

/// Runs `prbench annotate …`.
pub fn run(cmd: AnnotateCommand) -> Result<()> {
    match cmd {
        AnnotateCommand::Serve(a) => serve(a),
        AnnotateCommand::Export(a) => export_cmd(a),
        AnnotateCommand::Agreement(a) => agreement_cmd(a),
        AnnotateCommand::Report(a) => report_cmd(a),
    }
}

/// How `--subset` and `--limit` chose the items, as the store records it.
fn selection(args: &AnnotateServeArgs) -> String {
    let mut parts = Vec::new();
    if !args.data.subset.is_empty() {
        parts.push(format!("--subset {}", args.data.subset.join(",")));
    }
    if let Some(l) = args.limit {
        parts.push(format!("--limit {l}"));
    }
    if parts.is_empty() {
        "all items (no --subset, no --limit)".into()
    } else {
        parts.join(" ")
    }
}

fn serve(args: AnnotateServeArgs) -> Result<()> {
    let public = args.public_url.as_deref().map(public_base).transpose()?;
    prbench_annotate::store::check_folder(&args.out)?;
    // Bind first: a taken port must fail before a new folder hands out links nobody sees.
    let addr = SocketAddr::new(args.host, args.port);
    let listener = std::net::TcpListener::bind(addr).with_context(|| {
        format!("listening on {addr} (another program has the port? pick another with --port, or --port 0 for any free one)")
    })?;
    let bound = listener.local_addr()?;
    let data = load(&args.data.data, &args.data.subset)
        .with_context(|| format!("loading dataset `{}`", args.data.data))?;
    super::print_data_warnings(&data);
    let examples: Vec<_> =
        prbench_build::select(&data.examples, args.limit).into_iter().cloned().collect();
    let per_item = args.per_item.unwrap_or(args.annotators.len().min(2));
    let selection = selection(&args);
    let spec = StoreSpec {
        examples: &examples,
        source: &data.source,
        dataset_hash: &data.hash,
        annotators: &args.annotators,
        per_item,
        seed: args.seed,
        selection: &selection,
    };
    let (mut store, opened) = Store::open_or_create(&args.out, &spec)?;
    let base = public.unwrap_or_else(|| format!("http://{bound}"));
    let previous_base = store.meta_opt("base_url")?;
    let tokens = match opened {
        Opened::Created(t) => {
            eprintln!(
                "prbench: new annotation folder `{}`: {} from `{}`, {} per item, seed {}",
                args.out.display(),
                prbench_report::plural::count(examples.len(), "item", "items"),
                data.source,
                prbench_report::plural::count(per_item, "annotator", "annotators"),
                args.seed
            );
            Some(t)
        }
        Opened::Resumed => {
            eprintln!(
                "prbench: resuming `{}` ({} saved so far)",
                args.out.display(),
                prbench_report::plural::count(store.ratings()?.len(), "rating", "ratings")
            );
            if args.new_tokens {
                eprintln!("prbench: --new-tokens: every earlier link stops working");
                Some(store.reissue_tokens()?)
            } else {
                None
            }
        }
    };
    store.set_meta("base_url", &base)?;
    if !args.host.is_loopback() && args.public_url.is_none() {
        eprintln!(
            "prbench: warning: listening on {}: the links are secret but travel as plain HTTP; keep this on a trusted network or behind TLS, and give --public-url the address annotators reach",
            args.host
        );
    }
    let names = store.annotators()?;
    {
        let mut out = std::io::stdout().lock();
        match &tokens {
            Some(t) => {
                for (name, token) in t {
                    writeln!(out, "{name} {}", page_url_at(&base, token))?;
                }
            }
            None => {
                let moved =
                    previous_base.as_deref().is_some_and(|p| p.trim_end_matches('/') != base);
                for name in &names {
                    if moved {
                        writeln!(
                            out,
                            "{name} {} (the server moved from {}; --new-tokens issues new links)",
                            page_url_at(
                                &base,
                                "<the token of the link printed at the first start>"
                            ),
                            previous_base.as_deref().unwrap_or("?")
                        )?;
                    } else {
                        writeln!(out, "{name} (the link printed at its first start still works; --new-tokens issues new ones)")?;
                    }
                }
            }
        }
        out.flush()?;
    }
    eprintln!("prbench: rating server on http://{bound}; stop it with Ctrl-C (every saved rating is already on disk)");
    run_blocking(listener, Arc::new(store), prbench_downstream::serve::shutdown_signal)
        .with_context(|| format!("serving on {bound}"))?;
    Ok(())
}

/// Opens `to` (or stdout for `-`) and calls `f` with it.
fn write_to(
    to: &Path,
    what: prbench_annotate::export::Output,
    f: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    if to != Path::new("-") {
        prbench_annotate::export::check_output(to, what)?;
    }
    if to == Path::new("-") {
        let mut out = std::io::stdout().lock();
        f(&mut out)
    } else {
        let mut file =
            std::fs::File::create(to).with_context(|| format!("creating `{}`", to.display()))?;
        f(&mut file)?;
        file.sync_all().with_context(|| format!("writing `{}`", to.display()))
    }
}

fn export_cmd(args: AnnotateExportArgs) -> Result<()> {
    let store = Store::open(&args.out)?;
    let (format, ext) = match args.format {
        ExportFormat::Csv => (Format::Csv, "csv"),
        ExportFormat::Jsonl => (Format::Jsonl, "jsonl"),
    };
    let to = args.to.clone().unwrap_or_else(|| args.out.join(format!("ratings.{ext}")));
    let ratings = store.ratings()?;
    let rows = export::rows(&ratings);
    write_to(&to, export::Output::Export(format), |w| Ok(export::write(&rows, format, w, &to)?))?;
    if to != Path::new("-") {
        eprintln!(
            "prbench: wrote {} rows ({} ratings of {} assigned) to `{}`",
            rows.len(),
            ratings.len(),
            store.assignment_count()?,
            to.display()
        );
    }
    Ok(())
}

fn agreement_cmd(args: AnnotateAgreementArgs) -> Result<()> {
    let ratings = agreement::Ratings::from_csv_path(&args.ratings)?;
    let cfg = agreement::AgreementConfig {
        bootstrap: agreement::AlphaBootstrapConfig::new(args.resamples, args.seed, 0.95)?,
    };
    let rep = agreement::agreement(&ratings, &cfg);
    if args.json {
        if !ratings.ignored_columns().is_empty() {
            eprintln!("prbench: columns not used: {}", ratings.ignored_columns().join(", "));
        }
        println!("{}", serde_json::to_string_pretty(&rep.dimensions)?);
    } else {
        // The table names the columns it did not use.
        print!("{}", agreement::markdown_table(&rep));
    }
    Ok(())
}

fn report_cmd(args: AnnotateReportArgs) -> Result<()> {
    let store = Store::open(&args.out)?;
    let cfg = report::ReportConfig { resamples: args.resamples, seed: args.seed };
    let md = report::markdown(&report::build(&store, &cfg)?);
    let to: PathBuf = args.to.clone().unwrap_or_else(|| args.out.join("annotate-report.md"));
    write_to(&to, export::Output::Report, |w| Ok(w.write_all(md.as_bytes())?))?;
    if to != Path::new("-") {
        eprintln!("prbench: wrote `{}`", to.display());
    }
    Ok(())
}
