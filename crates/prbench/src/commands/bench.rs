//! `prbench bench …`: each sub-verb turns its flags into the options of [`prbench_bench`], runs
//! the bench there and prints its table (or JSON) to stdout; progress lines go to stderr.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{bail, Result};
use prbench_bench::{all, harness, judge, remote, rm, rm_prefix, serve};

use crate::cli::{
    BenchAllArgs, BenchAnnotateArgs, BenchCommand, BenchJudgeArgs, BenchJudgeOrdersArgs,
    BenchRemoteArgs, BenchRmArgs, BenchRmPrefixArgs, BenchServeArgs, JudgeWorkerArgs, RemoteArgs,
    RmReferenceArgs, SyntheticBenchArgs,
};
use crate::commands::serve_reward::{load_reward_model, serve_options};

/// Progress lines of the benches, on stderr.
fn log(line: &str) {
    eprintln!("{line}");
}

/// Runs one `prbench bench` sub-verb.
pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Rm(args) => run_rm(&args),
        BenchCommand::Remote(args) => run_remote(&args),
        BenchCommand::Serve(args) => run_serve(&args),
        BenchCommand::Annotate(args) => run_annotate(&args),
        BenchCommand::Harness(args) => run_harness(&args),
        BenchCommand::Report(args) => run_report(&args),
        BenchCommand::Judge(args) => run_judge(&args),
        BenchCommand::RmPrefix(args) => run_rm_prefix(&args),
        BenchCommand::JudgeOrders(args) => run_judge_orders(&args),
        BenchCommand::All(args) => run_all(&args),
        BenchCommand::JudgeWorker(args) => run_judge_worker(&args),
    }
}

fn reference(a: &RmReferenceArgs) -> rm::Reference {
    rm::Reference {
        threads: a.threads,
        python: a.python.clone(),
        tools: a.tools.clone(),
        work: a.work.clone(),
    }
}

fn run_rm(a: &BenchRmArgs) -> Result<()> {
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
        code_version: crate::code_version().to_string(),
    };
    prbench_bench::use_threads(a.reference.threads)?;
    let rows = rm::measure(&opts, &log)?;
    print!("{}", rm::table(&opts, &rows));
    Ok(())
}

fn run_remote(a: &BenchRemoteArgs) -> Result<()> {
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
        println!("{}", report.json);
    } else {
        print!("{}", report.table());
    }
    if report.errors > 0 {
        bail!("{} of {} requests failed (see above)", report.errors, a.requests);
    }
    Ok(())
}

fn run_serve(a: &BenchServeArgs) -> Result<()> {
    let opts = serve::ServeLoadOptions {
        requests: a.requests,
        concurrency: a.concurrency,
        waves: a.waves,
        timeout: a.timeout,
        data: a.data.clone(),
        posts: a.posts,
    };
    let items = serve::requests(&opts)?;
    let model = load_reward_model(&a.model, &RemoteArgs::default())?;
    let server = serve_options(&a.serve, SocketAddr::from(([127, 0, 0, 1], 0)), false);
    let report = serve::measure(Arc::from(model), server, &items, &opts)?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", serve::table(&report));
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

fn run_annotate(a: &BenchAnnotateArgs) -> Result<()> {
    use prbench_bench::annotate_load::{load_test, table, LoadOptions};
    let opts = LoadOptions {
        annotators: a.annotators,
        seconds: a.seconds,
        items: a.items,
        reference_seconds: a.reference_seconds,
    };
    let report = load_test(&opts)?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", table(&report));
    }
    if report.lost > 0 {
        bail!("{} acknowledged saves are not in the export", report.lost);
    }
    Ok(())
}

fn run_report(a: &SyntheticBenchArgs) -> Result<()> {
    let opts = prbench_bench::report::ReportBenchOptions {
        scale: a.scale,
        rounds: a.rounds,
        seed: a.seed,
        work: a.work.clone(),
        exe: std::env::current_exe()?,
        generator: format!("prbench {}", crate::code_version()),
    };
    let report = prbench_bench::report::measure(&opts, &log)?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", prbench_bench::report::table(&report));
    }
    Ok(())
}

fn run_harness(a: &SyntheticBenchArgs) -> Result<()> {
    let opts = harness::HarnessOptions {
        scale: a.scale,
        rounds: a.rounds,
        seed: a.seed,
        work: a.work.clone(),
    };
    let report = harness::measure(&opts, &log)?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", harness::table(&report));
    }
    Ok(())
}

fn run_judge(a: &BenchJudgeArgs) -> Result<()> {
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
    let report = judge::measure(&opts, &log)?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", judge::table(&opts, &report, &log));
    }
    Ok(())
}

fn run_rm_prefix(a: &BenchRmPrefixArgs) -> Result<()> {
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
        code_version: crate::code_version().to_string(),
    };
    prbench_bench::use_threads(a.reference.threads)?;
    let report = rm_prefix::measure(&opts, &log)?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", rm_prefix::table(&report));
    }
    prbench_bench::agreement_passed(&report.failed_checks())
}

fn run_judge_orders(a: &BenchJudgeOrdersArgs) -> Result<()> {
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
    let rows = judge::orders::measure(&opts, &log)?;
    if a.json {
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        print!("{}", judge::orders::table(&opts, &rows));
    }
    prbench_bench::agreement_passed(&judge::orders::failed_checks(&rows))
}

fn run_judge_worker(a: &JudgeWorkerArgs) -> Result<()> {
    println!("{}", judge::worker(&a.side, &a.model, &a.input, crate::code_version())?);
    Ok(())
}

fn run_all(a: &BenchAllArgs) -> Result<()> {
    let opts = all::AllOptions {
        short: a.short,
        rounds: a.rounds,
        judge_prompts: a.judge_prompts,
        reference: reference(&a.reference),
        code_version: crate::code_version().to_string(),
    };
    prbench_bench::use_threads(a.reference.threads)?;
    let rows = all::measure(&opts, &log)?;
    let invocation = format!("prbench {}", std::env::args().skip(1).collect::<Vec<_>>().join(" "));
    print!("{}", all::table(&rows, crate::code_version(), &invocation));
    prbench_bench::agreement_passed(&all::failed_checks(&rows))
}
