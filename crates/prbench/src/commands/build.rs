//! `prbench build`: flags ([`prbench_build::flags`]) → [`prbench_build::front`]; notes go to
//! stderr, the build report to stdout, progress to the bar.

use anyhow::Result;
use prbench_build::front::{self, BuildOptions};

use crate::cli::BuildArgs;
use crate::progress::Bar;

/// A note of the library, on stderr.
fn note(line: &str) {
    eprintln!("prbench: {line}");
}

/// Runs `prbench build`.
pub fn run(args: BuildArgs) -> Result<()> {
    let opts = BuildOptions {
        data: args.data.data,
        subset: args.data.subset,
        generator: args.generator,
        judge: args.judge,
        skip_audit: args.skip_audit,
        out: args.out,
        cache: args.cache,
        no_cache: args.no_cache,
        limit: args.limit,
        seed: args.seed,
        k_posts: args.k_posts,
        retriever: args.retriever,
        max_words: args.max_words,
        max_new_tokens: args.max_new_tokens,
        audit_max_new_tokens: args.audit_max_new_tokens,
        min_fit_gap: args.min_fit_gap,
        max_quality_gap: args.max_quality_gap,
        max_length_ratio: args.max_length_ratio,
        batch_size: args.batch_size,
        remote: args.remote,
        gen: args.gen,
        code_version: crate::code_version().to_string(),
    };
    let bar = Bar::new(args.quiet);
    let outcome = front::build(&opts, &bar, &mut note)?;
    for line in front::summary(&outcome) {
        note(&line);
    }
    println!("{}", outcome.report);
    note(&front::written(&opts.out));
    note(&front::exported(&opts.out, &outcome)?);
    Ok(())
}
