//! `prbench annotate`: flags ([`prbench_annotate::flags`]) → [`prbench_annotate::front`]; notes
//! go to stderr, links and stdout output (`--to -`) to stdout.

use std::io::Write;

use anyhow::Result;
use prbench_annotate::front::{self, ServeOptions};
use prbench_annotate::report::ReportConfig;

use crate::cli::{
    AnnotateAgreementArgs, AnnotateCommand, AnnotateExportArgs, AnnotateReportArgs,
    AnnotateServeArgs,
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

/// A note of the library, on stderr.
fn note(line: &str) {
    eprintln!("prbench: {line}");
}

fn serve(args: AnnotateServeArgs) -> Result<()> {
    let opts = ServeOptions {
        data: args.data.data,
        subset: args.data.subset,
        out: args.out,
        annotators: args.annotators,
        per_item: args.per_item,
        limit: args.limit,
        seed: args.seed,
        host: args.host,
        public_url: args.public_url,
        port: args.port,
        new_tokens: args.new_tokens,
    };
    let server = front::prepare_serve(&opts, &mut note)?;
    {
        let mut out = std::io::stdout().lock();
        for line in server.links() {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
    }
    eprintln!("prbench: rating server on http://{}; stop it with Ctrl-C (every saved rating is already on disk)", server.bound());
    server.run(prbench_downstream::serve::shutdown_signal)?;
    Ok(())
}

fn export_cmd(args: AnnotateExportArgs) -> Result<()> {
    let stdout = &mut std::io::stdout().lock();
    front::export_ratings(&args.out, args.format.into(), args.to.as_deref(), stdout, &mut note)?;
    Ok(())
}

fn agreement_cmd(args: AnnotateAgreementArgs) -> Result<()> {
    print!(
        "{}",
        front::agreement_text(&args.ratings, args.json, args.resamples, args.seed, &mut note)?
    );
    Ok(())
}

fn report_cmd(args: AnnotateReportArgs) -> Result<()> {
    let cfg = ReportConfig { resamples: args.resamples, seed: args.seed };
    let stdout = &mut std::io::stdout().lock();
    front::write_report(&args.out, args.to.as_deref(), &cfg, stdout, &mut note)?;
    Ok(())
}
