//! Reading the results a report shows: run folders (`manifest.json`, `summary.json`,
//! `outcomes.jsonl`, `planner.jsonl`), conditioning matrices (`<run-id>-matrix.json`),
//! Best-of-N folders (`bon-<judge>.json`) and `prbench correlate` results, one benchmark or
//! several compared (`--out X.md` writes `X.json`, or `--json` on stdout saved to a file).
//!
//! Run files, Best-of-N tables and build manifests are read as the `prbench_records` types
//! their writers write (unknown fields are ignored, so files from newer runs still load); a
//! file that does not parse is an error naming it and its line, never skipped.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use prbench_records::bon::BonTable;
use prbench_records::build::BuildManifest;
use prbench_records::manifest::PartialManifest;
use prbench_records::outcome::Outcome;
use prbench_stats::ItemResult;
use serde::{Deserialize, Serialize};

use crate::error::{io, layout, ReportError, Result};
use crate::matrix::Matrix;
use crate::summary::Summary;

/// Which per-item result a comparison reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// `result`: single order for judges, score(chosen) > score(rejected) for reward models.
    Primary,
    /// `both_orders_result`.
    BothOrders,
    /// `debiased_result`.
    Debiased,
}

impl Metric {
    /// The result of `o` under this metric (`None` when the run did not compute it).
    pub fn of(self, o: &Outcome) -> Option<ItemResult> {
        match self {
            Metric::Primary => Some(o.result),
            Metric::BothOrders => o.both_orders_result,
            Metric::Debiased => o.debiased_result,
        }
    }
}

/// One run folder.
#[derive(Debug, Clone)]
pub struct RunSource {
    /// The folder.
    pub dir: PathBuf,
    /// `manifest.json` (model hash, template hash, dataset hash, seed, code version, …), each
    /// field `None` where the file lacks it: a report shows what a run recorded.
    pub manifest: PartialManifest,
    /// `summary.json`.
    pub summary: Summary,
    /// `outcomes.jsonl`, in file order.
    pub outcomes: Vec<Outcome>,
    /// `planner.jsonl` (planner runs): example id → planned aspects.
    pub plans: HashMap<String, Vec<String>>,
}

impl RunSource {
    /// True for a run whose model is a control baseline (`baseline:NAME`).
    pub fn is_baseline(&self) -> bool {
        self.summary.model.starts_with("baseline:")
    }

    /// True when `other` is the same run as this one in another folder (a copy, e.g.
    /// `cp -r runs/x runs/y`): the same run id, model, condition and dataset content hash in
    /// its manifest, and the same outcomes. Listing both would rank one result twice.
    pub fn same_run(&self, other: &RunSource) -> bool {
        let id = |r: &RunSource| (r.manifest.run_id.clone(), r.manifest.model.clone());
        id(self) == id(other)
            && self.summary.model == other.summary.model
            && self.summary.condition == other.summary.condition
            && self.summary.dataset_hash == other.summary.dataset_hash
            && self.outcomes == other.outcomes
    }
}

/// A conditioning matrix file.
#[derive(Debug, Clone)]
pub struct MatrixSource {
    /// The file.
    pub path: PathBuf,
    /// Its content.
    pub matrix: Matrix,
}

/// A Best-of-N folder: one table per rubric judge.
#[derive(Debug, Clone)]
pub struct BonSource {
    /// The folder.
    pub dir: PathBuf,
    /// `manifest.json` of the samples.
    pub manifest: serde_json::Value,
    /// Tables, by file name order.
    pub tables: Vec<BonTable>,
}

/// A `prbench correlate` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrelationRecord {
    /// Models as (label, benchmark score, downstream score).
    pub models: Vec<(String, f64, f64)>,
    /// The statistics (Spearman's rho, Kendall's tau-b, weighted tau, NDCG, RBO).
    pub statistics: serde_json::Value,
    /// Benchmark and downstream sources.
    #[serde(default)]
    pub sources: Vec<String>,
}

impl CorrelationRecord {
    /// One statistic by its JSON name (`spearman`, `weighted_tau`, `ndcg`, …).
    pub fn statistic(&self, name: &str) -> Option<f64> {
        self.statistics.get(name).and_then(serde_json::Value::as_f64)
    }
}

/// One benchmark set of a `prbench correlate --benchmark-set` comparison, as the report reads
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonSetRecord {
    /// The set's name.
    pub name: String,
    /// Its inputs.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Downstream models it had no score for.
    #[serde(default)]
    pub lacked: Vec<String>,
    /// Its models without a downstream score.
    #[serde(default)]
    pub without_downstream: Vec<String>,
    /// Its statistics with their intervals (the draw shared by every set) and its models as
    /// (label, benchmark score, downstream score).
    pub correlation: ComparisonCorrelationRecord,
}

/// The part of a set's correlation the report shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonCorrelationRecord {
    /// Models as (label, benchmark score, downstream score), in the comparison's model order.
    pub models: Vec<(String, f64, f64)>,
    /// The bootstrap intervals of the five statistics.
    pub bootstrap: prbench_stats::CorrelationBootstrap,
}

/// A `prbench correlate --benchmark-set` result: several benchmarks against one downstream
/// ranking ([`crate::correlation::Comparison`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRecord {
    /// The downstream ranking.
    pub downstream: crate::correlation::DownstreamInfo,
    /// The compared models.
    pub models: Vec<String>,
    /// The benchmark sets, in the order given.
    pub sets: Vec<ComparisonSetRecord>,
    /// The paired differences.
    pub pairs: Vec<crate::correlation::PairResult>,
    /// The shared bootstrap.
    pub bootstrap: crate::correlation::ComparisonSettings,
}

/// A comparison result file.
#[derive(Debug, Clone)]
pub struct ComparisonSource {
    /// The file.
    pub path: PathBuf,
    /// Its content.
    pub comparison: ComparisonRecord,
}

/// A correlate result file.
#[derive(Debug, Clone)]
pub struct CorrelationSource {
    /// The file.
    pub path: PathBuf,
    /// Its content.
    pub correlation: CorrelationRecord,
}

/// A `prbench build` output folder: its manifest and its report.
#[derive(Debug, Clone)]
pub struct BuildSource {
    /// The folder.
    pub dir: PathBuf,
    /// `build/build.json`.
    pub manifest: BuildManifest,
    /// `build-report.md`, the build's own report (Markdown).
    pub report: String,
}

/// The manifest of a build folder, relative to it.
pub use prbench_records::build::MANIFEST_FILE as BUILD_MANIFEST;
/// The report of a build folder, relative to it.
pub use prbench_records::build::REPORT_FILE as BUILD_REPORT;

/// Reads a `prbench build` folder.
///
/// # Errors
/// An unreadable or malformed `build/build.json`, or a missing `build-report.md` (a build that
/// stopped before it finished: rerun its command, which resumes from the cache).
pub fn read_build(dir: &Path) -> Result<BuildSource> {
    let manifest: BuildManifest = read_json(&dir.join(BUILD_MANIFEST))?;
    let report_path = dir.join(BUILD_REPORT);
    if !report_path.is_file() {
        return Err(layout(dir, "a build folder without build-report.md: the build stopped before it finished; rerun its `prbench build` command (it resumes from the cache)"));
    }
    Ok(BuildSource { dir: dir.to_path_buf(), manifest, report: read_text(&report_path)? })
}

/// A `prbench annotate serve` folder: its human-evaluation report.
#[derive(Debug, Clone)]
pub struct AnnotationSource {
    /// The folder.
    pub dir: PathBuf,
    /// How many ratings and items it holds, in one line.
    pub summary: String,
    /// The report of `prbench annotate report` (Markdown), computed from the folder's store.
    pub report: String,
}

/// Reads an annotation folder and computes its report (1,000 bootstrap resamples, seed 42, as
/// `prbench annotate report` by default).
///
/// # Errors
/// The store's errors (an unreadable or foreign `annotate.sqlite`), as a layout error naming
/// the folder.
pub fn read_annotation(dir: &Path) -> Result<AnnotationSource> {
    let fail = |e: prbench_annotate::AnnotateError| {
        layout(dir, format!("an annotation folder that cannot be read: {e}"))
    };
    let store = prbench_annotate::Store::open(dir).map_err(fail)?;
    let report =
        prbench_annotate::report::build(&store, &prbench_annotate::report::ReportConfig::default())
            .map_err(fail)?;
    let rated: usize = report.annotators.iter().map(|a| a.1).sum();
    let assigned: usize = report.annotators.iter().map(|a| a.2).sum();
    let summary = format!(
        "{rated} of {assigned} assigned ratings saved by {} annotators over {} items of {}.",
        report.annotators.len(),
        report.items,
        report.source
    );
    Ok(AnnotationSource {
        dir: dir.to_path_buf(),
        summary,
        report: prbench_annotate::report::markdown(&report),
    })
}

/// Everything given to `prbench report` / `prbench leaderboard`.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Run folders, in the order given (a matrix's runs after it, in its condition order).
    pub runs: Vec<RunSource>,
    /// Matrices.
    pub matrices: Vec<MatrixSource>,
    /// Best-of-N folders.
    pub bons: Vec<BonSource>,
    /// Correlate results.
    pub correlations: Vec<CorrelationSource>,
    /// Correlate comparisons of several benchmarks (`--benchmark-set`).
    pub comparisons: Vec<ComparisonSource>,
    /// `prbench build` output folders.
    pub builds: Vec<BuildSource>,
    /// `prbench annotate serve` folders.
    pub annotations: Vec<AnnotationSource>,
    /// Folders met while reading a folder of results and left out, each with why (unfinished
    /// runs, copies of a run already read): the commands print them and the report lists them.
    pub skipped: Vec<String>,
    /// Run folders left out as copies of a run already read ([`RunSource::same_run`]): (the
    /// copy, the folder kept). Each is also in `skipped`, saying so.
    pub copies: Vec<(PathBuf, PathBuf)>,
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(io(path))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    serde_json::from_str(&read_text(path)?).map_err(|cause| ReportError::Json {
        path: path.into(),
        line: None,
        cause,
    })
}

fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text = read_text(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(line).map_err(|cause| ReportError::Json {
            path: path.into(),
            line: Some(i + 1),
            cause,
        })?);
    }
    Ok(out)
}

/// Reads one run folder.
///
/// # Errors
/// A missing or unreadable `manifest.json`, `summary.json` or `outcomes.jsonl`, a record that
/// does not parse (named by file and line), or outcomes that disagree with the summary's count.
pub fn read_run(dir: &Path) -> Result<RunSource> {
    let manifest: PartialManifest = read_json(&dir.join("manifest.json"))?;
    let summary: Summary = read_json(&dir.join("summary.json"))?;
    let outcomes: Vec<Outcome> = read_jsonl(&dir.join("outcomes.jsonl"))?;
    let n = summary.rows.iter().find(|r| r.label == "micro").map(|r| r.tally.n);
    if let Some(n) = n {
        if n != outcomes.len() {
            return Err(layout(
                dir.join("outcomes.jsonl"),
                format!("{} outcomes but summary.json counts {n} items: the run is incomplete (resume it by rerunning its command) or its files come from different runs", outcomes.len()),
            ));
        }
    }
    let mut plans = HashMap::new();
    let planner = dir.join("planner.jsonl");
    if planner.is_file() {
        #[derive(Deserialize)]
        struct Plan {
            example_id: String,
            #[serde(default)]
            aspects: Vec<String>,
        }
        for p in read_jsonl::<Plan>(&planner)? {
            plans.insert(p.example_id, p.aspects);
        }
    }
    Ok(RunSource { dir: dir.to_path_buf(), manifest, summary, outcomes, plans })
}

/// Reads a Best-of-N folder's tables (`bon-*.json`).
///
/// # Errors
/// Unreadable files, or a folder with no table (run `prbench bon judge` and `bon score` first).
pub fn read_bon(dir: &Path) -> Result<BonSource> {
    let manifest: serde_json::Value = read_json(&dir.join("manifest.json"))?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("bon-"))
        })
        .collect();
    names.sort();
    let mut tables = Vec::new();
    for p in &names {
        tables.push(read_json::<BonTable>(p)?);
    }
    if tables.is_empty() {
        return Err(layout(dir, "a Best-of-N folder without a table (bon-<judge>.json): run `prbench bon judge` and `prbench bon score` on it first"));
    }
    Ok(BonSource { dir: dir.to_path_buf(), manifest, tables })
}

/// What a path holds.
enum Kind {
    Run,
    Bon,
    Build,
    Annotation,
    Matrix,
    Correlation,
    Comparison,
    /// A run folder without `summary.json`: the run stopped before it finished.
    Unfinished,
    /// A folder of results (e.g. `runs/`): its children are read.
    Folder,
}

/// Why an unfinished run folder is not shown, and how to finish it.
fn unfinished(dir: &Path) -> String {
    let id = dir
        .file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    format!(
        "an unfinished run (manifest.json but no summary.json: it stopped before it finished); resume it by rerunning its `prbench eval` command with the run id it used (`--run-id {id}`, or for a multi-condition command its id without the `-<condition>` suffix)"
    )
}

fn classify(path: &Path) -> Result<Kind> {
    if path.is_dir() {
        if path.join("summary.json").is_file() {
            return Ok(Kind::Run);
        }
        if path.join("samples.jsonl").is_file() {
            return Ok(Kind::Bon);
        }
        if path.join(BUILD_MANIFEST).is_file() {
            return Ok(Kind::Build);
        }
        if path.join(prbench_annotate::store::STORE_FILE).is_file() {
            return Ok(Kind::Annotation);
        }
        if path.join("manifest.json").is_file() && path.join("outcomes.jsonl").is_file() {
            return Ok(Kind::Unfinished);
        }
        return Ok(Kind::Folder);
    }
    if !path.exists() {
        return Err(layout(path, "no such file or folder"));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if name == "summary.json" {
        return Ok(Kind::Run);
    }
    if name.ends_with(".json") {
        let v: serde_json::Value = read_json(path)?;
        if v.get("blocks").is_some() && v.get("conditions").is_some() {
            return Ok(Kind::Matrix);
        }
        if v.get("statistics").is_some() && v.get("models").is_some() {
            return Ok(Kind::Correlation);
        }
        if v.get("kind").and_then(serde_json::Value::as_str)
            == Some(crate::correlation::Comparison::KIND)
        {
            return Ok(Kind::Comparison);
        }
        if v.get("rows").is_some() && v.get("ks").is_some() {
            return Err(layout(
                path,
                "a Best-of-N table: give its folder instead (the report reads every table in it)",
            ));
        }
    }
    if name.ends_with(".md") && path.with_extension("json").is_file() {
        return Err(layout(
            path,
            format!("give the JSON beside it, `{}`", path.with_extension("json").display()),
        ));
    }
    Err(layout(
        path,
        "not a run folder (with summary.json), a conditioning matrix (<run-id>-matrix.json), a Best-of-N folder (with samples.jsonl), a `prbench build` folder (with build/build.json) or a `prbench correlate` result (its --out X.md writes X.json; or save `correlate --json`)",
    ))
}

/// Reads every path: run folders (or their summary.json), `*-matrix.json` (its runs are read
/// too, from the folder beside it), Best-of-N folders, correlate results, and folders holding
/// any of these (one level down, e.g. `runs/`). A run given twice is read once, and a copy of
/// a run in another folder ([`RunSource::same_run`]) is left out with a note in
/// [`Sources::skipped`], so no result is listed twice.
///
/// # Errors
/// A path that holds none of these, a folder with nothing to report, or any read error.
pub fn load(paths: &[PathBuf]) -> Result<Sources> {
    let mut s = Sources::default();
    let mut seen: BTreeMap<PathBuf, ()> = BTreeMap::new();
    for p in paths {
        add(&mut s, &mut seen, p, true)?;
    }
    Ok(s)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn add(s: &mut Sources, seen: &mut BTreeMap<PathBuf, ()>, path: &Path, top: bool) -> Result<()> {
    let key = canonical(path);
    if seen.insert(key.clone(), ()).is_some() {
        return Ok(());
    }
    match classify(path)? {
        Kind::Run => {
            let dir = if path.is_dir() {
                path.to_path_buf()
            } else {
                path.parent().unwrap_or(Path::new(".")).to_path_buf()
            };
            if !path.is_dir() && seen.insert(canonical(&dir), ()).is_some() {
                return Ok(());
            }
            let run = read_run(&dir)?;
            match s.runs.iter().find(|r| r.same_run(&run)) {
                Some(first) => {
                    s.skipped.push(format!(
                        "`{}` left out: it is a copy of `{}` (the same run id, model, condition, dataset content hash and outcomes), which is listed once",
                        dir.display(),
                        first.dir.display()
                    ));
                    s.copies.push((dir, first.dir.clone()));
                }
                None => s.runs.push(run),
            }
        }
        Kind::Bon => s.bons.push(read_bon(path)?),
        Kind::Build => s.builds.push(read_build(path)?),
        Kind::Annotation => s.annotations.push(read_annotation(path)?),
        Kind::Unfinished if top => return Err(layout(path, unfinished(path))),
        Kind::Unfinished => {
            s.skipped.push(format!("`{}` left out: {}", path.display(), unfinished(path)))
        }
        Kind::Correlation => s
            .correlations
            .push(CorrelationSource { path: path.into(), correlation: read_json(path)? }),
        Kind::Comparison => {
            s.comparisons.push(ComparisonSource { path: path.into(), comparison: read_json(path)? })
        }
        Kind::Matrix => {
            let matrix: Matrix = read_json(path)?;
            let base = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            for c in &matrix.conditions {
                let dir = base.join(&c.run_id);
                if !dir.join("summary.json").is_file() {
                    return Err(layout(path, format!("its `{}` run `{}` is not in `{}`; keep the matrix beside its run folders", c.condition, c.run_id, base.display())));
                }
                add(s, seen, &dir, false)?;
            }
            s.matrices.push(MatrixSource { path: path.into(), matrix });
        }
        Kind::Folder => {
            if !top {
                return Ok(());
            }
            let mut children: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(io(path))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            children.sort();
            let before = (
                s.copies.len(),
                s.runs.len(),
                s.matrices.len(),
                s.bons.len(),
                s.correlations.len(),
                s.comparisons.len(),
                s.builds.len(),
                s.annotations.len(),
            );
            // Matrices first, so their runs come in condition order.
            let is_matrix = |c: &PathBuf| {
                c.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with("-matrix.json"))
            };
            for c in children.iter().filter(|c| is_matrix(c)) {
                add(s, seen, c, false)?;
            }
            for c in children.iter().filter(|c| !is_matrix(c)) {
                if c.is_dir()
                    && (c.join("summary.json").is_file()
                        || c.join("samples.jsonl").is_file()
                        || c.join("manifest.json").is_file()
                        || c.join(BUILD_MANIFEST).is_file()
                        || c.join(prbench_annotate::store::STORE_FILE).is_file())
                {
                    add(s, seen, c, false)?;
                }
            }
            if before
                == (
                    s.copies.len(),
                    s.runs.len(),
                    s.matrices.len(),
                    s.bons.len(),
                    s.correlations.len(),
                    s.comparisons.len(),
                    s.builds.len(),
                    s.annotations.len(),
                )
            {
                let why = if s.skipped.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", s.skipped.join("; "))
                };
                return Err(layout(path, format!("holds no finished run folder, conditioning matrix, Best-of-N folder, build folder or annotation folder (one level down){why}")));
            }
        }
    }
    Ok(())
}
