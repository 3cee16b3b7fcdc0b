//! `prbench cache {stats,prune}`: look into and trim the run cache.

use anyhow::{bail, Result};

use prbench_eval::cache::{Cache, PruneFilter};
use prbench_report::plural::count;

use crate::cli::{CacheCommand, CachePruneArgs, CacheStatsArgs};

/// Runs a `cache` sub-verb.
pub fn run(cmd: CacheCommand) -> Result<()> {
    match cmd {
        CacheCommand::Stats(args) => stats(&args),
        CacheCommand::Prune(args) => prune(&args),
    }
}

fn open_existing(path: &std::path::Path) -> Result<Cache> {
    if !path.is_file() {
        bail!(
            "no cache file at `{}` (prbench eval writes `<--out>/cache.sqlite`; pass --cache PATH)",
            path.display()
        );
    }
    if std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) == 0 {
        bail!("`{}` is an empty file, not a prbench cache; pass --cache PATH", path.display());
    }
    Ok(Cache::open(path)?)
}

fn utc(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map_or_else(|| secs.to_string(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

fn stats(args: &CacheStatsArgs) -> Result<()> {
    let cache = open_existing(&args.cache)?;
    let rows = cache.stats()?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "path": args.cache, "disk_bytes": cache.disk_bytes(), "models": rows })
        );
        return Ok(());
    }
    let total: u64 = rows.iter().map(|r| r.entries).sum();
    println!(
        "cache `{}`: {}, {:.1} MiB on disk",
        args.cache.display(),
        count(total, "entry", "entries"),
        cache.disk_bytes() as f64 / (1024.0 * 1024.0)
    );
    if rows.is_empty() {
        return Ok(());
    }
    println!("\n| model | kind | entries | value KiB | oldest (UTC) | last used (UTC) |\n|---|---|---:|---:|---|---|");
    for r in rows {
        println!(
            "| `{}` | {} | {} | {:.1} | {} | {} |",
            r.model,
            r.kind,
            r.entries,
            r.value_bytes as f64 / 1024.0,
            utc(r.oldest),
            utc(r.last_used)
        );
    }
    Ok(())
}

fn prune(args: &CachePruneArgs) -> Result<()> {
    if !args.all && args.model.is_none() && args.older_than_days.is_none() {
        bail!("say what to prune: --model TEXT, --older-than-days N, or --all");
    }
    let cache = open_existing(&args.cache)?;
    let filter = PruneFilter {
        model_contains: args.model.clone(),
        unused_for_secs: args.older_than_days.map(|d| i64::from(d) * 86_400),
    };
    let before = cache.disk_bytes();
    let n = cache.prune(&filter, args.dry_run)?;
    if args.dry_run {
        println!("would delete {} from `{}`", count(n, "entry", "entries"), args.cache.display());
    } else {
        println!(
            "deleted {} from `{}`; {:.1} MiB → {:.1} MiB on disk",
            count(n, "entry", "entries"),
            args.cache.display(),
            before as f64 / (1024.0 * 1024.0),
            cache.disk_bytes() as f64 / (1024.0 * 1024.0)
        );
    }
    Ok(())
}
