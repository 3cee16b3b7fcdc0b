//! Whether an existing run may be resumed or reused: every setting that decides its outcomes
//! or figures must match the manifest it was started with.

use std::path::Path;

use prbench_data::{Dataset, Example};

use super::{manifest_for, read_manifest_in, Manifest, RunConfig};
use crate::condition::Condition;
use crate::error::EvalError;
use crate::prompt::Prompts;
use crate::runner::Backend;

/// Checks that the run in `cfg.dir` (one `inspect_run` found unfinished, or finished with
/// errored items or a missing file) was started with the same model, decoding, prompts, data,
/// condition, condition inputs, seed, order mode, limit and bootstrap as `cfg`, so resuming it
/// into the same folder gives the same outcomes.
///
/// # Errors
/// [`EvalError::RunDir`] naming the first field that differs (or an unreadable manifest) and
/// what to do.
pub fn check_resume(
    data: &Dataset,
    backend: Backend<'_>,
    cfg: &RunConfig,
) -> Result<(), EvalError> {
    same_settings(data, backend, cfg).map(drop)
}

/// Checks that the finished run in `cfg.dir` has the settings of `cfg` (as [`check_resume`]
/// does for runs to resume): the same command run again with the same `--run-id` reuses it.
///
/// # Errors
/// [`EvalError::RunDir`] when the run is unfinished, unreadable, or differs in a setting.
pub fn check_finished(
    data: &Dataset,
    backend: Backend<'_>,
    cfg: &RunConfig,
) -> Result<(), EvalError> {
    let old = same_settings(data, backend, cfg)?;
    if old.finished.is_none() {
        return Err(EvalError::RunDir {
            path: cfg.dir.clone(),
            reason: "it is unfinished; resume it instead".into(),
        });
    }
    Ok(())
}

/// The manifest in `cfg.dir`.
pub(super) fn read_manifest(cfg: &RunConfig) -> Result<Manifest, EvalError> {
    read_manifest_in(&cfg.dir)
}

/// The settings of a run known before its model loads: what [`check_settings_before_load`]
/// compares with an existing run's manifest.
pub(crate) struct EarlySettings<'a> {
    /// The dataset as loaded.
    pub(crate) data: &'a Dataset,
    /// The examples the run evaluates.
    pub(crate) examples: &'a [Example],
    /// The run's condition.
    pub(crate) condition: Condition,
    /// Run seed.
    pub(crate) seed: u64,
    /// Both-orders mode.
    pub(crate) both_orders: bool,
    /// `--limit`.
    pub(crate) limit: Option<usize>,
    /// `--sample` (with `limit`).
    pub(crate) sample: bool,
    /// Bootstrap resamples.
    pub(crate) bootstrap_resamples: usize,
}

/// Compares the settings that do not need the model (data, condition, seed, order mode, limit,
/// bootstrap) with the manifest `old` of the run in `dir`, so that a rerun with another one is
/// refused before any model loads; the model, decoding, prompts and condition inputs are
/// compared once they are known ([`check_resume`], [`check_finished`]).
///
/// # Errors
/// [`EvalError::RunDir`] naming the first setting that differs.
pub(crate) fn check_settings_before_load(
    dir: &Path,
    old: &Manifest,
    new: &EarlySettings<'_>,
) -> Result<(), EvalError> {
    check_ranges(dir, old)?;
    let (limit_per_subset, sample_per_subset) =
        if new.sample { (None, new.limit) } else { (new.limit, None) };
    let expected = Manifest {
        dataset_hash: new.data.hash.clone(),
        condition: new.condition.to_string(),
        seed: new.seed,
        both_orders: new.both_orders,
        limit_per_subset,
        sample_per_subset,
        n_examples: new.examples.len(),
        bootstrap_resamples: new.bootstrap_resamples,
        ..old.clone()
    };
    match first_difference(old, &expected) {
        Some(difference) => Err(differs(dir, old, difference)),
        None => Ok(()),
    }
}

/// An optional flag's value as the user would type it: `--limit 2`, or `no --limit`.
fn flag_value(flag: &str, value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| format!("no {flag}"), |v| format!("{flag} {v}"))
}

/// The first setting that decides a run's outcomes or figures in which `new` differs from
/// `old`: its manifest name, its value there and here (as the user would type it).
fn first_difference(old: &Manifest, new: &Manifest) -> Option<(&'static str, String, String)> {
    let both = |on: bool| if on { "--both-orders" } else { "no --both-orders" }.to_string();
    let sample = |n: Option<usize>| {
        n.map_or_else(|| "no --sample".to_string(), |n| format!("--limit {n} --sample"))
    };
    let fields: [(&str, String, String); 12] = [
        (
            "model",
            serde_json::to_string(&old.model).unwrap_or_default(),
            serde_json::to_string(&new.model).unwrap_or_default(),
        ),
        ("decoding", old.decoding.to_string(), new.decoding.to_string()),
        ("template_hash", old.template_hash.clone(), new.template_hash.clone()),
        ("dataset_hash", old.dataset_hash.clone(), new.dataset_hash.clone()),
        ("condition", old.condition.clone(), new.condition.clone()),
        ("condition_inputs", old.condition_inputs.to_string(), new.condition_inputs.to_string()),
        ("seed", format!("--seed {}", old.seed), format!("--seed {}", new.seed)),
        ("both_orders", both(old.both_orders), both(new.both_orders)),
        (
            "limit_per_subset",
            flag_value("--limit", old.limit_per_subset),
            flag_value("--limit", new.limit_per_subset),
        ),
        ("sample_per_subset", sample(old.sample_per_subset), sample(new.sample_per_subset)),
        ("n_examples", old.n_examples.to_string(), new.n_examples.to_string()),
        (
            "bootstrap_resamples",
            format!("--bootstrap {}", old.bootstrap_resamples),
            format!("--bootstrap {}", new.bootstrap_resamples),
        ),
    ];
    fields.into_iter().find(|(_, a, b)| a != b)
}

/// Checks that the values of the manifest `old` (of the run in `dir`) are in the ranges prbench
/// accepts: a manifest written before the ranges were checked, e.g. with `--bootstrap
/// 4294967295`, would make the resumed run fail the same way.
fn check_ranges(dir: &Path, old: &Manifest) -> Result<(), EvalError> {
    let max = prbench_stats::bootstrap::MAX_RESAMPLES;
    if old.bootstrap_resamples > max {
        return Err(EvalError::RunDir {
            path: dir.to_path_buf(),
            reason: format!(
                "its manifest.json holds `bootstrap_resamples` {}, more than the {max} prbench allows (it would not fit in memory); pass another --run-id, or remove the folder",
                old.bootstrap_resamples
            ),
        });
    }
    Ok(())
}

/// The refusal of a run whose `name` setting differs.
fn differs(dir: &Path, old: &Manifest, (name, was, now): (&str, String, String)) -> EvalError {
    let state = if old.finished.is_some() { "a finished" } else { "an unfinished" };
    EvalError::RunDir {
        path: dir.to_path_buf(),
        reason: format!("it is {state} run with another `{name}` ({was} there, {now} now); rerun the command that started it, or pass another --run-id"),
    }
}

/// The manifest in `cfg.dir`, if every setting that decides the outcomes matches `cfg` and
/// its own values are in the ranges prbench accepts ([`check_ranges`]).
fn same_settings(
    data: &Dataset,
    backend: Backend<'_>,
    cfg: &RunConfig,
) -> Result<Manifest, EvalError> {
    let old = read_manifest(cfg)?;
    check_ranges(&cfg.dir, &old)?;
    let (identity, decoding) = match backend {
        Backend::Judge(j) => (j.identity(), j.decoding()),
        Backend::RewardModel(r) => (r.identity(), r.settings()),
    };
    let examples = cfg.examples(data);
    let new = manifest_for(
        data,
        &examples,
        &identity,
        backend.training_condition().as_deref(),
        &decoding,
        cfg,
        &Prompts::with_recipe(cfg.recipe.clone()),
    );
    match first_difference(&old, &new) {
        Some(difference) => Err(differs(&cfg.dir, &old, difference)),
        None => Ok(old),
    }
}
