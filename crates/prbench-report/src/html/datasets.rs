//! Finding the dataset each run was made on, for the item browser (it shows the items' texts).
//!
//! A run's manifest records the dataset's location (`dataset`, an absolute path since prbench
//! recorded them so; the path as typed before) and its content hash (`dataset_hash`, over the
//! files of the subsets the run loaded). `prbench report --data` may name datasets again, one
//! per dataset, when they moved: each run takes the `--data` whose content hash, over the
//! run's subsets, is the one its manifest records, and a run no `--data` matches reads its
//! recorded location. Hashes are compared and shown the same way on both sides: the whole
//! sha256, over the same subsets.

use std::borrow::Cow;

use prbench_data::Dataset;

use crate::error::{ReportError, Result};
use crate::sources::RunSource;

/// One load tried: the spec, the subsets, and the content hash or why it failed.
struct Tried {
    spec: String,
    subsets: Vec<String>,
    outcome: std::result::Result<String, String>,
}

/// Finds runs' datasets among `--data` specs and the runs' recorded locations, loading each
/// (spec, subsets) once.
pub(crate) struct Finder {
    given: Vec<String>,
    tried: Vec<Tried>,
    /// Content hashes of the runs looked up, to tell which `--data` served one.
    wanted: Vec<String>,
}

/// The hash of the run's dataset as its manifest records it (its summary's for runs whose
/// manifest lacks it).
fn recorded_hash(run: &RunSource) -> &str {
    run.manifest.dataset_hash.as_deref().unwrap_or(&run.summary.dataset_hash)
}

/// Where the run's manifest says its dataset is (its summary's spec for runs whose manifest
/// lacks it).
fn recorded_spec(run: &RunSource) -> &str {
    run.manifest.dataset.as_deref().unwrap_or(&run.summary.dataset)
}

/// The subsets the run loaded (empty: all).
fn subsets_of(run: &RunSource) -> Vec<String> {
    run.manifest.subsets.clone().unwrap_or_default()
}

fn subsets_text(subsets: &[String]) -> String {
    if subsets.is_empty() {
        "all its subsets".into()
    } else {
        format!("subsets {}", subsets.join(", "))
    }
}

impl Finder {
    /// A finder over the `--data` specs `given` (empty: every run reads its recorded location).
    pub(crate) fn new(given: &[String]) -> Self {
        Finder { given: given.to_vec(), tried: Vec::new(), wanted: Vec::new() }
    }

    /// Loads `spec` with `subsets` unless tried before; a dataset loaded is added to `cache`.
    /// Returns the outcome: the content hash, or why it failed.
    fn load(
        &mut self,
        spec: &str,
        subsets: &[String],
        cache: &mut Vec<Cow<'_, Dataset>>,
    ) -> std::result::Result<String, String> {
        if let Some(t) = self.tried.iter().find(|t| t.spec == spec && t.subsets == subsets) {
            return t.outcome.clone();
        }
        let outcome = match prbench_data::load(spec, subsets) {
            Ok(ds) => {
                let hash = ds.hash.clone();
                if !cache.iter().any(|c| c.hash == hash) {
                    cache.push(Cow::Owned(ds));
                }
                Ok(hash)
            }
            Err(e) => Err(e.to_string()),
        };
        self.tried.push(Tried {
            spec: spec.to_string(),
            subsets: subsets.to_vec(),
            outcome: outcome.clone(),
        });
        outcome
    }

    /// The index in `cache` of the dataset `run` was made on: one already there with its
    /// content hash, else the first `--data` that has it, else its recorded location.
    ///
    /// # Errors
    /// [`ReportError::Dataset`] saying where it was looked for, with each candidate's content
    /// hash over the run's subsets (or why it could not be read), and what to do.
    pub(crate) fn find(
        &mut self,
        run: &RunSource,
        cache: &mut Vec<Cow<'_, Dataset>>,
    ) -> Result<usize> {
        let hash = recorded_hash(run).to_string();
        self.wanted.push(hash.clone());
        let subsets = subsets_of(run);
        let in_cache = |cache: &Vec<Cow<'_, Dataset>>| cache.iter().position(|c| c.hash == hash);
        if let Some(c) = in_cache(cache) {
            return Ok(c);
        }
        let mut seen: Vec<String> = Vec::new();
        for spec in self.given.clone() {
            let outcome = self.load(&spec, &subsets, cache);
            if outcome.as_deref() == Ok(hash.as_str()) {
                return Ok(in_cache(cache).expect("a dataset loaded is in the cache"));
            }
            seen.push(match outcome {
                Ok(h) => format!("--data `{spec}` has {h}"),
                Err(e) => format!("--data `{spec}` cannot be read with those subsets ({e})"),
            });
        }
        let recorded = recorded_spec(run).to_string();
        let own = self.load(&recorded, &subsets, cache);
        if own.as_deref() == Ok(hash.as_str()) {
            return Ok(in_cache(cache).expect("a dataset loaded is in the cache"));
        }
        let relative = prbench_data::spec::is_relative(&recorded);
        let here = std::env::current_dir()
            .map_or_else(|_| "the current folder".to_string(), |d| format!("`{}`", d.display()));
        let scope = subsets_text(&subsets);
        let reason = if self.given.is_empty() {
            match own {
                Ok(now) if relative => format!(
                    "the run's manifest records this path relative to the folder the run was made in (it was made before prbench recorded absolute paths), and from here ({here}) it names other data: over the run's {scope}, its content hash is {now}, but the run's manifest.json records {hash}; run `prbench report` from the folder the run was made in, or pass --data with the dataset the run was made on"
                ),
                Ok(now) => format!(
                    "its files changed since the run: over the run's {scope}, its content hash is now {now}, but the run's manifest.json records {hash}; pass --data with the dataset the run was made on"
                ),
                Err(e) if relative => format!(
                    "{e}; the run's manifest records this path relative to the folder the run was made in (it was made before prbench recorded absolute paths), and it does not resolve from here ({here}): run `prbench report` from that folder, or pass --data with the dataset's location"
                ),
                Err(e) => format!("{e}; the item browser needs the dataset the run was made on: pass --data with its current location"),
            }
        } else {
            if !self.given.contains(&recorded) {
                seen.push(match own {
                    Ok(now) if relative => format!("its recorded location, relative to the folder the run was made in (recorded before prbench recorded absolute paths), names other data from here ({here}): {now}"),
                    Ok(now) => format!("its recorded location has {now} (the files there changed since the run)"),
                    Err(e) if relative => format!(
                        "its recorded location is relative to the folder the run was made in (recorded before prbench recorded absolute paths) and does not resolve from here ({here}): {e}"
                    ),
                    Err(e) => format!("its recorded location cannot be read: {e}"),
                });
            }
            format!(
                "the run was made on another dataset than the --data given: its content hash, as its manifest.json records it over {scope}, is {hash}; over the same subsets, {}. Pass the dataset the run was made on as another --data (repeat --data, one per dataset)",
                seen.join("; ")
            )
        };
        Err(ReportError::Dataset { run: run.dir.clone(), source_spec: recorded, reason })
    }

    /// Checks that every `--data` was the dataset of some run: one that is not would be
    /// silently unused, most likely a mistake in which data the runs were made on.
    ///
    /// # Errors
    /// [`ReportError::UnusedData`] naming the first unused `--data`, with its content hashes over
    /// the subsets of the runs it was compared with.
    pub(crate) fn check_all_used(&self) -> Result<()> {
        for spec in &self.given {
            let tried: Vec<&Tried> = self.tried.iter().filter(|t| &t.spec == spec).collect();
            if tried.iter().any(|t| t.outcome.as_ref().is_ok_and(|h| self.wanted.contains(h))) {
                continue;
            }
            let reason = if self.wanted.is_empty() {
                "--data names the dataset of runs, and no run is given; drop it".to_string()
            } else if tried.is_empty() {
                "no run needs this dataset: every run was matched to an earlier --data, so this one is unused; drop it".to_string()
            } else {
                let seen: Vec<String> = tried
                    .iter()
                    .map(|t| match &t.outcome {
                        Ok(h) => {
                            format!("over {} its content hash is {h}", subsets_text(&t.subsets))
                        }
                        Err(e) => {
                            format!("it cannot be read with {} ({e})", subsets_text(&t.subsets))
                        }
                    })
                    .collect();
                let mut runs: Vec<&str> = self.wanted.iter().map(String::as_str).collect();
                runs.sort_unstable();
                runs.dedup();
                format!(
                    "no run was made on this dataset ({}; the runs' manifests record {}); drop it, or give the runs made on it",
                    seen.join("; "),
                    runs.join(", ")
                )
            };
            return Err(ReportError::UnusedData { spec: spec.clone(), reason });
        }
        Ok(())
    }
}
