//! `prbench correlate`: does the benchmark rank reward models the way a downstream use ranks them
//! (PROTOCOL.md §8)? The flags become [`CorrelationOptions`] (with `--benchmark-set`,
//! [`ComparisonOptions`]: several benchmarks side by side); the work is
//! [`prbench_report::correlation`]'s. This writes `--out` (Markdown, JSON beside it) and prints.

use anyhow::{bail, Context, Result};

use prbench_report::correlation::{self, correlate, ComparisonOptions, CorrelationOptions};

use crate::cli::{CorrelateArgs, Metric};

/// Runs `prbench correlate`.
pub fn run(args: CorrelateArgs) -> Result<()> {
    if let Some(out) = &args.out {
        if out.extension().is_some_and(|e| e == "json") {
            bail!("--out names the markdown report (e.g. corr.md); the JSON goes next to it with the extension .json");
        }
        if out.exists() {
            bail!(
                "`{}` exists; choose another --out (reports are never overwritten)",
                out.display()
            );
        }
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir()) {
            bail!("--out: folder `{}` does not exist", parent.display());
        }
    }
    let compared = !args.benchmark_set.is_empty();
    if !compared && args.downstream_name.is_some() {
        bail!("--downstream-name names the downstream ranking in a comparison of --benchmark-set benchmarks; with --benchmark it would be ignored");
    }
    let opts = CorrelationOptions {
        benchmark: args.benchmark,
        downstream: args.downstream,
        metric: match args.metric {
            Metric::Auto => correlation::Metric::Auto,
            Metric::Accuracy => correlation::Metric::Accuracy,
            Metric::Debiased => correlation::Metric::Debiased,
        },
        with_baselines: args.with_baselines,
        common_items: args.common_items,
        k: args.k,
        rbo_p: args.rbo_p,
        bootstrap: args.bootstrap,
        permutations: args.permutations,
        seed: args.seed,
    };
    let mut note = |note: &str| eprintln!("prbench: {note}");
    // The Markdown, and the JSON pretty (for the file) and on one line (for --json).
    let (md, pretty, line) = if compared {
        let opts = ComparisonOptions {
            sets: args.benchmark_set,
            downstream_name: args.downstream_name,
            options: opts,
        };
        let report = correlation::compare(&opts, &mut note)?;
        (
            correlation::render_comparison(&report),
            serde_json::to_string_pretty(&report)?,
            serde_json::to_string(&report)?,
        )
    } else {
        let report = correlate(&opts, &mut note)?;
        (
            correlation::render(&report, opts.rbo_p),
            serde_json::to_string_pretty(&report)?,
            serde_json::to_string(&report)?,
        )
    };
    if let Some(out) = &args.out {
        std::fs::write(out, &md).with_context(|| format!("writing `{}`", out.display()))?;
        let json_path = out.with_extension("json");
        std::fs::write(&json_path, pretty + "\n")
            .with_context(|| format!("writing `{}`", json_path.display()))?;
        eprintln!("prbench: correlation report in {} and {}", out.display(), json_path.display());
    }
    if args.json {
        println!("{line}");
    } else {
        println!("{md}");
    }
    Ok(())
}
