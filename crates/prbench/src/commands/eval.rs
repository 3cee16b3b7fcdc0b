//! `prbench eval`: [`prbench_engines::run_eval`] does the work; this prints each run's summary
//! and where the run files are, writes the HTML reports and prints the guide.

use anyhow::Result;
use std::path::Path;

use prbench_engines::run_eval::run_eval;
use prbench_eval::evaluation::{slot_balance_warning, unparsed, EvaluationReporter};
use prbench_eval::run::RunResult;
use prbench_eval::runner::Reporter;
use prbench_report::guide::GuideInputs;
use prbench_report::plural::count;

use crate::cli::EvalArgs;
use crate::progress::Bar;

/// Writes the HTML reports of the runs (and of the matrix) and says where. A report that cannot
/// be written is a warning naming the command that makes it: the runs themselves are complete.
/// `data` is the dataset evaluated: the reports take the items' texts from it instead of reading it again.
fn write_reports(
    args: &EvalArgs,
    result: &prbench_eval::evaluation::EvaluationResult,
    data: &prbench_data::Dataset,
) {
    let dirs: Vec<std::path::PathBuf> =
        result.runs.iter().map(|(_, id)| args.out.join(id)).collect();
    let matrix = result.matrix.as_ref().map(|m| m.json_path.as_path());
    match prbench_report::html::write_eval_reports(&dirs, matrix, &format!("prbench {}", crate::code_version()), &[data]) {
        Ok(files) => match (matrix, files.last()) {
            (Some(_), Some(last)) => eprintln!("prbench: HTML report of all {} runs in {} (one per run in each run folder, report.html); open it in a browser", dirs.len(), last.display()),
            (None, Some(last)) => eprintln!("prbench: HTML report in {}; open it in a browser", last.display()),
            _ => {}
        },
        Err(e) => {
            let paths: Vec<String> = match matrix {
                Some(m) => vec![m.display().to_string()],
                None => dirs.iter().map(|d| d.display().to_string()).collect(),
            };
            eprintln!("prbench: warning: the HTML report was not written ({e}); make it with `prbench report {} --out report.html`", paths.join(" "));
        }
    }
}

/// `psoups:DIR` for the guide's next commands: the spec `prbench data fetch psoups` prints with
/// its default folder, which the guide's fetch line writes.
fn psoups_arg() -> String {
    format!("psoups:{}", prbench_data::fetch::PSOUPS_DEFAULT_OUT)
}

/// Draws progress on stderr and prints each finished run: its table (or summary JSON) on
/// stdout, then its cache, remote and error figures on stderr.
struct Printer {
    bar: Bar,
    json: bool,
}

impl Reporter for Printer {
    fn start(&self, stage: &str, total: u64) {
        self.bar.start(stage, total);
    }

    fn advance(&self, n: u64) {
        self.bar.advance(n);
    }

    fn finish(&self) {
        self.bar.finish();
    }
}

impl EvaluationReporter for Printer {
    fn note(&self, message: &str) {
        self.bar.note(message);
    }

    fn run_reused(&self, dir: &Path, summary: &prbench_report::Summary) {
        if self.json {
            println!("{}", serde_json::to_string(summary).expect("summaries serialize"));
        } else {
            println!("{}", prbench_report::markdown::render(summary));
        }
        eprintln!(
            "prbench: run files in {}/ (summary.md, summary.json, outcomes.jsonl, manifest.json)",
            dir.display()
        );
    }

    fn run_finished(&self, result: &RunResult) {
        if self.json {
            println!("{}", serde_json::to_string(&result.summary).expect("summaries serialize"));
        } else {
            println!("{}", prbench_report::markdown::render(&result.summary));
        }
        if let Some(c) = &result.summary.cache {
            eprintln!(
                "prbench: cache `{}`: {}, {}{}",
                c.path,
                count(c.hits, "hit", "hits"),
                count(c.calls, "call", "calls"),
                if c.write_errors > 0 {
                    format!(
                        ", {} results NOT stored (first: {})",
                        c.write_errors,
                        c.first_error.as_deref().unwrap_or("")
                    )
                } else {
                    String::new()
                }
            );
        }
        if let Some(r) = &result.summary.remote {
            eprintln!(
                "prbench: remote: {} requests, {} retries, {}; {}",
                r.requests,
                r.retries,
                count(r.failures, "call failed", "calls failed"),
                r.usage_text()
            );
        }
        if let Some(w) = slot_balance_warning(
            &result.outcomes,
            result.summary.sample_per_subset.is_some(),
            result.summary.both_orders.is_some(),
        ) {
            eprintln!("prbench: warning: {w}");
        }
        let errors: Vec<&str> = result.outcomes.iter().filter_map(|o| o.error.as_deref()).collect();
        if let Some(first) = errors.first() {
            eprintln!("prbench: warning: the backend failed on {}, counted as errors, never scored; first: {first}", count(errors.len(), "item", "items"));
        }
        let unparsed = unparsed(result);
        if unparsed > 0 {
            eprintln!(
                "prbench: warning: {unparsed} of {} could not be parsed ({}); they count as not correct, never as a choice (see `verdict.raw` in outcomes.jsonl)",
                count(result.outcomes.len(), "verdict", "verdicts"),
                prbench_report::markdown::unparsed_reason(&result.summary.decoding)
            );
        }
        eprintln!(
            "prbench: run files in {}/ (summary.md, summary.json, outcomes.jsonl, manifest.json)",
            result.dir.display()
        );
    }
}

/// Runs `prbench eval`: [`run_eval`] with the progress bar and the printed tables, then the
/// HTML reports and the guide.
pub fn run(args: EvalArgs) -> Result<()> {
    let printer = Printer { bar: Bar::new(args.quiet), json: args.json };
    let done = run_eval(&args, crate::code_version(), &printer, &mut |line| eprintln!("{line}"))?;
    let Some(result) = &done.result else { return Ok(()) };
    let data = &done.data;
    if !args.no_report {
        write_reports(&args, result, data);
    }
    if let (Some(m), false) = (&result.matrix, args.json) {
        println!("{}", m.markdown);
        let guide = GuideInputs {
            share_a: result.share_a.clone(),
            data_arg: args.data.data.clone(),
            psoups_arg: psoups_arg(),
        };
        println!("{}", prbench_report::guide::render(&m.matrix, &guide));
    }
    done.check_error_rate(args.max_error_rate)?;
    if result.errors > 0 {
        eprintln!("prbench: {}", done.retry);
    }
    Ok(())
}
