//! `prbench bench …` from its flags ([`crate::flags`]) to the printed result: each sub-verb's
//! flags become the options of its bench module, the bench runs, and its table (or JSON line)
//! goes to [`Output::result`], its progress lines to [`Output::log`]. A bench whose result
//! fails a check (dropped requests, lost ratings, failed agreement checks) prints its result
//! first, then returns the error, so the table that shows the failure is never lost.
//!
//! ```no_run
//! use clap::Parser;
//! use prbench_bench::command::{run, Caller, Output};
//! use prbench_bench::flags::BenchCommand;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(subcommand)]
//!     bench: BenchCommand,
//! }
//!
//! struct Terminal;
//! impl Output for Terminal {
//!     fn log(&self, line: &str) {
//!         eprintln!("{line}");
//!     }
//!     fn result(&self, text: &str) {
//!         print!("{text}");
//!     }
//! }
//!
//! let cli = Cli::parse_from(["bench", "harness", "--scale", "0.01", "--rounds", "1"]);
//! let args: Vec<String> = std::env::args().skip(1).collect();
//! run(&cli.bench, &Caller { code_version: "0.1.0", args: &args }, &Terminal)?;
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{bail, Result};
use prbench_engines::flags::RemoteArgs;

use crate::flags::{
    BenchAllArgs, BenchAnnotateArgs, BenchCommand, BenchGenerateArgs, BenchJudgeArgs,
    BenchJudgeOrdersArgs, BenchRemoteArgs, BenchRmArgs, BenchRmPrefixArgs, BenchServeArgs,
    JudgeWorkerArgs, RmReferenceArgs, SyntheticBenchArgs,
};
use crate::{all, annotate_load, generate, harness, judge, remote, report, rm, rm_prefix, serve};

/// Where a bench's output goes; the caller decides how it is shown.
pub trait Output {
    /// A progress line or a note (a skipped input, a default taken), without its newline. The
    /// `prbench` binary writes it to stderr.
    fn log(&self, line: &str);
    /// The bench's result: its table, or its JSON line with `--json`, as whole text ending in a
    /// newline, to be written as it is. The `prbench` binary writes it to stdout.
    fn result(&self, text: &str);
}

/// What the running program tells the benches about itself.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// prbench's version and the commit it was built from, written into reports and tables.
    pub code_version: &'a str,
    /// The command line after the program name, as given (`bench all` prints it under its
    /// table, prefixed with `prbench`).
    pub args: &'a [String],
}

/// Runs one `prbench bench` sub-verb: builds its options from `cmd`, measures, and hands its
/// result to `out`.
///
/// # Errors
/// The bench's own error (see each module), or, after its result was handed over, a failed
/// check: `bench remote`'s failed requests, `bench serve`'s requests without an answer,
/// `bench annotate`'s acknowledged saves missing from the export, or the failed agreement
/// checks of `bench rm-prefix`, `bench judge-orders` and `bench all`
/// ([`crate::agreement_passed`]).
pub fn run(cmd: &BenchCommand, caller: &Caller<'_>, out: &dyn Output) -> Result<()> {
    let log = |line: &str| out.log(line);
    match cmd {
        BenchCommand::Rm(a) => run_rm(a, caller, &log, out),
        BenchCommand::Remote(a) => run_remote(a, out),
        BenchCommand::Serve(a) => run_serve(a, out),
        BenchCommand::Annotate(a) => run_annotate(a, out),
        BenchCommand::Harness(a) => run_harness(a, &log, out),
        BenchCommand::Report(a) => run_report(a, caller, &log, out),
        BenchCommand::Judge(a) => run_judge(a, &log, out),
        BenchCommand::RmPrefix(a) => run_rm_prefix(a, caller, &log, out),
        BenchCommand::JudgeOrders(a) => run_judge_orders(a, &log, out),
        BenchCommand::All(a) => run_all(a, caller, &log, out),
        BenchCommand::JudgeWorker(a) => run_judge_worker(a, caller, out),
        BenchCommand::Generate(a) => run_generate(a, &log, out),
        BenchCommand::GenerateWorker(a) => {
            out.result(&format!("{}\n", generate::worker(&a.model, &a.input)?));
            Ok(())
        }
    }
}

/// `value` as one JSON line (`--json`).
fn json_line<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    Ok(format!("{}\n", serde_json::to_string(value)?))
}

fn reference(a: &RmReferenceArgs) -> rm::Reference {
    rm::Reference {
        threads: a.threads,
        python: a.python.clone(),
        tools: a.tools.clone(),
        work: a.work.clone(),
    }
}

fn run_rm(
    a: &BenchRmArgs,
    caller: &Caller<'_>,
    log: &dyn Fn(&str),
    out: &dyn Output,
) -> Result<()> {
    let opts = rm::RmOptions {
        models: a.models.clone(),
        batch: a.batch,
        seq_len: a.seq_len,
        batches: a.batches,
        repeats: a.repeats,
        rounds: a.rounds,
        seed: a.seed,
        reference: reference(&a.reference),
        embedder: a.embedder.clone(),
        code_version: caller.code_version.to_string(),
    };
    crate::use_threads(a.reference.threads)?;
    let rows = rm::measure(&opts, log)?;
    out.result(&rm::table(&opts, &rows));
    Ok(())
}

fn run_remote(a: &BenchRemoteArgs, out: &dyn Output) -> Result<()> {
    if a.requests == 0 {
        bail!("--requests must be at least 1");
    }
    let opts = remote::RemoteLoadOptions {
        requests: a.requests,
        concurrency: a.concurrency,
        url: a.url.clone(),
        model: a.model.clone(),
        data: a.data.clone(),
    };
    let report = remote::measure(&opts)?;
    if a.json {
        out.result(&format!("{}\n", report.json));
    } else {
        out.result(&report.table());
    }
    if report.errors > 0 {
        bail!("{} of {} requests failed (see above)", report.errors, a.requests);
    }
    Ok(())
}

fn run_serve(a: &BenchServeArgs, out: &dyn Output) -> Result<()> {
    let opts = serve::ServeLoadOptions {
        requests: a.requests,
        concurrency: a.concurrency,
        waves: a.waves,
        timeout: a.timeout,
        data: a.data.clone(),
        posts: a.posts,
    };
    let items = serve::requests(&opts)?;
    let model = a.model.load(&RemoteArgs::default())?;
    let server = a.serve.options(SocketAddr::from(([127, 0, 0, 1], 0)), false);
    let report = serve::measure(Arc::from(model), server, &items, &opts)?;
    if a.json {
        out.result(&json_line(&report)?);
    } else {
        out.result(&serve::table(&report));
    }
    let dropped = serve::dropped(&report);
    if dropped > 0 {
        bail!(
            "{dropped} requests got no answer (connection error or over --timeout {} s)",
            a.timeout
        );
    }
    Ok(())
}

fn run_annotate(a: &BenchAnnotateArgs, out: &dyn Output) -> Result<()> {
    let opts = annotate_load::LoadOptions {
        annotators: a.annotators,
        seconds: a.seconds,
        items: a.items,
        reference_seconds: a.reference_seconds,
    };
    let report = annotate_load::load_test(&opts)?;
    if a.json {
        out.result(&json_line(&report)?);
    } else {
        out.result(&annotate_load::table(&report));
    }
    if report.lost > 0 {
        bail!("{} acknowledged saves are not in the export", report.lost);
    }
    Ok(())
}

fn run_report(
    a: &SyntheticBenchArgs,
    caller: &Caller<'_>,
    log: &dyn Fn(&str),
    out: &dyn Output,
) -> Result<()> {
    let opts = report::ReportBenchOptions {
        scale: a.scale,
        rounds: a.rounds,
        seed: a.seed,
        work: a.work.clone(),
        exe: std::env::current_exe()?,
        generator: format!("prbench {}", caller.code_version),
    };
    let page = report::measure(&opts, log)?;
    if a.json {
        out.result(&json_line(&page)?);
    } else {
        out.result(&report::table(&page));
    }
    Ok(())
}

fn run_harness(a: &SyntheticBenchArgs, log: &dyn Fn(&str), out: &dyn Output) -> Result<()> {
    let opts = harness::HarnessOptions {
        scale: a.scale,
        rounds: a.rounds,
        seed: a.seed,
        work: a.work.clone(),
    };
    let report = harness::measure(&opts, log)?;
    if a.json {
        out.result(&json_line(&report)?);
    } else {
        out.result(&harness::table(&report));
    }
    Ok(())
}

fn run_judge(a: &BenchJudgeArgs, log: &dyn Fn(&str), out: &dyn Output) -> Result<()> {
    let opts = judge::JudgeOptions {
        models: a.models.clone(),
        data: a.data.clone(),
        condition: a.condition.clone(),
        prompts: a.prompts,
        gen_prompts: a.gen_prompts,
        max_new_tokens: a.max_new_tokens,
        rounds: a.rounds,
        threads: a.threads,
        ref_ctx: a.ref_ctx,
        work: a.work.clone(),
    };
    let report = judge::measure(&opts, log)?;
    if a.json {
        out.result(&json_line(&report)?);
    } else {
        out.result(&judge::table(&opts, &report, log));
    }
    Ok(())
}

fn run_rm_prefix(
    a: &BenchRmPrefixArgs,
    caller: &Caller<'_>,
    log: &dyn Fn(&str),
    out: &dyn Output,
) -> Result<()> {
    let opts = rm_prefix::PrefixOptions {
        sets: a.sets.clone(),
        conditions: a.conditions.clone(),
        pairs: a.pairs,
        bon_conditions: a.bon_conditions.iter().filter(|c| !c.is_empty()).cloned().collect(),
        bon_prompts: a.bon_prompts,
        bon_n: a.bon_n,
        per_call: a.per_call,
        max_batch: a.max_batch,
        repeats: a.repeats,
        rounds: a.rounds,
        model: a.model.clone(),
        allow_fixture: false,
        reference: reference(&a.reference),
        code_version: caller.code_version.to_string(),
    };
    crate::use_threads(a.reference.threads)?;
    let report = rm_prefix::measure(&opts, log)?;
    if a.json {
        out.result(&json_line(&report)?);
    } else {
        out.result(&rm_prefix::table(&report));
    }
    crate::agreement_passed(&report.failed_checks())
}

fn run_judge_orders(a: &BenchJudgeOrdersArgs, log: &dyn Fn(&str), out: &dyn Output) -> Result<()> {
    let opts = judge::orders::OrdersOptions {
        models: a.models.clone(),
        sets: a.sets.clone(),
        condition: a.condition.clone(),
        examples: a.examples,
        max_prompt_tokens: a.max_prompt_tokens,
        rounds: a.rounds,
        threads: a.threads,
        work: a.work.clone(),
    };
    let rows = judge::orders::measure(&opts, log)?;
    if a.json {
        out.result(&json_line(&rows)?);
    } else {
        out.result(&judge::orders::table(&opts, &rows));
    }
    crate::agreement_passed(&judge::orders::failed_checks(&rows))
}

/// `bench generate`'s options from its flags.
pub fn generate_options(a: &BenchGenerateArgs) -> generate::GenerateOptions {
    generate::GenerateOptions {
        models: a.models.clone(),
        workloads: a.workloads.clone(),
        data: a.data.clone(),
        requests: a.requests,
        max_new_tokens: a.max_new_tokens,
        batches: a.batches.clone(),
        parallel: a.parallel.iter().filter_map(|p| p.0).collect(),
        threads: a.threads,
        server_script: a.server_script.clone(),
        work: a.work.clone(),
    }
}

fn run_generate(a: &BenchGenerateArgs, log: &dyn Fn(&str), out: &dyn Output) -> Result<()> {
    let opts = generate_options(a);
    let rows = generate::measure(&opts, log)?;
    if a.json {
        out.result(&json_line(&rows)?);
    } else {
        out.result(&generate::table(&opts, &rows));
    }
    Ok(())
}

fn run_judge_worker(a: &JudgeWorkerArgs, caller: &Caller<'_>, out: &dyn Output) -> Result<()> {
    let line = judge::worker(&a.side, &a.model, &a.input, caller.code_version)?;
    out.result(&format!("{line}\n"));
    Ok(())
}

fn run_all(
    a: &BenchAllArgs,
    caller: &Caller<'_>,
    log: &dyn Fn(&str),
    out: &dyn Output,
) -> Result<()> {
    let opts = all::AllOptions {
        short: a.short,
        rounds: a.rounds,
        judge_prompts: a.judge_prompts,
        reference: reference(&a.reference),
        code_version: caller.code_version.to_string(),
    };
    crate::use_threads(a.reference.threads)?;
    let rows = all::measure(&opts, log)?;
    let invocation = format!("prbench {}", caller.args.join(" "));
    out.result(&all::table(&rows, caller.code_version, &invocation));
    crate::agreement_passed(&all::failed_checks(&rows))
}
