//! The control baselines' rows in the run cache ([`crate::cache::Cache`], entries of kind
//! [`EntryKind::BaselineRows`]): they do not depend on the model under test, so every `eval` of
//! the same items, condition, seed and bootstrap settings with the same build reuses them.
//!
//! The key ([`rows_key`]) is a sha256 over everything the rows are computed from:
//! - the dataset (its files' sha256) and the evaluated example ids in order (`--limit`,
//!   `--sample`), which with the seed fix every slot;
//! - the condition, its prepared inputs as the manifest records them (`k` and retriever;
//!   planner spec and plans hash), the ids and reasons of the examples it has no input for
//!   (the planner failed on them: errors for four of the baselines), and where the context
//!   comes from;
//! - the run seed (slots, `random`) and the bootstrap settings (resamples, seed, level);
//! - the code: the version and git commit, and the running executable's path, size and
//!   modification time, so a rebuilt binary (a `-dirty` build included) never reads rows
//!   another build computed. When the executable cannot be identified nothing is read or
//!   stored.
//!
//! Values keep every float as its bit pattern: `serde_json` parses decimal text back to the
//! nearest float only with its `float_roundtrip` feature, which this workspace does not enable,
//! and rows from the cache must be the rows computed, bit for bit.

use prbench_records::{AccuracyRow, BaselineRow};
use prbench_stats::accuracy::Tally;
use prbench_stats::bootstrap::BootstrapConfig;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cache::{Cache, EntryKind};
use crate::error::EvalError;
use crate::runner::{ContextSource, EvalOptions};

/// Version of the key layout; bumping it makes every stored row set a miss.
const KEY_VERSION: u32 = 1;

/// The `model` column of the entries (what `prbench cache stats` and `prune --model` show).
pub const CACHE_MODEL: &str = "control-baselines";

/// What the rows of a run are computed from, besides the code ([`rows_key`]).
pub struct RowsInputs<'a> {
    /// sha256 of the dataset files ([`prbench_data::Dataset::hash`]).
    pub dataset_hash: &'a str,
    /// The evaluated examples, in order.
    pub examples: &'a [prbench_data::Example],
    /// The run's options: condition, prepared inputs, context source, seed.
    pub options: &'a EvalOptions,
    /// Bootstrap settings of every CI.
    pub bootstrap: &'a BootstrapConfig,
    /// prbench version and git commit.
    pub code_version: &'a str,
}

/// The running executable as `path:size:mtime-ns`, or `None` when it cannot be read.
pub fn build_fingerprint() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(&exe).ok()?;
    let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    Some(format!("{}:{}:{mtime}", exe.display(), meta.len()))
}

/// The cache key of the rows `inputs` give, built by `build` ([`build_fingerprint`]): sha256
/// (hex) over a canonical JSON of every item of the module docs.
pub fn rows_key(inputs: &RowsInputs<'_>, build: &str) -> String {
    let opts = inputs.options;
    let mut ids = Sha256::new();
    for ex in inputs.examples {
        ids.update((ex.id.len() as u64).to_le_bytes());
        ids.update(ex.id.as_bytes());
    }
    let mut blocked = Sha256::new();
    for ex in inputs.examples {
        if let (ContextSource::Condition, Some(reason)) =
            (opts.context, opts.inputs.blocked(opts.condition, ex))
        {
            for part in [ex.id.as_str(), reason] {
                blocked.update((part.len() as u64).to_le_bytes());
                blocked.update(part.as_bytes());
            }
        }
    }
    let doc = serde_json::json!({
        "v": KEY_VERSION,
        "kind": "baseline-rows",
        "dataset": inputs.dataset_hash,
        "examples": hex::encode(ids.finalize()),
        "condition": opts.condition.to_string(),
        "condition_inputs": opts.inputs.manifest_entry(opts.condition),
        "blocked": hex::encode(blocked.finalize()),
        "context": format!("{:?}", opts.context),
        "seed": opts.seed,
        "bootstrap": { "resamples": inputs.bootstrap.resamples, "seed": inputs.bootstrap.seed, "level": inputs.bootstrap.level.to_bits() },
        "code": inputs.code_version,
        "build": build,
    });
    // serde_json's Map is ordered by key, so this text is canonical for a given value.
    hex::encode(Sha256::digest(doc.to_string().as_bytes()))
}

/// An [`AccuracyRow`] with its floats as bit patterns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredAccuracy {
    label: String,
    tally: Tally,
    truncated: usize,
    strict: Option<u64>,
    strict_ci: Option<[u64; 2]>,
    half: Option<u64>,
    excluded: Option<u64>,
}

/// A [`BaselineRow`] as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredRow {
    name: String,
    sees: String,
    rows: Vec<StoredAccuracy>,
}

fn bits(x: Option<f64>) -> Option<u64> {
    x.map(f64::to_bits)
}

fn float(x: Option<u64>) -> Option<f64> {
    x.map(f64::from_bits)
}

fn store(rows: &[BaselineRow]) -> Vec<StoredRow> {
    rows.iter()
        .map(|r| StoredRow {
            name: r.name.clone(),
            sees: r.sees.clone(),
            rows: r
                .rows
                .iter()
                .map(|a| StoredAccuracy {
                    label: a.label.clone(),
                    tally: a.tally,
                    truncated: a.truncated,
                    strict: bits(a.strict),
                    strict_ci: a.strict_ci.map(|[lo, hi]| [lo.to_bits(), hi.to_bits()]),
                    half: bits(a.half),
                    excluded: bits(a.excluded),
                })
                .collect(),
        })
        .collect()
}

fn restore(stored: Vec<StoredRow>) -> Vec<BaselineRow> {
    stored
        .into_iter()
        .map(|r| BaselineRow {
            name: r.name,
            sees: r.sees,
            rows: r
                .rows
                .into_iter()
                .map(|a| AccuracyRow {
                    label: a.label,
                    tally: a.tally,
                    truncated: a.truncated,
                    strict: float(a.strict),
                    strict_ci: a.strict_ci.map(|[lo, hi]| [f64::from_bits(lo), f64::from_bits(hi)]),
                    half: float(a.half),
                    excluded: float(a.excluded),
                })
                .collect(),
        })
        .collect()
}

/// Where a run's control-baseline rows came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowsSource {
    /// Computed now; no cache (`--no-cache`, or the executable could not be identified).
    Computed,
    /// Computed now and stored in the cache (or the write failed: `Some(reason)`).
    Stored(Option<String>),
    /// Read from the cache, stored by an earlier run with the same key.
    Hit,
}

impl RowsSource {
    /// One line for the log and the manifest.
    pub fn describe(&self) -> String {
        match self {
            RowsSource::Computed => "computed (no cache)".into(),
            RowsSource::Stored(None) => "computed and stored in the cache".into(),
            RowsSource::Stored(Some(e)) => {
                format!("computed; storing them in the cache failed ({e})")
            }
            RowsSource::Hit => {
                "read from the cache (same data, items, condition, seed, bootstrap and build)"
                    .into()
            }
        }
    }
}

/// The rows for `key` from `cache`, or `compute`d and stored under it. An entry that does not
/// read back is a miss (recomputed and replaced).
///
/// # Errors
/// Whatever `compute` returns.
pub fn rows_through_cache(
    cache: Option<&Cache>,
    key: Option<&str>,
    compute: impl FnOnce() -> Result<Vec<BaselineRow>, EvalError>,
) -> Result<(Vec<BaselineRow>, RowsSource), EvalError> {
    let (Some(cache), Some(key)) = (cache, key) else {
        return Ok((compute()?, RowsSource::Computed));
    };
    if let Ok(Some(stored)) = cache.get::<Vec<StoredRow>>(key) {
        return Ok((restore(stored), RowsSource::Hit));
    }
    let rows = compute()?;
    let written = cache
        .put(key, EntryKind::BaselineRows, CACHE_MODEL, &store(&rows))
        .err()
        .map(|e| e.to_string());
    Ok((rows, RowsSource::Stored(written)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::Condition;

    fn rows() -> Vec<BaselineRow> {
        // Floats whose shortest decimal text serde_json (without `float_roundtrip`) may not
        // parse back exactly; the bit patterns always come back.
        let awkward = [
            0.1 + 0.2,
            1.0 / 3.0,
            0.500_353_356_890_459_4,
            f64::MIN_POSITIVE,
            2.225_073_858_507_201e-308,
            0.484_098_939_929_328_6,
        ];
        vec![BaselineRow {
            name: "baseline:longer".into(),
            sees: "answer only".into(),
            rows: awkward
                .iter()
                .enumerate()
                .map(|(i, &x)| AccuracyRow {
                    label: format!("s{i}"),
                    tally: Tally {
                        n: 7 + i,
                        correct: 3,
                        wrong: 2,
                        ties: 1,
                        unparsed: 0,
                        errors: 1 + i,
                    },
                    truncated: i,
                    strict: Some(x),
                    strict_ci: (i % 2 == 0).then_some([x / 7.0, x * 1.000_000_1]),
                    half: (i != 3).then_some(x * 0.3),
                    excluded: None,
                })
                .collect(),
        }]
    }

    #[test]
    fn rows_come_back_bit_for_bit() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        let want = rows();
        let mut computed = 0;
        let (first, src) = rows_through_cache(Some(&cache), Some("k"), || {
            computed += 1;
            Ok(want.clone())
        })
        .unwrap();
        assert_eq!((first, src), (want.clone(), RowsSource::Stored(None)));
        let (again, src) =
            rows_through_cache(Some(&cache), Some("k"), || panic!("a hit must not compute"))
                .unwrap();
        assert_eq!(src, RowsSource::Hit);
        assert_eq!(again, want);
        for (a, b) in again[0].rows.iter().zip(&want[0].rows) {
            assert_eq!(a.strict.map(f64::to_bits), b.strict.map(f64::to_bits));
            assert_eq!(
                a.strict_ci.map(|c| c.map(f64::to_bits)),
                b.strict_ci.map(|c| c.map(f64::to_bits))
            );
        }
        assert_eq!(computed, 1);
        // Another key, or no cache, computes.
        let (_, src) =
            rows_through_cache(Some(&cache), Some("other"), || Ok(want.clone())).unwrap();
        assert_eq!(src, RowsSource::Stored(None));
        let (_, src) = rows_through_cache(None, Some("k"), || Ok(want.clone())).unwrap();
        assert_eq!(src, RowsSource::Computed);
    }

    #[test]
    fn an_unreadable_entry_is_recomputed_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        cache.put("k", EntryKind::BaselineRows, CACHE_MODEL, &"not rows").unwrap();
        let (got, src) = rows_through_cache(Some(&cache), Some("k"), || Ok(rows())).unwrap();
        assert_eq!((got, src), (rows(), RowsSource::Stored(None)));
        assert_eq!(
            rows_through_cache(Some(&cache), Some("k"), || panic!("stored now")).unwrap().1,
            RowsSource::Hit
        );
    }

    #[test]
    fn every_input_of_the_rows_changes_the_key() {
        let data =
            prbench_data::load(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample"), &[])
                .unwrap();
        let opts = EvalOptions::new(Condition::None);
        let boot = BootstrapConfig::default();
        let ids = &data.examples[..];
        let key = |o: &EvalOptions,
                   b: &BootstrapConfig,
                   examples: &[prbench_data::Example],
                   hash: &str,
                   code: &str,
                   build: &str| {
            rows_key(
                &RowsInputs {
                    dataset_hash: hash,
                    examples,
                    options: o,
                    bootstrap: b,
                    code_version: code,
                },
                build,
            )
        };
        let base = key(&opts, &boot, ids, &data.hash, "0.1.0 (abc)", "exe:1:2");
        assert_eq!(
            base,
            key(&opts, &boot, ids, &data.hash, "0.1.0 (abc)", "exe:1:2"),
            "deterministic"
        );
        let seed = EvalOptions { seed: 7, ..opts.clone() };
        let profile = EvalOptions::new(Condition::Profile { k: 3 });
        let profile5 = EvalOptions::new(Condition::Profile { k: 5 });
        let full = EvalOptions { context: ContextSource::FullProfile, ..opts.clone() };
        let fewer = &ids[..ids.len() - 1];
        let variants = [
            key(&seed, &boot, ids, &data.hash, "0.1.0 (abc)", "exe:1:2"),
            key(&profile, &boot, ids, &data.hash, "0.1.0 (abc)", "exe:1:2"),
            key(&profile5, &boot, ids, &data.hash, "0.1.0 (abc)", "exe:1:2"),
            key(&full, &boot, ids, &data.hash, "0.1.0 (abc)", "exe:1:2"),
            key(
                &opts,
                &BootstrapConfig { resamples: 999, ..boot },
                ids,
                &data.hash,
                "0.1.0 (abc)",
                "exe:1:2",
            ),
            key(
                &opts,
                &BootstrapConfig { seed: 1, ..boot },
                ids,
                &data.hash,
                "0.1.0 (abc)",
                "exe:1:2",
            ),
            key(
                &opts,
                &BootstrapConfig { level: 0.9, ..boot },
                ids,
                &data.hash,
                "0.1.0 (abc)",
                "exe:1:2",
            ),
            key(&opts, &boot, fewer, &data.hash, "0.1.0 (abc)", "exe:1:2"),
            key(&opts, &boot, ids, "another-hash", "0.1.0 (abc)", "exe:1:2"),
            key(&opts, &boot, ids, &data.hash, "0.1.0 (abd)", "exe:1:2"),
            key(&opts, &boot, ids, &data.hash, "0.1.0 (abc)", "exe:1:3"),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(*v, base, "variant {i}");
        }
        let distinct: std::collections::HashSet<&String> = variants.iter().collect();
        assert_eq!(distinct.len(), variants.len());
        // Under `planner`, the examples the planner failed on (errors for four baselines).
        let mut planned = crate::condition::ConditionInputs::default();
        for ex in &data.examples {
            planned.plans.insert(
                ex.id.clone(),
                crate::condition::PlannedAspects {
                    aspects: vec!["a".into()],
                    failure: None,
                    error: None,
                },
            );
        }
        let planner = EvalOptions {
            inputs: std::sync::Arc::new(planned.clone()),
            ..EvalOptions::new(Condition::Planner)
        };
        let first = data.examples[0].id.clone();
        planned.plans.get_mut(&first).unwrap().error = Some("generator failed".into());
        let planner_blocked = EvalOptions {
            inputs: std::sync::Arc::new(planned),
            ..EvalOptions::new(Condition::Planner)
        };
        assert_ne!(
            key(&planner, &boot, ids, &data.hash, "v", "b"),
            key(&planner_blocked, &boot, ids, &data.hash, "v", "b"),
        );
    }

    #[test]
    fn this_build_has_a_fingerprint() {
        let f = build_fingerprint().expect("the test binary can be read");
        assert!(f.contains(':'), "{f}");
        assert_eq!(build_fingerprint().unwrap(), f, "stable within a process");
    }
}
